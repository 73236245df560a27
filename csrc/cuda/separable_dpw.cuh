// Pointwise weight gradient of the separable conv with h recomputed on chip:
//   dpw[o, c] = sum_{b, j} dy[b, o, j] * h[b, c, j],  h = dw_bias + depthwise(x).
// GEMM M = Cout (BM tile), N = Cin (BN tile), reduction over (b, j) in chunks of BJ positions.
// Each block owns one (BM x BN) tile and a contiguous range of (b, j) chunks (split-K); it writes
// fp32 partial sums to a workspace and sep_dpw_reduce_kernel adds the splits in a fixed order, so
// the result is bit-identical run to run. Per chunk: dy (BM x BJ) and x (BN channels, BJ outputs
// + halo) staged with cp.async; depthwise -> hs [BN][BJ]; MMA (bf16/fp16 m16n8k16 or TF32 m16n8k8).
// Same software pipeline as the forward (separable_fwd.cuh).
#pragma once

#include "cuda/separable_common.cuh"

namespace sepconv1d {
namespace cuda {
namespace sep {

struct DpwParams {
  DwParams dw;  // dwb = depthwise bias (acc type, [cin_pad]) or nullptr
  const void* dy;
  int64_t dsb, dsc, dsl;
  int64_t Lout;
  int64_t n_chunks;  // batch * n_jt
  int cout, cin;
  int n_mt, n_nt, n_jt, splits;
  int dy_vec;   // dy rows 16-byte aligned: 16-byte cp.async
  float* part;  // [splits][cout][cin]
  int sm_a[2], sm_x[2], sm_dw[2], sm_h[2];
};

template <typename Tx, typename Tm, int kGemm, int BM, int BN, int BJ>
struct DpwTile {
  using Tacc = float;
  static constexpr bool kTf32 = kGemm == kGemmTf32;
  // dy chunk: channel-first [BM][AP_CF] (j contiguous), channel-last [BJ][AP_CL] (o contiguous).
  static constexpr int AP_CF = kTf32 ? BJ + 4 : BJ + 8;
  static constexpr int AP_CL = BM + 8;
  static constexpr int A_ELEMS_CF = BM * AP_CF;
  static constexpr int A_ELEMS_CL = BJ * AP_CL;
  // h chunk [BN][HP] (j contiguous).
  static constexpr int HP = kTf32 ? BJ + 4 : BJ + 8;
  static constexpr int H_ELEMS = BN * HP;
  static constexpr int kV = 16 / static_cast<int>(sizeof(Tx));
  static_assert(kGemm == kGemmMma16 || kGemm == kGemmTf32, "dpw: tensor-core paths only");
  static_assert(BM % 64 == 0 && BM * BN == 256 * 64 && BJ % 16 == 0, "8 warps of 64 x 32");
};

template <typename Tx, typename Tm, int kGemm, int BM, int BN, int BJ, bool kXcl>
__global__ void __launch_bounds__(kThreads, 2) sep_dpw_kernel(const DpwParams p) {
  using Tile = DpwTile<Tx, Tm, kGemm, BM, BN, BJ>;
  using Tacc = float;
  constexpr bool kTf32 = Tile::kTf32;
  constexpr int AP = kXcl ? Tile::AP_CL : Tile::AP_CF;
  constexpr int HP = Tile::HP;
  constexpr int kV = Tile::kV;
  using Dw = DwStage<Tx, Tm, kTf32, BN, BJ, HP, kXcl>;

  SEP_DYNAMIC_SMEM(smem);
  const int tid = threadIdx.x;
  const int warp = tid >> 5;

  int bid = blockIdx.x;
  const int mt = bid % p.n_mt;
  bid /= p.n_mt;
  const int nt = bid % p.n_nt;
  const int split = bid / p.n_nt;
  const int m0 = mt * BM;
  const int n0 = nt * BN;
  const int64_t q_begin = p.n_chunks * split / p.splits;
  const int64_t q_end = p.n_chunks * (split + 1) / p.splits;
  const int n_q = static_cast<int>(q_end - q_begin);

  // Offsets through opaque(): pointers are rebuilt at each use, not hoisted into registers.
  auto as = [&](int s) { return reinterpret_cast<Tx*>(smem + opaque(s ? p.sm_a[1] : p.sm_a[0])); };
  auto xs = [&](int s) { return reinterpret_cast<Tx*>(smem + opaque(s ? p.sm_x[1] : p.sm_x[0])); };
  auto dws = [&](int s) {
    return reinterpret_cast<Tacc*>(smem + opaque(s ? p.sm_dw[1] : p.sm_dw[0]));
  };
  auto hs = [&](int s) { return reinterpret_cast<Tm*>(smem + opaque(s ? p.sm_h[1] : p.sm_h[0])); };

  // A chunk is (batch b, first output j0); chunks run j-fastest. One cursor (chunk i + 1 during
  // iteration i) serves the dy load and the depthwise; the x load two ahead uses its successor.
  struct Cursor {
    int b, j0;
  };
  auto next = [&](Cursor c) {
    c.j0 += BJ;
    if (c.j0 >= p.Lout) {
      c.j0 = 0;
      ++c.b;
    }
    return c;
  };
  Cursor cur;
  cur.b = static_cast<int>(q_begin / p.n_jt);
  cur.j0 = static_cast<int>(q_begin - static_cast<int64_t>(cur.b) * p.n_jt) * BJ;

  auto load_a = [&](const Cursor& cur, int stage) {
    const int tid = opaque(threadIdx.x);
    const int64_t b = cur.b;
    const int64_t j0 = cur.j0;
    const Tx* dummy = static_cast<const Tx*>(p.dy);
    const Tx* db = dummy + b * p.dsb;
    Tx* dst = as(stage);
    const int jvalid = static_cast<int>(min64(BJ, p.Lout - j0));
    const int ovalid = min(BM, p.cout - m0);
    if constexpr (!kXcl) {
      if (p.dy_vec) {
        constexpr int kVpr = BJ / kV;
        for (int idx = tid; idx < BM * kVpr; idx += kThreads) {
          const int o = idx / kVpr;
          const int jj = (idx - o * kVpr) * kV;
          const Tx* src = dummy;
          int bytes = 0;
          if (o < ovalid && jj < jvalid) {
            bytes = min(kV, jvalid - jj) * static_cast<int>(sizeof(Tx));
            src = db + static_cast<int64_t>(m0 + o) * p.dsc + (j0 + jj);
          }
          cp_async16(dst + o * AP + jj, src, bytes);
        }
      } else {
        for (int idx = tid; idx < BM * BJ; idx += kThreads) {
          const int o = idx / BJ;
          const int jj = idx - o * BJ;
          Tx* d = dst + o * AP + jj;
          if (o < ovalid && jj < jvalid) {
            Dw::copy_elem(d, db + static_cast<int64_t>(m0 + o) * p.dsc + (j0 + jj) * p.dsl);
          } else {
            *d = Tx(0.0f);
          }
        }
      }
    } else {
      if (p.dy_vec) {
        constexpr int kVpr = BM / kV;
        for (int idx = tid; idx < BJ * kVpr; idx += kThreads) {
          const int jj = idx / kVpr;
          const int o = (idx - jj * kVpr) * kV;
          const Tx* src = dummy;
          int bytes = 0;
          if (o < ovalid && jj < jvalid) {
            bytes = min(kV, ovalid - o) * static_cast<int>(sizeof(Tx));
            src = db + (j0 + jj) * p.dsl + (m0 + o);
          }
          cp_async16(dst + jj * AP + o, src, bytes);
        }
      } else {
        for (int idx = tid; idx < BJ * BM; idx += kThreads) {
          const int jj = idx / BM;
          const int o = idx - jj * BM;
          Tx* d = dst + jj * AP + o;
          if (o < ovalid && jj < jvalid) {
            Dw::copy_elem(d, db + (j0 + jj) * p.dsl + static_cast<int64_t>(m0 + o) * p.dsc);
          } else {
            *d = Tx(0.0f);
          }
        }
      }
    }
  };
  auto load_x = [&](const Cursor& cur, int stage) {
    const int64_t b = cur.b;
    const int64_t j0 = cur.j0;
    const int64_t p0 = j0 * p.dw.stride - p.dw.pad_left;
    Dw::load(p.dw, b, n0, p0, Dw::offset(p.dw, b, n0, p0), xs(stage), dws(stage), tid);
  };
  auto depthwise = [&](const Cursor& cur, int stage) {
    const int64_t j0 = cur.j0;
    const int64_t p0 = j0 * p.dw.stride - p.dw.pad_left;
    const int nvalid = static_cast<int>(min64(BJ, p.Lout - j0));
    Dw::compute(p.dw, xs(stage), dws(stage), hs(stage), Dw::offset(p.dw, cur.b, n0, p0), n0,
                nvalid, tid);
  };

  constexpr int kWarpsM = BM / 64;
  // Fragment coordinates, recomputed from an opaque thread index where used (not kept live).
  auto coords = [&](int& ln, int& wm, int& wn, int& g8, int& tq) {
    const int t = opaque(threadIdx.x);
    ln = t & 31;
    wm = (t >> 5) % kWarpsM;
    wn = (t >> 5) / kWarpsM;
    g8 = ln >> 2;
    tq = ln & 3;
  };
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  auto gemm = [&](int stage) {
    int lane, wm, wn, g8, tq;
    coords(lane, wm, wn, g8, tq);
    const Tx* asb = as(stage);
    const Tm* hsb = hs(stage);
    if constexpr (kGemm == kGemmMma16) {
#pragma unroll
      for (int kk = 0; kk < BJ; kk += 16) {
        uint32_t bf[4][2];
#pragma unroll
        for (int jp = 0; jp < 2; ++jp) {
          uint32_t r[4];
          ldmatrix_x4(r, hsb + (wn * 32 + jp * 16 + (lane & 7) + (lane >> 4) * 8) * HP + kk +
                             ((lane >> 3) & 1) * 8);
          bf[2 * jp][0] = r[0];
          bf[2 * jp][1] = r[1];
          bf[2 * jp + 1][0] = r[2];
          bf[2 * jp + 1][1] = r[3];
        }
        // A fragments one m16 tile at a time (fewer live registers).
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          uint32_t a[4];
          if constexpr (!kXcl) {
            ldmatrix_x4(a, asb + (wm * 64 + i * 16 + (lane & 15)) * AP + kk + (lane >> 4) * 8);
          } else {
            ldmatrix_x4_trans(a, asb + (kk + (lane & 7) + (lane >> 4) * 8) * AP + wm * 64 +
                                     i * 16 + ((lane >> 3) & 1) * 8);
          }
#pragma unroll
          for (int jn = 0; jn < 4; ++jn) mma_16816<Tm>(acc[i][jn], a, bf[jn]);
        }
      }
    } else {
      const float* asf = reinterpret_cast<const float*>(asb);
      const uint32_t* hsu = reinterpret_cast<const uint32_t*>(hsb);
#pragma unroll
      for (int kk = 0; kk < BJ; kk += 8) {
        uint32_t bf[4][2];
#pragma unroll
        for (int jn = 0; jn < 4; ++jn) {
          const int col = wn * 32 + jn * 8 + g8;
          bf[jn][0] = hsu[col * HP + kk + tq];
          bf[jn][1] = hsu[col * HP + kk + tq + 4];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r0 = wm * 64 + i * 16 + g8;
          float v0, v1, v2, v3;
          if constexpr (!kXcl) {
            v0 = asf[r0 * AP + kk + tq];
            v1 = asf[(r0 + 8) * AP + kk + tq];
            v2 = asf[r0 * AP + kk + tq + 4];
            v3 = asf[(r0 + 8) * AP + kk + tq + 4];
          } else {
            v0 = asf[(kk + tq) * AP + r0];
            v1 = asf[(kk + tq) * AP + r0 + 8];
            v2 = asf[(kk + tq + 4) * AP + r0];
            v3 = asf[(kk + tq + 4) * AP + r0 + 8];
          }
          uint32_t a[4];
          a[0] = __float_as_uint(round_tf32(v0));
          a[1] = __float_as_uint(round_tf32(v1));
          a[2] = __float_as_uint(round_tf32(v2));
          a[3] = __float_as_uint(round_tf32(v3));
#pragma unroll
          for (int jn = 0; jn < 4; ++jn) mma_1688_tf32(acc[i][jn], a, bf[jn]);
        }
      }
    }
  };

  if (n_q > 0) {
    load_a(cur, 0);
    load_x(cur, 0);
    if (n_q > 1) load_x(next(cur), 1);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();
    depthwise(cur, 0);
    cur = next(cur);
  }
  for (int i = 0; i < n_q; ++i) {
    cp_async_wait_all();
    __syncthreads();
    // cur = chunk i + 1. dy(i+1) -> as[(i+1)&1] (last read by GEMM(i-1)); x(i+2) -> xs[i&1] (last
    // read by depthwise(i)); both finished before the barrier above.
    if (i + 1 < n_q) load_a(cur, (i + 1) & 1);
    if (i + 2 < n_q) load_x(next(cur), i & 1);
    cp_async_commit();
    // Warps w and w + 4 share a scheduler: opposite phase orders overlap FMA and tensor pipes.
#pragma unroll 1
    for (int ph = 0; ph < 2; ++ph) {
      if ((ph ^ (warp >> 2)) == 0) {
        gemm(i & 1);
      } else if (i + 1 < n_q) {
        depthwise(cur, (i + 1) & 1);
      }
    }
    cur = next(cur);
  }

  // fp32 partials of this split (every element of the tile inside [cout) x [cin) is written, zero
  // when the split had no chunks).
  float* part = p.part + static_cast<int64_t>(split) * p.cout * p.cin;
  int lane, wm, wn, g8, tq;
  coords(lane, wm, wn, g8, tq);
  (void)lane;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int jn = 0; jn < 4; ++jn) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int o = m0 + wm * 64 + i * 16 + g8 + (e >> 1) * 8;
        const int c = n0 + wn * 32 + jn * 8 + 2 * tq + (e & 1);
        if (o < p.cout && c < p.cin) part[static_cast<int64_t>(o) * p.cin + c] = acc[i][jn][e];
      }
    }
  }
}

// out[o][c] = sum_s part[s][o][c] and, with bias_out, bias_out[o] = sum_s part[s][o][cin]; s
// ascending (deterministic), in the weight dtype. part rows have `pitch` >= cin (+ 1) floats.
template <typename Tw>
__global__ void sep_dpw_reduce_kernel(const float* __restrict__ part, Tw* __restrict__ out,
                                      Tw* __restrict__ bias_out, int64_t cout, int64_t cin,
                                      int64_t pitch, int splits) {
  const int64_t row = bias_out != nullptr ? cin + 1 : cin;
  const int64_t n = cout * row;
  const int64_t split_step = cout * pitch;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / row;
    const int64_t c = i - o * row;
    const float* src = part + o * pitch + c;
    float s = 0.0f;
    for (int k = 0; k < splits; ++k) s += src[k * split_step];
    if (c < cin) {
      out[o * cin + c] = static_cast<Tw>(s);
    } else {
      bias_out[o] = static_cast<Tw>(s);
    }
  }
}

// Depthwise weights [cin_pad][tap_pitch] (DwParams::dwpitch) and bias [cin_pad] in float, zero padded.
template <typename Tw>
__global__ void sep_dw_prep_kernel(const Tw* __restrict__ dw, const Tw* __restrict__ dwb,
                                   float* __restrict__ dwp, float* __restrict__ dwbp, int cin,
                                   int cin_pad, int K, int tap_pitch) {
  const int64_t n_w = static_cast<int64_t>(cin_pad) * tap_pitch;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n_w + cin_pad;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (i < n_w) {
      const int c = static_cast<int>(i / tap_pitch);
      const int k = static_cast<int>(i - static_cast<int64_t>(c) * tap_pitch);
      dwp[i] = (c < cin && k < K) ? widen<float>(dw[static_cast<int64_t>(c) * K + k]) : 0.0f;
    } else {
      const int c = static_cast<int>(i - n_w);
      dwbp[c] = (c < cin && dwb != nullptr) ? widen<float>(dwb[c]) : 0.0f;
    }
  }
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
