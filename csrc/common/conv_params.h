// Argument checks, shape maths and output allocation shared by every backend.
//
// The Python layer (sepconv1d/_shapes.py) resolves padding modes and raises friendly errors before
// an op is called; these checks repeat the ones that guard memory safety, so that a direct call of
// torch.ops.sepconv1d.* with bad arguments fails with a message instead of reading out of bounds.
#pragma once

#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace sepconv1d {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// Output length of a strided, dilated, zero-padded 1-D convolution.
inline int64_t conv_out_length(int64_t length, int64_t kernel_size, int64_t stride,
                               int64_t pad_left, int64_t pad_right, int64_t dilation) {
  return (length + pad_left + pad_right - dilation * (kernel_size - 1) - 1) / stride + 1;
}

// Everything a kernel needs to know about the convolution, in elements.
struct ConvGeometry {
  int64_t batch = 0;
  int64_t channels = 0;      // depthwise channels (Cin for the separable op)
  int64_t out_channels = 0;  // Cout for the separable op, == channels for depthwise
  int64_t length = 0;
  int64_t kernel_size = 0;
  int64_t out_length = 0;
  int64_t stride = 1;
  int64_t pad_left = 0;
  int64_t pad_right = 0;
  int64_t dilation = 1;
};

// A stride-1 convolution of dilation d is d convolutions of dilation 1, one per phase p of the
// output (positions t = d*s + p). With pad_left = d*q + r (0 <= r < d), output t reads x at
// d*(s + k - q) + p - r, so phase p is a dilation-1 convolution with pad_left q over the phase row
// X_p[m] = x[d*m + p - r] (zero outside x). The phase rows hold every element of x once: element
// i in row (i + r) % d at position (i + r) / d. The CUDA depthwise kernels run dilated problems
// this way where it pays (cuda/depthwise_phases.cuh), as d*B rows of the dilation-1 problem `inner`.
struct PhaseSplit {
  int64_t phases = 1;  // d
  int64_t shift = 0;   // r
  ConvGeometry inner;  // batch d*B (phase-major), rows of ceil((L + r) / d), ceil(Lo / d) outputs
};

// Whether a problem can run as phase rows at all: stride 1, dilation > 1, more than one tap, and
// rows short enough for the copies' 32-bit positions.
inline bool phase_split_applies(const ConvGeometry& g) {
  constexpr int64_t kMaxRow = int64_t{1} << 30;
  return g.stride == 1 && g.dilation > 1 && g.kernel_size > 1 && g.length + g.dilation < kMaxRow &&
         g.out_length + g.dilation < kMaxRow;
}

inline PhaseSplit phase_split(const ConvGeometry& g) {
  PhaseSplit s;
  const int64_t d = g.dilation;
  s.phases = d;
  s.shift = g.pad_left % d;
  s.inner = g;
  s.inner.batch = g.batch * d;
  s.inner.length = (g.length + s.shift + d - 1) / d;
  s.inner.out_length = (g.out_length + d - 1) / d;
  s.inner.pad_left = g.pad_left / d;
  s.inner.dilation = 1;
  // The right padding that gives out_length (negative where a row's last positions feed no
  // output; the kernels take the lengths, not pad_right).
  s.inner.pad_right = s.inner.out_length + g.kernel_size - 1 - s.inner.length - s.inner.pad_left;
  return s;
}

// Strides of a (B, C, L) tensor, in elements.
struct Strides3 {
  int64_t b, c, l;
};

inline Strides3 strides_of(const Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2)}; }

// A channel-last activation is a (B, L, C) buffer viewed as (B, C, L): unit stride along C.
// Outputs and input gradients keep the layout of x. sepconv1d/_shapes.py repeats this rule for
// the fake kernels; keep the two identical.
inline bool is_channels_last(const Tensor& x) {
  return x.size(1) > 1 && x.stride(1) == 1 && x.stride(2) != 1;
}

// t itself when already contiguous: a contiguous() call costs a dispatcher round trip even when it
// returns t, and the ops make several per call.
inline Tensor contiguous_if_needed(const Tensor& t) {
  return t.is_contiguous() ? t : torch::stable::contiguous(t);
}

// Kernels read activations either channel-first (unit stride along L) or channel-last (unit
// stride along C), any batch/other stride. Anything else is copied once to channel-first.
inline Tensor as_kernel_layout(const Tensor& x) {
  if (x.stride(2) == 1 || x.stride(1) == 1 || x.numel() == 0) return x;
  return torch::stable::contiguous(x);
}

// A (B, C, L) copy of t whose memory is (B, L, C) contiguous.
inline Tensor channels_last_copy(const Tensor& t) {
  return torch::stable::transpose(torch::stable::contiguous(torch::stable::transpose(t, 1, 2)), 1, 2);
}

// Brings t (same shape as a tensor of layout `channels_last`) into that layout, copying only
// when it differs; used for incoming gradients so a kernel sees one layout for x, dy and dx.
inline Tensor to_layout(const Tensor& t, bool channels_last) {
  if (channels_last) {
    if (t.size(1) <= 1 || t.stride(1) == 1) return t;
    return channels_last_copy(t);
  }
  if (t.stride(2) == 1 || t.size(2) <= 1) return t;
  return torch::stable::contiguous(t);
}

// New (batch, C, L) activation on x's device, channel-last when x is, else contiguous.
inline Tensor new_activation(const Tensor& x, int64_t batch, int64_t channels, int64_t length,
                             ScalarType dtype) {
  if (is_channels_last(x)) {
    Tensor t = torch::stable::empty({batch, length, channels}, dtype, std::nullopt, x.device());
    return torch::stable::transpose(t, 1, 2);
  }
  return torch::stable::empty({batch, channels, length}, dtype, std::nullopt, x.device());
}
// The same with x's batch size.
inline Tensor new_activation(const Tensor& x, int64_t channels, int64_t length, ScalarType dtype) {
  return new_activation(x, x.size(0), channels, length, dtype);
}

// Weights arrive as (C, K) / (Cout, Cin) or as nn.Conv1d stores them, (C, 1, K) / (Cout, Cin, 1).
// The ops take both, so modules pass their parameters straight through: traced graphs hold no view
// nodes of parameters, and gradients come back in the parameter's own shape. Kernels see the 2-D
// view made here.
inline Tensor flat_weight(const Tensor& w, int64_t unit_dim) {
  return w.dim() == 3 ? torch::stable::squeeze(w, unit_dim) : w;
}
inline Tensor flat_depthwise_weight(const Tensor& w) { return flat_weight(w, 1); }
inline Tensor flat_pointwise_weight(const Tensor& w) { return flat_weight(w, 2); }
// Gives a 2-D weight gradient the shape of the weight it belongs to.
inline std::optional<Tensor> shaped_like(std::optional<Tensor> grad, const Tensor& w,
                                         int64_t unit_dim) {
  if (grad.has_value() && w.dim() == 3) return torch::stable::unsqueeze(*grad, unit_dim);
  return grad;
}

inline Tensor new_param_grad(const Tensor& like, ScalarType dtype) {
  std::vector<int64_t> sizes(like.sizes().begin(), like.sizes().end());
  return torch::stable::empty(sizes, dtype, std::nullopt, like.device());
}

inline bool is_half_type(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16;
}

inline void check_activation_dtype(const Tensor& x, const char* name) {
  const ScalarType t = x.scalar_type();
  STD_TORCH_CHECK(t == ScalarType::Float || t == ScalarType::Double || is_half_type(t),
                  "sepconv1d: ", name, " must be float32, float64, float16 or bfloat16");
}

// Weights share x's dtype, or are float32 under half-precision x (accumulation is float32 anyway).
inline void check_weight_dtype(const Tensor& w, const Tensor& x, const char* name) {
  const ScalarType wt = w.scalar_type();
  const ScalarType xt = x.scalar_type();
  STD_TORCH_CHECK(wt == xt || (wt == ScalarType::Float && is_half_type(xt)), "sepconv1d: ", name,
                  " must have x's dtype, or be float32 when x is float16/bfloat16");
}

inline void check_same_device(const Tensor& t, const Tensor& x, const char* name) {
  STD_TORCH_CHECK(t.device() == x.device(), "sepconv1d: ", name, " must be on x's device");
}

inline void check_hyper(int64_t stride, int64_t pad_left, int64_t pad_right, int64_t dilation) {
  STD_TORCH_CHECK(stride >= 1, "sepconv1d: stride must be >= 1, got ", stride);
  STD_TORCH_CHECK(dilation >= 1, "sepconv1d: dilation must be >= 1, got ", dilation);
  STD_TORCH_CHECK(pad_left >= 0 && pad_right >= 0, "sepconv1d: padding must be >= 0, got (",
                  pad_left, ", ", pad_right, ")");
}

// Checks x (B, C, L), weight (C, K) or (C, 1, K), bias (C) and the hyper-parameters; returns the geometry.
inline ConvGeometry check_depthwise(const Tensor& x, const Tensor& weight,
                                    const std::optional<Tensor>& bias, int64_t stride,
                                    int64_t pad_left, int64_t pad_right, int64_t dilation) {
  STD_TORCH_CHECK(x.dim() == 3, "sepconv1d: x must be 3-D (batch, channels, length), got ",
                  x.dim(), "-D");
  check_activation_dtype(x, "x");
  STD_TORCH_CHECK(weight.dim() == 2 || (weight.dim() == 3 && weight.size(1) == 1),
                  "sepconv1d: weight must have shape (channels, kernel_size) or "
                  "(channels, 1, kernel_size)");
  STD_TORCH_CHECK(weight.size(0) == x.size(1), "sepconv1d: weight has ", weight.size(0),
                  " channels but x has ", x.size(1));
  STD_TORCH_CHECK(weight.size(weight.dim() - 1) >= 1, "sepconv1d: kernel_size must be >= 1");
  check_weight_dtype(weight, x, "weight");
  check_same_device(weight, x, "weight");
  if (bias.has_value()) {
    STD_TORCH_CHECK(bias->dim() == 1 && bias->size(0) == x.size(1),
                    "sepconv1d: bias must have shape (channels,)");
    STD_TORCH_CHECK(bias->scalar_type() == weight.scalar_type(),
                    "sepconv1d: bias must have weight's dtype");
    check_same_device(*bias, x, "bias");
  }
  check_hyper(stride, pad_left, pad_right, dilation);
  ConvGeometry g;
  g.batch = x.size(0);
  g.channels = x.size(1);
  g.out_channels = x.size(1);
  g.length = x.size(2);
  g.kernel_size = weight.size(weight.dim() - 1);
  g.stride = stride;
  g.pad_left = pad_left;
  g.pad_right = pad_right;
  g.dilation = dilation;
  STD_TORCH_CHECK(g.length + pad_left + pad_right >= dilation * (g.kernel_size - 1) + 1,
                  "sepconv1d: padded length ", g.length + pad_left + pad_right,
                  " is shorter than the dilated kernel ", dilation * (g.kernel_size - 1) + 1);
  g.out_length = conv_out_length(g.length, g.kernel_size, stride, pad_left, pad_right, dilation);
  return g;
}

// Checks the separable op's arguments: the depthwise part plus pw_weight (Cout, Cin), pw_bias.
inline ConvGeometry check_separable(const Tensor& x, const Tensor& dw_weight,
                                    const std::optional<Tensor>& dw_bias, const Tensor& pw_weight,
                                    const std::optional<Tensor>& pw_bias, int64_t stride,
                                    int64_t pad_left, int64_t pad_right, int64_t dilation) {
  ConvGeometry g = check_depthwise(x, dw_weight, dw_bias, stride, pad_left, pad_right, dilation);
  STD_TORCH_CHECK((pw_weight.dim() == 2 || (pw_weight.dim() == 3 && pw_weight.size(2) == 1)) &&
                      pw_weight.size(1) == g.channels,
                  "sepconv1d: pw_weight must have shape (out_channels, in_channels=", g.channels,
                  ") or (out_channels, in_channels, 1)");
  STD_TORCH_CHECK(pw_weight.size(0) >= 1, "sepconv1d: out_channels must be >= 1");
  STD_TORCH_CHECK(pw_weight.scalar_type() == dw_weight.scalar_type(),
                  "sepconv1d: pw_weight must have dw_weight's dtype");
  check_same_device(pw_weight, x, "pw_weight");
  if (pw_bias.has_value()) {
    STD_TORCH_CHECK(pw_bias->dim() == 1 && pw_bias->size(0) == pw_weight.size(0),
                    "sepconv1d: pw_bias must have shape (out_channels,)");
    STD_TORCH_CHECK(pw_bias->scalar_type() == pw_weight.scalar_type(),
                    "sepconv1d: pw_bias must have pw_weight's dtype");
    check_same_device(*pw_bias, x, "pw_bias");
  }
  g.out_channels = pw_weight.size(0);
  return g;
}

// Checks grad_out against the forward geometry.
inline void check_grad_out(const Tensor& grad_out, const Tensor& x, const ConvGeometry& g) {
  STD_TORCH_CHECK(grad_out.dim() == 3 && grad_out.size(0) == g.batch &&
                      grad_out.size(1) == g.out_channels && grad_out.size(2) == g.out_length,
                  "sepconv1d: grad_out must have shape (", g.batch, ", ", g.out_channels, ", ",
                  g.out_length, ")");
  STD_TORCH_CHECK(grad_out.scalar_type() == x.scalar_type(),
                  "sepconv1d: grad_out must have x's dtype");
  check_same_device(grad_out, x, "grad_out");
}

}  // namespace sepconv1d
