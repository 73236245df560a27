// Register-direct channel-last depthwise backward without shared tiles: dx, dw partials and db
// partials in one pass (stride 1, dilation 1, compiled K, 16-byte-aligned positions of dy, x and
// dx, any padding). Torch-free, like depthwise_kernels.cuh; the path choice is backward() in
// depthwise_launch.cuh.
//
// Why: the CL tile backward (dw_bwd_cl_kernel) stages x and dy global -> registers -> fp32 shared
// memory -> registers behind block barriers and reaches 40-60% of copy bandwidth. Here each byte
// is loaded once into registers and used from there (the layout of the register-direct CL forward
// dw_fwd_cl_reg_kernel, whose load / store helpers this file reuses).
//
// Design. A thread owns one channel vector of NV = VB / sizeof(T) channels (c0 .. c0 + NV - 1)
// for the whole launch; its K*NV fp32 dw partials and NV fp32 db partials stay in registers
// across all its work items. A work item is TP consecutive positions p0 .. p0 + TP - 1 of one
// batch. The thread issues, before any compute, the loads of the R = TP + K - 1 dy rows at
// positions p0 + P - (K-1) + r and (when dw is wanted) of the R x rows at positions
// p0 - (K-1) + r, r < R (P = pad_left; rows outside [0, Lo) / [0, L) are zeros without a memory
// access, VB-byte loads through cl_reg_load), then computes
//   dw[k] += sum_t dy row t * x row (t + k),   db += sum_t dy row t      (t < TP, in t order),
//   dx[p0 + t] = sum_k w[k] * dy row (t + K-1-k)                 (t < TP; stored for 0 <= i < L),
// i.e. dx[i] = sum_k w[k] dy[i + P - k] and dw[k] = sum_j dy[j] x[j - P + k]. The dy rows of an
// item's dw/db sums are its first TP window rows (positions j in [p0 + P - (K-1), ... + TP)), so
// every register index is compile-time for every P: a run-time P only moves the window. The
// items of a batch are p0 = n*TP - S, n < ntiles, with the shift S = max(0, P - (K-1)) and
// ntiles = ceil(max(L + S, Lo + max(0, K-1-P)) / TP) (cl_bwd_reg_ntiles): their dx ranges tile
// [-S, ...) and their dw ranges tile [min(0, P - (K-1)), ...), so every dx position in [0, L) and
// every dy position in [0, Lo) is covered exactly once, for any padding (also P > K - 1).
//
// Block = CB channel vectors (consecutive lanes: each warp load / store moves min(CB, 32) x VB
// contiguous bytes of one position) x PB = kThreads / CB position slots, as in the CL forward
// (CB = the power of two >= ceil(C / NV), at most 128). Grid = channel groups x split; block
// (g, s) walks the items s*PB + slot, stepping split*PB. split: one wave of resident blocks
// (occupancy query; every block has the same work), at most ceil(work / PB), and at most 64 MiB
// of partials (split*(K+1)*C*4 bytes). End: the PB slots' partials are summed in slot order
// through shared memory (PB = 1, i.e. C >= 128*NV, writes them straight from registers) into
// part[(s*(K+1) + k)*C + c] (k = K: db), and dw_reduce_kernel sums the splits in order. No
// atomics: dw / db are bit-identical run to run.
//
// Register budget. Live at the start of an item: 2*R raw 32-bit row words (VB = 4), K*NV dw and NV
// db partials, ~25 for pointers, indices and the loop; the weights (K*NV) are read from shared
// memory (per block [K][CB*NV], filled once) after the dw part, when the x rows are dead, and
// half-type rows are converted to fp32 on use. VB = 4 bytes for every type (float: 1 channel,
// half types: 2): a warp access still covers 128 contiguous bytes, and each channel costs 2*K
// registers, so wider vectors would force shorter items, i.e. more halo re-reads ((K-1)/TP extra
// rows per item, L1 / L2 hits). TP and the __launch_bounds__ caps, from ptxas sm_90 (0 spills):
//   float K = 3, 4, 5: TP 16, <= 80 registers (6 blocks / 24 warps per SM); K = 9: TP 16, <= 96;
//   half  K = 3: TP 16, <= 80; K = 4: TP 16, <= 96; K = 5: TP 12, <= 96; K = 9: TP 8, <= 96
//   (5 blocks / 20 warps per SM; TP 16 needed 128 registers for K = 9, 12 spilled 24 bytes).
// At 20-24 warps per SM an SM has ~80-110 KB of loads in flight when its threads start items, and
// by estimate the arithmetic (2K + 1 FMAs / adds per channel and position, conversions, address
// increments) needs at most ~60% of the issue rate at copy bandwidth (half types, K = 9).
#pragma once

#include "cuda/depthwise_fwd_reg.cuh"

#ifndef DW_EMULATE
#include <cuda_runtime.h>
#endif

#include <map>
#include <mutex>
#include <tuple>

namespace sepconv1d {
namespace cuda {
namespace dwk {

template <typename T, int K_>
struct ClRegBwd {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "float, half or bfloat16 activations");
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int VB = 4;                    // bytes per row vector
  static constexpr int NV = int(VB / sizeof(T));  // channels per thread
  static constexpr int WPV = VB / 4;              // 32-bit words per row vector
  static constexpr int TP = !kHalf || K_ <= 4 ? 16 : (K_ <= 5 ? 12 : 8);  // positions per item
  static constexpr int R = TP + K_ - 1;           // dy (and x) rows per work item
  // Minimum blocks per SM for __launch_bounds__: register caps 80 (6) / 96 (5), see the top of
  // the file; also the wave size when the occupancy query is not available (emulator).
  static constexpr int kMinBlocks = (kHalf ? K_ >= 4 : K_ >= 9) ? 5 : 6;
};

// Shift S of the first item (see the top of the file); also used by the host.
template <int K_>
__host__ __device__ inline int64_t cl_bwd_reg_shift(int64_t pl) {
  return pl > K_ - 1 ? pl - (K_ - 1) : 0;
}

// Work items (position chunks of TP) per batch.
template <int K_, int TP>
inline int64_t cl_bwd_reg_ntiles(int64_t L, int64_t Lo, int64_t pl) {
  const int64_t s = cl_bwd_reg_shift<K_>(pl);
  const int64_t e = pl < K_ - 1 ? K_ - 1 - pl : 0;
  const int64_t span = L + s > Lo + e ? L + s : Lo + e;
  return (span + TP - 1) / TP;
}

// Returns v unchanged but opaque to the optimiser: the weights' shared-memory loads derived from
// it inside the item loop stay there instead of being hoisted out of the loop into registers.
DW_DEV int64_t cl_bwd_opaque(int64_t v) {
#ifndef DW_EMULATE
  asm volatile("" : "+l"(v));
#endif
  return v;
}

// Dynamic shared memory in floats: the block's weights [K][CB*NV] when dx is wanted, then the
// slot reduction [PB][K+1][CB*NV] when dw or db is wanted and PB > 1.
template <typename T, int K_>
inline int64_t cl_bwd_reg_smem_floats(int64_t cb, bool want_x, bool want_wb) {
  constexpr int NV = ClRegBwd<T, K_>::NV;
  const int64_t pb = kThreads / cb;
  return (want_x ? K_ * cb * NV : 0) + (want_wb && pb > 1 ? int64_t(kThreads) * (K_ + 1) * NV : 0);
}

// p.tile: CB, channel vectors per block (a power of two <= kThreads); p.ntiles: work items per
// batch (cl_bwd_reg_ntiles); p.work = B * p.ntiles; p.split: blocks per channel group (grid =
// ceil(ceil(C / NV) / CB) * split); p.part: [split][K+1][C] when dw or db is wanted. Dynamic
// shared memory: cl_bwd_reg_smem_floats.
template <typename T, typename W, int K_>
__global__ void __launch_bounds__(kThreads, ClRegBwd<T, K_>::kMinBlocks)
    dw_bwd_cl_reg_kernel(const BwdArgs<T, W> p) {
  using Cfg = ClRegBwd<T, K_>;
  constexpr int VB = Cfg::VB;
  constexpr int NV = Cfg::NV;
  constexpr int WPV = Cfg::WPV;
  constexpr int TP = Cfg::TP;
  constexpr int R = Cfg::R;
  const int cb = p.tile;
  const int pb = kThreads / cb;
  const int row = cb * NV;  // channels per block
  const int tid = int(threadIdx.x);
  const int cv = tid & (cb - 1);
  const int slot = tid / cb;
  const int64_t g = int64_t(blockIdx.x) / p.split;
  const int64_t sidx = int64_t(blockIdx.x) - g * p.split;
  const int64_t cbase = g * int64_t(row);  // first channel of the block
  const int64_t c0 = cbase + cv * NV;      // first channel of the thread
  // Channels of this thread's vector; 0 for the idle vectors of the last group (no early exit:
  // barriers follow).
  const int nch = c0 >= p.C ? 0 : (p.C - c0 < NV ? int(p.C - c0) : NV);
  const bool want_x = p.want_x;
  const bool want_w = p.want_w;
  const bool want_wb = p.want_w || p.want_b;

  float* ws = smem_base<float>();              // [K][row] weights (dx wanted)
  float* red = ws + (want_x ? K_ * row : 0);   // [PB][K+1][row] slot partials (PB > 1)
  if (want_x) {
    for (int o = tid; o < K_ * row; o += kThreads) {
      const int k = o / row;
      const int64_t c = cbase + (o - k * row);
      ws[o] = c < p.C ? float(in_cvt(p.w[c * K_ + k])) : 0.0f;
    }
    __syncthreads();
  }

  float pdw[K_][NV];
  float pdb[NV];
#pragma unroll
  for (int e = 0; e < NV; ++e) {
#pragma unroll
    for (int k = 0; k < K_; ++k) pdw[k][e] = 0.0f;
    pdb[e] = 0.0f;
  }

  auto item = [&](auto mode, int64_t p0, const T* dysrc, const T* xsrc, T* dxdst) {
    constexpr int MODE = decltype(mode)::value;
    const int64_t qy = p0 + p.pl - (K_ - 1);  // dy position of window row 0
    const int64_t qx = p0 - (K_ - 1);         // x position of window row 0
    // All loads of the item first (memory-level parallelism).
    uint32_t gr[R][WPV];
    uint32_t xr[R][WPV];
#pragma unroll
    for (int r = 0; r < R; ++r) cl_reg_load<T, VB, MODE>(dysrc, qy + r, p.Lo, p.dysl, nch, gr[r]);
    if (want_w) {
#pragma unroll
      for (int r = 0; r < R; ++r) cl_reg_load<T, VB, MODE>(xsrc, qx + r, p.L, p.xsl, nch, xr[r]);
    } else {  // dw not wanted: zero rows, the taps below stay branch-free
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int q = 0; q < WPV; ++q) xr[r][q] = 0u;
      }
    }
    // db and dw over the first TP dy rows, row by row (a fixed order per thread: deterministic);
    // x row r is dead after row t = r.
#pragma unroll
    for (int t = 0; t < TP; ++t) {
#pragma unroll
      for (int e = 0; e < NV; ++e) {
        const float gv = reg_elem<T, WPV>(gr[t], e);
        pdb[e] += gv;
#pragma unroll
        for (int k = 0; k < K_; ++k) {
          pdw[k][e] = dfma(gv, reg_elem<T, WPV>(xr[t + k], e), pdw[k][e]);
        }
      }
    }
    if (!want_x) return;
    // dx: the weights come from shared memory now (not held across the dw part, where the x
    // rows need the registers); dy row r is dead after position t = r.
    const float* wsp = ws + cl_bwd_opaque(int64_t(cv) * NV);
    float wr[K_][NV];
#pragma unroll
    for (int k = 0; k < K_; ++k) {
      if constexpr (NV == 2) {
        const float2 v = *reinterpret_cast<const float2*>(wsp + k * row);
        wr[k][0] = v.x;
        wr[k][1] = v.y;
      } else {
        wr[k][0] = wsp[k * row];
      }
    }
#pragma unroll
    for (int t = 0; t < TP; ++t) {
      float acc[NV];
#pragma unroll
      for (int e = 0; e < NV; ++e) {
        acc[e] = 0.0f;
#pragma unroll
        for (int k = 0; k < K_; ++k) {
          acc[e] = dfma(wr[k][e], reg_elem<T, WPV>(gr[t + K_ - 1 - k], e), acc[e]);
        }
      }
      const int64_t i = p0 + t;
      if (MODE == kClInterior || uint64_t(i) < uint64_t(p.L)) {
        DW_ASSERT(i >= 0 && i < p.L);
        cl_reg_store<T, VB, MODE>(dxdst + i * p.dxsl, acc, nch);
      }
    }
  };

  if (nch > 0) {
    const int64_t shift = cl_bwd_reg_shift<K_>(p.pl);
    const bool full = nch == NV;
    for (int64_t it = sidx * pb + slot; it < p.work; it += p.split * pb) {
      const int64_t b = udiv(it, p.ntiles);
      const int64_t p0 = (it - b * p.ntiles) * TP - shift;
      const T* dysrc = p.dy + b * p.dysb + c0;
      const T* xsrc = want_w ? p.x + b * p.xsb + c0 : nullptr;
      T* dxdst = want_x ? p.dx + b * p.dxsb + c0 : nullptr;
      // Interior: every dy row, x row and dx position inside the tensors (the x rows start
      // before p0 and end at p0 + TP - 1, so they cover the dx positions).
      const bool interior = p0 + p.pl - (K_ - 1) >= 0 && p0 + p.pl + TP <= p.Lo &&
                            p0 - (K_ - 1) >= 0 && p0 + TP <= p.L;
      if (!full) {
        item(IC<kClRagged>{}, p0, dysrc, xsrc, dxdst);
      } else if (interior) {
        item(IC<kClInterior>{}, p0, dysrc, xsrc, dxdst);
      } else {
        item(IC<kClEdge>{}, p0, dysrc, xsrc, dxdst);
      }
    }
  }

  if (!want_wb) return;  // uniform
  // This block's partial: the slot sums in slot order. Every tap slot is written (zero sums when
  // dw is not wanted: the x rows were zeros), like the tile kernel.
  if (pb == 1) {
#pragma unroll
    for (int e = 0; e < NV; ++e) {
      if (e < nch) {
#pragma unroll
        for (int k = 0; k <= K_; ++k) {
          p.part[(sidx * (K_ + 1) + k) * p.C + c0 + e] = k < K_ ? pdw[k < K_ ? k : 0][e] : pdb[e];
        }
      }
    }
    return;
  }
  // red[slot][k][cv*NV + e]: every thread writes its (K+1)*NV values (zeros for idle vectors).
#pragma unroll
  for (int k = 0; k <= K_; ++k) {
#pragma unroll
    for (int e = 0; e < NV; ++e) {
      red[(slot * (K_ + 1) + k) * row + cv * NV + e] = k < K_ ? pdw[k < K_ ? k : 0][e] : pdb[e];
    }
  }
  __syncthreads();
  for (int o = tid; o < (K_ + 1) * row; o += kThreads) {
    const int k = o / row;
    const int rem = o - k * row;
    if (cbase + rem < p.C) {
      float s = red[k * row + rem];
      for (int sl = 1; sl < pb; ++sl) s += red[(sl * (K_ + 1) + k) * row + rem];
      p.part[(sidx * (K_ + 1) + k) * p.C + cbase + rem] = s;
    }
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
