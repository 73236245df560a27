// Copies or fills a 2-d grid of contiguous byte rows (row (i0, i1) at base + i0 * s0 + i1 * s1),
// one kernel launch, in the widest unit (16, 8, 4 or 2 bytes) that every row start and length
// allows. The separable backward uses it where a torch call costs more host time than its work:
// the ones channels of h (narrow + fill_: ~13.5 us of host time, ~37 us inside a training step,
// against ~5 / ~7 us for a launch) and dy transposed to (Cout, B, L) on the short-rows branch
// (transpose + contiguous). A thread per unit; the flat index is split with 32-bit divisions when
// it fits, since the kernel is bound by memory and divisions are its only arithmetic.
#pragma once

#include "cuda/cuda_utils.cuh"
#include "cuda/strided_view.h"

#include <algorithm>
#include <cstdint>

namespace sepconv1d {
namespace cuda {

struct RowsParams {
  char* dst;
  const char* src;         // nullptr: fill with `pattern`
  int64_t n0, n1;          // rows: n0 x n1
  int64_t units;           // units per row
  int64_t ds0, ds1;        // dst row strides in bytes
  int64_t ss0, ss1;        // src row strides in bytes
  uint32_t pattern;        // fill: the unit's bytes, a 4-byte pattern repeated
  int narrow_index;        // n0 * n1 * units < 2^32: 32-bit index maths
};

template <typename U>
__device__ __forceinline__ U rows_fill_unit(uint32_t pattern) {
  if constexpr (sizeof(U) == 16) {
    return make_uint4(pattern, pattern, pattern, pattern);
  } else if constexpr (sizeof(U) == 8) {
    return make_uint2(pattern, pattern);
  } else if constexpr (sizeof(U) == 4) {
    return pattern;
  } else {
    return static_cast<uint16_t>(pattern);
  }
}

template <typename U>
__global__ void strided_rows_kernel(const RowsParams p) {
  const int64_t total = p.n0 * p.n1 * p.units;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t r, u, i0, i1;
    if (p.narrow_index) {
      const uint32_t i32 = static_cast<uint32_t>(i), up = static_cast<uint32_t>(p.units);
      const uint32_t r32 = i32 / up, n1 = static_cast<uint32_t>(p.n1);
      r = r32;
      u = i32 - r32 * up;
      i0 = r32 / n1;
      i1 = r32 - static_cast<uint32_t>(i0) * n1;
    } else {
      r = i / p.units;
      u = i - r * p.units;
      i0 = r / p.n1;
      i1 = r - i0 * p.n1;
    }
    U* d = reinterpret_cast<U*>(p.dst + i0 * p.ds0 + i1 * p.ds1) + u;
    if (p.src != nullptr) {
      *d = reinterpret_cast<const U*>(p.src + i0 * p.ss0 + i1 * p.ss1)[u];
    } else {
      *d = rows_fill_unit<U>(p.pattern);
    }
  }
}

// Rows of `row_bytes` bytes: dst (and src, unless filling) as base pointers and byte strides.
inline void launch_strided_rows(RowsParams p, int64_t row_bytes, cudaStream_t stream, int device) {
  if (p.n0 == 0 || p.n1 == 0 || row_bytes == 0) return;
  auto bits = [](int64_t v) { return static_cast<uint64_t>(v); };
  uint64_t align = bits(row_bytes) | reinterpret_cast<uintptr_t>(p.dst) | bits(p.ds0) | bits(p.ds1);
  if (p.src != nullptr) align |= reinterpret_cast<uintptr_t>(p.src) | bits(p.ss0) | bits(p.ss1);
  const int unit = (align & 15) == 0 ? 16 : (align & 7) == 0 ? 8 : (align & 3) == 0 ? 4 : 2;
  STD_TORCH_CHECK((align & 1) == 0, "sepconv1d: internal: strided rows of odd byte sizes");
  p.units = row_bytes / unit;
  const int64_t total = p.n0 * p.n1 * p.units;
  p.narrow_index = total < (int64_t{1} << 32) ? 1 : 0;
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((total + kThreads - 1) / kThreads, int64_t{sm_count(device)} * 16));
  switch (unit) {
    case 16: strided_rows_kernel<uint4><<<blocks, kThreads, 0, stream>>>(p); break;
    case 8: strided_rows_kernel<uint2><<<blocks, kThreads, 0, stream>>>(p); break;
    case 4: strided_rows_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(p); break;
    default: strided_rows_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(p); break;
  }
  check_launch("strided_rows_kernel");
}

// dst[i0, i1, :] = src[i0, i1, :] for 3-d views of one dtype whose last dimension is contiguous.
inline void copy_rows(const StridedView& dst, const StridedView& src, cudaStream_t stream) {
  STD_TORCH_CHECK(dst.dtype == src.dtype && dst.size == src.size && dst.stride[2] == 1 &&
                      src.stride[2] == 1,
                  "sepconv1d: internal: copy_rows needs matching views with contiguous rows");
  const int64_t e = dtype_bytes(dst.dtype);
  RowsParams p{};
  p.dst = static_cast<char*>(dst.ptr);
  p.src = static_cast<const char*>(src.ptr);
  p.n0 = dst.size[0];
  p.n1 = dst.size[1];
  p.ds0 = dst.stride[0] * e;
  p.ds1 = dst.stride[1] * e;
  p.ss0 = src.stride[0] * e;
  p.ss1 = src.stride[1] * e;
  launch_strided_rows(p, dst.size[2] * e, stream, dst.device);
}

// Every element of a 3-d view with a contiguous last dimension set to 1 (half, bfloat16, float).
inline void fill_ones(const StridedView& dst, cudaStream_t stream) {
  using torch::headeronly::ScalarType;
  STD_TORCH_CHECK(dst.stride[2] == 1, "sepconv1d: internal: fill_ones needs contiguous rows");
  uint32_t pattern = 0;
  switch (dst.dtype) {
    case ScalarType::Half: pattern = 0x3C003C00u; break;
    case ScalarType::BFloat16: pattern = 0x3F803F80u; break;
    case ScalarType::Float: pattern = 0x3F800000u; break;
    default: STD_TORCH_CHECK(false, "sepconv1d: internal: fill_ones of an unexpected dtype");
  }
  const int64_t e = dtype_bytes(dst.dtype);
  RowsParams p{};
  p.dst = static_cast<char*>(dst.ptr);
  p.n0 = dst.size[0];
  p.n1 = dst.size[1];
  p.ds0 = dst.stride[0] * e;
  p.ds1 = dst.stride[1] * e;
  p.pattern = pattern;
  launch_strided_rows(p, dst.size[2] * e, stream, dst.device);
}

}  // namespace cuda
}  // namespace sepconv1d
