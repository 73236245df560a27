// Depthwise kernels for short channel-first rows: forward, and backward (dx, dw, db) in one pass.
// Stride 1, dilation 1, K <= 32, 0 <= pad_left < K, rows of up to 2048 at any alignment (unit
// stride along L), float / half / bfloat16 activations. Torch-free; which problems take them is
// decided in depthwise_launch.cuh (`rows_apply`, `rows_preferred`, `rows_plan`, `Tuning::rows`).
//
// Why: the other channel-first kernels give a row (or a row tile) to a whole block or to a warp
// item of 512-1024 outputs. A speech model's rows are a few hundred positions long (FastConformer
// L 210, Citrinet 250, Conformer 500), so most of their threads idle and each block keeps a few
// hundred bytes in flight: 0.35-1.2 TB/s at B128 C512 L210 (csrc/NOTES.md, thirty-seventh session).
// Here one warp handles whole rows, several per pass; a row is never split.
//
// Blocks: one channel c and a range of batch rows (grid = C x split), so the channel's taps stay in
// registers and the weight-gradient partial sums accumulate in registers across the block's rows.
// Each warp works alone on its own rows and its own shared memory (no block barrier until the
// backward's final reduction):
//   1. stage: its rows of x (and dy) into shared memory in 16-byte chunks, shifted from the row's
//      alignment to the staged one (`rows_stage`), with the zero padding written in, so that every
//      window below starts on an 8-element boundary;
//   2. compute: lane items of 8 consecutive outputs; the window (8 + KP - 1 elements) is read as
//      aligned 8-element vectors, widened to float, and the taps run unrolled with compile-time
//      indices (KP = K for 3, 5, 7, 9, 11 and 31, else K padded to 4, 8, 12, 16, 24 or 32;
//      the padded taps are skipped by a uniform exit, never multiplied by zero, so inf and NaN
//      propagate as in the reference);
//   3. store: the outputs from shared memory in 16-byte chunks aligned to the destination row
//      (`rows_store`), element by element at the row's ends.
// Where every row starts on a 4-byte boundary and holds whole words (float32 always; half types at
// even lengths and offsets), the forward takes dw_fwd_cf_rows_words_kernel instead: steps 1 and 3
// by 4-byte copies with no realignment, pipelined over each warp's run of passes (see there); for
// half types from K 11 its step 2 runs on the tensor cores (dw_fwd_cf_rows_words_mma_kernel,
// rows_conv_mma), and so does the forward's on other rows longer than 256 (dw_fwd_cf_rows_mma_kernel).
// The backwards' dx (and, beside it, dw / db: rows_dw_mma) run there too for half types from K 12,
// the words backward's at every length, the other's on rows longer than 256 (dw_bwd_cf_rows_mma_kernel).
//
// Index maps (s = 1, d = 1, P = pad_left, KP >= K):
//   forward  y[j]  = bias + sum_{k<K} w[k] x[j - P + k];        staged xs[q] = x[q - P]
//   dx       dx[i] = sum_{m=KP-K}^{KP-1} w[KP-1-m] dy2[i + m];   staged dy2[q] = dy[q - D], D = KP-1-P
//   dw       dw[k] = sum_j dy[j] x[j - P + k] = sum_q dy2[q] xb[q + k];  staged xb[q] = x[q - (KP-1)]
// so the lane item u reads dy2[8u .. 8u + 7] and xb[8u .. 8u + 7 + KP - 1]; dy2 is zero outside
// dy's row, which masks the weight-gradient sums without a test.
//
// Arithmetic: fp32 accumulators; the forward starts at the bias and adds one fmaf per tap in tap
// order (as dw_fwd_cf_kernel). dw / db: per-lane sums over the block's rows, then a fixed-order warp
// tree and a fixed-order sum over warps into part[split][K+1][C] (deterministic, as every kernel).
#pragma once

#include "common/dispatch_int.h"
#include "cuda/depthwise_kernels.cuh"
#include "cuda/depthwise_tc.cuh"

namespace sepconv1d {
namespace cuda {
namespace dwk {

constexpr int kRowsStageUnroll = 2;  // 32-chunk slices per lane in flight while staging
constexpr int kRowsMaxTaps = 32;
constexpr int kRowsMaxRowsPerWarp = 8;

// 8-element vectors of one window (8 outputs and KP - 1 more inputs), read from an aligned vector
// at most MAXOFF elements before the window's start.
template <int KP, int MAXOFF = 1>
constexpr int rows_window_vecs() {
  return (8 + KP - 1 + MAXOFF + 7) / 8;
}

// The taps a rows kernel runs: KP itself where the dispatch compiled K exactly (odd KP: 3 ... 31;
// dispatch_padded_taps pads every other K to a multiple of 4), so that the skip tests of the
// padded taps fold away; else the run-time K.
template <int KP>
DW_DEV int rows_taps(int K) {
  return (KP & 1) ? KP : K;
}

template <typename T, typename W>
struct RowsFwdArgs {
  const T* x;
  const W* w;     // (C, K) contiguous
  const W* bias;  // (C) or nullptr
  T* y;
  const char *x_lo, *x_hi;  // x's byte extent (rows_chunk)
  int64_t B, C, xsb, xsc, ysb, ysc;
  int L, Lo, K, pl;
  int rpw;        // rows per warp pass
  int nv;         // output vectors (8 outputs) per row
  int nx;         // staged x elements per row
  int pitch;      // shared elements per row: nx + 8 * nv
  int raw_pitch;  // double-buffered kernel: raw chunk elements per row (nx + 16 bytes), else 0
  int x16, y16;   // words kernel: x's / y's rows of a unit share their offset within 16-byte
                  // chunks (copied / stored 16 bytes at a time between the row ends), else 0
  int mma;        // words kernel: 1 where it runs on the tensor cores (dw_fwd_cf_rows_words_mma_kernel,
                  // half types; nx then covers rows_mma_vecs), else 0
  int64_t groups, units, upw;  // words kernel: units per channel, in all, per warp (RowsUnit)
  int64_t per;    // batch rows per block
  int64_t split;  // blocks per channel
};

template <typename T, typename W>
struct RowsBwdArgs {
  const T* dy;
  const T* x;
  const W* w;
  T* dx;                 // nullptr unless dx is wanted
  acc_of<T>* part;       // [split][K+1][C], nullptr unless dw or db is wanted
  const char *dy_lo, *dy_hi, *x_lo, *x_hi;  // byte extents (rows_chunk)
  int64_t B, C, dysb, dysc, xsb, xsc, dxsb, dxsc;
  int L, Lo, K, pl;
  int rpw;
  int nu;                // lane items (8 positions of dy2) per row
  int nvx;               // of which dx items: ceil(L / 8)
  int nd;                // staged dy2 elements per row
  int pitch;             // shared elements per row: nd [+ nxb for xb] [+ 8 * nvx for dx]
  int64_t per, split;
  bool want_x, want_w, want_b;
  int nxb;               // staged x elements per row (where dw is wanted)
  int nwi;               // dy2 vectors with data per row (dw / db on the tensor cores, and the words
                         // backward's weight-gradient items)
  // The words backward (dw_bwd_cf_rows_words_kernel): dy[j] staged at j + sd and x[i] at i + sx
  // (whole words), the first ldy / lx elements of their rows copied; units as the words forward's
  // (RowsUnit).
  int sd, sx, ldy, lx;
  int64_t groups, units, upw;
};

// 16 bytes of a unit-stride row as raw words: elements [p0, p0 + E) (E = 16 / sizeof(T); row + p0
// is 16-byte aligned). One 16-byte load wherever the chunk lies inside [lo, hi), the byte extent
// of the tensor's view (memory between a view's first and last element belongs to its storage),
// even where the chunk straddles a row end: the caller zeroes what lies outside the row. Chunks
// outside the extent (the first and last row of the view) load element by element within the row.
template <typename T>
DW_DEV void rows_chunk(const T* row, int p0, int len, const char* lo, const char* hi,
                       uint32_t (&r)[4]) {
  constexpr int E = int(16 / sizeof(T));
  const char* a = reinterpret_cast<const char*>(row + p0);
  if (p0 + E <= 0 || p0 >= len) {
    r[0] = r[1] = r[2] = r[3] = 0u;  // +0.0 in every type
  } else if (a >= lo && a + 16 <= hi) {
    DW_ASSERT(reinterpret_cast<uintptr_t>(a) % 16 == 0);
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(a));
    r[0] = v.x;
    r[1] = v.y;
    r[2] = v.z;
    r[3] = v.w;
  } else {
    T t[E];
#pragma unroll
    for (int e = 0; e < E; ++e) t[e] = (p0 + e >= 0 && p0 + e < len) ? row[p0 + e] : zero_of<T>();
    memcpy(r, t, 16);
  }
}

// Zeroes the elements e of a 16-byte chunk of raw words whose row position p0 + e lies outside
// [0, len).
template <typename T>
DW_DEV void rows_mask(uint32_t (&o)[4], int p0, int len) {
  constexpr int E = int(16 / sizeof(T));
  constexpr int EPW = int(4 / sizeof(T));
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint32_t keep = 0u;
#pragma unroll
    for (int h = 0; h < EPW; ++h) {
      const int p = p0 + i * EPW + h;
      const uint32_t bits = EPW == 1 ? 0xffffffffu : (0xffffu << (16 * h));
      if (p >= 0 && p < len) keep |= bits;
    }
    o[i] &= keep;
  }
  static_assert(E == 4 * EPW, "16-byte chunks");
}

// Bytes [sh, sh + 16) of the 32 bytes a ++ b (sh in [0, 16), a multiple of the element size).
DW_DEV void rows_realign(const uint32_t (&a)[4], const uint32_t (&b)[4], int sh, uint32_t (&o)[4]) {
  const uint32_t w[8] = {a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]};
  const int ws = sh >> 2;
  const unsigned bits = unsigned(sh & 3) * 8u;
  uint32_t v[5];
#pragma unroll
  for (int i = 0; i < 5; ++i) {
    v[i] = ws == 0 ? w[i] : ws == 1 ? w[i + 1] : ws == 2 ? w[i + 2] : w[(i + 3) & 7];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) o[i] = __funnelshift_r(v[i], v[i + 1], bits);
}

// Rows [0, nrows) of dst (row pitch dst_pitch, 16-byte-aligned rows): dst[q] = src[q - off] for q
// in [0, n) (n a multiple of 16 bytes), zero where q - off lies outside [0, len); src rows
// src_pitch apart, at any alignment. Lane j of a 32-chunk slice writes dst chunk j, which straddles
// the two 16-byte-aligned chunks of src at and after it: both loaded (the second mostly from L1),
// then shifted into place. kRowsStageUnroll slices per lane in flight before the shared stores.
template <typename T>
DW_DEV void rows_stage(T* dst, int dst_pitch, int n, int nrows, const T* src, int64_t src_pitch,
                       int off, int len, const char* lo, const char* hi, int lane) {
  constexpr int E = int(16 / sizeof(T));
  constexpr int U = kRowsStageUnroll;
  const int nc = n / E;            // 16-byte chunks per staged row
  const int ns = (nc + 31) / 32;   // slices of 32 chunks per row
  const int total = nrows * ns;
  for (int t0 = 0; t0 < total; t0 += U) {
    uint32_t a[U][4], b[U][4];
    int me[U];
    int rr = t0 / ns, s = t0 - rr * ns;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = s * 32 + lane;
      me[u] = 0;
      if (t0 + u < total && j < nc) {
        const T* row = src + rr * src_pitch;
        // Element q = 0 is row[-off]; the aligned chunk holding it starts me elements earlier.
        me[u] = int((reinterpret_cast<uintptr_t>(row) / sizeof(T) - uintptr_t(off)) & (E - 1));
        const int p0 = E * j - me[u] - off;
        rows_chunk<T>(row, p0, len, lo, hi, a[u]);
        rows_chunk<T>(row, p0 + E, len, lo, hi, b[u]);
      }
      if (++s == ns) {
        s = 0;
        ++rr;
      }
    }
    rr = t0 / ns;
    s = t0 - rr * ns;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = s * 32 + lane;
      if (t0 + u < total && j < nc) {
        uint32_t o[4];
        rows_realign(a[u], b[u], me[u] * int(sizeof(T)), o);
        const int p0 = E * j - off;  // row position of the chunk's first element
        if (p0 < 0 || p0 + E > len) rows_mask<T>(o, p0, len);
        DW_ASSERT(reinterpret_cast<uintptr_t>(dst + rr * dst_pitch + E * j) % 16 == 0);
        *reinterpret_cast<uint4*>(dst + rr * dst_pitch + E * j) = make_uint4(o[0], o[1], o[2], o[3]);
      }
      if (++s == ns) {
        s = 0;
        ++rr;
      }
    }
  }
}

// The double-buffered forward's staging (rows_db_preferred; SEPCONV1D_DW_ROWS_DB): rows_stage in two
// halves, so that the next pass's loads are in flight while this pass computes and stores.
// rows_fetch issues the copies of the 16-byte-aligned chunks under the staged rows into raw (row rr
// at raw + rr * raw_pitch, chunk k holding row positions [E k - me - off, + E), me the row's
// misalignment as in rows_stage): cp.async where the chunk lies inside the view's byte extent,
// element by element (synchronous) where it crosses the extent's ends, nothing where it lies
// outside the row (rows_unstage masks those positions). n / E + 1 chunks per row.
template <typename T>
DW_DEV void rows_fetch(T* raw, int raw_pitch, int n, int nrows, const T* src, int64_t src_pitch,
                       int off, int len, const char* lo, const char* hi, int lane) {
  constexpr int E = int(16 / sizeof(T));
  const int nk = n / E + 1;
  for (int rr = 0; rr < nrows; ++rr) {
    const T* row = src + rr * src_pitch;
    const int me = int((reinterpret_cast<uintptr_t>(row) / sizeof(T) - uintptr_t(off)) & (E - 1));
    for (int k = lane; k < nk; k += 32) {
      const int p0 = E * k - me - off;
      if (p0 + E <= 0 || p0 >= len) continue;
      T* dst = raw + rr * raw_pitch + E * k;
      const char* a = reinterpret_cast<const char*>(row + p0);
      if (a >= lo && a + 16 <= hi) {
        dw_cp_async<16>(dst, row + p0, 16);
      } else {
        uint32_t r[4];
        rows_chunk<T>(row, p0, len, lo, hi, r);
        *reinterpret_cast<uint4*>(dst) = make_uint4(r[0], r[1], r[2], r[3]);
      }
    }
  }
}

// rows_stage's result from rows_fetch's chunks (landed, and visible to the warp): staged chunk j of
// row rr is bytes [me, me + 16) of raw chunks j and j + 1, masked outside the row.
template <typename T>
DW_DEV void rows_unstage(T* dst, int dst_pitch, int n, int nrows, const T* raw, int raw_pitch,
                         const T* src, int64_t src_pitch, int off, int len, int lane) {
  constexpr int E = int(16 / sizeof(T));
  const int nc = n / E;
  for (int rr = 0; rr < nrows; ++rr) {
    const T* row = src + rr * src_pitch;
    const int me = int((reinterpret_cast<uintptr_t>(row) / sizeof(T) - uintptr_t(off)) & (E - 1));
    const T* rw = raw + rr * raw_pitch;
    for (int j = lane; j < nc; j += 32) {
      const uint4 av = *reinterpret_cast<const uint4*>(rw + E * j);
      const uint4 bv = *reinterpret_cast<const uint4*>(rw + E * j + E);
      const uint32_t ra[4] = {av.x, av.y, av.z, av.w}, rb[4] = {bv.x, bv.y, bv.z, bv.w};
      uint32_t o[4];
      rows_realign(ra, rb, me * int(sizeof(T)), o);
      const int p0 = E * j - off;
      if (p0 < 0 || p0 + E > len) rows_mask<T>(o, p0, len);
      *reinterpret_cast<uint4*>(dst + rr * dst_pitch + E * j) = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }
}

// Rows [0, nrows): dst[q] = src[q] for q < len (dst rows dst_pitch apart at any alignment; src rows
// src_pitch apart, 16-byte aligned). Lane g writes the g-th 16-byte-aligned chunk of the dst row:
// one 16-byte store where it lies inside the row, element by element at the row's ends.
template <typename T>
DW_DEV void rows_store(T* dst, int64_t dst_pitch, int nrows, const T* src, int src_pitch, int len,
                       int lane) {
  constexpr int E = int(16 / sizeof(T));
  for (int rr = 0; rr < nrows; ++rr) {
    T* row = dst + rr * dst_pitch;
    const T* sr = src + rr * src_pitch;
    const int mo = row_shift(row);
    const int sh = ((E - mo) & (E - 1)) * int(sizeof(T));  // row position p0 within its shared chunk
    const int ng = (len + mo + E - 1) / E;
    for (int g = lane; g < ng; g += 32) {
      const int p0 = E * g - mo;
      if (p0 >= 0 && p0 + E <= len) {
        const int c0 = p0 / E;
        const uint4 av = *reinterpret_cast<const uint4*>(sr + E * c0);
        uint32_t a[4] = {av.x, av.y, av.z, av.w}, b[4] = {0u, 0u, 0u, 0u}, o[4];
        if (sh != 0) {
          const uint4 bv = *reinterpret_cast<const uint4*>(sr + E * c0 + E);
          b[0] = bv.x;
          b[1] = bv.y;
          b[2] = bv.z;
          b[3] = bv.w;
        }
        rows_realign(a, b, sh, o);
        st_v4u32(row + p0, o[0], o[1], o[2], o[3]);
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) {
          if (p0 + e >= 0 && p0 + e < len) row[p0 + e] = sr[p0 + e];
        }
      }
    }
  }
}

// NW 8-element vectors at s (aligned to 8 elements), widened to float.
template <typename T, int NW>
DW_DEV void rows_window(const T* s, float (&f)[8 * NW]) {
#pragma unroll
  for (int m = 0; m < NW; ++m) {
    if constexpr (std::is_same_v<T, float>) {
      DW_ASSERT(reinterpret_cast<uintptr_t>(s + 8 * m) % 16 == 0);
      const float4 a = *reinterpret_cast<const float4*>(s + 8 * m);
      const float4 b = *reinterpret_cast<const float4*>(s + 8 * m + 4);
      f[8 * m + 0] = a.x;
      f[8 * m + 1] = a.y;
      f[8 * m + 2] = a.z;
      f[8 * m + 3] = a.w;
      f[8 * m + 4] = b.x;
      f[8 * m + 5] = b.y;
      f[8 * m + 6] = b.z;
      f[8 * m + 7] = b.w;
    } else {
      DW_ASSERT(reinterpret_cast<uintptr_t>(s + 8 * m) % 16 == 0);
      const uint4 r = *reinterpret_cast<const uint4*>(s + 8 * m);
      unpack2<T>(r.x, f[8 * m + 0], f[8 * m + 1]);
      unpack2<T>(r.y, f[8 * m + 2], f[8 * m + 3]);
      unpack2<T>(r.z, f[8 * m + 4], f[8 * m + 5]);
      unpack2<T>(r.w, f[8 * m + 6], f[8 * m + 7]);
    }
  }
}

// 8 outputs rounded to T at s (aligned to 8 elements).
template <typename T>
DW_DEV void rows_put8(T* s, const float (&v)[8]) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(s) % 16 == 0);
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(s) = make_float4(v[0], v[1], v[2], v[3]);
    *reinterpret_cast<float4*>(s + 4) = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    *reinterpret_cast<uint4*>(s) = make_uint4(pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]),
                                              pack2<T>(v[4], v[5]), pack2<T>(v[6], v[7]));
  }
}

// 8 outputs rounded to T at s (aligned to 4 bytes) by 4-byte stores.
template <typename T>
DW_DEV void rows_put8_words(T* s, const float (&v)[8]) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(s) % 4 == 0);
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int e = 0; e < 8; ++e) s[e] = v[e];
  } else {
    uint32_t* d = reinterpret_cast<uint32_t*>(s);
#pragma unroll
    for (int e = 0; e < 4; ++e) d[e] = pack2<T>(v[2 * e], v[2 * e + 1]);
  }
}

// The first n of 8 outputs (n whole words; all 8 where n >= 8) rounded to T at s (aligned to 4
// bytes). A whole item goes by the widest stores its address allows (16, 8 or 4 bytes): with lanes
// 16 or 32 bytes apart, a warp's 4-byte store instruction spreads over 4 or 8 times the sectors
// of the bytes it writes. The row's last item, cut short, goes by words.
template <typename T>
DW_DEV void rows_put8_upto(T* s, const float (&v)[8], int n) {
  constexpr int W = int(8 * sizeof(T) / 4);  // words per item
  DW_ASSERT(reinterpret_cast<uintptr_t>(s) % 4 == 0);
  uint32_t wd[W];
#pragma unroll
  for (int e = 0; e < W; ++e) {
    if constexpr (std::is_same_v<T, float>) {
      memcpy(&wd[e], &v[e], 4);
    } else {
      wd[e] = pack2<T>(v[2 * e], v[2 * e + 1]);
    }
  }
  const uintptr_t at = reinterpret_cast<uintptr_t>(s);
  if (n >= 8 && at % 16 == 0) {
#pragma unroll
    for (int q = 0; q < W / 4; ++q) {
      reinterpret_cast<uint4*>(s)[q] =
          make_uint4(wd[4 * q], wd[4 * q + 1], wd[4 * q + 2], wd[4 * q + 3]);
    }
  } else if (n >= 8 && at % 8 == 0) {
#pragma unroll
    for (int q = 0; q < W / 2; ++q) {
      reinterpret_cast<uint2*>(s)[q] = make_uint2(wd[2 * q], wd[2 * q + 1]);
    }
  } else {
    constexpr int EPW = int(4 / sizeof(T));
    uint32_t* d = reinterpret_cast<uint32_t*>(s);
#pragma unroll
    for (int e = 0; e < W; ++e) {
      if (EPW * e < n) d[e] = wd[e];
    }
  }
}

// The forward's arithmetic over a pass's staged rows: y[rr][8v + e] = b + sum_k w[k] xs[rr][8v +
// OFF + e + k] for the lane items (row rr, vector v) flattened over the nrows rows (nv vectors
// each); xs rows xpitch apart (16-byte aligned), y rows ypitch apart (16-byte aligned, or with
// WORDS 4-byte aligned, stored by 4-byte stores).
template <typename T, int KP, int OFF, bool WORDS = false>
DW_DEV void rows_fwd_compute(const T* xs, int xpitch, T* ys, int ypitch, int nrows, int nv, int K,
                             const float (&wr)[KP], float b, int lane) {
  constexpr int NW = rows_window_vecs<KP, OFF>();
  static_assert(8 + KP - 1 + OFF <= 8 * NW, "the window's vectors cover the offset");
  int rr = lane / nv, v = lane - rr * nv;
  while (rr < nrows) {
    float win[8 * NW];
    rows_window<T, NW>(xs + rr * xpitch + 8 * v, win);
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = b;
#pragma unroll
    for (int k = 0; k < KP; ++k) {
      if (k >= K) break;  // a uniform exit: the padded taps are not issued
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(wr[k], win[e + k + OFF], acc[e]);
    }
    if constexpr (WORDS) {
      rows_put8_words<T>(ys + rr * ypitch + 8 * v, acc);
    } else {
      rows_put8<T>(ys + rr * ypitch + 8 * v, acc);
    }
    v += 32;
    while (v >= nv) {
      v -= nv;
      ++rr;
    }
  }
}

// ---- The words forward's arithmetic on the tensor cores (half types) -------------------------
// A staged row's convolution as depthwise_tc.cuh's block-Toeplitz product: outputs in blocks of
// 128 (16 vectors), each S x (ldmatrix, m16n8k16 MMA) over 16-element slices of the staged row,
// with B fragments (TcConvB) built from the channel's taps at the window offset OFF. Per 128
// outputs that is ~2S + 4 warp instructions where the FFMA path issues ~K + 5 per 8 outputs and
// lane. Products exact, sums in fp32 in the tensor cores' order (not bit-equal to the FFMA path);
// the zeros of the Toeplitz band multiply x values outside an output's window, so an inf in x
// turns up to 16S neighbouring outputs to NaN where the reference keeps them finite (as in the
// tensor-core kernels of depthwise_tc.cuh).

// The tap counts with tensor-core words kernels (half types): from K 11, where the forward measured
// faster than on the CUDA cores (H100, scripts/depthwise_rows_ab.py mma, csrc/NOTES.md, fifty-sixth
// session; bf16 / fp16: Conformer L500 K31 1.48x / 1.42x, L1024 K31 1.56x / 1.50x, L250 K21 1.38x,
// L500 K13-15 1.30-1.39x, Citrinet L250 K11 1.02x, L256 K11 0.97x / 0.96x); below it the copies
// bound the kernel and the tensor-core form's longer staged rows and per-block latency lose
// (FastConformer L210 K9 0.91x, L2048 K9 0.94x, L64 K3 0.93x).
template <int KP>
constexpr bool rows_mma_compiled() {
  return KP >= 11;
}

// The backward's dx on the tensor cores from K 12 (H100, depthwise_rows_ab.py mma_bwd, NOTES.md,
// fifty-sixth session; dx + dw + db, bf16 / fp16: Conformer L500 K31 1.11x / 1.10x, L1024 K31
// 1.10x / 1.12x, L250 K21 1.11x, L500 and L1000 K13-15 1.03-1.05x; at K 11 Citrinet L250 lost,
// 0.92x / 0.94x): dx is one product beside the dw / db sums, which stay on the CUDA cores.
template <int KP>
constexpr bool rows_mma_bwd_compiled() {
  return KP >= 12;
}

// Shifts (16-element slices) one block reads at window offset OFF: K + 7 + OFF elements.
template <int KP, int OFF>
constexpr int rows_mma_shifts() {
  return (KP + 7 + OFF + 15) / 16;
}

// The most shifts over the window offsets the words forward takes (0 .. 16 bytes / sizeof(T) - 1).
template <typename T, int KP>
constexpr int rows_mma_max_shifts() {
  return rows_mma_shifts<KP, int(16 / sizeof(T)) - 1>();
}

// The backward's dx as the same product over the staged dy rows, with the taps flipped, at window
// offset OD + KP - K (OD <= 1; a padded KP exceeds K by at most 7): its most shifts.
template <int KP>
constexpr int rows_mma_bwd_shifts() {
  return rows_mma_shifts<KP, (KP & 1) ? 1 : 8>();
}

// Staged vectors (8 elements) per row a tensor-core product of S shifts reads for nv output vectors
// (the forward: rows_mma_max_shifts; the backward's dx: rows_mma_bwd_shifts): block m reads vectors
// 16m + a + 2s + h (a < 16, s < S, h < 2).
constexpr int rows_mma_vecs(int nv, int shifts) {
  return 16 * ((nv + 15) / 16) + 2 * shifts - 1;
}

// y[rr][j] = init + sum_k w[k] xs[rr][j + OFF + k] for j < nout of the nrows staged rows (xs rows
// xpitch apart, 16-byte aligned, each at least rows_mma_vecs vectors for ceil(nout / 8) output
// vectors, with zeros past the row), stored as element pairs to y (rows ypitch apart, 4-byte
// aligned; nout even): the staged y rows of the forward, or dx's rows in device memory (the
// backward, with the flipped taps). The warp's lanes work on one block at a time.
template <typename T, typename W, int S, int SMAX>
DW_DEV void rows_conv_mma(const T* xs, int xpitch, T* y, int64_t ypitch, int nrows, int nout,
                          const TcConvB<T, W, SMAX>& bf, float init, int lane) {
  static_assert(S <= SMAX, "the fragments hold every shift read");
  const int nb = (nout + 127) / 128;
  // ldmatrix row of the lane: matrix lane >> 3, row lane & 7 -> A row (lane & 7) + 8 ((lane >> 3) & 1)
  // of the k half lane >> 4: staged vector a + (lane >> 4) (+ 2s per shift).
  const int a_lane = ((lane & 7) + 8 * ((lane >> 3) & 1) + (lane >> 4)) * 8;
  // c_i: row g + 8 (i >> 1), column 2q + (i & 1): outputs 8g + 2q (+ 1) and + 64 of the block.
  const int o_lane = 8 * (lane >> 2) + 2 * (lane & 3);
#pragma unroll 1
  for (int rr = 0; rr < nrows; ++rr) {
    const T* xr = xs + rr * xpitch + a_lane;
    T* yr = y + rr * ypitch + o_lane;
#pragma unroll 1
    for (int m = 0; m < nb; ++m) {
      float acc[4] = {init, init, init, init};
#pragma unroll
      for (int s = 0; s < S; ++s) {
        uint32_t av[4];
        tc_ldmatrix_x4(av, xr + 128 * m + 16 * s);
        tc_mma<T>(acc, av, bf.hi[s]);
        if constexpr (TcConvB<T, W, SMAX>::kSplit) tc_mma<T>(acc, av, bf.lo[s]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (128 * m + 64 * h + o_lane < nout) {  // nout is even: a pair is wholly in or out
          T* q = yr + 128 * m + 64 * h;
          DW_ASSERT(reinterpret_cast<uintptr_t>(q) % 4 == 0);
          *reinterpret_cast<uint32_t*>(q) = pack2<T>(acc[2 * h], acc[2 * h + 1]);
        }
      }
    }
  }
}

// The block's batch rows [b0, b1) of its channel, and this warp's share of a pass: rows
// [b, b + n) of the pass starting at pass_b0.
struct RowsSpan {
  int64_t b0, b1;
};
DW_DEV RowsSpan rows_span(int64_t B, int64_t per, int64_t s) {
  const int64_t b0 = s * per;
  return RowsSpan{b0, b0 + per < B ? b0 + per : B};
}

// The float taps of channel c (zeros past K: the compute exits before them) and its bias (0
// without one).
template <typename T, typename W, int KP, int NW>
DW_DEV void rows_load_taps(const RowsFwdArgs<T, W>& a, int64_t c, float (&wr)[NW], float& b) {
  const int K = rows_taps<KP>(a.K);
#pragma unroll
  for (int k = 0; k < NW; ++k) wr[k] = k < K ? float(in_cvt(a.w[c * K + k])) : 0.f;
  b = a.bias != nullptr ? float(in_cvt(a.bias[c])) : 0.f;
}

// DB: double-buffered staging (rows_fetch / rows_unstage; a.raw_pitch elements per row of each
// warp's raw chunks after its rpw rows of pitch). MMA (half types, rows_mma_compiled KPs): the
// staged rows' arithmetic on the tensor cores (rows_conv_mma at window offset 0), the rows then
// staged to rows_mma_vecs(nv, rows_mma_shifts<KP, 0>()) vectors (a.nx; zeros past the row).
template <typename T, typename W, int KP, bool DB, bool MMA>
DW_DEV void rows_fwd_body(const RowsFwdArgs<T, W>& a) {
  const int K = rows_taps<KP>(a.K);  // compile-time where KP is exact
  static_assert(sizeof(T) <= 4, "float, half or bfloat16 activations");
  static_assert(!MMA || sizeof(T) == 2, "the tensor-core arithmetic is for half types");
  constexpr int S = rows_mma_shifts<KP, 0>();
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  T* const sm = smem_base<T>() + int64_t(warp) * a.rpw * (a.pitch + (DB ? a.raw_pitch : 0));
  T* const raw = sm + a.rpw * a.pitch;  // DB only
  for (int64_t blk = blockIdx.x; blk < a.C * a.split; blk += gridDim.x) {
    const int64_t c = blk / a.split;
    const RowsSpan span = rows_span(a.B, a.per, blk - c * a.split);
    float wr[MMA ? 1 : KP], b;
    rows_load_taps<T, W, KP>(a, c, wr, b);
    [[maybe_unused]] std::conditional_t<MMA, TcConvB<T, W, S>, int> bf{};
    if constexpr (MMA) bf.build(a.w + c * K, K, S, 0, false, lane >> 2, lane & 3);
    const int64_t step = int64_t(kWarps) * a.rpw;
    auto rows_of = [&](int64_t pb) { return int(pb + a.rpw <= span.b1 ? a.rpw : span.b1 - pb); };
    if constexpr (DB) {
      const int64_t pb0 = span.b0 + int64_t(warp) * a.rpw;
      if (pb0 < span.b1) {
        rows_fetch<T>(raw, a.raw_pitch, a.nx, rows_of(pb0), a.x + pb0 * a.xsb + c * a.xsc, a.xsb,
                      a.pl, a.L, a.x_lo, a.x_hi, lane);
      }
      dw_cp_commit();
    }
    for (int64_t pb = span.b0 + int64_t(warp) * a.rpw; pb < span.b1; pb += step) {
      const int nrows = rows_of(pb);
      if constexpr (DB) {
        dw_cp_wait<0>();
        __syncwarp();  // every lane's chunks landed
        rows_unstage<T>(sm, a.pitch, a.nx, nrows, raw, a.raw_pitch, a.x + pb * a.xsb + c * a.xsc,
                        a.xsb, a.pl, a.L, lane);
        __syncwarp();  // raw read by every lane before the next pass's copies overwrite it
        const int64_t pn = pb + step;
        if (pn < span.b1) {
          rows_fetch<T>(raw, a.raw_pitch, a.nx, rows_of(pn), a.x + pn * a.xsb + c * a.xsc, a.xsb,
                        a.pl, a.L, a.x_lo, a.x_hi, lane);
        }
        dw_cp_commit();
      } else {
        rows_stage<T>(sm, a.pitch, a.nx, nrows, a.x + pb * a.xsb + c * a.xsc, a.xsb, a.pl, a.L,
                      a.x_lo, a.x_hi, lane);
        __syncwarp();
      }
      if constexpr (MMA) {
        rows_conv_mma<T, W, S, S>(sm, a.pitch, sm + a.nx, a.pitch, nrows, 8 * a.nv, bf, b, lane);
      } else {
        rows_fwd_compute<T, KP, 0>(sm, a.pitch, sm + a.nx, a.pitch, nrows, a.nv, K, wr, b, lane);
      }
      __syncwarp();
      rows_store<T>(a.y + pb * a.ysb + c * a.ysc, a.ysb, nrows, sm + a.nx, a.pitch, a.Lo, lane);
      __syncwarp();  // the next pass stages over these rows
    }
  }
}

template <typename T, typename W, int KP, bool DB = false>
__global__ void __launch_bounds__(kThreads) dw_fwd_cf_rows_kernel(const RowsFwdArgs<T, W> a) {
  rows_fwd_body<T, W, KP, DB, false>(a);
}

// Half types on the tensor cores (rows_mma_compiled KPs): its own entry point, as the words
// forward's, so that the CUDA-core kernels keep their registers.
template <typename T, typename W, int KP, bool DB = false>
__global__ void __launch_bounds__(kThreads) dw_fwd_cf_rows_mma_kernel(const RowsFwdArgs<T, W> a) {
  rows_fwd_body<T, W, KP, DB, true>(a);
}

// ---- The forward on word-aligned rows (dw_fwd_cf_rows_words_kernel) --------------------------
// Where every row of x and y starts on a 4-byte boundary and the rows hold whole words (float32
// always; half types with even lengths, strides and offsets), the realignment the kernel above
// spends most of its instructions on is not needed: x's words are copied by cp.async straight to
// their staged place, x[i] at i + shift, and y's words stored from the staged outputs, both by
// 4-byte accesses (a warp's 32 lanes move 128 consecutive bytes per instruction). shift is pl
// rounded up to a whole word, so the windows start OFF = shift - pl (0 or 1) elements into their
// vectors, a compile-time offset picked by one uniform test. The padding cells of the staged rows
// are zeroed once, as no copy ever writes them. Each warp walks its own run of units (RowsUnit)
// with two x buffers: the next unit's copies are in flight while this unit computes and stores
// (csrc/NOTES.md, forty-sixth session).
// Shared memory per warp: two x buffers of rpw rows of nx, then rpw output rows of 8 * nv.

// The words kernel's unit of work: batch rows [pb, pb + rpw) of channel c (u = c * groups + pb /
// rpw, groups = ceil(B / rpw) units per channel). Warp w of the grid takes units [w * upw, (w + 1) *
// upw): whole runs of one channel's rows, so the taps change rarely.
struct RowsUnit {
  int64_t c, pb;
};

// The unit after t in a warp's run: the next rpw batch rows of t's channel, or the next channel's first.
DW_DEV RowsUnit rows_next_unit(RowsUnit t, int rpw, int64_t B) {
  t.pb += rpw;
  if (t.pb >= B) {
    t.pb = 0;
    ++t.c;
  }
  return t;
}

// Copies (cp.async, 4 bytes each) the first `len` elements (whole words) of nrows rows of src
// (rows src_pitch apart) into dst (rows dst_pitch apart), element i to i + shift (whole words).
template <typename T>
DW_DEV void rows_fetch_words(const T* src, int64_t src_pitch, int nrows, T* dst, int dst_pitch,
                             int shift, int len, int lane) {
  constexpr int EPW = int(4 / sizeof(T));
  const int nw = len / EPW;
  for (int rr = 0; rr < nrows; ++rr) {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src + rr * src_pitch);
    uint32_t* d = reinterpret_cast<uint32_t*>(dst + rr * dst_pitch + shift);
    for (int w = lane; w < nw; w += 32) dw_cp_async<4>(d + w, s + w, 4);
  }
}

// Stores the first `len` elements (whole words) of nrows staged rows (src, rows src_pitch apart)
// word by word to dst (rows dst_pitch apart).
template <typename T>
DW_DEV void rows_store_words(T* dst, int64_t dst_pitch, int nrows, const T* src, int src_pitch,
                             int len, int lane) {
  constexpr int EPW = int(4 / sizeof(T));
  const int nw = len / EPW;
  for (int rr = 0; rr < nrows; ++rr) {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src + rr * src_pitch);
    uint32_t* d = reinterpret_cast<uint32_t*>(dst + rr * dst_pitch);
    for (int w = lane; w < nw; w += 32) d[w] = s[w];
  }
}

// Zeroes the words of nrows rows (pitch elements apart, pitch, lo and hi whole words) outside
// elements [lo, hi): the padding cells of staged rows, which no copy writes. A lane per row: the
// pads are a few words at each end, and visiting every word to find them cost ~9% of the words
// forward's instructions at FastConformer's shape.
template <typename T>
DW_DEV void rows_zero_pads(T* rows, int nrows, int pitch, int lo, int hi, int lane) {
  constexpr int EPW = int(4 / sizeof(T));
  const int rw = pitch / EPW, wlo = lo / EPW, whi = hi / EPW;
  for (int rr = lane; rr < nrows; rr += 32) {
    uint32_t* z = reinterpret_cast<uint32_t*>(rows) + int64_t(rr) * rw;
    for (int w = 0; w < wlo; ++w) z[w] = 0u;
    for (int w = whi; w < rw; ++w) z[w] = 0u;
  }
}

// A row of `len` elements (whole words) split at its 16-byte boundaries, the row starting `mis`
// elements into its 16-byte chunk: `head` elements before the first boundary, `chunks` whole
// 16-byte chunks, then the rest. Its pieces in order, as slots: the head's words, the chunks, the
// tail's words; slot s of a row is copied by one lane.
template <typename T>
struct RowsPieces16 {
  static constexpr int kEPW = int(4 / sizeof(T)), kE = int(16 / sizeof(T));
  int head, chunks, hw, slots;
  DW_DEV RowsPieces16(int mis, int len) {
    head = (kE - mis) & (kE - 1);
    head = head < len ? head : len;
    chunks = (len - head) / kE;
    hw = head / kEPW;
    slots = hw + chunks + (len - head - chunks * kE) / kEPW;
  }
  // Slot s: its first element and its size in bytes (4 or 16).
  DW_DEV int at(int s, int& bytes) const {
    if (s < hw) {
      bytes = 4;
      return s * kEPW;
    }
    if (s < hw + chunks) {
      bytes = 16;
      return head + (s - hw) * kE;
    }
    bytes = 4;
    return head + chunks * kE + (s - hw - chunks) * kEPW;
  }
};

// rows_fetch_words by 16-byte copies between the row ends: every row of src starts `mis` elements
// into its 16-byte chunk (rows src_pitch apart, a whole number of chunks), and dst + shift is at
// the same offset in its chunk (dst_pitch a whole number of chunks).
template <typename T>
DW_DEV void rows_fetch16(const T* src, int64_t src_pitch, int nrows, T* dst, int dst_pitch, int shift,
                         int len, int mis, int lane) {
  const RowsPieces16<T> pc(mis, len);
  for (int rr = 0; rr < nrows; ++rr) {
    const T* s = src + rr * src_pitch;
    T* d = dst + rr * dst_pitch + shift;
    for (int slot = lane; slot < pc.slots; slot += 32) {
      int bytes;
      const int i = pc.at(slot, bytes);
      if (bytes == 16) {
        dw_cp_async<16>(d + i, s + i, 16);
      } else {
        dw_cp_async<4>(d + i, s + i, 4);
      }
    }
  }
}

// rows_store_words by 16-byte stores between the row ends: every row of dst starts `mis` elements
// into its 16-byte chunk (rows dst_pitch apart, a whole number of chunks), and so does every
// staged row of src (src_pitch a whole number of chunks).
template <typename T>
DW_DEV void rows_store16(T* dst, int64_t dst_pitch, int nrows, const T* src, int src_pitch, int len,
                         int mis, int lane) {
  const RowsPieces16<T> pc(mis, len);
  for (int rr = 0; rr < nrows; ++rr) {
    const T* s = src + rr * src_pitch;
    T* d = dst + rr * dst_pitch;
    for (int slot = lane; slot < pc.slots; slot += 32) {
      int bytes;
      const int i = pc.at(slot, bytes);
      if (bytes == 16) {
        DW_ASSERT(reinterpret_cast<uintptr_t>(d + i) % 16 == 0 && reinterpret_cast<uintptr_t>(s + i) % 16 == 0);
        *reinterpret_cast<uint4*>(d + i) = *reinterpret_cast<const uint4*>(s + i);
      } else {
        *reinterpret_cast<uint32_t*>(d + i) = *reinterpret_cast<const uint32_t*>(s + i);
      }
    }
  }
}

// Calls f(std::integral_constant<int, o>{}) for a window offset o in [0, 16 bytes / sizeof(T))
// (0 as dispatch_int's miss).
template <typename T, typename F>
DW_DEV void rows_with_offset(int o, F&& f) {
  if constexpr (sizeof(T) == 2) {
    dispatch_int<1, 2, 3, 4, 5, 6, 7>(o, f);
  } else {
    dispatch_int<1, 2, 3>(o, f);
  }
}

template <typename T, typename W, int KP, bool MMA>
DW_DEV void rows_fwd_words_body(const RowsFwdArgs<T, W>& a) {
  const int K = rows_taps<KP>(a.K);  // compile-time where KP is exact
  static_assert(sizeof(T) <= 4, "float, half or bfloat16 activations");
  constexpr int EPW = int(4 / sizeof(T));
  constexpr int E = int(16 / sizeof(T));
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  int64_t u = (int64_t(blockIdx.x) * kWarps + warp) * a.upw;
  const int64_t u_end = u + a.upw < a.units ? u + a.upw : a.units;
  if (u >= u_end) return;
  const int xbuf = a.rpw * a.nx;  // elements of one x buffer
  const int ypitch = 8 * a.nv + (a.y16 ? E : 0);
  T* const xs0 = smem_base<T>() + int64_t(warp) * (2 * xbuf + a.rpw * ypitch);
  T* const ys = xs0 + 2 * xbuf;
  const int64_t c0 = u / a.groups;
  RowsUnit cur{c0, (u - c0 * a.groups) * a.rpw};
  auto rows_of = [&](const RowsUnit& t) { return int(t.pb + a.rpw <= a.B ? a.rpw : a.B - t.pb); };
  // Unit t's rows are staged at x[i] -> i + shift: shift >= pl at the rows' own offset within their
  // 16-byte chunks (x16: the copies between the row ends are then 16 bytes each), else pl rounded
  // up to whole words. The padding cells around them are zeroed when a buffer's shift changes
  // (zs0 / zs1: the shift each buffer's cells were zeroed for).
  const int g = a.x16 ? E : EPW;
  int zs0 = -1, zs1 = -1;
  auto stage = [&](const RowsUnit& t, int which) {
    const T* row = a.x + t.pb * a.xsb + t.c * a.xsc;
    const int mis = a.x16 ? row_shift(row) : 0;
    const int shift = a.pl + ((mis - a.pl) & (g - 1));
    const int lx = (a.L < a.nx - shift ? a.L : a.nx - shift) & ~(EPW - 1);
    T* buf = xs0 + which * xbuf;
    if (shift != (which ? zs1 : zs0)) {
      rows_zero_pads(buf, a.rpw, a.nx, shift, shift + lx, lane);
      (which ? zs1 : zs0) = shift;
    }
    if (a.x16) {
      rows_fetch16(row, a.xsb, rows_of(t), buf, a.nx, shift, lx, mis, lane);
    } else {
      rows_fetch_words(row, a.xsb, rows_of(t), buf, a.nx, shift, lx, lane);
    }
    return shift;
  };
  int shift = stage(cur, 0);
  dw_cp_commit();
  float wr[MMA ? 1 : KP], b;
  rows_load_taps<T, W, KP>(a, cur.c, wr, b);
  // The tensor-core path's B fragments, rebuilt where the channel or the window offset changes.
  static_assert(!MMA || sizeof(T) == 2, "the tensor-core arithmetic is for half types");
  constexpr int SMAX = rows_mma_max_shifts<T, KP>();
  [[maybe_unused]] std::conditional_t<MMA, TcConvB<T, W, SMAX>, int> bf{};
  int64_t bf_c = -1;
  int bf_off = -1;
  int bi = 0;
  while (true) {
    const bool more = u + 1 < u_end;
    const RowsUnit nxt = rows_next_unit(cur, a.rpw, a.B);
    const int shift_next = more ? stage(nxt, bi ^ 1) : 0;
    dw_cp_commit();
    dw_cp_wait<1>();  // this unit's copies (all but the newest group) landed
    __syncwarp();     // ... every lane's, and the padding zeroed
    const int nrows = rows_of(cur);
    const T* xs = xs0 + bi * xbuf;
    // Outputs staged at the y rows' offset within their 16-byte chunks (y16), so that the stores
    // between the row ends are 16 bytes each.
    T* const yrow = a.y + cur.pb * a.ysb + cur.c * a.ysc;
    const int ymis = a.y16 ? row_shift(yrow) : 0;
    if constexpr (MMA) {
      if (cur.c != bf_c || shift - a.pl != bf_off) {
        bf.build(a.w + cur.c * K, K, SMAX, shift - a.pl, false, lane >> 2, lane & 3);
        bf_c = cur.c;
        bf_off = shift - a.pl;
      }
    }
    rows_with_offset<T>(shift - a.pl, [&](auto off) {
      constexpr int OFF = decltype(off)::value;
      if constexpr (MMA) {
        rows_conv_mma<T, W, rows_mma_shifts<KP, OFF>(), SMAX>(xs, a.nx, ys + ymis, ypitch, nrows,
                                                               8 * a.nv, bf, b, lane);
      } else {
        rows_fwd_compute<T, KP, OFF, true>(xs, a.nx, ys + ymis, ypitch, nrows, a.nv, K, wr, b, lane);
      }
    });
    __syncwarp();
    if (a.y16) {
      rows_store16(yrow, a.ysb, nrows, ys + ymis, ypitch, a.Lo, ymis, lane);
    } else {
      rows_store_words(yrow, a.ysb, nrows, ys, ypitch, a.Lo, lane);
    }
    if (!more) break;
    if (nxt.c != cur.c) rows_load_taps<T, W, KP>(a, nxt.c, wr, b);
    __syncwarp();  // ys and this x buffer read by every lane before they are written again
    cur = nxt;
    shift = shift_next;
    ++u;
    bi ^= 1;
  }
}

// Two entry points: on the CUDA cores, and (half types) on the tensor cores, each with the
// registers it needs (one kernel holding both took bf16 K 9 from 72 registers to 128).
template <typename T, typename W, int KP>
__global__ void __launch_bounds__(kThreads) dw_fwd_cf_rows_words_kernel(const RowsFwdArgs<T, W> a) {
  rows_fwd_words_body<T, W, KP, false>(a);
}

template <typename T, typename W, int KP>
__global__ void __launch_bounds__(kThreads) dw_fwd_cf_rows_words_mma_kernel(const RowsFwdArgs<T, W> a) {
  rows_fwd_words_body<T, W, KP, true>(a);
}

// ---- The backward on word-aligned rows (dw_bwd_cf_rows_words_kernel) -------------------------
// The forward's word copies applied to the backward (same rows condition: dy, x and dx rows start
// on 4-byte boundaries and hold whole words). dy is staged at dys[j + sd] (sd = D + OD, D = KP - 1
// - pl as in the index maps above, OD = 0 or 1 so that sd is whole words) and x at xbs[i + sx] (sx
// = KP - 1 + OX, OX >= OD the least that makes sx whole words). Then, for output item u (8
// consecutive positions):
//   dx[8u + e] = sum_k w[k] dys[8u + e + OD + KP - 1 - k]
//   dw[k]     += sum_e dys[8u + e] xbs[8u + e + k + OX - OD]     (items over dys's whole row)
//   db        += sum_e dys[8u + e]
// Both read aligned dy vectors from 8u, at the compile-time offsets OD and DX = OX - OD (float32: 0
// and 0; half types by the parities of pl and KP: (0, 1) or (1, 0) for even KP, (0, 0) or (1, 1)
// for the odd compiled sizes). Units, runs per warp and the two buffer sets are as in the words
// forward. Each unit's dw / db sums (a fixed lane order, then rows_warp_sums' reduce-scatter) go to
// their own slot, part[group][K + 1][C] (group = the unit's batch rows / rpw), so the sums never
// depend on how units are spread over warps; dw_reduce_kernel adds the groups. Shared memory per
// warp: two buffer sets (rpw dy rows of nd, then rpw x rows of nxb when dw is wanted), then, where
// dx is staged, rpw dx rows of 8 * nvx when dx is wanted. Half types, and float32 in the entry point
// held at 64 registers, store dx from each item's registers straight to device memory, not staged
// for row-wise stores (a shared store and load per word and a loop per row): rows_bwd_dx_direct. Only the part of dy's row that some item reads is copied (ldy
// < Lo where dx alone is wanted and the right padding is long).

// A warp's dw / db sums, scattered over its lanes: N = KP + 1 values (the taps' sums, then db's)
// by recursive halving. Each round pairs lanes o apart that hold the same values, and each lane
// keeps half of them (the lower half where lane & o is 0) plus its partner's copy of that half: one
// shuffle per value kept, where a butterfly per value took 5 per value (50 shuffles for K 9, 12
// here; 160 for K 31, 31 here). Once one value is left the remaining rounds are a butterfly; after
// the five rounds a lane holds ceil(N / 32) totals (2 for KP 32; an odd count halves to a zero
// filler in the upper half, which no lane stores). The order of the additions
// depends only on the lanes, so the sums are the same every call; both rows backwards use it, so
// their slots add the same way.
template <int M, int O>
DW_DEV void rows_halving_round(float (&v)[kRowsMaxTaps + 2], int lane, int& idx, int& len) {
  if constexpr (O > 0) {
    if constexpr (M > 1) {
      constexpr int H = (M + 1) / 2;  // an odd M gets a zero value at M
      const bool up = (lane & O) != 0;
#pragma unroll
      for (int i = 0; i < H; ++i) {
        const float lo = v[i];
        const float hi = i + H < M ? v[i + H] : 0.f;
        v[i] = (up ? hi : lo) + __shfl_xor_sync(0xffffffffu, up ? lo : hi, O);
      }
      // The lane's values are now idx, idx + 1, ...: the first len real, the rest fillers.
      if (up) {
        idx += H;
        len = len > H ? len - H : 0;
      } else {
        len = len < H ? len : H;
      }
      rows_halving_round<H, O / 2>(v, lane, idx, len);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
      rows_halving_round<1, O / 2>(v, lane, idx, len);
    }
  }
}

// For N values: the totals a lane holds after rows_halving_round's five rounds, and the lane bits
// of its butterfly rounds (lanes that differ only in them hold the same totals).
constexpr int rows_scatter_held(int n) {
  for (int o = 16; o > 0; o >>= 1) n = (n + 1) / 2;
  return n;
}
constexpr int rows_scatter_copies(int n) {
  int mask = 0;
  for (int o = 16; o > 0; o >>= 1) {
    if (n > 1) {
      n = (n + 1) / 2;
    } else {
      mask |= o;
    }
  }
  return mask;
}

// The warp's totals of values idx, idx + 1, ..., idx + len - 1 (value j: accw[j] for j < KP, accb
// for j == KP) in total[0 .. len); `writer`: the one lane of those holding them that stores them.
template <int KP>
struct RowsScattered {
  static constexpr int kHeld = rows_scatter_held(KP + 1);
  float total[kHeld];
  int idx, len;
  bool writer;
};
template <int KP>
DW_DEV RowsScattered<KP> rows_warp_sums(const float (&accw)[KP], float accb, int lane) {
  static_assert(KP + 1 <= kRowsMaxTaps + 2, "the values fit");
  float v[kRowsMaxTaps + 2];
#pragma unroll
  for (int k = 0; k < KP; ++k) v[k] = accw[k];
  v[KP] = accb;
  RowsScattered<KP> r;
  r.idx = 0;
  r.len = KP + 1;
  rows_halving_round<KP + 1, 16>(v, lane, r.idx, r.len);
#pragma unroll
  for (int j = 0; j < RowsScattered<KP>::kHeld; ++j) r.total[j] = v[j];
  r.writer = (lane & rows_scatter_copies(KP + 1)) == 0;
  return r;
}

// Float32 words backwards with KP up to this may run a second entry point held at 64 registers (8
// blocks of 128 threads per SM) that stores dx from registers: 1.05-1.20x on an H100. ptxas fits it
// without spills, where from KP 12 on the hold spills (csrc/NOTES.md, fifty-fourth and fifty-fifth
// sessions).
constexpr int kRowsBwdWordsHeldMaxTaps = 11;
constexpr int kRowsBwdWordsHeldBlocks = 8;  // __launch_bounds__ minimum: 65536 / (8 x 128) = 64 registers

template <typename T, int KP>
constexpr bool rows_bwd_words_held() {
  return sizeof(T) == 4 && KP <= kRowsBwdWordsHeldMaxTaps;
}

// Whether the words backward stores dx straight from the items' registers or stages it in shared
// memory for row-wise word stores. Half types: always (1.01-1.24x on an H100). Float32: only held at
// 64 registers (unheld, at 80, direct stores ran 0.60-0.96x) and where dx's rows start on 8 bytes:
// rows on 4 bytes take eight 4-byte stores per item, and ran 0.71-0.93x at odd L (fifty-third to
// fifty-fifth sessions).
template <typename T, int KP>
constexpr bool rows_bwd_dx_direct(bool rows_on_8_bytes) {
  return sizeof(T) == 2 || (rows_bwd_words_held<T, KP>() && rows_on_8_bytes);
}

// The items of one unit's rows: dx to dxo (rows dxp apart: device memory and L elements where DXD,
// stored from registers, else staged rows), dw / db into the lane's sums.
template <typename T, int KP, int OD, int DX, bool DXD>
DW_DEV void rows_bwd_words_compute(const T* dys, int dpitch, const T* xbs, int xpitch, T* dxo,
                                   int64_t dxp, int L, int nrows, int nu, int nvx, int nwi, int K,
                                   bool want_x, bool want_w, bool want_b, const float (&wf)[KP],
                                   float (&accw)[KP], float& accb, int lane) {
  constexpr int NW = rows_window_vecs<KP>();
  static_assert(8 + KP - 1 + OD <= 8 * NW && 8 + KP - 1 + DX <= 8 * NW,
                "the windows' vectors cover the offsets");
  int rr = lane / nu, u = lane - rr * nu;
  while (rr < nrows) {
    const T* drow = dys + rr * dpitch + 8 * u;
    if (want_x && u < nvx) {
      float win[8 * NW];
      rows_window<T, NW>(drow, win);
      float acc[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = 0.f;
#pragma unroll
      for (int k = 0; k < KP; ++k) {  // tap k at window offset OD + KP - 1 - k
        if (k >= K) break;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(wf[KP - 1 - k], win[e + OD + KP - 1 - k], acc[e]);
      }
      if constexpr (DXD) {
        rows_put8_upto<T>(dxo + rr * dxp + 8 * u, acc, L - 8 * u);
      } else {
        rows_put8<T>(dxo + rr * dxp + 8 * u, acc);
      }
    }
    if (u < nwi) {
      float d8[8];  // read again: keeping the dx window live through here costs registers
      rows_window<T, 1>(drow, d8);
      if (want_w) {
        float xw[8 * NW];
        rows_window<T, NW>(xbs + rr * xpitch + 8 * u, xw);
#pragma unroll
        for (int k = 0; k < KP; ++k) {
          if (k >= K) break;
#pragma unroll
          for (int e = 0; e < 8; ++e) accw[k] = fmaf(d8[e], xw[e + k + DX], accw[k]);
        }
      }
      if (want_b) {
#pragma unroll
        for (int e = 0; e < 8; ++e) accb += d8[e];
      }
    }
    u += 32;
    while (u >= nu) {
      u -= nu;
      ++rr;
    }
  }
}

// The words backward's dw / db on the tensor cores (half types, beside the tensor-core dx), as
// dw_bwd_cf_tc_kernel's: with X[a][t] = xbs[8a + t] and DY[a][n] = dys[8a + n] over the staged
// vectors a of a unit's rows, D = X^T DY (t < 16 MT, n < 8; the MMA's reduction runs over a, 32
// vectors per step, both operands by ldmatrix.trans) gives dw[k] = sum_n D[n + k + DX][n] (DX: the
// x windows' offset, 0 or 1), summed in a fixed order at the unit's end; db is the sum of the same
// DY fragments. Per 256 positions of a row: 1 + 2 MT ldmatrix and 2 MT MMAs, where the CUDA cores
// spend ~K FFMA per position and lane item.
template <int KP>
constexpr int rows_dw_mma_tiles() {  // 16-row tiles of t: t <= 7 + (K - 1) + 1
  return (KP + 8 + 15) / 16;
}
// Staged vectors per row the product reads for nwi items: dy whole steps of 32, x those plus the
// tiles' reach.
constexpr int rows_dw_mma_dy_vecs(int nwi) { return 32 * ((nwi + 31) / 32); }
template <int KP>
constexpr int rows_dw_mma_x_vecs(int nwi) {
  return rows_dw_mma_dy_vecs(nwi) + 2 * rows_dw_mma_tiles<KP>();
}
// Floats of one warp's D scratch (the unit's end).
template <int KP>
constexpr int rows_dw_mma_scratch() {
  return 16 * rows_dw_mma_tiles<KP>() * 8;
}

template <typename T, int MT>
DW_DEV void rows_dw_mma(const T* dys, int dpitch, const T* xbs, int xpitch, int nrows, int nwi,
                        bool want_w, float (&dacc)[MT][4], float& pdb, int lane) {
  const int nj = (nwi + 31) / 32;
  // B matrix mi = lane >> 3: DY vectors 8 mi + (lane & 7) of the step; A (X^T) matrix mi: t half
  // (mi & 1), a half (mi >> 1): x vector 8 (mi >> 1) + (lane & 7) + (mi & 1) (+ 16 ks + 2 mt).
  const int b_lane = (8 * (lane >> 3) + (lane & 7)) * 8;
  const int x_lane = (8 * (lane >> 4) + (lane & 7) + ((lane >> 3) & 1)) * 8;
#pragma unroll 1
  for (int rr = 0; rr < nrows; ++rr) {
#pragma unroll 1
    for (int j = 0; j < nj; ++j) {
      uint32_t bb[4];
      tc_ldmatrix_x4_trans(bb, dys + rr * dpitch + 256 * j + b_lane);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float lo, hi;
        unpack2<T>(bb[i], lo, hi);
        pdb += lo + hi;
      }
      if (want_w) {
        const T* xr = xbs + rr * xpitch + 256 * j + x_lane;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
          const uint32_t bk[2] = {bb[2 * ks], bb[2 * ks + 1]};
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            uint32_t aa[4];
            tc_ldmatrix_x4_trans(aa, xr + (16 * ks + 2 * mt) * 8);
            tc_mma<T>(dacc[mt], aa, bk);
          }
        }
      }
    }
  }
}

// rows_dw_mma's D fragments to a warp's scratch (rows_dw_mma_scratch floats, D[t][n] at 8t + n),
// and lane k's diagonal sum dw[k] = sum_n D[n + k + DX][n] from it in a fixed order (after a
// __syncwarp: every lane's fragments stored).
template <int MT>
DW_DEV void rows_dw_mma_spill(const float (&dacc)[MT][4], float* dscr, int lane) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) dscr[(16 * mt + g + 8 * (i >> 1)) * 8 + 2 * q + (i & 1)] = dacc[mt][i];
  }
}
DW_DEV float rows_dw_mma_diagonal(const float* dscr, int k_dx) {
  float sw = 0.f;
#pragma unroll
  for (int n = 0; n < 8; ++n) sw += dscr[(n + k_dx) * 8 + n];
  return sw;
}

// The body of the words backward kernels below; DXD: dx stored from registers (rows_bwd_dx_direct);
// MMA (half types): dx on the tensor cores (rows_conv_mma over the staged dy rows, stored as pairs
// to dx's rows); MMAW (with MMA): dw and db too (rows_dw_mma, a D scratch per warp after the
// warps' rows), else on the CUDA cores.
template <typename T, typename W, int KP, bool DXD, bool MMA = false, bool MMAW = false>
DW_DEV void rows_bwd_words_body(const RowsBwdArgs<T, W>& a) {
  static_assert(!MMA || (DXD && sizeof(T) == 2), "the tensor-core dx is for half types, stored direct");
  static_assert(!MMAW || MMA, "dw / db on the tensor cores come with the tensor-core dx");
  const int K = rows_taps<KP>(a.K);  // compile-time where KP is exact
  static_assert(sizeof(T) <= 4, "float, half or bfloat16 activations");
  constexpr int EPW = int(4 / sizeof(T));
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  int64_t u = (int64_t(blockIdx.x) * kWarps + warp) * a.upw;
  const int64_t u_end = u + a.upw < a.units ? u + a.upw : a.units;
  if (u >= u_end) return;
  const bool want_wb = a.want_w || a.want_b;
  const int xrows = a.want_w ? a.rpw * a.nxb : 0;
  const int set = a.rpw * a.nd + xrows;  // elements of one buffer set
  constexpr bool kDxDirect = DXD;
  const int dx_rows = !kDxDirect && a.want_x ? a.rpw * 8 * a.nvx : 0;  // staged dx
  T* const base = smem_base<T>() + int64_t(warp) * (2 * set + dx_rows);
  T* const dxs = base + 2 * set;
  constexpr int MT = rows_dw_mma_tiles<KP>();
  [[maybe_unused]] float* const dscr =
      reinterpret_cast<float*>(smem_base<T>() + int64_t(kWarps) * (2 * set + dx_rows)) +
      warp * rows_dw_mma_scratch<KP>();
  // The padding cells of both sets: dy rows outside [sd, sd + ldy), x rows outside [sx, sx + lx).
  rows_zero_pads(base, a.rpw, a.nd, a.sd, a.sd + a.ldy, lane);
  rows_zero_pads(base + set, a.rpw, a.nd, a.sd, a.sd + a.ldy, lane);
  if (a.want_w) {
    rows_zero_pads(base + a.rpw * a.nd, a.rpw, a.nxb, a.sx, a.sx + a.lx, lane);
    rows_zero_pads(base + set + a.rpw * a.nd, a.rpw, a.nxb, a.sx, a.sx + a.lx, lane);
  }
  const int64_t c0 = u / a.groups;
  RowsUnit cur{c0, (u - c0 * a.groups) * a.rpw};
  auto rows_of = [&](const RowsUnit& t) { return int(t.pb + a.rpw <= a.B ? a.rpw : a.B - t.pb); };
  auto fetch = [&](const RowsUnit& t, T* buf) {
    const int n = rows_of(t);
    rows_fetch_words(a.dy + t.pb * a.dysb + t.c * a.dysc, a.dysb, n, buf, a.nd, a.sd, a.ldy, lane);
    if (a.want_w) {
      rows_fetch_words(a.x + t.pb * a.xsb + t.c * a.xsc, a.xsb, n, buf + a.rpw * a.nd, a.nxb, a.sx,
                       a.lx, lane);
    }
  };
  float wf[KP];  // flipped: wf[m] = w[KP - 1 - m]
  auto load_taps = [&](int64_t c) {
#pragma unroll
    for (int m = 0; m < KP; ++m) {
      wf[m] = (!MMA && a.want_x && m >= KP - K) ? float(in_cvt(a.w[c * K + (KP - 1 - m)])) : 0.f;
    }
  };
  fetch(cur, base);
  dw_cp_commit();
  load_taps(cur.c);
  // The tensor-core dx's B fragments (flipped taps), rebuilt where the channel changes.
  constexpr int SB = rows_mma_bwd_shifts<KP>();
  [[maybe_unused]] std::conditional_t<MMA, TcConvB<T, W, SB>, int> bf{};
  int64_t bf_c = -1;
  int bi = 0;
  while (true) {
    const bool more = u + 1 < u_end;
    const RowsUnit nxt = rows_next_unit(cur, a.rpw, a.B);
    if (more) fetch(nxt, base + (bi ^ 1) * set);
    dw_cp_commit();
    dw_cp_wait<1>();  // this unit's copies (all but the newest group) landed
    __syncwarp();     // ... every lane's, and the padding zeroed
    const int nrows = rows_of(cur);
    const T* dys = base + bi * set;
    const T* xbs = dys + a.rpw * a.nd;
    // Never stored through where dx is not wanted (null); selecting nullptr there instead took
    // float32's staged kernel at K 9 from 64 registers to 72 with spills (ptxas, fifty-fifth session).
    T* const dxg = a.dx + cur.pb * a.dxsb + cur.c * a.dxsc;
    T* const dxo = kDxDirect ? dxg : dxs;
    const int64_t dxp = kDxDirect ? a.dxsb : int64_t(8) * a.nvx;
    float accw[KP];
#pragma unroll
    for (int k = 0; k < KP; ++k) accw[k] = 0.f;
    float accb = 0.f;
    const int od = a.sd - (KP - 1 - a.pl);
    // The items below: dx on the CUDA cores unless the tensor cores made it here.
    const bool items_dx = !MMA && a.want_x;
    if constexpr (MMA) {
      if (a.want_x) {
        // dx[i] = sum_k w[K - 1 - k] dys[i + od + KP - K + k]: the forward's product, flipped taps.
        if (cur.c != bf_c) {
          bf.build(a.w + cur.c * K, K, SB, od + KP - K, true, lane >> 2, lane & 3);
          bf_c = cur.c;
        }
        rows_conv_mma<T, W, SB, SB>(dys, a.nd, dxg, a.dxsb, nrows, a.L, bf, 0.f, lane);
      }
    }
    [[maybe_unused]] float dacc[MMAW ? MT : 1][4] = {};
    if constexpr (MMAW) {
      if (want_wb) rows_dw_mma<T, MT>(dys, a.nd, xbs, a.nxb, nrows, a.nwi, a.want_w, dacc, accb, lane);
    }
    // The unit's items at the compile-time window offsets (OD, DX).
    auto compute = [&](auto od_c, auto dx_c) {
      rows_bwd_words_compute<T, KP, decltype(od_c)::value, decltype(dx_c)::value, DXD>(
          dys, a.nd, xbs, a.nxb, dxo, dxp, a.L, nrows, a.nu, a.nvx, a.nwi, K, items_dx, a.want_w,
          a.want_b, wf, accw, accb, lane);
    };
    if constexpr (MMAW) {
      // Nothing left for the items: dx, dw and db came from the tensor cores.
    } else if constexpr (EPW == 2) {
      // DX at OD = 0: sx is KP - 1 rounded up to a whole word, so 1 for even KP, 0 for odd.
      constexpr int DX0 = (KP - 1) & 1;
      DW_ASSERT(a.sx - (KP - 1) - od == (od != 0 ? 1 - DX0 : DX0));
      if (od != 0) {
        compute(std::integral_constant<int, 1>{}, std::integral_constant<int, 1 - DX0>{});
      } else {
        compute(std::integral_constant<int, 0>{}, std::integral_constant<int, DX0>{});
      }
    } else {
      compute(std::integral_constant<int, 0>{}, std::integral_constant<int, 0>{});
    }
    if constexpr (MMAW) {
      if (want_wb) {
        // D to the warp's scratch, then lane k < K sums its diagonal in a fixed order; db from the
        // lanes' sums by the warp tree (fixed order too).
        float* slot = a.part + (cur.pb / a.rpw) * (K + 1) * a.C + cur.c;
        const float db = warp_sum(accb);
        if (a.want_w) {
          rows_dw_mma_spill<MT>(dacc, dscr, lane);
          __syncwarp();
        }
        const int dxw = a.sx - (KP - 1) - od;  // the x windows' offset DX (0 or 1)
        if (lane < K) slot[int64_t(lane) * a.C] = a.want_w ? rows_dw_mma_diagonal(dscr, lane + dxw) : 0.f;
        if (lane == 0) slot[int64_t(K) * a.C] = a.want_b ? db : 0.f;
      }
    } else if (want_wb) {
      // The unit's sums, scattered over the lanes; each value's writer stores it to the unit's slot
      // (the padded taps past K are dropped).
      const RowsScattered<KP> r = rows_warp_sums(accw, accb, lane);
      float* slot = a.part + (cur.pb / a.rpw) * (K + 1) * a.C + cur.c;
#pragma unroll
      for (int j = 0; j < RowsScattered<KP>::kHeld; ++j) {
        const int v = r.idx + j;
        if (!r.writer || j >= r.len) continue;
        if (v < K) slot[int64_t(v) * a.C] = a.want_w ? r.total[j] : 0.f;
        if (v == KP) slot[int64_t(K) * a.C] = a.want_b ? r.total[j] : 0.f;
      }
    }
    if constexpr (!kDxDirect) {
      __syncwarp();
      if (a.want_x) rows_store_words(dxg, a.dxsb, nrows, dxs, 8 * a.nvx, a.L, lane);
    }
    if (!more) break;
    if (nxt.c != cur.c) load_taps(nxt.c);
    __syncwarp();  // dxs and this buffer set read by every lane before they are written again
    cur = nxt;
    ++u;
    bi ^= 1;
  }
}

// Two entry points, because an explicit minimum of 1 block is not the same as none: ptxas then gave
// the half types far more registers (bf16 K 9: 64 -> 90). The first stores dx from registers for
// half types only.
template <typename T, typename W, int KP>
__global__ void __launch_bounds__(kThreads) dw_bwd_cf_rows_words_kernel(const RowsBwdArgs<T, W> a) {
  rows_bwd_words_body<T, W, KP, sizeof(T) == 2>(a);
}

template <typename T, typename W, int KP>
__global__ void __launch_bounds__(kThreads, kRowsBwdWordsHeldBlocks)
    dw_bwd_cf_rows_words_kernel_held64(const RowsBwdArgs<T, W> a) {
  rows_bwd_words_body<T, W, KP, true>(a);
}

// Half types with dx on the tensor cores (rows_mma_bwd_compiled KPs); MMAW: dw and db there too.
template <typename T, typename W, int KP, bool MMAW = false>
__global__ void __launch_bounds__(kThreads) dw_bwd_cf_rows_words_mma_kernel(const RowsBwdArgs<T, W> a) {
  rows_bwd_words_body<T, W, KP, true, true, MMAW>(a);
}


// The words backward's entry point for (T, KP), whether dx is stored from registers
// (rows_bwd_dx_direct) and whether dx (mma), and dw / db beside it (mmaw), run on the tensor
// cores; the held and the tensor-core ones are instantiated only where they can be picked.
template <typename T, typename W, int KP>
auto rows_bwd_words_kernel(bool dx_direct, bool mma, bool mmaw) {
  auto kern = &dw_bwd_cf_rows_words_kernel<T, W, KP>;
  if constexpr (rows_bwd_words_held<T, KP>()) {
    if (dx_direct) kern = &dw_bwd_cf_rows_words_kernel_held64<T, W, KP>;
  }
  if constexpr (sizeof(T) == 2 && rows_mma_bwd_compiled<KP>()) {
    if (mma) {
      kern = mmaw ? &dw_bwd_cf_rows_words_mma_kernel<T, W, KP, true> : &dw_bwd_cf_rows_words_mma_kernel<T, W, KP>;
    }
  }
  return kern;
}

// The rows backward on rows of any alignment: each block one channel's batch rows [span), each warp
// rpw rows per pass, staged realigned: dy at D = KP - 1 - pl (dy2[q] = dy[q - D]), x (where dw is
// wanted) at KP - 1, nxb elements after dy's nd; dx staged after them and stored by rows_store.
// MMA (half types, rows_bwd_mma KPs): dx on the tensor cores, the forward's product over the staged
// dy rows with the taps flipped at window offset KP - K (rows_conv_mma); MMAW (with MMA): dw and db
// too (rows_dw_mma with the x windows at offset 0), D held in registers over the block's passes and
// summed by diagonals at its end through a scratch per warp (after the block's reduction floats).
// Elsewhere the lane items on the CUDA cores.
template <typename T, typename W, int KP, bool MMA, bool MMAW>
DW_DEV void rows_bwd_body(const RowsBwdArgs<T, W>& a) {
  static_assert(!MMA || sizeof(T) == 2, "the tensor-core arithmetic is for half types");
  static_assert(!MMAW || MMA, "dw / db on the tensor cores come with the tensor-core dx");
  const int K = rows_taps<KP>(a.K);  // compile-time where KP is exact
  using A = acc_of<T>;
  static_assert(std::is_same_v<A, float>, "float, half or bfloat16 activations");
  constexpr int NW = rows_window_vecs<KP>();
  constexpr int MT = rows_dw_mma_tiles<KP>();
  constexpr int SCR = MMAW ? rows_dw_mma_scratch<KP>() : 0;
  constexpr int SB = rows_mma_bwd_shifts<KP>();
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  // Shared: the block's reduction (kWarps x (KP + 1) floats), the warps' D scratch (MMAW), then
  // each warp's rows.
  float* const red = smem_base<float>();
  [[maybe_unused]] float* const dscr = red + kWarps * (KP + 1) + warp * SCR;
  T* const sm = reinterpret_cast<T*>(red + kWarps * (KP + 1 + SCR)) + int64_t(warp) * a.rpw * a.pitch;
  const int D = KP - 1 - a.pl;  // dy2[q] = dy[q - D]
  const int off_xb = a.nd;
  const int off_dx = a.nd + (a.want_w ? a.nxb : 0);
  const bool want_wb = a.want_w || a.want_b;
  const bool items_dx = !MMA && a.want_x;  // what the lane items compute
  const bool items_wb = !MMAW && want_wb;
  for (int64_t blk = blockIdx.x; blk < a.C * a.split; blk += gridDim.x) {
    const int64_t c = blk / a.split;
    const int64_t si = blk - c * a.split;
    const RowsSpan span = rows_span(a.B, a.per, si);
    float wf[MMA ? 1 : KP];  // flipped: wf[m] = w[KP - 1 - m]
#pragma unroll
    for (int m = 0; m < (MMA ? 1 : KP); ++m) {
      wf[m] = (items_dx && m >= KP - K) ? float(in_cvt(a.w[c * K + (KP - 1 - m)])) : 0.f;
    }
    [[maybe_unused]] std::conditional_t<MMA, TcConvB<T, W, SB>, int> bf{};
    if constexpr (MMA) {
      // dx[i] = sum_k w[K - 1 - k] dy2[i + KP - K + k]
      if (a.want_x) bf.build(a.w + c * K, K, SB, KP - K, true, lane >> 2, lane & 3);
    }
    float accw[MMAW ? 1 : KP];
#pragma unroll
    for (int k = 0; k < (MMAW ? 1 : KP); ++k) accw[k] = 0.f;
    float accb = 0.f;
    [[maybe_unused]] float dacc[MMAW ? MT : 1][4] = {};
    const int64_t step = int64_t(kWarps) * a.rpw;
    for (int64_t pb = span.b0 + int64_t(warp) * a.rpw; pb < span.b1; pb += step) {
      const int nrows = int(pb + a.rpw <= span.b1 ? a.rpw : span.b1 - pb);
      rows_stage<T>(sm, a.pitch, a.nd, nrows, a.dy + pb * a.dysb + c * a.dysc, a.dysb, D, a.Lo,
                    a.dy_lo, a.dy_hi, lane);
      if (a.want_w) {
        rows_stage<T>(sm + off_xb, a.pitch, a.nxb, nrows, a.x + pb * a.xsb + c * a.xsc, a.xsb,
                      KP - 1, a.L, a.x_lo, a.x_hi, lane);
      }
      __syncwarp();
      if constexpr (MMA) {
        if (a.want_x) rows_conv_mma<T, W, SB, SB>(sm, a.pitch, sm + off_dx, a.pitch, nrows, 8 * a.nvx, bf, 0.f, lane);
      }
      if constexpr (MMAW) {
        if (want_wb) rows_dw_mma<T, MT>(sm, a.pitch, sm + off_xb, a.pitch, nrows, a.nwi, a.want_w, dacc, accb, lane);
      }
      int rr = lane / a.nu, u = lane - rr * a.nu;
      while ((items_dx || items_wb) && rr < nrows) {
        const T* row = sm + rr * a.pitch;
        if constexpr (!MMA) {
          if (items_dx && u < a.nvx) {
            float win[8 * NW];
            rows_window<T, NW>(row + 8 * u, win);
            float acc[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[e] = 0.f;
#pragma unroll
            for (int k = 0; k < KP; ++k) {  // tap k at window offset m = KP - 1 - k
              if (k >= K) break;
#pragma unroll
              for (int e = 0; e < 8; ++e) acc[e] = fmaf(wf[KP - 1 - k], win[e + KP - 1 - k], acc[e]);
            }
            rows_put8<T>(sm + rr * a.pitch + off_dx + 8 * u, acc);
          }
        }
        if constexpr (!MMAW) {
          if (items_wb) {
            float d8[8];
            rows_window<T, 1>(row + 8 * u, d8);
            if (a.want_w) {
              float win[8 * NW];
              rows_window<T, NW>(row + off_xb + 8 * u, win);
#pragma unroll
              for (int k = 0; k < KP; ++k) {
                if (k >= K) break;
#pragma unroll
                for (int e = 0; e < 8; ++e) accw[k] = fmaf(d8[e], win[e + k], accw[k]);
              }
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) accb += d8[e];
          }
        }
        u += 32;
        while (u >= a.nu) {
          u -= a.nu;
          ++rr;
        }
      }
      __syncwarp();
      if (a.want_x) {
        rows_store<T>(a.dx + pb * a.dxsb + c * a.dxsc, a.dxsb, nrows, sm + off_dx, a.pitch, a.L,
                      lane);
      }
      __syncwarp();
    }
    if (want_wb) {
      // Fixed-order sums: the warp's, then the warps in order.
      if constexpr (MMAW) {
        // D to the warp's scratch; lane k < K sums its diagonal dw[k] = sum_n D[n + k][n].
        const float db = warp_sum(accb);
        if (a.want_w) {
          rows_dw_mma_spill<MT>(dacc, dscr, lane);
          __syncwarp();
        }
        if (lane < K) red[warp * (KP + 1) + lane] = a.want_w ? rows_dw_mma_diagonal(dscr, lane) : 0.f;
        if (lane == 0) red[warp * (KP + 1) + KP] = db;
      } else {
        const RowsScattered<KP> r = rows_warp_sums(accw, accb, lane);
#pragma unroll
        for (int j = 0; j < RowsScattered<KP>::kHeld; ++j) {
          if (r.writer && j < r.len) red[warp * (KP + 1) + r.idx + j] = r.total[j];
        }
      }
      __syncthreads();
      const int t = int(threadIdx.x);
      if (t <= K) {
        const int src = t < K ? t : KP;
        const bool wanted = t < K ? a.want_w : a.want_b;
        float s = 0.f;
        if (wanted) {
          s = red[src];
#pragma unroll
          for (int w = 1; w < kWarps; ++w) s += red[w * (KP + 1) + src];
        }
        a.part[(si * (K + 1) + t) * a.C + c] = s;
      }
      __syncthreads();  // red (and the D scratch) rewritten by the next block of this grid-stride loop
    }
  }
}

template <typename T, typename W, int KP>
__global__ void __launch_bounds__(kThreads) dw_bwd_cf_rows_kernel(const RowsBwdArgs<T, W> a) {
  rows_bwd_body<T, W, KP, false, false>(a);
}

// Half types with dx on the tensor cores (rows_mma_bwd_compiled KPs); MMAW: dw and db there too.
// Its own entry point, as the words backward's, so that the CUDA-core kernel keeps its registers.
template <typename T, typename W, int KP, bool MMAW = false>
__global__ void __launch_bounds__(kThreads) dw_bwd_cf_rows_mma_kernel(const RowsBwdArgs<T, W> a) {
  rows_bwd_body<T, W, KP, true, MMAW>(a);
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
