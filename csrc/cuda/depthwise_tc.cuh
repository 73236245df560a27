// Tensor-core channel-first depthwise forward and backward for half types and long kernels
// (run-time K, stride 1, dilation 1, any padding, 16-byte-aligned rows). Torch-free; the path
// choice is forward() / backward() in depthwise_launch.cuh.
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
// (b, c) row: load the x rows of the tile (16-byte loads, all issued first, zeros outside [0, L))
// into shared memory, barrier, each warp takes m16 blocks (128 outputs) m = warp, warp + 4, ...
// and stores its accumulators as pairs. Each block walks a contiguous run of tiles.
//
// Backward (dw_bwd_cf_tc_kernel), one pass over dy and x per tile of positions:
//   dx is the same product over the staged dy with the kernel flipped (pad K - 1 - pl);
//   dw[k] = sum_j dy[j] x[j - pl + k]: with DY[a][n] = dy[p0 + 8a + n] and X[a][t] =
//   x[gx0 + 8a + t] (gx0 = floor_8(p0 - pl), ox = p0 - pl - gx0) the (t x n) matrix
//   D = X^T DY summed over all rows a of the channel gives dw[k] = sum_n D[n + k + ox][n]. X^T and
//   DY are both read by ldmatrix.trans from the staged rows (the MMA's reduction runs over
//   positions), D stays in fp32 accumulators for all tiles of the block, and the diagonal sums are
//   taken once at the end (fixed order: dw / db bit-identical run to run).
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

// Rows of 8 elements a product over `tile` outputs reads: rows a + 2s + h, a < tile / 8, s < S, h < 2.
inline constexpr int64_t tc_rows(int64_t tile, int shifts) { return tile / 8 + 2 * shifts - 1; }

// Staged rows per thread of the forward (x) and of the backward (dy and x each): the host checks
// that a launch stays within kThreads times these.
constexpr int kTcFwdRowsPer = int((tc_rows(kTcMaxTile, kTcMaxShifts) + kThreads - 1) / kThreads);
constexpr int kTcBwdRowsPer = int((tc_rows(kTcMaxTileBwd, kTcMaxShifts) + 2 + kThreads - 1) / kThreads);

// Rows [0, nrows) of 8 elements starting at element g0 (a multiple of 8) of a unit-stride row of
// length len, into shared memory (zeros outside [0, len)); loads of NSRC rows all issued first.
// NPER: rows per thread (host: nrows <= NPER * kThreads).
template <typename T, int NPER>
struct TcStage {
  uint32_t r[NPER][4];
  DW_DEV void load(const T* row, int64_t g0, int64_t len, int nrows) {
    const bool interior = g0 >= 0 && g0 + int64_t(nrows) * 8 <= len;
#pragma unroll
    for (int i = 0; i < NPER; ++i) {
      const int v = int(threadIdx.x) + i * kThreads;
      if (v < nrows) reg_load<T>(row, g0 + int64_t(v) * 8, len, !interior, r[i]);
    }
  }
  DW_DEV void store(T* dst, int nrows) const {
#pragma unroll
    for (int i = 0; i < NPER; ++i) {
      const int v = int(threadIdx.x) + i * kThreads;
      if (v < nrows) {
        uint4 u;
        u.x = r[i][0];
        u.y = r[i][1];
        u.z = r[i][2];
        u.w = r[i][3];
        *reinterpret_cast<uint4*>(dst + int64_t(v) * 8) = u;
      }
    }
  }
};

// B fragments of the row convolution out[j0 + 8a + n] = sum_s A_s B_s over staged rows with
// offset o: Bs[r][n] = w[16s + r - n - o] (flip: w[K - 1 - (16s + r - n - o)]), zero outside
// [0, K). Lane (g, q) holds rows r = 2q + {0, 1} and 2q + 8 + {0, 1} of column n = g. fp32
// weights of half x are split into hi + lo halves.
template <typename T, typename W>
struct TcConvB {
  static constexpr bool kSplit = !std::is_same_v<W, T>;
  uint32_t hi[kTcMaxShifts][2];
  uint32_t lo[kTcMaxShifts][2];
  DW_DEV void build(const W* wc, int K, int S, int o, bool flip, int g, int q) {
#pragma unroll
    for (int s = 0; s < kTcMaxShifts; ++s) {
      float wv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = 2 * q + (e & 1) + 8 * (e >> 1);
        const int k = 16 * s + r - g - o;
        wv[e] = (s < S && k >= 0 && k < K) ? float(in_cvt(wc[flip ? K - 1 - k : k])) : 0.0f;
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

// One m16 block of the row convolution: the 128 outputs out[jm .. jm + 127] (jm = j0 + 128 m) from
// the staged rows src (row 0 = element g0 of the input), stored as pairs where j < len.
template <typename T, typename W>
DW_DEV void tc_conv_block(const T* src, int m, int S, const TcConvB<T, W>& bf, float init,
                          T* out, int64_t jm, int64_t len) {
  const int lane = int(threadIdx.x) & 31;
  float acc[4] = {init, init, init, init};
  // ldmatrix row of the lane: matrix mi = lane >> 3, row lane & 7 -> A row a = 16m + (lane & 7) +
  // 8 (mi & 1), k half h = mi >> 1: staged row a + 2s + h.
  const int arow = 16 * m + (lane & 7) + 8 * ((lane >> 3) & 1) + (lane >> 4);
#pragma unroll
  for (int s = 0; s < kTcMaxShifts; ++s) {
    if (s < S) {
      uint32_t a[4];
      tc_ldmatrix_x4(a, src + int64_t(arow + 2 * s) * 8);
      tc_mma<T>(acc, a, bf.hi[s]);
      if constexpr (TcConvB<T, W>::kSplit) tc_mma<T>(acc, a, bf.lo[s]);
    }
  }
  // c_i: row g + 8 (i >> 1), column 2q + (i & 1): outputs jm + 8g + 2q (+ 1) and + 64.
  const int64_t jp = jm + 8 * (lane >> 2) + 2 * (lane & 3);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t j = jp + 64 * h;
    if (j + 1 < len) {
      const uint32_t u = pack2<T>(acc[2 * h], acc[2 * h + 1]);
#ifdef DW_EMULATE
      std::memcpy(out + j, &u, 4);
#else
      *reinterpret_cast<uint32_t*>(out + j) = u;
#endif
    } else if (j < len) {
      out[j] = out_cvt<T>(acc[2 * h]);
    }
  }
}

// p.tile: outputs per tile (multiple of kTcBlockOut); p.ntiles = ceil(Lo / tile); p.total =
// B * C * ntiles; p.kp: shifts S; p.off: o = (-pl) mod 8; p.nsm: staged rows (tc_rows).
template <typename T, typename W>
__global__ void __launch_bounds__(kThreads, 6) dw_fwd_cf_tc_kernel(const FwdArgs<T, W> p) {
  static_assert(sizeof(T) == 2, "half types only");
  constexpr int NPER = kTcFwdRowsPer;
  T* xs = smem_base<T>();
  const int lane = int(threadIdx.x) & 31;
  const int warp = int(threadIdx.x) >> 5;
  int64_t cur_c = -1;
  TcConvB<T, W> bf;
  float bias = 0.0f;
  // Each block takes a contiguous run of tiles, so that consecutive tiles mostly share the channel
  // (B fragments built once per run of the channel).
  const int64_t per = (p.total + gridDim.x - 1) / gridDim.x;
  const int64_t first = int64_t(blockIdx.x) * per;
  const int64_t end = first + per < p.total ? first + per : p.total;
  for (int64_t item = first; item < end; ++item) {
    const int64_t row = udiv(item, p.ntiles);
    const int64_t j0 = (item - row * p.ntiles) * p.tile;
    const int64_t b = udiv(row, p.C);
    const int64_t c = row - b * p.C;
    {
      TcStage<T, NPER> st;
      st.load(p.x + b * p.xsb + c * p.xsc, j0 - p.pl - p.off, p.L, p.nsm);
      st.store(xs, p.nsm);
    }
    if (c != cur_c) {
      cur_c = c;
      bf.build(p.w + c * p.K, p.K, p.kp, p.off, false, lane >> 2, lane & 3);
      bias = p.bias ? float(in_cvt(p.bias[c])) : 0.0f;
    }
    __syncthreads();
    T* yrow = p.y + b * p.ysb + c * p.ysc;
    for (int m = warp; m < p.tile / 128; m += kWarps) {
      const int64_t jm = j0 + int64_t(m) * 128;
      if (jm >= p.Lo) break;  // warp-uniform
      tc_conv_block<T, W>(xs, m, p.kp, bf, bias, yrow, jm, p.Lo);
    }
    __syncthreads();  // the tile is consumed before the next one is staged
  }
}

// p.tile: positions per tile (multiple of kTcBlockOut, <= kTcMaxTileBwd); p.ntiles =
// ceil(max(L, Lo) / tile); p.work = B * ntiles tiles per channel; p.split: blocks per channel;
// p.sd / p.od: shifts and offset of the dx product (flipped kernel over dy), p.sx / p.ox of the dw
// product; dy rows are staged from element p0 + p.dlo (dlo <= 0, a multiple of 8): the dx
// product's rows start at element p0 - (K - 1 - pl) - od, the dw product's DY rows at row p.dyr
// (position p0); p.nsm_dy / p.nsm_x: staged rows; p.part:
// [split][K + 1][C] when dw or db is wanted. Shared memory: dy rows, x rows, and at the end the
// (16 sx x 8) D sums and the warps' db.
template <typename T, typename W>
__global__ void __launch_bounds__(kThreads, 4) dw_bwd_cf_tc_kernel(const BwdArgs<T, W> p) {
  static_assert(sizeof(T) == 2, "half types only");
  constexpr int NPER = kTcBwdRowsPer;
  T* dys = smem_base<T>();
  T* xs = dys + int64_t(p.nsm_dy) * 8;
  const int lane = int(threadIdx.x) & 31;
  const int warp = int(threadIdx.x) >> 5;
  const int64_t c = int64_t(blockIdx.x) / p.split;
  const int64_t sidx = int64_t(blockIdx.x) - c * p.split;
  const bool want_wb = p.want_w || p.want_b;
  TcConvB<T, W> bf;
  if (p.want_x) bf.build(p.w + c * p.K, p.K, p.sd, p.od, true, lane >> 2, lane & 3);
  float dacc[kTcMaxShifts][4];
#pragma unroll
  for (int s = 0; s < kTcMaxShifts; ++s) {
#pragma unroll
    for (int i = 0; i < 4; ++i) dacc[s][i] = 0.0f;
  }
  float pdb = 0.0f;
  // dx: the flipped kernel's pad K - 1 - pl (negative for pads beyond the span); its rows start
  // rdx rows into the staged dy.
  const int64_t ex = -(int64_t(p.K) - 1 - p.pl) - p.od;
  const int rdx = int((ex - p.dlo) / 8);
  for (int64_t wi = sidx; wi < p.work; wi += p.split) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t p0 = (wi - b * p.ntiles) * p.tile;
    {
      TcStage<T, NPER> sdy;
      TcStage<T, NPER> sx;
      sdy.load(p.dy + b * p.dysb + c * p.dysc, p0 + p.dlo, p.Lo, p.nsm_dy);
      if (p.want_w) sx.load(p.x + b * p.xsb + c * p.xsc, p0 - p.pl - p.ox, p.L, p.nsm_x);
      sdy.store(dys, p.nsm_dy);
      if (p.want_w) sx.store(xs, p.nsm_x);
    }
    __syncthreads();
    if (p.want_x) {
      T* dxrow = p.dx + b * p.dxsb + c * p.dxsc;
      for (int m = warp; m < p.tile / 128; m += kWarps) {
        const int64_t im = p0 + int64_t(m) * 128;
        if (im >= p.L) break;  // warp-uniform
        tc_conv_block<T, W>(dys + int64_t(rdx) * 8, m, p.sd, bf, 0.0f, dxrow, im, p.L);
      }
    }
    if (want_wb) {
      // Steps of 32 rows (256 positions): B = DY rows, two k-steps of 16 rows.
      for (int st = warp; st < p.tile / 256; st += kWarps) {
        const int a0 = 32 * st;
        if (p0 + 8 * int64_t(a0) >= p.Lo) break;  // warp-uniform
        uint32_t bb[4];
        tc_ldmatrix_x4_trans(bb, dys + int64_t(p.dyr + a0 + 8 * (lane >> 3) + (lane & 7)) * 8);
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
            // A = X^T: matrix mi = lane >> 3 holds t half (mi & 1), a half (mi >> 1); stored rows
            // are positions: row a0 + 16 ks + 8 (mi >> 1) + (lane & 7) + 2 mt + (mi & 1).
            const int xrow = a0 + 16 * ks + 8 * (lane >> 4) + (lane & 7) + ((lane >> 3) & 1);
#pragma unroll
            for (int mt = 0; mt < kTcMaxShifts; ++mt) {
              if (mt < p.sx) {
                uint32_t aa[4];
                tc_ldmatrix_x4_trans(aa, xs + int64_t(xrow + 2 * mt) * 8);
                tc_mma<T>(dacc[mt], aa, bk);
              }
            }
          }
        }
      }
    }
    __syncthreads();  // the tiles are consumed before the next ones are staged
  }
  if (!want_wb) return;  // uniform: no barrier follows
  // Fixed-order reduction over the warps: D[t][n] (t < 16 sx) and db, in the staging memory.
  float* dsum = reinterpret_cast<float*>(dys);
  float* dbw = dsum + 16 * kTcMaxShifts * 8;
  pdb = warp_sum(pdb);
  const int g = lane >> 2;
  const int q = lane & 3;
  for (int w = 0; w < kWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int mt = 0; mt < kTcMaxShifts; ++mt) {
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
