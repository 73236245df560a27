// Copies between an activation and its phase rows (common/conv_params.h, PhaseSplit): a dilated,
// stride-1 depthwise convolution runs as the dilation-1 convolution of its d*B phase rows, which
// the fast kernels (register-direct, tensor-core, run-time K) take; dilated problems otherwise
// take the tile kernels' general path, which reads shared memory once per tap and output
// (QuartzNet's last block, K 87 dilation 2: most of a training step's time, csrc/NOTES.md).
//
// The copies are dtype-blind (elements moved as 2-, 4- or 8-byte words). A block walks one row's
// chunk of kPhaseChunk positions: the gather reads the activation d elements apart once per phase
// (the other phases' loads hit L1) and writes each phase row contiguously; the scatter writes the
// activation contiguously and reads d phase rows. Row lengths are below 2^30 (phase_split_applies),
// so positions are 32-bit; row offsets are 64-bit.
#pragma once

#include "cuda/cuda_utils.cuh"
#include "cuda/strided_view.h"

#include <algorithm>
#include <cstdint>

namespace sepconv1d {
namespace cuda {

struct PhaseCopy {
  char* act;              // activation (B, C, n), unit stride along L
  char* ph;               // phase rows (d*B, C, len), row p*B + b holds phase p of batch b
  int64_t asb, asc;       // activation byte strides
  int64_t psb, psc;       // phase rows' byte strides
  int64_t B, C;
  int n, len;             // activation length, phase row length
  int d, r;               // element i is phase (i + r) % d at position (i + r) / d
  int chunks;             // chunks of kPhaseChunk positions per row (phase rows: gather; else scatter)
};

constexpr int kPhaseThreads = 256;
constexpr int kPhasePer = 4;  // positions per thread and chunk
constexpr int kPhaseChunk = kPhaseThreads * kPhasePer;

// ph[p*B + b][c][m] = act[b][c][d*m + p - r], 0 where that index is outside [0, n); m < len.
template <typename E>
__global__ void __launch_bounds__(kPhaseThreads) phase_gather_kernel(const PhaseCopy a) {
  const int64_t units = a.B * a.C * a.chunks;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int64_t row = u / a.chunks;
    const int m0 = int(u - row * a.chunks) * kPhaseChunk + int(threadIdx.x);
    const int64_t b = row / a.C, c = row - b * a.C;
    const E* src = reinterpret_cast<const E*>(a.act + b * a.asb + c * a.asc);
    for (int p = 0; p < a.d; ++p) {
      E* dst = reinterpret_cast<E*>(a.ph + (p * a.B + b) * a.psb + c * a.psc);
      E v[kPhasePer];
#pragma unroll
      for (int i = 0; i < kPhasePer; ++i) {
        const int m = m0 + i * kPhaseThreads;
        const int j = a.d * m + p - a.r;
        v[i] = (m < a.len && j >= 0 && j < a.n) ? src[j] : E(0);
      }
#pragma unroll
      for (int i = 0; i < kPhasePer; ++i) {
        const int m = m0 + i * kPhaseThreads;
        if (m < a.len) dst[m] = v[i];
      }
    }
  }
}

// act[b][c][i] = ph[((i + r) % d)*B + b][c][(i + r) / d] for i < n.
template <typename E>
__global__ void __launch_bounds__(kPhaseThreads) phase_scatter_kernel(const PhaseCopy a) {
  const int64_t units = a.B * a.C * a.chunks;
  const int64_t phase_stride = a.B * a.psb;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int64_t row = u / a.chunks;
    const int i0 = int(u - row * a.chunks) * kPhaseChunk + int(threadIdx.x);
    const int64_t b = row / a.C, c = row - b * a.C;
    E* dst = reinterpret_cast<E*>(a.act + b * a.asb + c * a.asc);
    const char* src = a.ph + b * a.psb + c * a.psc;
    E v[kPhasePer];
#pragma unroll
    for (int k = 0; k < kPhasePer; ++k) {
      const int i = i0 + k * kPhaseThreads;
      if (i < a.n) {
        const int t = i + a.r;
        const int p = t % a.d;
        v[k] = reinterpret_cast<const E*>(src + p * phase_stride)[t / a.d];
      }
    }
#pragma unroll
    for (int k = 0; k < kPhasePer; ++k) {
      const int i = i0 + k * kPhaseThreads;
      if (i < a.n) dst[i] = v[k];
    }
  }
}

// Phase rows' pitch in elements: len rounded up to 16 bytes, so the kernels see aligned rows.
inline int64_t phase_row_pitch(int64_t len, int64_t elem_bytes) {
  const int64_t per = 16 / elem_bytes;
  return (len + per - 1) / per * per;
}

// Gather (act -> ph) or scatter (ph -> act). act: (B, C, n) with unit stride along L; ph: (d*B, C,
// len) with unit stride along L, of act's dtype.
inline void phase_copy(bool gather, const StridedView& act, const StridedView& ph, int64_t d,
                       int64_t r, cudaStream_t stream) {
  STD_TORCH_CHECK(act.dtype == ph.dtype && act.stride[2] == 1 && ph.stride[2] == 1 &&
                      ph.size[0] == d * act.size[0] && ph.size[1] == act.size[1],
                  "sepconv1d: internal: phase rows that do not match their activation");
  const int64_t e = dtype_bytes(act.dtype);
  PhaseCopy a{};
  a.act = static_cast<char*>(act.ptr);
  a.ph = static_cast<char*>(ph.ptr);
  a.asb = act.stride[0] * e;
  a.asc = act.stride[1] * e;
  a.psb = ph.stride[0] * e;
  a.psc = ph.stride[1] * e;
  a.B = act.size[0];
  a.C = act.size[1];
  a.n = static_cast<int>(act.size[2]);
  a.len = static_cast<int>(ph.size[2]);
  a.d = static_cast<int>(d);
  a.r = static_cast<int>(r);
  const int64_t walk = gather ? a.len : a.n;
  a.chunks = static_cast<int>((walk + kPhaseChunk - 1) / kPhaseChunk);
  const int64_t units = a.B * a.C * a.chunks;
  if (units == 0) return;
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>(units, int64_t{sm_count(act.device)} * 16));
  const auto launch = [&](auto word) {
    using E = decltype(word);
    if (gather) {
      phase_gather_kernel<E><<<blocks, kPhaseThreads, 0, stream>>>(a);
      check_launch("phase_gather_kernel");
    } else {
      phase_scatter_kernel<E><<<blocks, kPhaseThreads, 0, stream>>>(a);
      check_launch("phase_scatter_kernel");
    }
  };
  switch (e) {
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: STD_TORCH_CHECK(false, "sepconv1d: internal: phase rows of an unexpected dtype");
  }
}

}  // namespace cuda
}  // namespace sepconv1d
