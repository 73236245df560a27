// Entry points of the CUDA depthwise kernels that other CUDA code (the separable backward) reuses.
#pragma once

#include "common/conv_params.h"
#include "cuda/strided_view.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace sepconv1d {
namespace cuda {

// y = depthwise_conv1d(x, weight, bias); arguments already checked, y allocated by the caller with
// new_activation(x, ...). x may be channel-first or channel-last (see as_kernel_layout).
void depthwise_forward_into(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                            const ConvGeometry& g, Tensor& y);

// Gradients of depthwise_conv1d for grad_out in x's layout; the ones not asked for are nullopt.
// grad_weight/grad_bias come back in weight's dtype and are deterministic run to run.
std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>> depthwise_backward(
    const Tensor& grad_out, const Tensor& x, const Tensor& weight, const ConvGeometry& g,
    bool need_grad_x, bool need_grad_weight, bool need_grad_bias);

// The same into caller-provided outputs (null: not wanted): dx in x's layout with unit stride along
// L or C as x has (a batch slice of a larger tensor is fine), dw (C, K) and db (C) contiguous in
// weight's dtype (float32 weights give float32 gradients, also under half x).
void depthwise_backward_into(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                             const ConvGeometry& g, Tensor* dx, Tensor* dw, Tensor* db);

// ---- views: the separable backward's batch chunks (no torch view per chunk) ---------------------
// The caller holds a device guard for the views' device; x, dy, dx in one layout (channel-first
// or channel-last strides, any batch stride); weight (C, K) and bias (C) as above.

// y = depthwise_conv1d(x, weight, bias) into the view y.
void depthwise_forward_view(const StridedView& x, const Tensor& weight,
                            const std::optional<Tensor>& bias, const ConvGeometry& g,
                            const StridedView& y);

// Weight-gradient partial sums of several depthwise backward calls, summed by one launch at the
// end (depthwise_reduce_partials) in call order: deterministic, and one reduction and (usually)
// one workspace allocation for all the calls instead of one of each per call. Partial sums too
// large to keep for all calls at once (the channel-last kernels split a channel group over many
// blocks: ~15 MiB per call in the seed shape's chunks, 46 MiB more at the peak if all were kept)
// are summed per call into a (K + 1) x C slot first, through one scratch buffer reused by every
// call.
class DepthwisePartials {
 public:
  static constexpr int kMaxCalls = 8;
  // Partial sums of up to this many bytes over all calls are kept until the end.
  static constexpr size_t kKeepBytes = size_t(4) << 20;
  // calls: how many backward calls will add partial sums (sizes the workspace at the first).
  explicit DepthwisePartials(int calls) : calls_(calls), calls_left_(calls) {}
  struct Block {
    void* partials;  // device memory for one call's `bytes` of partial sums
    void* fold;      // nullptr, or the slot (sum_bytes) to sum them into right after the call
  };
  // Memory for one call's partial sums (sum_bytes: one (K + 1) x C sum), valid until this object
  // is destroyed.
  Block alloc(int device, size_t bytes, size_t sum_bytes);
  // The runs of partial sums added so far (filled by depthwise_backward_view).
  const void* part[kMaxCalls] = {};
  int64_t split[kMaxCalls] = {};
  int runs = 0;

 private:
  void* carve(int device, size_t bytes, size_t want);
  std::vector<Tensor> buffers_;
  char* next_ = nullptr;
  size_t room_ = 0;
  std::optional<Tensor> scratch_;
  int calls_;
  int calls_left_;
};

// dx (a view, or nullptr) and the partial sums of d weight / d bias (wanted where dw / db are
// not nullptr: (C, K) / (C) contiguous in weight's dtype, written by depthwise_reduce_partials).
void depthwise_backward_view(const StridedView& dy, const StridedView& x, const Tensor& weight,
                             const ConvGeometry& g, const StridedView* dx, Tensor* dw, Tensor* db,
                             DepthwisePartials& partials);

// dw / db = the sums of all runs of `partials` (x_dtype: the activations' dtype of the calls).
void depthwise_reduce_partials(const DepthwisePartials& partials, ScalarType x_dtype,
                               const ConvGeometry& g, Tensor* dw, Tensor* db);

}  // namespace cuda
}  // namespace sepconv1d
