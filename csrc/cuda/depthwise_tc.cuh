// Tensor-core channel-first depthwise forward and backward for half types and long kernels
// (run-time K, stride 1, dilation 1, any padding, unit-stride rows of any alignment). Torch-free;
// the path choice is forward() / backward() in depthwise_launch.cuh.
//
// Why: with K taps every output costs K fp32 FMAs on the CUDA cores. At K = 31 / 63 that is
// 4.2 / 8.5 G FMAs for B32 C512 L8192: 125 / 255 us at the H200's fp32 rate, while a bf16 copy of
// the bytes takes ~130 us, so no CUDA-core kernel reaches the copy ceiling (the tile kernel ran
// 37% / 24%). On the tensor cores the convolution of one row is a block-Toeplitz product:
//
//   write the outputs of a tile as Y[a][n] = y[j0 + 8a + n] (n < 8) and the staged x as
//   xs[e] = x[g0 + e], g0 = floor_8(j0 - pl), o = j0 - pl - g0 (the same for every tile). Then
//     Y[a][n] = sum_{s < S} sum_{r < 16} xs[8(a + 2s) + r] * Bs[r][n],  Bs[r][n] = w[16s + r - n - o]
//   (zero outside [0, K)), S = ceil((K + 7 + o) / 16). Each (16 x 16) A operand of shift s is 16
//   consecutive 8-element rows of xs starting at row a + 2s: ldmatrix reads it straight from the
//   staged row (16-byte rows, conflict-free), and the (16 x 8) B operands are built once per row
//   from the channel's weights in registers. One m16n8k16 MMA per 128 outputs and shift.
//
// Precision: x and the products are exact (half x half -> fp32), accumulation in fp32 on the
// tensor cores (the sum order differs from the CUDA-core kernels: not bit-equal to them). fp32
// weights under half x are split into hi + lo halves (two MMAs per shift), which keeps ~16
// mantissa bits of every weight, far below the half output's rounding.
//
// Forward block = 4 warps over tiles of p.tile outputs (a multiple of 512, at most 4096) of one
// (b, c) row. The x rows of a tile are copied by cp.async into one of two shared buffers (zeros
// outside [0, L)) while the previous tile is computed; each warp takes the m16 blocks (128
// outputs) m = warp, warp + 4, ... and stores its accumulators as pairs. Rows need not be 16-byte
// aligned: the copies and stores take the alignment of each tensor's rows (TcAlign, set per
// launch), the shared layout is the same for all. Each block walks a
// contiguous run of tiles in channel-major order (the B fragments change with the channel only).
// The shift count S is a template parameter: the inner loop is S x (ldmatrix, MMA), no predicates.
// Measured history (bf16 K = 31 / 63 forward 50 -> 74% / 48 -> 68% of copy): csrc/NOTES.md.
//
// Backward (dw_bwd_cf_tc_kernel), one pass over dy and x per tile of positions:
//   dx is the same product over the staged dy with the kernel flipped (pad K - 1 - pl);
//   dw[k] = sum_j dy[j] x[j - pl + k]: with DY[a][n] = dy[p0 + 8a + n] and X[a][t] =
//   x[gx0 + 8a + t] (gx0 = floor_8(p0 - pl), ox = p0 - pl - gx0) the (t x n) matrix
//   D = X^T DY summed over all rows a of the channel gives dw[k] = sum_n D[n + k + ox][n]. X^T and
//   DY are both read by ldmatrix.trans from the staged rows (the MMA's reduction runs over
//   positions), D stays in fp32 accumulators for all tiles of the block, and the diagonal sums are
//   taken once at the end (fixed order: dw / db bit-identical run to run).
// Its 2-byte rows (odd element offsets) are copied as whole 16-byte units into a raw area and
// realigned in shared memory after the wait (tc_stage_units / tc_realign): asynchronous like the
// aligned rows' copies, where the forward loads them element by element (the units measured no
// faster there: csrc/NOTES.md, sixty-fifth session).
#pragma once

#include "cuda/depthwise_fwd_reg.cuh"

#ifndef DW_EMULATE
#include "cuda/separable_ptx.cuh"
#endif

namespace sepconv1d {
namespace cuda {
namespace dwk {

// ---- ldmatrix / mma.sync (sm_80+), with host versions for the emulator -------------------------
#ifndef DW_EMULATE
DW_DEV void tc_ldmatrix_x4(uint32_t (&r)[4], const void* p) { sep::ldmatrix_x4(r, p); }
DW_DEV void tc_ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { sep::ldmatrix_x4_trans(r, p); }
template <typename T>
DW_DEV void tc_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  sep::mma_16816<T>(d, a, b);
}
#else
// Lane l gives the address of row (l & 7) of matrix (l >> 3); lane (g, q) = (l / 4, l % 4) gets
// row g, columns 2q, 2q + 1 of each matrix, or with trans rows 2q, 2q + 1 of column g.
inline void tc_ldmatrix_impl(uint32_t (&r)[4], const void* p, bool trans) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(p) % 16 == 0);
  const uint64_t u = uint64_t(reinterpret_cast<uintptr_t>(p));
  const uint32_t mine[2] = {uint32_t(u), uint32_t(u >> 32)};
  uint32_t all[32][2];
  dwemu::warp_gather<2>(mine, all);
  auto row = [&](unsigned src) {
    return reinterpret_cast<const char*>(uintptr_t((uint64_t(all[src][1]) << 32) | all[src][0]));
  };
  const unsigned l = threadIdx.x & 31u;
  const unsigned g = l >> 2, q = l & 3;
  for (unsigned i = 0; i < 4; ++i) {
    if (!trans) {
      std::memcpy(&r[i], row(8 * i + g) + 4 * q, 4);
    } else {
      uint16_t lo, hi;
      std::memcpy(&lo, row(8 * i + 2 * q) + 2 * g, 2);
      std::memcpy(&hi, row(8 * i + 2 * q + 1) + 2 * g, 2);
      r[i] = uint32_t(lo) | (uint32_t(hi) << 16);
    }
  }
}
inline void tc_ldmatrix_x4(uint32_t (&r)[4], const void* p) { tc_ldmatrix_impl(r, p, false); }
inline void tc_ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { tc_ldmatrix_impl(r, p, true); }
template <typename T>
inline void tc_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  uint32_t A[32][4], B[32][2];
  dwemu::warp_gather<4>(a, A);
  dwemu::warp_gather<2>(b, B);
  auto elem = [](uint32_t word, int half) {
    float lo, hi;
    unpack2<T>(word, lo, hi);
    return double(half ? hi : lo);
  };
  // a_i: row g + 8 (i & 1), columns 2q + 8 (i >> 1) + {0, 1}; b_i: rows 2q + 8 i + {0, 1},
  // column g; c_i: row g + 8 (i >> 1), column 2q + (i & 1).
  auto Aat = [&](int r, int k) { return elem(A[(r % 8) * 4 + (k % 8) / 2][(r / 8) + 2 * (k / 8)], k & 1); };
  auto Bat = [&](int k, int c) { return elem(B[c * 4 + (k % 8) / 2][k / 8], k & 1); };
  const int l = int(threadIdx.x & 31u);
  const int g = l >> 2, q = l & 3;
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i >> 1), c = 2 * q + (i & 1);
    double s = 0.0;
    for (int k = 0; k < 16; ++k) s += Aat(r, k) * Bat(k, c);
    d[i] = float(double(d[i]) + s);
  }
}
#endif

constexpr int kTcMaxShifts = 8;   // K + 14 <= 128: K <= 114 (QuartzNet's longest is 87)
constexpr int kTcBlockOut = 512;  // outputs per pass of the block (4 warps x 128)
constexpr int kTcMaxTile = 4096;  // forward outputs per tile: 8.5 KB of x staged per block
constexpr int kTcMaxTileBwd = 2048;  // backward positions per tile (dy and x staged)

inline constexpr int tc_max_k() { return 16 * kTcMaxShifts - 14; }

// Calls f(IC<S>{}) for the shift count S in [1, kTcMaxShifts].
template <typename F>
void with_tc_shifts(int S, F&& f) {
  switch (S) {
    case 1: f(IC<1>{}); break;
    case 2: f(IC<2>{}); break;
    case 3: f(IC<3>{}); break;
    case 4: f(IC<4>{}); break;
    case 5: f(IC<5>{}); break;
    case 6: f(IC<6>{}); break;
    case 7: f(IC<7>{}); break;
    default: f(IC<8>{}); break;
  }
}

// Rows of 8 elements a product over `tile` outputs reads: rows a + 2s + h, a < tile / 8, s < S, h < 2.
inline constexpr int64_t tc_rows(int64_t tile, int shifts) { return tile / 8 + 2 * shifts - 1; }

// Most rows of dy a backward tile may stage (pads far beyond the kernel span take the tile kernel).
constexpr int kTcBwdMaxRows = int(tc_rows(kTcMaxTileBwd, kTcMaxShifts)) + 128;

// Alignment in bytes (16, 8, 4 or 2: cf_row_granule in depthwise_launch.cuh) of the rows a
// tensor-core kernel stages or stores, per tensor. Set once per launch, so branches on it are
// uniform; the shared layout (16-byte rows of 8 elements) is the same for every alignment.
struct TcAlign {
  int x = 16;    // x rows (forward; backward when dw is wanted)
  int dy = 16;   // dy rows (backward)
  int out = 16;  // y (forward) / dx (backward) rows: element pairs stored where >= 4
  int units = 0;  // backward: staged rows of alignment <= units (and < 16) go in whole 16-byte
                  // units (tc_stage_units, then tc_realign); 0: never (Tuning::tc_units)
  constexpr bool by_units(int gran) const { return gran < 16 && gran <= units; }
};

// 16-byte shared store of four words (the element-wise staging).
DW_DEV void tc_st_shared16(void* smem, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#ifdef DW_EMULATE
  DW_ASSERT(reinterpret_cast<uintptr_t>(smem) % 16 == 0);
  const uint32_t w[4] = {a, b, c, d};
  std::memcpy(smem, w, 16);
  g_tc_emu_staged[2] += 1;
#else
  *reinterpret_cast<uint4*>(smem) = make_uint4(a, b, c, d);
#endif
}

// Rows 8- or 4-byte aligned (BYTES): copies of E = BYTES / 2 elements, 8 / E per shared row,
// spread over the threads so that a warp reads 32 consecutive copies. A copy starts at a multiple
// of E, as 0 does: it lies wholly before the row or starts inside it (ragged at len: the rest
// zero-filled). The loops stay rolled: unrolled (as the 16-byte ones are), they cost the backward
// up to 17 registers and a block per SM on aligned rows too.
template <int BYTES, typename T>
DW_DEV void tc_stage_narrow(T* dst, const T* row, int64_t g0, int64_t len, int nrows) {
  constexpr int E = BYTES / int(sizeof(T));
  const int t = int(threadIdx.x);
  const int n = nrows * (8 / E);
  if (g0 >= 0 && g0 + int64_t(nrows) * 8 <= len) {  // interior: no checks, pointer steps
    const T* src = row + g0 + t * E;
    T* d = dst + t * E;
#pragma unroll 1
    for (int u = t; u < n; u += kThreads, src += kThreads * E, d += kThreads * E) {
      dw_cp_async<BYTES>(d, src, BYTES);
    }
    return;
  }
#pragma unroll 1
  for (int u = t; u < n; u += kThreads) {
    const int64_t e = g0 + int64_t(u) * E;
    const int64_t m = e < 0 ? 0 : (len - e < E ? (len - e > 0 ? len - e : 0) : E);
    dw_cp_async<BYTES>(dst + int64_t(u) * E, m > 0 ? row + e : row, int(m) * int(sizeof(T)));
  }
}

// Rows at odd element offsets (2-byte aligned): cp.async has no 2-byte form, so each thread loads
// a shared row's 8 elements (zeros outside [0, len)) and stores them at once. Synchronous: these
// tiles are not in flight during the previous tile's products.
template <typename T>
DW_DEV void tc_stage_elems(T* dst, const T* row, int64_t g0, int64_t len, int nrows) {
  const unsigned short* src = reinterpret_cast<const unsigned short*>(row);
  for (int v = int(threadIdx.x); v < nrows; v += kThreads) {
    const int64_t e = g0 + int64_t(v) * 8;
    uint32_t h[8];
    if (e >= 0 && e + 8 <= len) {
#pragma unroll
      for (int i = 0; i < 8; ++i) h[i] = __ldg(src + e + i);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) h[i] = (e + i >= 0 && e + i < len) ? __ldg(src + e + i) : 0u;
    }
    tc_st_shared16(dst + int64_t(v) * 8, h[0] | (h[1] << 16), h[2] | (h[3] << 16),
                   h[4] | (h[5] << 16), h[6] | (h[7] << 16));
  }
}

// Rows not 16-byte aligned, in whole 16-byte units (TcAlign::by_units): the copies of shared rows
// [0, nrows) of 8 elements from element g0 (a multiple of 8) land as nrows + 1 raw units, unit i
// holding elements [g0 - m + 8i, + 8) of the row, m = the row's misalignment in elements (g0 keeps
// it). tc_realign then builds each shared row from two neighbouring units. One asynchronous 16-byte
// copy per unit replaces eight 2-byte loads (tc_stage_elems) or two to four narrow copies. Units
// outside [0, len) are zero-filled and the one across len copies only the row's bytes; the one
// across 0 is copied whole (the 16-byte unit of the row's first element, so inside the
// allocation), and tc_realign clears its cells before 0.
template <typename T>
DW_DEV void tc_stage_units(T* raw, const T* row, int64_t g0, int64_t len, int nrows) {
  static_assert(sizeof(T) == 2, "8 elements per 16-byte unit");
  const int64_t u0 = g0 - row_shift(row);  // element of the first unit's first cell
  const T* base = row + u0;                     // 16-byte aligned (an empty copy's source too)
  const int t = int(threadIdx.x);
  if (u0 >= 0 && u0 + int64_t(nrows + 1) * 8 <= len) {  // interior: no checks, pointer steps
    const T* src = base + t * 8;
    T* d = raw + t * 8;
    for (int v = t; v <= nrows; v += kThreads, src += kThreads * 8, d += kThreads * 8) {
      dw_cp_async<16>(d, src, 16);
    }
    return;
  }
  for (int v = t; v <= nrows; v += kThreads) {
    const int64_t e = u0 + int64_t(v) * 8;
    const int64_t n = (e >= len || e + 8 <= 0) ? 0 : (len - e < 8 ? len - e : 8);
    dw_cp_async<16>(raw + int64_t(v) * 8, n > 0 ? base + int64_t(v) * 8 : base, int(n) * 2);
  }
}

// Shared rows [0, nrows) from the raw units of tc_stage_units (same row, g0, nrows): row v is cells
// m.. of unit v and the first m of unit v + 1, cells before the row's element 0 cleared.
template <typename T>
DW_DEV void tc_realign(T* dst, const T* raw, const T* row, int64_t g0, int nrows) {
  const int m = row_shift(row);
  for (int v = int(threadIdx.x); v < nrows; v += kThreads) {
    const uint4 a = *reinterpret_cast<const uint4*>(raw + int64_t(v) * 8);
    const uint4 b = *reinterpret_cast<const uint4*>(raw + int64_t(v) * 8 + 8);
    uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    // Words m / 2 .. m / 2 + 4 to the front (m is uniform: no divergence), then the half-word.
    if (m & 4) {
#pragma unroll
      for (int i = 0; i < 6; ++i) w[i] = w[i + 2];
    }
    if (m & 2) {
#pragma unroll
      for (int i = 0; i < 5; ++i) w[i] = w[i + 1];
    }
    uint32_t o[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) o[j] = (m & 1) ? ((w[j] >> 16) | (w[j + 1] << 16)) : w[j];
    const int64_t before = -(g0 + int64_t(v) * 8);  // cells of the row before element 0
    if (before > 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (2 * j + 1 < before) {
          o[j] = 0u;
        } else if (2 * j < before) {
          o[j] &= 0xffff0000u;
        }
      }
    }
    tc_st_shared16(dst + int64_t(v) * 8, o[0], o[1], o[2], o[3]);
#ifdef DW_EMULATE
    g_tc_emu_realigned += 1;
#endif
  }
}

// Issues the copies of rows [0, nrows) of 8 elements starting at element g0 (a multiple of 8) of
// a unit-stride row of length len into shared memory, zeros outside [0, len) (a row is wholly
// before 0, inside, ragged at len, or after). gran: the row's alignment in bytes (TcAlign); 16:
// one 16-byte copy per shared row.
template <typename T>
DW_DEV void tc_stage(T* dst, const T* row, int64_t g0, int64_t len, int nrows, int gran) {
  if (gran == 8) {
    tc_stage_narrow<8>(dst, row, g0, len, nrows);
    return;
  }
  if (gran == 4) {
    tc_stage_narrow<4>(dst, row, g0, len, nrows);
    return;
  }
  if (gran == 2) {
    tc_stage_elems(dst, row, g0, len, nrows);
    return;
  }
  const int t = int(threadIdx.x);
  if (g0 >= 0 && g0 + int64_t(nrows) * 8 <= len) {  // interior: no checks, pointer steps
    const T* src = row + g0 + t * 8;
    T* d = dst + t * 8;
    for (int v = t; v < nrows; v += kThreads, src += kThreads * 8, d += kThreads * 8) {
      dw_cp_async<16>(d, src, 16);
    }
    return;
  }
  for (int v = t; v < nrows; v += kThreads) {
    const int64_t e = g0 + int64_t(v) * 8;
    const int64_t n = e < 0 ? 0 : (len - e < 8 ? (len - e > 0 ? len - e : 0) : 8);
    dw_cp_async<16>(dst + int64_t(v) * 8, n > 0 ? row + e : row, int(n) * 2);
  }
}

// B fragments of the row convolution out[j0 + 8a + n] = sum_s A_s B_s over staged rows with
// offset o: Bs[r][n] = w[16s + r - n - o] (flip: w[K - 1 - (16s + r - n - o)]), zero outside
// [0, K). Lane (g, q) holds rows r = 2q + {0, 1} and 2q + 8 + {0, 1} of column n = g. fp32
// weights of half x are split into hi + lo halves.
template <typename T, typename W, int S>
struct TcConvB {
  static constexpr bool kSplit = !std::is_same_v<W, T>;
  uint32_t hi[S][2];
  uint32_t lo[kSplit ? S : 1][2];
  // Shifts s >= ns (<= S) are zero.
  DW_DEV void build(const W* wc, int K, int ns, int o, bool flip, int g, int q) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      float wv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = 2 * q + (e & 1) + 8 * (e >> 1);
        const int k = 16 * s + r - g - o;
        wv[e] = (s < ns && k >= 0 && k < K) ? float(in_cvt(wc[flip ? K - 1 - k : k])) : 0.0f;
      }
      hi[s][0] = pack2<T>(wv[0], wv[1]);
      hi[s][1] = pack2<T>(wv[2], wv[3]);
      if constexpr (kSplit) {
        float h[4];
        unpack2<T>(hi[s][0], h[0], h[1]);
        unpack2<T>(hi[s][1], h[2], h[3]);
        lo[s][0] = pack2<T>(wv[0] - h[0], wv[1] - h[1]);
        lo[s][1] = pack2<T>(wv[2] - h[2], wv[3] - h[3]);
      }
    }
  }
};

// The row convolution over one staged tile, the warp's m16 blocks m = warp, warp + 4, ... (128
// outputs each, out[j0 + 128m ..]) from the staged rows src (row 0 = element g0 of the input):
// accumulators start at init and are stored where j < len, as element pairs when `pairs` (out's
// rows 4-byte aligned), else one element at a time. Per block and shift: one ldmatrix, one MMA
// (two for split weights); the lane's addresses advance by constants.
template <typename T, typename W, int S>
DW_DEV void tc_conv_tile(const T* src, int nblk, const TcConvB<T, W, S>& bf, float init,
                         T* out, int64_t j0, int64_t len, bool pairs, int lane, int warp) {
  // ldmatrix row of the lane: matrix mi = lane >> 3, row lane & 7 -> A row a = 16m + (lane & 7) +
  // 8 (mi & 1), k half h = mi >> 1: staged row a + 2s + h (8 elements per row).
  const T* a_lane = src + ((lane & 7) + 8 * ((lane >> 3) & 1) + (lane >> 4) + 16 * warp) * 8;
  // c_i: row g + 8 (i >> 1), column 2q + (i & 1): outputs 128m + 8g + 2q (+ 1) and + 64.
  const int o_lane = 8 * (lane >> 2) + 2 * (lane & 3);
  T* o_ptr = out + j0 + 128 * warp + o_lane;
  const int64_t nvalid = len - j0;  // outputs of the tile inside the row
  for (int m = warp; m < nblk; m += kWarps, a_lane += kWarps * 128, o_ptr += kWarps * 128) {
    const int rel = 128 * m;
    if (rel >= nvalid) break;  // warp-uniform
    float acc[4] = {init, init, init, init};
#pragma unroll
    for (int s = 0; s < S; ++s) {
      uint32_t a[4];
      tc_ldmatrix_x4(a, a_lane + 16 * s);
      tc_mma<T>(acc, a, bf.hi[s]);
      if constexpr (TcConvB<T, W, S>::kSplit) tc_mma<T>(acc, a, bf.lo[s]);
    }
    const bool full = rel + 128 <= nvalid;  // warp-uniform
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int jr = rel + o_lane + 64 * h;  // relative to j0
      T* q = o_ptr + 64 * h;
      if (pairs && (full || jr + 1 < nvalid)) {
        const uint32_t u = pack2<T>(acc[2 * h], acc[2 * h + 1]);
#ifdef DW_EMULATE
        DW_ASSERT(reinterpret_cast<uintptr_t>(q) % 4 == 0);
        std::memcpy(q, &u, 4);
        g_tc_emu_stored[4] += 2;
#else
        *reinterpret_cast<uint32_t*>(q) = u;
#endif
      } else {  // the row's last element, or rows at odd element offsets
        if (full || jr < nvalid) q[0] = out_cvt<T>(acc[2 * h]);
        if (full || jr + 1 < nvalid) q[1] = out_cvt<T>(acc[2 * h + 1]);
#ifdef DW_EMULATE
        g_tc_emu_stored[2] += int(full || jr < nvalid) + int(full || jr + 1 < nvalid);
#endif
      }
    }
  }
}

// Forward blocks per SM (__launch_bounds__; the grid is one wave of them): 64 registers, 80 with
// the hi / lo weight halves (no spills).
template <typename T, typename W>
constexpr int tc_fwd_min_blocks() {
  return std::is_same_v<W, T> ? 8 : 6;
}

// S: shifts (compiled, 1 .. kTcMaxShifts). p.tile: outputs per tile (multiple of kTcBlockOut);
// p.ntiles = ceil(Lo / tile); p.total = B * C * ntiles, walked channel-major; p.off: o = (-pl)
// mod 8; p.nsm: staged rows (tc_rows).
template <typename T, typename W, int S>
__global__ void __launch_bounds__(kThreads, tc_fwd_min_blocks<T, W>())
    dw_fwd_cf_tc_kernel(const FwdArgs<T, W> p, const TcAlign al) {
  static_assert(sizeof(T) == 2, "half types only");
  T* xs = smem_base<T>();
  const int lane = int(threadIdx.x) & 31;
  const int warp = int(threadIdx.x) >> 5;
  int64_t cur_c = -1;
  TcConvB<T, W, S> bf;
  float bias = 0.0f;
  // Each block takes a contiguous run of tiles, so that consecutive tiles mostly share the channel
  // (B fragments built once per run of the channel).
  const int64_t per = (p.total + gridDim.x - 1) / gridDim.x;
  const int64_t first = int64_t(blockIdx.x) * per;
  const int64_t end = first + per < p.total ? first + per : p.total;
  // Tiles in channel-major order (c, b, tile), so that a run of tiles mostly shares the channel.
  auto locate = [&](int64_t item, int64_t& c, int64_t& b, int64_t& j0) {
    const int64_t row = udiv(item, p.ntiles);  // c * B + b
    j0 = (item - row * p.ntiles) * p.tile;
    c = udiv(row, p.B);
    b = row - c * p.B;
  };
  // Two staging buffers: the copies of the next tile fly while this one is computed.
  auto stage = [&](int64_t item, T* dst) {
    int64_t c, b, j0;
    locate(item, c, b, j0);
    tc_stage<T>(dst, p.x + b * p.xsb + c * p.xsc, j0 - p.pl - p.off, p.L, p.nsm, al.x);
  };
  if (first < end) stage(first, xs);
  dw_cp_commit();
  for (int64_t item = first; item < end; ++item) {
    int64_t c, b, j0;
    locate(item, c, b, j0);
    T* cur = xs + ((item - first) & 1) * int64_t(p.nsm) * 8;
    if (item + 1 < end) stage(item + 1, xs + ((item + 1 - first) & 1) * int64_t(p.nsm) * 8);
    dw_cp_commit();
    if (c != cur_c) {
      cur_c = c;
      bf.build(p.w + c * p.K, p.K, S, p.off, false, lane >> 2, lane & 3);
      bias = p.bias ? float(in_cvt(p.bias[c])) : 0.0f;
    }
    dw_cp_wait<1>();  // this tile's copies (all but the newest group) have landed
    __syncthreads();
    tc_conv_tile<T, W, S>(cur, p.tile / 128, bf, bias, p.y + b * p.ysb + c * p.ysc, j0, p.Lo,
                          al.out >= 4, lane, warp);
    __syncthreads();  // the buffer is consumed before it is staged again
  }
  dw_cp_wait<0>();
}

// S = max(sd, sx) (compiled; the two differ by at most one). p.tile: positions per tile
// (multiple of kTcBlockOut, <= kTcMaxTileBwd); p.ntiles =
// ceil(max(L, Lo) / tile); p.work = B * ntiles tiles per channel; p.split: blocks per channel;
// p.sd / p.od: shifts and offset of the dx product (flipped kernel over dy), p.sx / p.ox of the dw
// product; dy rows are staged from element p0 + p.dlo (dlo <= 0, a multiple of 8): the dx
// product's rows start at element p0 - (K - 1 - pl) - od, the dw product's DY rows at row p.dyr
// (position p0); p.nsm_dy / p.nsm_x: staged rows; p.part:
// [split][K + 1][C] when dw or db is wanted. Shared memory: dy rows, x rows, and at the end the
// (16 sx x 8) D sums and the warps' db.
template <typename T, typename W, int S>
__global__ void __launch_bounds__(kThreads, 4)
    dw_bwd_cf_tc_kernel(const BwdArgs<T, W> p, const TcAlign al) {
  static_assert(sizeof(T) == 2, "half types only");
  T* const sbase = smem_base<T>();
  const int64_t buf = int64_t(p.nsm_dy + p.nsm_x) * 8;  // elements per staging buffer
  const int lane = int(threadIdx.x) & 31;
  const int warp = int(threadIdx.x) >> 5;
  const int64_t c = int64_t(blockIdx.x) / p.split;
  const int64_t sidx = int64_t(blockIdx.x) - c * p.split;
  const bool want_wb = p.want_w || p.want_b;
  TcConvB<T, W, S> bf;
  if (p.want_x) bf.build(p.w + c * p.K, p.K, p.sd, p.od, true, lane >> 2, lane & 3);
  float dacc[S][4];
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int i = 0; i < 4; ++i) dacc[s][i] = 0.0f;
  }
  float pdb = 0.0f;
  // dx: the flipped kernel's pad K - 1 - pl (negative for pads beyond the span); its rows start
  // rdx rows into the staged dy.
  const int64_t ex = -(int64_t(p.K) - 1 - p.pl) - p.od;
  const int rdx = int((ex - p.dlo) / 8);
  // Two staging buffers (dy rows, then x rows): the next tile's copies fly during this one. Rows
  // in 16-byte units (al.by_units) land in one of two raw areas behind them first (dy's units,
  // then x's; tc_stage_units).
  const bool dy_units = al.by_units(al.dy);
  const bool x_units = p.want_w && al.by_units(al.x);
  const int64_t raw_dy = dy_units ? int64_t(p.nsm_dy + 1) * 8 : 0;  // elements per raw area
  const int64_t raw_buf = raw_dy + (x_units ? int64_t(p.nsm_x + 1) * 8 : 0);
  T* const raw = sbase + 2 * buf;
  auto dy_row = [&](int64_t b) { return p.dy + b * p.dysb + c * p.dysc; };
  auto x_row = [&](int64_t b) { return p.x + b * p.xsb + c * p.xsc; };
  auto stage = [&](int64_t wi, int par) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t p0 = (wi - b * p.ntiles) * p.tile;
    T* dst = sbase + par * buf;
    T* rdst = raw + par * raw_buf;
    if (dy_units) {
      tc_stage_units<T>(rdst, dy_row(b), p0 + p.dlo, p.Lo, p.nsm_dy);
    } else {
      tc_stage<T>(dst, dy_row(b), p0 + p.dlo, p.Lo, p.nsm_dy, al.dy);
    }
    if (x_units) {
      tc_stage_units<T>(rdst + raw_dy, x_row(b), p0 - p.pl - p.ox, p.L, p.nsm_x);
    } else if (p.want_w) {
      tc_stage<T>(dst + int64_t(p.nsm_dy) * 8, x_row(b), p0 - p.pl - p.ox, p.L, p.nsm_x, al.x);
    }
  };
  if (sidx < p.work) stage(sidx, 0);
  dw_cp_commit();
  int parity = 0;
  for (int64_t wi = sidx; wi < p.work; wi += p.split, parity ^= 1) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t p0 = (wi - b * p.ntiles) * p.tile;
    T* dys = sbase + parity * buf;
    T* xs = dys + int64_t(p.nsm_dy) * 8;
    if (wi + p.split < p.work) stage(wi + p.split, parity ^ 1);
    dw_cp_commit();
    dw_cp_wait<1>();
    __syncthreads();
    if (dy_units || x_units) {  // uniform
      const T* rsrc = raw + parity * raw_buf;
      if (dy_units) tc_realign<T>(dys, rsrc, dy_row(b), p0 + p.dlo, p.nsm_dy);
      if (x_units) tc_realign<T>(xs, rsrc + raw_dy, x_row(b), p0 - p.pl - p.ox, p.nsm_x);
      __syncthreads();
    }
    if (p.want_x) {
      tc_conv_tile<T, W, S>(dys + int64_t(rdx) * 8, p.tile / 128, bf, 0.0f,
                            p.dx + b * p.dxsb + c * p.dxsc, p0, p.L, al.out >= 4, lane, warp);
    }
    if (want_wb) {
      // Steps of 32 rows (256 positions): B = DY rows, two k-steps of 16 rows. Lane addresses:
      // B matrix mi = lane >> 3 is DY rows dyr + a0 + 8 mi + (lane & 7); A = X^T matrix mi holds
      // t half (mi & 1) and a half (mi >> 1): staged x row a0 + 16 ks + 8 (mi >> 1) + (lane & 7) +
      // 2 mt + (mi & 1).
      const T* b_lane = dys + (p.dyr + 8 * (lane >> 3) + (lane & 7) + 32 * warp) * 8;
      const T* x_lane = xs + (8 * (lane >> 4) + (lane & 7) + ((lane >> 3) & 1) + 32 * warp) * 8;
      const int64_t nvalid = p.Lo - p0;
      for (int st = warp; st < p.tile / 256; st += kWarps, b_lane += kWarps * 256,
               x_lane += kWarps * 256) {
        if (256 * int64_t(st) >= nvalid) break;  // warp-uniform
        uint32_t bb[4];
        tc_ldmatrix_x4_trans(bb, b_lane);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float lo, hi;
          unpack2<T>(bb[i], lo, hi);
          pdb += lo + hi;
        }
        if (p.want_w) {
#pragma unroll
          for (int ks = 0; ks < 2; ++ks) {
            const uint32_t bk[2] = {bb[2 * ks], bb[2 * ks + 1]};
#pragma unroll
            for (int mt = 0; mt < S; ++mt) {
              if (mt < p.sx) {  // sx is S or S - 1
                uint32_t aa[4];
                tc_ldmatrix_x4_trans(aa, x_lane + (16 * ks + 2 * mt) * 8);
                tc_mma<T>(dacc[mt], aa, bk);
              }
            }
          }
        }
      }
    }
    __syncthreads();  // the buffer is consumed before it is staged again
  }
  dw_cp_wait<0>();
  if (!want_wb) return;  // uniform: no barrier follows
  // Fixed-order reduction over the warps: D[t][n] (t < 16 sx) and db, in the staging memory.
  float* dsum = reinterpret_cast<float*>(sbase);
  float* dbw = dsum + 16 * kTcMaxShifts * 8;
  pdb = warp_sum(pdb);
  const int g = lane >> 2;
  const int q = lane & 3;
  for (int w = 0; w < kWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int mt = 0; mt < S; ++mt) {
        if (mt < p.sx) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int t = 16 * mt + g + 8 * (i >> 1);
            const int n = 2 * q + (i & 1);
            dsum[t * 8 + n] = (w == 0 ? 0.0f : dsum[t * 8 + n]) + dacc[mt][i];
          }
        }
      }
      if (lane == 0) dbw[w] = pdb;
    }
    __syncthreads();
  }
  for (int k = int(threadIdx.x); k <= p.K; k += kThreads) {
    float s = 0.0f;
    if (k < p.K) {
#pragma unroll
      for (int n = 0; n < 8; ++n) s += dsum[(n + k + p.ox) * 8 + n];
    } else {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s += dbw[w];
    }
    p.part[(sidx * (p.K + 1) + k) * p.C + c] = s;
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
