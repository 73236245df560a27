// Register-direct channel-first depthwise backward: dx, and the dw / db partial sums, in one pass
// over dy and x without shared memory (stride 1, dilation 1, compiled K, compiled pad_left,
// rows of dy, x and dx co-aligned: 16-byte aligned, or all at the same shift off the 16-byte
// grid). Torch-free; the path choice is backward() in depthwise_launch.cuh.
//
// Why: the tile backward (dw_bwd_cf_kernel) stages both tiles global -> registers -> fp32 shared
// memory -> registers behind two block barriers; at 128 registers and ~60 KB of shared memory per
// block it runs 25% occupancy, keeps too few bytes in flight and reaches 49-62% of a copy for
// half types (Nsight Compute: issue 61% busy, DRAM 42%). Here, as in the register-direct forward
// (depthwise_fwd_reg.cuh), every byte of dy and x is loaded once into registers and the halos
// come from the neighbouring lanes by warp shuffles.
//
// Work item = one warp, SPAN = 32 * U vectors of NV = 16 / sizeof(T) consecutive positions
// e0 .. e0 + SPAN - 1 of one (b, c) row, for both roles of a position: as a dx output (i < L) and
// as a dy element (j < Lo) of the weight gradient. Lane l owns the vectors v0 + 32u + l (u < U).
//   dx[i]  = sum_k w[k] * dy[i + P - k]: the forward's window over dy with the kernel flipped,
//            i.e. halos of K - 1 - P elements on the left and P on the right (RegWindow<K-1-P>);
//   dw[k] += sum_j dy[j] * x[j - P + k]: the forward's window over x (RegWindow<P>) against the
//            lane's own dy vector; db += sum_j dy[j].
// dy outside [0, Lo) and x outside [0, L) load as zeros, so the ragged ends and the positions past
// one row's outputs add nothing to dw / db without a check; only dx stores are bounded (i < L).
//
// dw / db: fp32 partials in registers for all items of a warp; at the end fixed butterflies
// (warp_sum) and a fixed-order sum over the block's warps write part[split][k][c] (k = K: db),
// summed over the splits in order by dw_reduce_kernel. Blocks are (channel, split index); the
// warps of a block walk the items (b, position tile) of their channel, so a row's consecutive
// tiles go to consecutive warps. No atomics: dw / db are bit-identical run to run.
#pragma once

#include "cuda/depthwise_fwd_reg.cuh"

namespace sepconv1d {
namespace cuda {
namespace dwk {

// 16-byte vectors per lane and tensor per work item: with dy and x both in registers the item
// holds as many bytes in flight per lane as the forward's 4 (64 B per tensor ... 128 B in all).
// __launch_bounds__: 4 blocks of 128 threads (<= 128 registers) per SM.
constexpr int kRegVecsBwd = 4;
constexpr int kRegBwdMinBlocks = 4;

template <typename T>
constexpr int64_t reg_bwd_span() {
  return int64_t(32) * kRegVecsBwd * int64_t(16 / sizeof(T));
}

// p.ntiles: work items per row = ceil(max(L, Lo) / SPAN), ceil((max(L, Lo) + NV - 1) / SPAN) with
// kShift (rows off the 16-byte grid, dy, x and dx co-aligned: positions on dy's row grid, as in
// the forward); p.work = B * p.ntiles items per channel;
// p.split: blocks per channel (grid = C * split). p.part: [split][K + 1][C] when dw or db is wanted.
// kRealignX (with kShift): x rows at another shift than dy's and dx's (a slice x[..., 1:] with
// 'same' or causal pads): x loaded on its own grid and realigned to dy's in registers, as the
// forward's kRealign does.
template <typename T, typename W, int K_, int P, bool kShift, bool kRealignX = false>
__global__ void __launch_bounds__(kThreads, kRegBwdMinBlocks)
    dw_bwd_cf_reg_kernel(const BwdArgs<T, W> p) {
  static_assert(kShift || !kRealignX, "realigned rows are shifted rows");
  constexpr bool kCold = reg_cold_edges<T, K_, true, kRealignX>();
  using WinX = RegWindow<T, K_, P>;           // x around a dy vector (weight gradient)
  using WinD = RegWindow<T, K_, K_ - 1 - P>;  // dy around a dx vector (flipped kernel)
  constexpr int NV = WinX::NV;
  constexpr int U = kRegVecsBwd;
  constexpr int64_t SPAN = reg_bwd_span<T>();
  constexpr int64_t STEP = int64_t(32) * NV;
  const int lane = int(threadIdx.x) & 31;
  const int warp = int(threadIdx.x) >> 5;
  const int64_t c = int64_t(blockIdx.x) / p.split;
  const int64_t sidx = int64_t(blockIdx.x) - c * p.split;

  float wr[K_];
#pragma unroll
  for (int k = 0; k < K_; ++k) wr[k] = float(in_cvt(p.w[c * K_ + k]));
  float pdw[K_];
#pragma unroll
  for (int k = 0; k < K_; ++k) pdw[k] = 0.0f;
  float pdb = 0.0f;

  for (int64_t wi = sidx * kWarps + warp; wi < p.work; wi += p.split * kWarps) {
    const int64_t b = udiv(wi, p.ntiles);
    const T* dyrow = p.dy + b * p.dysb + c * p.dysc;
    const T* xrow = p.x + b * p.xsb + c * p.xsc;
    const int64_t e0 = (wi - b * p.ntiles) * SPAN - (kShift ? reg_row_shift(dyrow) : 0);
    const int64_t el = e0 + int64_t(lane) * NV;

    // All loads of the item first; checks only near the row ends (warp-uniform tests).
    uint32_t dyr[U][4];
    uint32_t dedge[4] = {0u, 0u, 0u, 0u};
    uint32_t xr[U][4] = {};
    uint32_t xedge[4] = {0u, 0u, 0u, 0u};
    auto load_dy = [&](bool checked) {
#pragma unroll
      for (int u = 0; u < U; ++u) reg_load<T, kShift, kCold>(dyrow, el + u * STEP, p.Lo, checked, dyr[u]);
      if (p.want_x) {
        if (lane >= 32 - WinD::HL) {
          reg_load<T, kShift, kCold>(dyrow, el - STEP, p.Lo, checked, dedge);
        } else if (lane < WinD::HR) {
          reg_load<T, kShift, kCold>(dyrow, el + SPAN, p.Lo, checked, dedge);
        }
      }
    };
    // kRealignX: x d elements earlier on its own grid, one more lane loading step U.
    const int d = kRealignX ? (row_shift(xrow) - row_shift(dyrow)) & (NV - 1) : 0;
    constexpr int HRX = kRealignX ? WinX::HR + 1 : WinX::HR;
    auto load_x = [&](bool checked) {
#pragma unroll
      for (int u = 0; u < U; ++u) reg_load<T, kShift, kCold>(xrow, el - d + u * STEP, p.L, checked, xr[u]);
      if (lane >= 32 - WinX::HL) {
        reg_load<T, kShift, kCold>(xrow, el - d - STEP, p.L, checked, xedge);
      } else if (lane < HRX) {
        reg_load<T, kShift, kCold>(xrow, el - d + SPAN, p.L, checked, xedge);
      }
    };
    if (e0 - WinD::HL * NV >= 0 && e0 + SPAN + WinD::HR * NV <= p.Lo) {
      load_dy(false);
    } else {
      load_dy(true);
    }
    if (p.want_w) {
      if (e0 - d - WinX::HL * NV >= 0 && e0 - d + SPAN + HRX * NV <= p.L) {
        load_x(false);
      } else {
        load_x(true);
      }
      if constexpr (kRealignX) reg_realign<T, U>(xr, xedge, d, lane);
    }
    // Warp-uniform: every dx store a whole vector.
    const bool full_item = (!kShift || e0 >= 0) && e0 + SPAN <= p.L;
    T* dxrow = p.want_x ? p.dx + b * p.dxsb + c * p.dxsc : nullptr;

#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (p.want_w || p.want_b) {
#pragma unroll
        for (int e = 0; e < NV; ++e) pdb += reg_elem<T, 4>(dyr[u], e);
      }
      if (p.want_w) {
        float xf[WinX::NVEC * NV];
        reg_window<T, WinX, U>(xr, xedge, u, lane, xf);
#pragma unroll
        for (int k = 0; k < K_; ++k) {
#pragma unroll
          for (int e = 0; e < NV; ++e) {
            pdw[k] = dfma(reg_elem<T, 4>(dyr[u], e), xf[WinX::HL * NV + e - P + k], pdw[k]);
          }
        }
      }
      if (p.want_x) {
        float df[WinD::NVEC * NV];
        reg_window<T, WinD, U>(dyr, dedge, u, lane, df);
        float acc[NV];
#pragma unroll
        for (int e = 0; e < NV; ++e) acc[e] = 0.0f;
#pragma unroll
        for (int k = 0; k < K_; ++k) {
#pragma unroll
          for (int e = 0; e < NV; ++e) {
            acc[e] = dfma(wr[k], df[WinD::HL * NV + e + P - k], acc[e]);
          }
        }
        const int64_t i = el + u * STEP;
        if (full_item) {
          cf_store_full<T>(dxrow + i, acc);
        } else {
          reg_store_checked<T, kShift, kCold>(dxrow, i, p.L, acc);
        }
      }
    }
  }

  if (!p.want_w && !p.want_b) return;  // uniform: no barrier follows
  __shared__ float red[kWarps][K_ + 1];
#pragma unroll
  for (int k = 0; k < K_; ++k) pdw[k] = warp_sum(pdw[k]);
  pdb = warp_sum(pdb);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < K_; ++k) red[warp][k] = pdw[k];
    red[warp][K_] = pdb;
  }
  __syncthreads();
  const int t = int(threadIdx.x);
  if (t <= K_) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[w][t];
    p.part[(sidx * (K_ + 1) + t) * p.C + c] = s;
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
