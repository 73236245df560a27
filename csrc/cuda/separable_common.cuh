// Pieces shared by the separable forward and weight-gradient kernels: tile constants, element
// conversions, and the on-chip depthwise "item" routines that turn a staged x window into h.
#pragma once

#include "cuda/cuda_utils.cuh"
#include "cuda/separable_ptx.cuh"
#include "cuda/separable_wgmma.cuh"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace sepconv1d {
namespace cuda {
namespace sep {

constexpr int kThreads = 256;  // every separable kernel runs 8 warps
constexpr int kT = 8;          // default outputs per depthwise item (one thread, one channel)
constexpr int kU = 8;          // taps per register window

// kGemmWg: sm_90a warpgroup MMA (wgmma) of 16-bit operands from swizzled shared memory.
enum GemmKind : int { kGemmMma16 = 0, kGemmTf32 = 1, kGemmSimt = 2, kGemmWg = 3 };

// How a depthwise item reads its x window from shared memory.
//  kModeVec: channel-first rows, stride 1, dilation 1: 16-byte loads of the window, realigned by a
//            compile-time element offset (the row start is 16-byte aligned in global memory).
//  kModeWin: stride 1, any dilation/layout: the item's outputs are jb, jb+d, ..., so one register
//            window of TT+kU-1 scalars serves kU taps of all TT outputs of an item.
//  kModeGen: anything else (stride > 1): one shared-memory read per multiply.
enum DwMode : int { kModeVec = 0, kModeWin = 1, kModeGen = 2 };
// How a channel-first x window is staged (DwParams::vec_load): 16-byte cp.async (rows 16-byte
// aligned), 4-byte cp.async of element pairs (16-bit x, rows 2-byte aligned), else elements.
// kLoadRows16: 16-bit rows that are not 16-byte aligned, for the warp-specialised kernels'
// tensor-core depthwise only (compute_mma<true>): 16-byte cp.async from the 16-byte unit at or
// below each row's window start, so row c's window starts at its own element shift (0-7;
// DwStage::offset).
// kLoadPairs: float32 channel-first rows that are 8- but not 16-byte aligned (L % 4 == 2, stride
// and dilation 1): 8-byte cp.async from the even position at or below the window start, the same
// element offset (0 or 1) for every row, so the vector depthwise (kModeVec) reads them as it
// reads 16-byte-staged rows (element by element they took 4x the copies: Citrinet TF32).
enum DwLoad : int { kLoadElems = 0, kLoadVec16 = 1, kLoadWords = 2, kLoadRows16 = 3, kLoadPairs = 4 };

template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};

__host__ __device__ constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
__host__ __device__ constexpr int64_t ceil_div(int64_t v, int64_t m) { return (v + m - 1) / m; }

// The producers' tensor-core depthwise (DwStage::compute_mma) runs in blocks of 16 taps: how many
// blocks cover K taps at x-window offset off (the window's first element within its 16-byte
// vector), and one past the last window element its products read on NPOS-position tiles (the
// plan sizes x rows to hold that; mma_dw_fits checks it).
__host__ __device__ constexpr int mma_dw_blocks(int64_t K, int64_t off) {
  return static_cast<int>((K + 6 + (off & 1)) / 16 + 1);
}
__host__ __device__ constexpr int64_t mma_dw_reach(int64_t K, int64_t off, int npos) {
  return off - (off & 1) + 16 * (mma_dw_blocks(K, off) - 1) + (npos > 64 ? 136 : 72);
}
__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// The h row (the product's N index) that holds tile position jj in the kernels whose epilogue
// stores runs (wg_store_runs): bits 1-2 and 3-4 of jj swapped, an involution. A consumer lane q
// holds accumulator columns 8 n + 2 q + {0, 1} of every n8 tile n; with h in this order the four
// tiles 4 G .. 4 G + 3 hold positions 32 G + 8 q + 0 .. 7, so each lane has 8 consecutive outputs
// of a row without trading values across the quad.
__host__ __device__ constexpr int perm_h_row(int jj) {
  return (jj & ~31) | (((jj >> 1) & 3) << 3) | (((jj >> 3) & 3) << 1) | (jj & 1);
}
static_assert(perm_h_row(perm_h_row(45)) == 45 && perm_h_row(2) == 8 && perm_h_row(8) == 2, "");

// Returns v unchanged but opaque to the optimiser: index maths derived from it inside a loop body
// is not hoisted out of the pipeline loop (which would keep it live in registers throughout).
__device__ __forceinline__ int opaque(int v) {
#ifndef SEP_EMULATE
  asm volatile("" : "+r"(v));
#endif
  return v;
}

// The kernels' dynamic shared memory (a host buffer under emulation).
#ifdef SEP_EMULATE
#define SEP_DYNAMIC_SMEM(name) unsigned char* name = ::sepemu::dynamic_smem()
#else
#define SEP_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

// Element i of a packed register array of 32-bit words holding Tx values, widened to the
// accumulation type. i must be a compile-time constant after unrolling.
template <typename Tx>
__device__ __forceinline__ auto raw_elem(const uint32_t* raw, int i) {
  if constexpr (std::is_same_v<Tx, float>) {
    return __uint_as_float(raw[i]);
  } else if constexpr (std::is_same_v<Tx, double>) {
    return __hiloint2double(static_cast<int>(raw[2 * i + 1]), static_cast<int>(raw[2 * i]));
  } else if constexpr (std::is_same_v<Tx, __nv_bfloat16>) {
    const uint32_t w = raw[i >> 1];
    return __uint_as_float((i & 1) ? (w & 0xffff0000u) : (w << 16));
  } else {
    static_assert(std::is_same_v<Tx, __half>);
    const uint32_t w = raw[i >> 1];
    const unsigned short bits = static_cast<unsigned short>((i & 1) ? (w >> 16) : (w & 0xffffu));
    return __half2float(__ushort_as_half(bits));
  }
}

template <typename Tacc>
__device__ __forceinline__ Tacc widen(float v) {
  return v;
}
template <typename Tacc>
__device__ __forceinline__ Tacc widen(double v) {
  return v;
}
template <typename Tacc>
__device__ __forceinline__ Tacc widen(__half v) {
  return __half2float(v);
}
template <typename Tacc>
__device__ __forceinline__ Tacc widen(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Accumulator -> the type stored in shared memory for the GEMM (tf32 rounding when asked).
template <typename Tm, bool kTf32, typename Tacc>
__device__ __forceinline__ Tm narrow_to(Tacc v) {
  if constexpr (std::is_same_v<Tm, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<Tm, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else if constexpr (std::is_same_v<Tm, float>) {
    return kTf32 ? round_tf32(v) : v;
  } else {
    return v;
  }
}

// Calls f(std::integral_constant<int, v>{}) for a run-time v in [I, N).
template <int I, int N, typename F>
__device__ __forceinline__ void static_switch(int v, F& f) {
  if constexpr (I < N) {
    if (v == I) {
      f(std::integral_constant<int, I>{});
    } else {
      static_switch<I + 1, N>(v, f);
    }
  }
}

// Four consecutive values from a 16-byte-aligned shared address.
__device__ __forceinline__ void load4(const float* p, float* v) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
}
__device__ __forceinline__ void load4(const double* p, double* v) {
  const double2 a = *reinterpret_cast<const double2*>(p);
  const double2 b = *reinterpret_cast<const double2*>(p + 2);
  v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}

// acc[t] += sum_{u < ku} w[u] * win[t + u] for the kU taps at wrow (16-byte aligned, zero padded).
// Weights are read four at a time so only four are live.
template <int TT, typename Tacc>
__device__ __forceinline__ void taps8(const Tacc* wrow, int ku, const Tacc (&win)[TT + kU - 1],
                                      Tacc (&acc)[TT]) {
#pragma unroll
  for (int h = 0; h < kU; h += 4) {
    if (h < ku) {
      Tacc w[4];
      load4(wrow + h, w);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (h + u < ku) {
#pragma unroll
          for (int t = 0; t < TT; ++t) acc[t] = fma(w[u], win[t + h + u], acc[t]);
        }
      }
    }
  }
}

// ---- depthwise items: acc[t] += sum_k w[k] * x[window(t, k)] -----------------------------------

// kModeVec. row: the channel's shared row (16-byte aligned), element r of the window at
// row[OFF + r]; outputs jb..jb+TT-1 (jb % TT == 0), tap k reads window element jb + t + k.
// For k0 = 0, 8, ... it reads the 16-byte vectors covering row[jb + k0 + OFF .. + TT + 6], i.e. at
// most row[jb + k0 + TT + 15] (TT = 8, 16; OFF < 16 bytes): with jb <= NPOS - TT and
// k0 <= round_up(K, 8) - 8, rows of NPOS + round_up(K, 8) + 8 elements suffice (plan_dw).
template <int OFF, typename Tx, typename Tacc, int TT>
__device__ __forceinline__ void dw_item_vec(const Tx* row, const Tacc* wrow, int jb, int K,
                                            Tacc (&acc)[TT]) {
  constexpr int kEpv = 16 / static_cast<int>(sizeof(Tx));  // elements per 16-byte vector
  constexpr int kHalfWin = TT + kU / 2 - 1;                 // window of four taps
  for (int k0 = 0; k0 < K; k0 += kU) {
    const int ku = min(kU, K - k0);
    const uint4* src = reinterpret_cast<const uint4*>(row + jb + k0);
    if constexpr (sizeof(Tx) == 2) {
      // 16-bit x: the whole window (TT + kU - 1 elements, at most ceil((7 + TT + 7) / 8) vectors);
      // each element is widened as its vector arrives.
      constexpr int kWin = TT + kU - 1;
      constexpr int kNV = (OFF + kWin + kEpv - 1) / kEpv;
      Tacc win[kWin];
#pragma unroll
      for (int v = 0; v < kNV; ++v) {
        // Only vectors holding a used element (window element < TT - 1 + ku) are read.
        uint4 q = make_uint4(0u, 0u, 0u, 0u);
        if (v * kEpv - OFF < TT - 1 + ku) q = src[v];
        const uint32_t raw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < kEpv; ++i) {
          const int e = v * kEpv + i - OFF;
          if (e >= 0 && e < kWin) win[e] = raw_elem<Tx>(raw, i);
        }
      }
      taps8(wrow + k0, ku, win, acc);
    } else {
      // Taps k0 + h .. k0 + h + 3 read window elements [h, h + kHalfWin), i.e. row elements
      // [OFF + h, OFF + h + kHalfWin) past jb + k0; each vector covering them is loaded and widened
      // right away so few raw words are live at once.
#pragma unroll
      for (int h = 0; h < kU; h += kU / 2) {
        if (h < ku) {
          Tacc win[kHalfWin];
#pragma unroll
          for (int v = (OFF + h) / kEpv; v <= (OFF + h + kHalfWin - 1) / kEpv; ++v) {
            const uint4 q = src[v];
            const uint32_t raw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int i = 0; i < kEpv; ++i) {
              const int e = v * kEpv + i - OFF - h;
              if (e >= 0 && e < kHalfWin) win[e] = raw_elem<Tx>(raw, i);
            }
          }
          Tacc w[4];
          load4(wrow + k0 + h, w);
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            if (h + u < ku) {
#pragma unroll
              for (int t = 0; t < TT; ++t) acc[t] = fma(w[u], win[t + u], acc[t]);
            }
          }
        }
      }
    }
  }
}

// kModeVec for a compile-time K (16-bit or float32 x, the warp-specialised producer's common
// sizes): the whole window of TT + K - 1 elements is loaded and widened once, then K x TT FMAs with
// no per-tap predicates (the run-time version makes rounds of kU taps and reloads the window per
// round). Reads row[jb .. jb + OFF + TT + K + 5] (plan_dw sizes the rows for it).
template <int OFF, int K, typename Tx, typename Tacc, int TT>
__device__ __forceinline__ void dw_item_vec_k(const Tx* row, const Tacc* wrow, int jb,
                                              Tacc (&acc)[TT]) {
  static_assert((sizeof(Tx) == 2 || sizeof(Tx) == 4) && sizeof(Tacc) == 4,
                "16-bit or float32 x, fp32 accumulation");
  constexpr int kEpv = 16 / static_cast<int>(sizeof(Tx));
  constexpr int kWin = TT + K - 1;
  constexpr int kNV = (OFF + kWin + kEpv - 1) / kEpv;
  const uint4* src = reinterpret_cast<const uint4*>(row + jb);
  Tacc win[kWin];
#pragma unroll
  for (int v = 0; v < kNV; ++v) {
    const uint4 q = src[v];
    const uint32_t raw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < kEpv; ++i) {
      const int e = v * kEpv + i - OFF;
      if (e >= 0 && e < kWin) win[e] = raw_elem<Tx>(raw, i);
    }
  }
  Tacc w[(K + 3) / 4 * 4];
#pragma unroll
  for (int k = 0; k < K; k += 4) load4(wrow + k, &w[k]);
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int t = 0; t < TT; ++t) acc[t] = fma(w[k], win[t + k], acc[t]);
  }
}

// kModeWin. base: the item's first window element (output jb, tap 0); window element e (tap
// k0 + u of output t, e = t + u) lies at base[(k0 + e) * estep] with estep = dilation * pstep.
template <typename Tx, typename Tacc, int TT>
__device__ __forceinline__ void dw_item_win(const Tx* base, int estep, const Tacc* wrow, int K,
                                            Tacc (&acc)[TT]) {
  constexpr int kWin = TT + kU - 1;
  for (int k0 = 0; k0 < K; k0 += kU) {
    const int ku = min(kU, K - k0);
    const Tx* b = base + k0 * estep;
    Tacc win[kWin];
#pragma unroll
    for (int e = 0; e < kWin; ++e) win[e] = (e < TT - 1 + ku) ? widen<Tacc>(b[e * estep]) : Tacc(0);
    taps8(wrow + k0, ku, win, acc);
  }
}

// kModeGen. base: window element 0 of output t = 0; output t, tap k at
// base[(t * stride + k * dilation) * pstep].
template <typename Tx, typename Tacc, int TT>
__device__ __forceinline__ void dw_item_gen(const Tx* base, int pstep, int stride, int dil,
                                            const Tacc* wrow, int K, Tacc (&acc)[TT]) {
  const int tstep = stride * pstep;
  const int kstep = dil * pstep;
  for (int k = 0; k < K; ++k) {
    const Tacc w = wrow[k];
    const Tx* b = base + k * kstep;
#pragma unroll
    for (int t = 0; t < TT; ++t) acc[t] = fma(w, widen<Tacc>(b[t * tstep]), acc[t]);
  }
}

__device__ __forceinline__ unsigned short bits16(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ unsigned short bits16(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }

// Stores 8 consecutive h values (dst 16-byte aligned).
template <typename Tm, bool kTf32, typename Tacc>
__device__ __forceinline__ void store_h8(Tm* dst, const Tacc* acc) {
  if constexpr (sizeof(Tm) == 2) {
    uint32_t packed[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const Tm lo = narrow_to<Tm, kTf32>(acc[2 * i]);
      const Tm hi = narrow_to<Tm, kTf32>(acc[2 * i + 1]);
      packed[i] = static_cast<uint32_t>(bits16(lo)) | (static_cast<uint32_t>(bits16(hi)) << 16);
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  } else if constexpr (sizeof(Tm) == 4) {
    float4 a, b;
    a.x = narrow_to<Tm, kTf32>(acc[0]); a.y = narrow_to<Tm, kTf32>(acc[1]);
    a.z = narrow_to<Tm, kTf32>(acc[2]); a.w = narrow_to<Tm, kTf32>(acc[3]);
    b.x = narrow_to<Tm, kTf32>(acc[4]); b.y = narrow_to<Tm, kTf32>(acc[5]);
    b.z = narrow_to<Tm, kTf32>(acc[6]); b.w = narrow_to<Tm, kTf32>(acc[7]);
    reinterpret_cast<float4*>(dst)[0] = a;
    reinterpret_cast<float4*>(dst)[1] = b;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      reinterpret_cast<double2*>(dst)[i] = make_double2(acc[2 * i], acc[2 * i + 1]);
    }
  }
}

// Stores the TT consecutive h values of an item (dst 16-byte aligned, TT % 8 == 0).
template <typename Tm, bool kTf32, typename Tacc, int TT>
__device__ __forceinline__ void store_h(Tm* dst, const Tacc (&acc)[TT]) {
#pragma unroll
  for (int i = 0; i < TT; i += 8) store_h8<Tm, kTf32>(dst + i, acc + i);
}

// ---- x window staging + depthwise of one chunk -----------------------------------------------------

// Geometry of the depthwise part, shared by the forward and the weight-gradient kernels.
struct DwParams {
  const void* x;
  const void* dwp;  // acc type [cin_pad][dwpitch], zero padded (tap k >= K, channel >= cin); the
                    // forward's tensor-core depthwise: the weight as given, x's type [cin][K]
  const void* dwb;  // acc type [cin_pad] added to h, or nullptr (forward folds it into the bias;
                    // the tensor-core depthwise: the bias as given, x's type [cin], or nullptr)
  int64_t xsb, xsc, xsl, L;
  int cin, K, kp, stride, dil, pad_left;
  int mode;      // DwMode
  int vec_load;  // x staging (DwLoad): kLoadVec16 (rows 16-byte aligned), kLoadWords, kLoadRows16,
                 // kLoadPairs, or kLoadElems
  int ng;        // item groups per channel (items = CH * ng)
  int npos;      // channel-last: positions staged per chunk
  int xpitch;    // channel-first: elements per channel row; channel-last: per position row
  int dwpitch;   // elements per channel row of the staged depthwise weights (and of dwp)
};

// One chunk: CH channels [c0, c0 + CH) x NPOS outputs [j0, j0 + NPOS) of batch b. h lands in hs as
// [CH][HP] (row c, column jj) in the GEMM operand type Tm, or with kHT as the transposed wgmma
// operand: NPOS rows jj of CH = 64 16-bit channels in the 128-byte swizzle (separable_wgmma.cuh).
// TT outputs per depthwise item (8, or 16 to share windows and weights where registers allow).
// NT: threads that run the stage together (tid < NT).
template <typename Tx, typename Tm, bool kTf32, int CH, int NPOS, int HP, bool kXcl, int TT = kT,
          bool kHT = false, int NT = kThreads>
struct DwStage {
  using Tacc = typename AccOf<Tx>::type;
  static constexpr int kV = 16 / static_cast<int>(sizeof(Tx));
  static_assert(NPOS % TT == 0, "");
  static_assert(NT % CH == 0 || CH % 32 == 0, "");

  // Where window element 0 (input position p0) of a staged row lies. Channel-first 16-byte loads
  // start each row at the aligned position p0 - off (the same for all rows). Word loads start row
  // c at the 4-byte-aligned position p0 - row_off(off, c): off holds the element parity of
  // x[b, c0, p0] (bit 0) and that of the channel stride (bit 1), the rows alternate when it is odd.
  __device__ static int offset(const DwParams& d, int64_t b, int c0, int64_t p0) {
    if (kXcl) return 0;
    if (d.vec_load == kLoadVec16) return static_cast<int>(p0 & (kV - 1));  // kV: a power of 2
    // kLoadPairs: x 8-byte aligned with even strides, so p0's parity is that of its address.
    if constexpr (sizeof(Tx) == 4) {
      if (d.vec_load == kLoadPairs) return static_cast<int>(p0 & 1);
    }
    if (d.vec_load == kLoadWords) {
      const Tx* a = static_cast<const Tx*>(d.x) + b * d.xsb + static_cast<int64_t>(c0) * d.xsc + p0;
      return static_cast<int>((reinterpret_cast<uintptr_t>(a) >> 1) & 1u) |
             static_cast<int>((d.xsc & 1) << 1);
    }
    // kLoadRows16 (only the tensor-core depthwise's stages, kMmaOk, compile it: the other kernels'
    // code stays as it was): row c0's shift, x[b, c0, p0]'s element within its 16-byte unit.
    if (kMmaOk && d.vec_load == kLoadRows16) {
      const Tx* a = static_cast<const Tx*>(d.x) + b * d.xsb + static_cast<int64_t>(c0) * d.xsc + p0;
      return static_cast<int>((reinterpret_cast<uintptr_t>(a) >> 1) & 7u);
    }
    return 0;
  }
  __device__ static int row_off(const DwParams& d, int off, int c) {
    if (!kXcl && d.vec_load == kLoadWords) return (off ^ ((off >> 1) & c)) & 1;
    return off;
  }

  // Row-wise staging: kTpr threads per row (a shift, not a division, finds a thread's row and
  // first vector); the row's base pointer is computed once per row, not once per vector.
  static constexpr int kTpr = NT >= CH ? NT / CH : 1;
  static constexpr int kRowStep = NT / kTpr;

  // Issues (cp.async, uncommitted) the staging of the chunk's depthwise weights.
  __device__ static void load_weights(const DwParams& d, int c0, Tacc* dws, int tid) {
    const int r0 = tid / kTpr;
    const int v0 = tid % kTpr;
    const int vpr = d.kp * static_cast<int>(sizeof(Tacc)) / 16;
    constexpr int kElPerVec = 16 / static_cast<int>(sizeof(Tacc));
    for (int r = r0; r < CH; r += kRowStep) {
      const Tacc* src = static_cast<const Tacc*>(d.dwp) + static_cast<int64_t>(c0 + r) * d.dwpitch;
      Tacc* dst = dws + r * d.dwpitch;
      for (int v = v0; v < vpr; v += kTpr) {
        cp_async16(dst + v * kElPerVec, src + v * kElPerVec, 16);
      }
    }
  }

  // Issues (cp.async, uncommitted) or performs the staging of x and (kWeights) the prepared
  // depthwise weights. p0 = j0 * stride - pad_left: input position of window element 0.
  template <bool kWeights = true>
  __device__ static void load(const DwParams& d, int64_t b, int c0, int64_t p0, int off, Tx* xs,
                              Tacc* dws, int tid) {
    tid = opaque(tid);
    const int cvalid = min(CH, d.cin - c0);  // may be <= 0 only for padded channel tiles
    const int r0 = tid / kTpr;
    const int v0 = tid % kTpr;
    if constexpr (kWeights) load_weights(d, c0, dws, tid);
    // Source of zero-byte cp.async copies: any valid global address (x may be empty).
    const Tx* dummy = static_cast<const Tx*>(d.dwp);
    const Tx* xb = static_cast<const Tx*>(d.x) + b * d.xsb;
    if (!kXcl) {
      // rows = channels, positions [p0 - off, p0 - off + xpitch) per row (the whole row).
      const int64_t p0a = p0 - off;  // multiple of kV with 16-byte loads
      const int vpr = d.xpitch / kV;
      if (d.vec_load == kLoadVec16 && cvalid >= CH && p0a >= 0 &&
          p0a + static_cast<int64_t>(vpr) * kV <= d.L) {
        // Interior tile (most of them): every vector whole and inside its row; no bounds or
        // size maths per vector (the general loop below cost ~250 instructions per warp).
        for (int c = r0; c < CH; c += kRowStep) {
          const Tx* src = xb + static_cast<int64_t>(c0 + c) * d.xsc + p0a + v0 * kV;
          Tx* dst = xs + c * d.xpitch + v0 * kV;
          for (int v = v0; v < vpr; v += kTpr, src += kTpr * kV, dst += kTpr * kV) {
            cp_async16(dst, src, 16);
          }
        }
      } else if (d.vec_load == kLoadVec16) {
        // Vectors v in [vlo, vhi) lie inside the row [0, L) (the last one maybe partly).
        const int64_t vlo64 = p0a >= 0 ? 0 : (-p0a) / kV;
        const int64_t vhi64 = d.L > p0a ? (d.L - p0a + kV - 1) / kV : 0;
        const int vlo = static_cast<int>(min64(vlo64, vpr));
        const int vhi = static_cast<int>(min64(vhi64, vpr));
        for (int c = r0; c < CH; c += kRowStep) {
          const Tx* row = xb + static_cast<int64_t>(c0 + c) * d.xsc + p0a;
          Tx* dst = xs + c * d.xpitch;
          const bool live = c < cvalid;
          for (int v = v0; v < vpr; v += kTpr) {
            const Tx* src = dummy;
            int bytes = 0;
            if (live && v >= vlo && v < vhi) {
              const int64_t pos = p0a + static_cast<int64_t>(v) * kV;
              bytes = static_cast<int>(min64(kV, d.L - pos)) * static_cast<int>(sizeof(Tx));
              src = row + v * kV;
            }
            cp_async16(dst + v * kV, src, bytes);
          }
        }
      } else if (kMmaOk && d.vec_load == kLoadRows16) {
        // 16-bit rows that are not 16-byte aligned, in whole 16-byte units: row c from position
        // p0 - s (s = (off + c xsc) & 7, its element within its unit). Units wholly outside the
        // row read as zeros, the one across its end keeps only the row's elements; the one
        // across its start is copied whole (the elements before it are the storage's, inside
        // that unit) and cleared by clear_heads once it has landed.
        if constexpr (sizeof(Tx) == 2) {
          const int vpr = d.xpitch / kV;
          const int xsc7 = static_cast<int>(d.xsc & 7);
          for (int c = r0; c < CH; c += kRowStep) {
            const int64_t pa = p0 - ((off + c * xsc7) & 7);
            const Tx* row = xb + static_cast<int64_t>(c0 + c) * d.xsc + pa;
            Tx* dst = xs + c * d.xpitch;
            const bool live = c < cvalid;
            for (int v = v0; v < vpr; v += kTpr) {
              const int64_t pos = pa + static_cast<int64_t>(v) * kV;
              const Tx* src = dummy;
              int bytes = 0;
              if (live && pos + kV > 0 && pos < d.L) {
                src = row + v * kV;
                bytes = static_cast<int>(min64(kV, d.L - pos)) * static_cast<int>(sizeof(Tx));
              }
              cp_async16(dst + v * kV, src, bytes);
            }
          }
        }
      } else if (sizeof(Tx) == 4 && d.vec_load == kLoadPairs) {
        // float32 rows 8-byte aligned: element pairs from the even position p0a = p0 - off. Pairs
        // start at even positions, so none straddles a row's start; one straddles its end only
        // where L is odd (a strided view with an even channel stride): zero-filled past it.
        if constexpr (sizeof(Tx) == 4) {
          const int64_t p0a = p0 - off;
          const int npr = d.xpitch / 2;
          if (cvalid >= CH && p0a >= 0 && p0a + 2 * static_cast<int64_t>(npr) <= d.L) {
            for (int c = r0; c < CH; c += kRowStep) {  // interior: no bounds per pair
              const Tx* src = xb + static_cast<int64_t>(c0 + c) * d.xsc + p0a + 2 * v0;
              Tx* dst = xs + c * d.xpitch + 2 * v0;
              for (int v = v0; v < npr; v += kTpr, src += 2 * kTpr, dst += 2 * kTpr) {
                cp_async8(dst, src);
              }
            }
          } else {
            for (int c = r0; c < CH; c += kRowStep) {
              const Tx* row = xb + static_cast<int64_t>(c0 + c) * d.xsc + p0a;
              Tx* dst = xs + c * d.xpitch;
              const bool live = c < cvalid;
              for (int v = v0; v < npr; v += kTpr) {
                const int64_t pos = p0a + 2 * static_cast<int64_t>(v);
                const Tx* src = dummy;
                int bytes = 0;
                if (live && pos >= 0 && pos < d.L) {
                  src = row + 2 * v;
                  bytes = static_cast<int>(min64(2, d.L - pos)) * static_cast<int>(sizeof(Tx));
                }
                cp_async8z(dst + 2 * v, src, bytes);
              }
            }
          }
        }
      } else if (d.vec_load == kLoadWords) {
        // 16-bit x whose rows are not 16-byte aligned (L not a multiple of 8): 4-byte copies of
        // aligned element pairs, row c from position p0 - row_off(off, c); the pairs that straddle
        // a row end (or a padded channel) are written element by element.
        if constexpr (sizeof(Tx) == 2) {
          const int nw = d.xpitch / 2;
          for (int c = r0; c < CH; c += kRowStep) {
            const int64_t e0 = p0 - row_off(d, off, c);
            const Tx* row = xb + static_cast<int64_t>(c0 + c) * d.xsc + e0;
            Tx* dst = xs + c * d.xpitch;
            const bool live = c < cvalid;
            for (int w = v0; w < nw; w += kTpr) {
              const int64_t pos = e0 + 2 * w;
              if (live && pos >= 0 && pos + 1 < d.L) {
                cp_async4(dst + 2 * w, row + 2 * w);
              } else {
                dst[2 * w] = (live && pos >= 0 && pos < d.L) ? row[2 * w] : Tx(0.0f);
                dst[2 * w + 1] = (live && pos + 1 >= 0 && pos + 1 < d.L) ? row[2 * w + 1] : Tx(0.0f);
              }
            }
          }
        }
      } else {
        // Element by element, row-wise (kTpr threads per row).
        for (int c = r0; c < CH; c += kRowStep) {
          const Tx* row = xb + static_cast<int64_t>(c0 + c) * d.xsc;
          Tx* dst = xs + c * d.xpitch;
          const bool live = c < cvalid;
          for (int i = v0; i < d.xpitch; i += kTpr) {
            const int64_t pos = p0 + i;
            if (live && pos >= 0 && pos < d.L) {
              copy_elem(dst + i, row + pos * d.xsl);
            } else {
              dst[i] = Tx(0.0f);
            }
          }
        }
      }
    } else {
      // rows = positions p0 + i, i < npos; CH channels per row.
      if (d.vec_load == kLoadVec16) {
        constexpr int kVpr = CH / kV;
        for (int idx = tid; idx < d.npos * kVpr; idx += NT) {
          const int i = idx / kVpr;
          const int cc = (idx - i * kVpr) * kV;
          const int64_t pos = p0 + i;
          const Tx* src = dummy;
          int bytes = 0;
          if (cc < cvalid && pos >= 0 && pos < d.L) {
            bytes = min(kV, cvalid - cc) * static_cast<int>(sizeof(Tx));
            src = xb + pos * d.xsl + (c0 + cc);
          }
          cp_async16(xs + i * d.xpitch + cc, src, bytes);
        }
      } else {
        for (int idx = tid; idx < d.npos * CH; idx += NT) {
          const int i = idx / CH;
          const int c = idx - i * CH;
          const int64_t pos = p0 + i;
          Tx* dst = xs + i * d.xpitch + c;
          if (c < cvalid && pos >= 0 && pos < d.L) {
            copy_elem(dst, xb + pos * d.xsl + static_cast<int64_t>(c0 + c) * d.xsc);
          } else {
            *dst = Tx(0.0f);
          }
        }
      }
    }
  }

  // kLoadRows16: zeroes the cells before position 0 that load copied with the unit across a row's
  // start (only windows that start within 7 positions of it), in the units this thread copied
  // (after its copies have landed, before the producers' barrier). Same arguments as load.
  __device__ static void clear_heads(const DwParams& d, int64_t p0, int off, Tx* xs, int tid) {
    if (d.vec_load != kLoadRows16 || p0 >= kV) return;
    tid = opaque(tid);
    const int r0 = tid / kTpr, v0 = tid % kTpr;
    const int xsc7 = static_cast<int>(d.xsc & 7);
    for (int c = r0; c < CH; c += kRowStep) {
      const int64_t pa = p0 - ((off + c * xsc7) & 7);
      for (int v = v0; pa + static_cast<int64_t>(v) * kV < 0; v += kTpr) {
        const int64_t pos = pa + static_cast<int64_t>(v) * kV;
        if (pos + kV <= 0) continue;  // zero-filled by load
        Tx* dst = xs + c * d.xpitch + v * kV;
        for (int j = 0; pos + j < 0; ++j) dst[j] = Tx(0.0f);
      }
    }
  }

  // 4/8-byte elements: cp.async; 2-byte elements: a plain (synchronous) copy.
  __device__ static void copy_elem(Tx* dst, const Tx* src) {
    if constexpr (sizeof(Tx) == 4) {
      cp_async4(dst, src);
    } else if constexpr (sizeof(Tx) == 8) {
      cp_async8(dst, src);
    } else {
      *dst = *src;
    }
  }

  static_assert(!kHT || CH * sizeof(Tm) == 128, "transposed h: one 128-byte row of channels");

  // h element (channel c, output jj) -> hs.
  __device__ static void put_h(Tm* hs, int c, int jj, Tm v) {
    if constexpr (kHT) {
      // 16-byte chunk c / E of row jj lands at chunk (c / E) ^ (jj % 8): c ^ E (jj % 8), E = 16 /
      // sizeof(Tm) elements per chunk.
      constexpr int kE = 16 / static_cast<int>(sizeof(Tm));
      hs[jj * CH + (c ^ ((jj & 7) * kE))] = v;
    } else {
      hs[c * HP + jj] = v;
    }
  }
  // The TT consecutive outputs jb.. of channel c (jb % 8 == 0).
  __device__ static void put_run(Tm* hs, int c, int jb, const Tacc (&acc)[TT]) {
    if constexpr (kHT) {
#pragma unroll
      for (int t = 0; t < TT; ++t) put_h(hs, c, jb + t, narrow_to<Tm, kTf32>(acc[t]));
    } else {
      store_h<Tm, kTf32>(hs + c * HP + jb, acc);
    }
  }

  // Zeroes outputs jj >= nvalid (so a ragged tail contributes exactly nothing to a reduction);
  // one uniform test skips the per-output selects for the (usual) item that lies inside.
  __device__ static void clip(Tacc (&acc)[TT], int jj0, int step, int nvalid) {
    if (jj0 + (TT - 1) * step < nvalid) return;
#pragma unroll
    for (int t = 0; t < TT; ++t) {
      if (jj0 + t * step >= nvalid) acc[t] = Tacc(0);
    }
  }

  // The warp-specialised producers' depthwise of one chunk with what their loop fixes known at
  // compile time: kModeVec with K = KC, window offset OFF, no bias and no clip (the forward's h),
  // transposed h. NT is a multiple of CH, so a thread keeps channel c = tid % CH (its x row and
  // weights) for all its items. Outputs t and t + 8 of an item share a swizzled column (the
  // swizzle repeats every 8 rows): 8 column addresses per item, the rows as immediate offsets
  // (put_run worked out all 16 stores' addresses: ~37 of the item's 243 instructions).
  static constexpr bool kFixedOk = kHT && !kXcl && NT % CH == 0 && TT % 8 == 0 && NPOS % TT == 0;
  template <int KC, int OFF>
  __device__ static void compute_fixed(const DwParams& d, const Tx* xs, const Tacc* dws, Tm* hs,
                                       int tid) {
    static_assert(kFixedOk, "");
    constexpr int kE = 16 / static_cast<int>(sizeof(Tm));
    tid = opaque(tid);
    const int c = tid % CH;
    const Tx* row = xs + c * d.xpitch;
    const Tacc* wrow = dws + c * d.dwpitch;
#pragma unroll 1
    for (int jb = (tid / CH) * TT; jb < NPOS; jb += (NT / CH) * TT) {
      Tacc acc[TT];
#pragma unroll
      for (int t = 0; t < TT; ++t) acc[t] = Tacc(0);
      dw_item_vec_k<OFF, KC, Tx, Tacc>(row, wrow, jb, acc);
      Tm* rows = hs + jb * CH;  // jb % 8 == 0: row jb + t has swizzle phase t % 8
#pragma unroll
      for (int t8 = 0; t8 < 8; ++t8) {
        Tm* col = rows + (c ^ (t8 * kE));
#pragma unroll
        for (int t = t8; t < TT; t += 8) col[t * CH] = narrow_to<Tm, kTf32>(acc[t]);
      }
    }
  }

  // The warp-specialised producers' depthwise of one chunk on the tensor cores: 16-bit x whose
  // depthwise weights have x's type (so rounding them to it is exact), stride 1 and dilation 1
  // (kModeVec rows by tensor map, or kModeWin rows in 4-byte pairs: kWordRows), x rows long enough
  // for mma_dw_reach (mma_dw_fits, mma_dw_words_fit). A channel's NPOS <= 128
  // outputs are m16n8k16 products H = sum_b X_b D_b with H[i][j] = h[8 i + j], one per block b of
  // 16 taps (mma_dw_blocks: 1 for K + (off & 1) <= 9, 3 for K 31, 5 for K 63): row i of X_b is the
  // 16-element window row[8 i + 16 b + off_a ..] (off_a = off rounded down to even: 4-byte
  // fragment loads), and D_b[m][j] = w[16 b + m - j - sh] (sh = off & 1) is that block's part of
  // the band of the K taps, zero elsewhere; each (output, tap) pair falls in exactly one block.
  // Warp wp takes channels [8 wp, 8 wp + 8); a lane then holds those 8 channels at 4 positions
  // and stores each position's 8 channels as one 16-byte unit of the transposed h row (2 bank
  // wavefronts per quarter warp). Per 128 outputs of a channel and block: 4 fragment loads of x,
  // 4 of taps, 1 MMA; then 4 packs and half a store, where compute_fixed spends ~60 instructions
  // (144 FFMA per 16 outputs and thread) at K 9 and the run-time-K FFMA loop ~K per output.
  // The MMA multiplies every element of X by D, zeros included: a non-finite x element turns the
  // outputs of its 16-element windows into NaN, not only those whose taps reach it (as the
  // block-Toeplitz depthwise kernels of depthwise_tc.cuh).
  static constexpr bool kMmaOk = kHT && !kXcl && sizeof(Tx) == 2 && std::is_same_v<Tm, Tx> &&
                                 CH == 64 && NT == 256 && (NPOS == 128 || NPOS == 64);
  __device__ static uint32_t pack2(float lo, float hi) {
    return static_cast<uint32_t>(bits16(narrow_to<Tm, false>(lo))) |
           (static_cast<uint32_t>(bits16(narrow_to<Tm, false>(hi))) << 16);
  }
  __device__ static uint32_t ld_pair(const Tx* p) { return *reinterpret_cast<const uint32_t*>(p); }
  // compute_mma's weights as they are, without a preparation kernel: the taps of channels
  // [c0, c0 + cv), cv = min(CH, cin - c0), as rows of K in x's type (one contiguous span of d.dwp),
  // then their depthwise biases (d.dwb, or none), brought into dws by the bulk-copy engine with the
  // chunk's x window (thread 0 issues both onto its barrier). The host checked the sizes and
  // alignments: cin % 8 == 0 and 16-byte aligned weights make every span 16-byte aligned and a
  // multiple of 16 bytes. They take (K + 1) x CH x 2 bytes of dws, which holds CH x K floats at
  // least. (Two earlier forms read them per thread into registers and stored them widened: ~13 us
  // and ~30 us slower at the seed than the prepared weights, NOTES.md.)
  __device__ static int raw_taps_channels(const DwParams& d, int c0) { return min(CH, d.cin - c0); }
  __device__ static uint32_t raw_taps_bytes(const DwParams& d, int c0) {
    const int cv = raw_taps_channels(d, c0);
    return static_cast<uint32_t>(cv * (d.K + (d.dwb != nullptr ? 1 : 0)) * sizeof(Tx));
  }
  __device__ static void load_raw_taps(const DwParams& d, int c0, Tacc* dws, uint64_t* bar) {
    const int cv = raw_taps_channels(d, c0);
    Tx* dst = reinterpret_cast<Tx*>(dws);
    bulk_copy_to_shared(dst, static_cast<const Tx*>(d.dwp) + static_cast<int64_t>(c0) * d.K,
                        static_cast<uint32_t>(cv * d.K * sizeof(Tx)), bar);
    if (d.dwb != nullptr) {
      bulk_copy_to_shared(dst + CH * d.K, static_cast<const Tx*>(d.dwb) + c0,
                          static_cast<uint32_t>(cv * sizeof(Tx)), bar);
    }
  }
  // dws: the chunk's raw taps and biases as load_raw_taps leaves them (channels past cv are stale
  // and masked); h = X D + bias, rounded once.
  // kWordRows: rows not 16-byte aligned, each at its own shift s = (s0 + c xsc) & m from position
  // p0: staged in 4-byte pairs (kLoadWords: m = 1, s0 = off & 1, row c from p0 - row_off(off, c))
  // or in 16-byte units (kLoadRows16: m = 7, s0 = off). Each channel reads from the even element
  // s & 6 with its own sh = s & 1 in the taps; the block count is that of the worst parity present.
  // kPermRows: h rows in perm_h_row's order (for wg_store_runs).
  template <bool kWordRows = false, bool kPermRows = false>
  __device__ static void compute_mma(const DwParams& d, const Tx* xs, const Tacc* dws, Tm* hs,
                                     int off, int c0, int tid) {
    static_assert(kMmaOk, "");
    const int wp = tid >> 5, lane = tid & 31, g = lane >> 2, q = lane & 3;
    const int sh = kWordRows ? 0 : off & 1;
    const int off_a = kWordRows ? 0 : off - sh;  // the window's first 4-byte pair in each row
    // Taps of the lane's B fragment in block 0: b0, b1 = D_0[2q][g], D_0[2q + 1][g]; b2, b3 =
    // D_0[2q + 8][g], D_0[2q + 9][g]; block b's are 16 b further (channel ci's sh apart with
    // kWordRows).
    int t0[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) t0[e] = 2 * q - g - sh + (e & 1) + 8 * (e >> 1);
    const Tx* xrow = xs + (8 * wp) * d.xpitch + off_a + 8 * g + 2 * q;
    // kWordRows: row ci's shift, (s0 + (8 wp + ci) xsc) & m, is (s0 + ci xsc) & m (8 xsc = 0 mod 8).
    const bool units = kWordRows && d.vec_load == kLoadRows16;
    const int rmask = units ? 7 : 1;
    const int s0 = kWordRows ? (units ? off : off & 1) : 0;
    const int xsc7 = kWordRows ? static_cast<int>(d.xsc & 7) : 0;
    const unsigned short* taps = reinterpret_cast<const unsigned short*>(dws);
    const unsigned short* wrow = taps + (8 * wp) * d.K;
    const Tx* brow =
        d.dwb != nullptr ? reinterpret_cast<const Tx*>(taps + CH * d.K) + 8 * wp : nullptr;
    const int cv = raw_taps_channels(d, c0) - 8 * wp;  // this warp's channels ci < cv are live
    float acc[8][4];
#pragma unroll
    for (int ci = 0; ci < 8; ++ci) {
      const bool live = ci < cv;
      const float bias = live && brow != nullptr ? widen<float>(brow[ci]) : 0.0f;
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[ci][r] = bias;
    }
    // Block b of channel ci: A fragment rows g, g + 8 of X_b, columns 2q, 2q + 1 (a0, a1) and
    // 2q + 8, 2q + 9 (a2, a3); B fragment the lane's 4 taps of D_b.
    auto block = [&](int b) {
#pragma unroll
      for (int ci = 0; ci < 8; ++ci) {
        const int sft = kWordRows ? (s0 + ci * xsc7) & rmask : 0;
        const Tx* row = xrow + ci * d.xpitch + (sft & 6) + 16 * b;
        uint32_t a[4];
        a[0] = ld_pair(row);
        a[2] = ld_pair(row + 8);
        if constexpr (NPOS > 64) {
          a[1] = ld_pair(row + 64);
          a[3] = ld_pair(row + 72);
        } else {
          a[1] = a[3] = 0u;  // rows 8-15 (outputs 64-127) are not stored
        }
        const unsigned short* w = wrow + ci * d.K;
        const int shc = sft & 1;
        uint32_t bv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int t = t0[e] + 16 * b - shc;
          bv[e] = ci < cv && t >= 0 && t < d.K ? w[t] : 0u;
        }
        const uint32_t bf[2] = {bv[0] | (bv[1] << 16), bv[2] | (bv[3] << 16)};
        mma_16816<Tm>(acc[ci], a, bf);
      }
    };
    // One block (K <= 9) apart, so that it keeps its unrolled form (a loop cost the seed 2%).
    const int nb = mma_dw_blocks(d.K, kWordRows ? (s0 | xsc7) & 1 : off);
    if (nb == 1) {
      block(0);
    } else {
      for (int b = 0; b < nb; ++b) block(b);
    }
    // acc[ci][r]: channel 8 wp + ci at output 8g + 2q + (r & 1) + 64 (r >> 1).
    // Lanes of odd q store their rows in pairs swapped: in perm_h_row's order a quarter warp's
    // rows have only 2 swizzle phases per store otherwise (4-way bank conflicts; 2-way as in the
    // natural order with the swap: seed bf16 88.4 -> 85.2 us in a build with the x loader of
    // csrc/NOTES.md, thirty-first session).
    uint4 vals[4];
#pragma unroll
    for (int r = 0; r < (NPOS > 64 ? 4 : 2); ++r) {
      vals[r] = make_uint4(pack2(acc[0][r], acc[1][r]), pack2(acc[2][r], acc[3][r]),
                           pack2(acc[4][r], acc[5][r]), pack2(acc[6][r], acc[7][r]));
    }
#pragma unroll
    for (int k = 0; k < (NPOS > 64 ? 4 : 2); ++k) {
      const bool swap = kPermRows && (q & 1);
      const int r = swap ? k ^ 1 : k;
      const int jj = 8 * g + 2 * q + (r & 1) + 64 * (r >> 1);
      const int row = kPermRows ? perm_h_row(jj) : jj;
      const uint4 v = swap ? vals[k ^ 1] : vals[k];
      *reinterpret_cast<uint4*>(hs + row * CH + 8 * (wp ^ (row & 7))) = v;
    }
  }

  // h chunk -> hs. c0: first channel (for the bias); nvalid: outputs >= nvalid are stored as 0.
  // KC > 0: d.K == KC, known at compile time (kModeVec only; see dw_item_vec_k).
  // kBiasClip false: the forward's h, which feeds only the product (its bias is folded into the
  // pointwise bias, d.dwb == nullptr, and columns past the output end reach no stored output), so
  // neither the bias nor the clip: 16 selects and a bias load per 16-output item less.
  template <int KC = 0, bool kBiasClip = true>
  __device__ static void compute(const DwParams& d, const Tx* xs, const Tacc* dws, Tm* hs, int off,
                                 int c0, int nvalid, int tid) {
    tid = opaque(tid);
    const int nitems = CH * d.ng;
    const Tacc* dwb = kBiasClip ? static_cast<const Tacc*>(d.dwb) : nullptr;
    if constexpr (!kXcl) {
      if (d.mode == kModeVec) {
        auto run = [&](auto off_c) {
          constexpr int OFF = decltype(off_c)::value;
          for (int idx = tid; idx < nitems; idx += NT) {
            const int c = idx % CH;
            const int jb = (idx / CH) * TT;
            Tacc acc[TT];
            const Tacc init = dwb != nullptr ? dwb[c0 + c] : Tacc(0);
#pragma unroll
            for (int t = 0; t < TT; ++t) acc[t] = init;
            if constexpr (KC > 0) {
              dw_item_vec_k<OFF, KC, Tx, Tacc>(xs + c * d.xpitch, dws + c * d.dwpitch, jb, acc);
            } else {
              dw_item_vec<OFF, Tx, Tacc>(xs + c * d.xpitch, dws + c * d.dwpitch, jb, d.K, acc);
            }
            if constexpr (kBiasClip) clip(acc, jb, 1, nvalid);
            put_run(hs, c, jb, acc);
          }
        };
        static_switch<0, kV>(off, run);
        return;
      }
    }
    // Channel-first: window element r of channel c at xs[c * xpitch + off + r];
    // channel-last:  at xs[r * xpitch + c].
    const int pstep = kXcl ? d.xpitch : 1;
    for (int idx = tid; idx < nitems; idx += NT) {
      const int c = idx % CH;
      const int g = idx / CH;
      const Tx* row = kXcl ? xs + c : xs + c * d.xpitch + row_off(d, off, c);
      const Tacc* wrow = dws + c * d.dwpitch;
      Tacc acc[TT];
      const Tacc init = dwb != nullptr ? dwb[c0 + c] : Tacc(0);
#pragma unroll
      for (int t = 0; t < TT; ++t) acc[t] = init;
      if (d.mode == kModeGen) {
        const int jj0 = g * TT;
        dw_item_gen<Tx, Tacc>(row + jj0 * d.stride * pstep, pstep, d.stride, d.dil, wrow, d.K, acc);
        if constexpr (kBiasClip) clip(acc, jj0, 1, nvalid);
        put_run(hs, c, jj0, acc);
      } else {
        const int dl = d.dil;
        const int jb = (g / dl) * (TT * dl) + (g % dl);  // outputs jb + t * dl
        dw_item_win<Tx, Tacc>(row + jb * pstep, dl * pstep, wrow, d.K, acc);
        if constexpr (kBiasClip) clip(acc, jb, dl, nvalid);
        if (dl == 1) {
          put_run(hs, c, jb, acc);
        } else {
#pragma unroll
          for (int t = 0; t < TT; ++t) {
            const int jj = jb + t * dl;
            if (jj < NPOS) put_h(hs, c, jj, narrow_to<Tm, kTf32>(acc[t]));
          }
        }
      }
    }
  }
};

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
