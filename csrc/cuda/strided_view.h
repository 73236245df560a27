// A 3-d strided view of a CUDA tensor's memory, made and sliced on the host without torch. The
// separable backward's batch chunks take a dozen views each (batch slices, channel ranges,
// transposes, matrix operands), and every torch view (from_blob, narrow, select, transpose) is a
// call through the stable ABI that costs host time on each training step; these are a few
// integer operations. A view never owns memory: the tensor it came from must outlive its use.
#pragma once

#include "cuda/cuda_utils.cuh"

#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <array>
#include <cstdint>

namespace sepconv1d {
namespace cuda {

inline int64_t dtype_bytes(torch::headeronly::ScalarType t) {
  using torch::headeronly::ScalarType;
  switch (t) {
    case ScalarType::Double: return 8;
    case ScalarType::Float: return 4;
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    case ScalarType::Byte: return 1;
    default: STD_TORCH_CHECK(false, "sepconv1d: unexpected dtype in a strided view");
  }
  return 0;
}

struct StridedView {
  void* ptr = nullptr;
  torch::headeronly::ScalarType dtype = torch::headeronly::ScalarType::Float;
  int device = 0;
  std::array<int64_t, 3> size{0, 0, 0};
  std::array<int64_t, 3> stride{0, 0, 0};  // in elements

  // A 3-d tensor, or a 2-d one as a batch of one (batch stride 0).
  static StridedView of(const torch::stable::Tensor& t) {
    StridedView v;
    v.ptr = const_cast<void*>(t.const_data_ptr());
    v.dtype = t.scalar_type();
    v.device = t.get_device_index();
    STD_TORCH_CHECK(t.dim() == 2 || t.dim() == 3, "sepconv1d: strided views are 2-d or 3-d");
    const int64_t first = t.dim() == 3 ? 0 : -1;
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t d = first + i;
      v.size[static_cast<size_t>(i)] = d < 0 ? 1 : t.size(d);
      v.stride[static_cast<size_t>(i)] = d < 0 ? 0 : t.stride(d);
    }
    return v;
  }

  int64_t numel() const { return size[0] * size[1] * size[2]; }

  // Indices [i0, i0 + n) of dimension dim.
  StridedView narrow(int dim, int64_t i0, int64_t n) const {
    StridedView v = *this;
    v.ptr = static_cast<char*>(ptr) + i0 * stride[static_cast<size_t>(dim)] * dtype_bytes(dtype);
    v.size[static_cast<size_t>(dim)] = n;
    return v;
  }
  StridedView batch(int64_t b0, int64_t n) const { return narrow(0, b0, n); }

  // Dimensions 1 and 2 swapped.
  StridedView transposed() const {
    StridedView v = *this;
    v.size = {size[0], size[2], size[1]};
    v.stride = {stride[0], stride[2], stride[1]};
    return v;
  }

  // The same memory with new sizes and strides, `offset` elements in.
  StridedView reshaped(int64_t offset, std::array<int64_t, 3> sizes,
                       std::array<int64_t, 3> strides) const {
    StridedView v = *this;
    v.ptr = static_cast<char*>(ptr) + offset * dtype_bytes(dtype);
    v.size = sizes;
    v.stride = strides;
    return v;
  }
};

// A torch tensor over a view's memory (torch's matmul fallback and rare copies only: each is a
// call through the stable ABI).
inline torch::stable::Tensor tensor_of(const StridedView& v) {
  return torch::stable::from_blob(v.ptr, {v.size[0], v.size[1], v.size[2]},
                                  {v.stride[0], v.stride[1], v.stride[2]}, cuda_device(v.device),
                                  v.dtype);
}

}  // namespace cuda
}  // namespace sepconv1d
