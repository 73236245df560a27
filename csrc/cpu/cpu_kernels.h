// Building blocks shared by the CPU kernels (depthwise_cpu.cpp, separable_cpu.cpp):
//   * run-time ISA dispatch (AVX-512 / AVX2+FMA / baseline) without special compiler flags,
//   * GCC/Clang vector-extension helpers,
//   * dtype conversion of rows (float16 / bfloat16 / float32 / float64 <-> accumulation type),
//   * the hot inner loops: multi-tap correlation along L, tap dot products (weight gradients),
//     channel-last depthwise tiles vectorised over channels, and a register-blocked GEMM,
//   * window loaders and the strided transposed-convolution (input gradient) of one row tile.
//
// ISA dispatch: every hot loop is a struct `Op` with a static, always-inlined `run<VB>` template
// (VB = vector width in bytes). isa_call<Op>(args...) calls one of three trampolines compiled with
// target("avx512f,...") / target("avx2,fma,f16c") / the baseline, chosen once per process from
// CPUID. The environment variable SEPCONV1D_CPU_ISA=avx512|avx2|default caps the choice (used by
// the tests to cover every path on one machine; bf16_gemm.h also reads amx and avx512_bf16).
#pragma once

#include "common/conv_params.h"
#include "common/dispatch.h"

#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SEPCONV1D_X86 1
#else
#define SEPCONV1D_X86 0
#endif

#if !defined(__GNUC__)
#error "sepconv1d's CPU kernels use GCC/Clang vector extensions"
#endif

#define SC_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define SC_UNROLL _Pragma("unroll")
#define SC_NOUNROLL _Pragma("nounroll")
#else
#define SC_UNROLL _Pragma("GCC unroll 16")
#define SC_NOUNROLL _Pragma("GCC unroll 1")
#endif

#if SEPCONV1D_X86
#define SC_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,avx,fma,f16c")))
#define SC_TARGET_AVX2 __attribute__((target("avx2,avx,fma,f16c")))
#endif

// Vector values only live inside always-inlined helpers; the ABI note GCC prints for them (at the
// end of the translation unit, hence not scoped with push/pop) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace sepconv1d {
namespace cpu {

using torch::headeronly::BFloat16;
using torch::headeronly::Half;

// ------------------------------------------------------------------------------------------------
// Integer helpers (64-bit everywhere; numerators may be negative).
// ------------------------------------------------------------------------------------------------
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
inline int64_t round_up(int64_t a, int64_t m) { return (a + m - 1) / m * m; }
inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Grows a scratch vector (new elements are zero, so padding lanes always hold finite values).
template <typename V>
inline void ensure_size(std::vector<V>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// ------------------------------------------------------------------------------------------------
// ISA selection.
// ------------------------------------------------------------------------------------------------
enum : int { kIsaDefault = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };

inline int detect_isa() {
  int best = kIsaDefault;
#if SEPCONV1D_X86
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq");
  best = avx512 ? kIsaAvx512 : (avx2 ? kIsaAvx2 : kIsaDefault);
#endif
  if (const char* cap = std::getenv("SEPCONV1D_CPU_ISA")) {
    int limit = best;
    if (std::strcmp(cap, "default") == 0 || std::strcmp(cap, "none") == 0) limit = kIsaDefault;
    if (std::strcmp(cap, "avx2") == 0) limit = kIsaAvx2;
    best = std::min(best, limit);
  }
  return best;
}

inline int cpu_isa() {
  static const int isa = detect_isa();
  return isa;
}

#if SEPCONV1D_X86
template <typename Op, typename... A>
SC_TARGET_AVX512 void run_avx512(A... a) {
  Op::template run<64>(a...);
}
template <typename Op, typename... A>
SC_TARGET_AVX2 void run_avx2(A... a) {
  Op::template run<32>(a...);
}
#endif
template <typename Op, typename... A>
void run_baseline(A... a) {
  Op::template run<16>(a...);
}

// Calls Op::run<VB>(args...) compiled for the best ISA of this CPU.
template <typename Op, typename... A>
inline void isa_call(A... a) {
#if SEPCONV1D_X86
  switch (cpu_isa()) {
    case kIsaAvx512:
      return run_avx512<Op>(a...);
    case kIsaAvx2:
      return run_avx2<Op>(a...);
    default:
      break;
  }
#endif
  run_baseline<Op>(a...);
}

// ------------------------------------------------------------------------------------------------
// Vector helpers.
// ------------------------------------------------------------------------------------------------
template <typename T, int VB>
struct VecOf {
  typedef T type __attribute__((vector_size(VB)));
};
template <typename T, int VB>
using vec_t = typename VecOf<T, VB>::type;

template <typename V, typename T>
SC_INLINE V vload(const T* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V, typename T>
SC_INLINE void vstore(T* p, V v) {
  __builtin_memcpy(p, &v, sizeof(V));
}
// Splat. GCC turns the obvious forms (a lane loop, `V{} + s`) into a round trip through the stack
// when V is wider than the preferred vector width; a lane-0 shuffle becomes one vbroadcast.
template <typename V, typename T>
SC_INLINE V vbcast(T s) {
#if defined(__clang__)
  return s - V{};
#else
  using I = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;
  typedef I M __attribute__((vector_size(sizeof(V))));
  V v = {};
  v[0] = s;
  return __builtin_shuffle(v, M{});
#endif
}
template <typename T, typename V>
SC_INLINE T vsum(V v) {
  constexpr int W = sizeof(V) / sizeof(T);
  T s = 0;
  for (int i = 0; i < W; ++i) s += v[i];
  return s;
}

// ------------------------------------------------------------------------------------------------
// dtype conversion.
// ------------------------------------------------------------------------------------------------
SC_INLINE float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
// Round to nearest even, NaN -> canonical quiet NaN: bit-identical to c10::BFloat16(float).
SC_INLINE uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if (f != f) return 0x7FC0;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

template <typename T, typename S>
SC_INLINE T to_acc(S v) {
  if constexpr (std::is_same_v<S, BFloat16>) {
    return static_cast<T>(bf16_bits_to_float(v.x));
  } else {
    return static_cast<T>(static_cast<acc_t<S>>(v));
  }
}

template <typename S, typename T>
SC_INLINE S from_acc(T v) {
  if constexpr (std::is_same_v<S, BFloat16>) {
    S out;
    out.x = float_to_bf16_bits(static_cast<float>(v));
    return out;
  } else if constexpr (std::is_same_v<S, Half>) {
    return S(static_cast<float>(v));
  } else {
    return static_cast<S>(v);
  }
}

// Weight-gradient results (summed in double) into the weight dtype.
template <typename WT>
inline WT from_double(double v) {
  if constexpr (std::is_same_v<WT, double>) {
    return v;
  } else {
    return from_acc<WT, float>(static_cast<float>(v));
  }
}

#if SEPCONV1D_X86
SC_TARGET_AVX2 inline void half_to_float_f16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}
SC_TARGET_AVX2 inline void float_to_half_f16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT);
    dst[i] = static_cast<uint16_t>(_mm_extract_epi16(h, 0));
  }
}
#endif

// dst[i] = T(src[i * stride]), i < n.
template <typename S, typename T>
struct LoadOp {
  template <int VB>
  static SC_INLINE void run(const S* src, int64_t stride, T* dst, int64_t n) {
    if constexpr (std::is_same_v<S, T>) {
      if (stride == 1) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
        return;
      }
    }
#if SEPCONV1D_X86
    if constexpr (std::is_same_v<S, Half> && std::is_same_v<T, float> && VB >= 32) {
      if (stride == 1) {
        half_to_float_f16c(reinterpret_cast<const uint16_t*>(src), dst, n);
        return;
      }
    }
#endif
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = to_acc<T>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = to_acc<T>(src[i * stride]);
    }
  }
};

// dst[i * stride] = S(src[i]), i < n.
template <typename S, typename T>
struct StoreOp {
  template <int VB>
  static SC_INLINE void run(const T* src, S* dst, int64_t stride, int64_t n) {
    if constexpr (std::is_same_v<S, T>) {
      if (stride == 1) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
        return;
      }
    }
#if SEPCONV1D_X86
    if constexpr (std::is_same_v<S, Half> && std::is_same_v<T, float> && VB >= 32) {
      if (stride == 1) {
        float_to_half_f16c(src, reinterpret_cast<uint16_t*>(dst), n);
        return;
      }
    }
#endif
    if constexpr (std::is_same_v<S, BFloat16>) {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i * stride] = float_to_bf16_bits(static_cast<float>(src[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i * stride] = from_acc<S>(src[i]);
    }
  }
};

template <typename S, typename T>
inline void load_row(const S* src, int64_t stride, T* dst, int64_t n) {
  if (n > 0) isa_call<LoadOp<S, T>>(src, stride, dst, n);
}
template <typename S, typename T>
inline void store_row(const T* src, S* dst, int64_t stride, int64_t n) {
  if (n > 0) isa_call<StoreOp<S, T>>(src, dst, stride, n);
}

// ------------------------------------------------------------------------------------------------
// Hot loops.
// ------------------------------------------------------------------------------------------------

// out[j] = bias + sum_t w[t] * in[off[t] + j], j < n. KT > 0: ntaps == KT, taps unrolled.
// A row's tail of n % W outputs is the whole vector ending at n, which recomputes some outputs
// with the same operations (same bits): a scalar tail took K scalar FMAs per output, 40% of a row
// of 250 at K 11 in float32 (csrc/NOTES.md, forty-seventh session). out must not overlap in.
template <typename T, int KT>
struct CorrOp {
  template <int VB>
  static SC_INLINE void run(const T* in, const int64_t* off, const T* w, int64_t ntaps, T bias,
                            T* out, int64_t n) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    const V vb = vbcast<V>(bias);
    int64_t j = 0;
    if constexpr (KT > 0) {
      const T* p[KT];
      V wv[KT];
      SC_UNROLL
      for (int t = 0; t < KT; ++t) {
        p[t] = in + off[t];
        wv[t] = vbcast<V>(w[t]);
      }
      for (; j + 4 * W <= n; j += 4 * W) {
        V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
        SC_UNROLL
        for (int t = 0; t < KT; ++t) {
          const T* q = p[t] + j;
          a0 += wv[t] * vload<V>(q);
          a1 += wv[t] * vload<V>(q + W);
          a2 += wv[t] * vload<V>(q + 2 * W);
          a3 += wv[t] * vload<V>(q + 3 * W);
        }
        vstore(out + j, a0);
        vstore(out + j + W, a1);
        vstore(out + j + 2 * W, a2);
        vstore(out + j + 3 * W, a3);
      }
      for (; j + W <= n; j += W) {
        V a0 = vb;
        SC_UNROLL
        for (int t = 0; t < KT; ++t) a0 += wv[t] * vload<V>(p[t] + j);
        vstore(out + j, a0);
      }
      if (j < n && n >= W) {  // the tail as the last whole vector (see above)
        V a0 = vb;
        SC_UNROLL
        for (int t = 0; t < KT; ++t) a0 += wv[t] * vload<V>(p[t] + n - W);
        vstore(out + n - W, a0);
        j = n;
      }
      for (; j < n; ++j) {
        T a = bias;
        SC_UNROLL
        for (int t = 0; t < KT; ++t) a += w[t] * p[t][j];
        out[j] = a;
      }
    } else {
      for (; j + 4 * W <= n; j += 4 * W) {
        V a0 = vb, a1 = vb, a2 = vb, a3 = vb;
        for (int64_t t = 0; t < ntaps; ++t) {
          const V wt = vbcast<V>(w[t]);
          const T* q = in + off[t] + j;
          a0 += wt * vload<V>(q);
          a1 += wt * vload<V>(q + W);
          a2 += wt * vload<V>(q + 2 * W);
          a3 += wt * vload<V>(q + 3 * W);
        }
        vstore(out + j, a0);
        vstore(out + j + W, a1);
        vstore(out + j + 2 * W, a2);
        vstore(out + j + 3 * W, a3);
      }
      for (; j + W <= n; j += W) {
        V a0 = vb;
        for (int64_t t = 0; t < ntaps; ++t) a0 += vbcast<V>(w[t]) * vload<V>(in + off[t] + j);
        vstore(out + j, a0);
      }
      if (j < n && n >= W) {  // the tail as the last whole vector (see above)
        V a0 = vb;
        for (int64_t t = 0; t < ntaps; ++t) a0 += vbcast<V>(w[t]) * vload<V>(in + off[t] + n - W);
        vstore(out + n - W, a0);
        j = n;
      }
      for (; j < n; ++j) {
        T a = bias;
        for (int64_t t = 0; t < ntaps; ++t) a += w[t] * in[off[t] + j];
        out[j] = a;
      }
    }
  }
};

// acc[t] += sum_j g[j] * in[off[t] + j] (t < ntaps). Partial sums are formed in T and added to
// the double accumulators.
template <typename T, int KT>
struct DotTapsOp {
  template <int VB>
  static SC_INLINE void run(const T* g, int64_t n, const T* in, const int64_t* off, int64_t ntaps,
                            double* acc) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    if constexpr (KT > 0) {
      const T* p[KT];
      V a[KT];
      T sa[KT];
      SC_UNROLL
      for (int t = 0; t < KT; ++t) {
        p[t] = in + off[t];
        a[t] = V{};
        sa[t] = 0;
      }
      int64_t j = 0;
      for (; j + W <= n; j += W) {
        const V gv = vload<V>(g + j);
        SC_UNROLL
        for (int t = 0; t < KT; ++t) a[t] += gv * vload<V>(p[t] + j);
      }
      for (; j < n; ++j) {
        SC_UNROLL
        for (int t = 0; t < KT; ++t) sa[t] += g[j] * p[t][j];
      }
      SC_UNROLL
      for (int t = 0; t < KT; ++t) acc[t] += static_cast<double>(vsum<T>(a[t]) + sa[t]);
    } else {
      for (int64_t t = 0; t < ntaps; ++t) {
        const T* q = in + off[t];
        V a0 = V{}, a1 = V{};
        int64_t j = 0;
        for (; j + 2 * W <= n; j += 2 * W) {
          a0 += vload<V>(g + j) * vload<V>(q + j);
          a1 += vload<V>(g + j + W) * vload<V>(q + j + W);
        }
        for (; j + W <= n; j += W) a0 += vload<V>(g + j) * vload<V>(q + j);
        T s = 0;
        for (; j < n; ++j) s += g[j] * q[j];
        acc[t] += static_cast<double>(vsum<T>(a0 + a1) + s);
      }
    }
  }
};

// *acc += sum_j g[j] (partial sum in T, added in double).
template <typename T>
struct SumOp {
  template <int VB>
  static SC_INLINE void run(const T* g, int64_t n, double* acc) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    V a0 = V{}, a1 = V{};
    int64_t j = 0;
    for (; j + 2 * W <= n; j += 2 * W) {
      a0 += vload<V>(g + j);
      a1 += vload<V>(g + j + W);
    }
    for (; j + W <= n; j += W) a0 += vload<V>(g + j);
    T s = 0;
    for (; j < n; ++j) s += g[j];
    *acc += static_cast<double>(vsum<T>(a0 + a1) + s);
  }
};

// gs[c] = sum_j dy[j*ldd + c], c < cw (a multiple of 16).
template <typename T>
struct ColSumOp {
  template <int VB>
  static SC_INLINE void run(const T* dy, int64_t ldd, int64_t n, int64_t cw, T* gs) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    for (int64_t c = 0; c < cw; c += W) {
      V a0 = V{}, a1 = V{};
      int64_t j = 0;
      for (; j + 2 <= n; j += 2) {
        a0 += vload<V>(dy + j * ldd + c);
        a1 += vload<V>(dy + (j + 1) * ldd + c);
      }
      if (j < n) a0 += vload<V>(dy + j * ldd + c);
      vstore(gs + c, a0 + a1);
    }
  }
};

// Channel-last depthwise tile, vectorised over channels:
//   out[j*ldo + c] = bias[c] + sum_k wT[k*ldwt + c] * win[(j*s + k*d)*ldw + c],  j < n, c < cw.
// cw is a multiple of 16 elements (every VB divides it). d may be negative (input gradient).
template <typename T, int KT>
struct DwClFwdOp {
  template <int VB>
  static SC_INLINE void run(const T* win, int64_t ldw, const T* wT, int64_t ldwt, const T* bias,
                            T* out, int64_t ldo, int64_t n, int64_t cw, int64_t s, int64_t d,
                            int64_t K) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    const int64_t Kn = KT > 0 ? KT : K;
    const int64_t js = s * ldw;
    const int64_t kd = d * ldw;
    for (int64_t c = 0; c < cw; c += W) {
      const V bv = vload<V>(bias + c);
      int64_t j = 0;
      const int64_t js2 = 2 * js, js3 = 3 * js;
      for (; j + 4 <= n; j += 4) {
        V a0 = bv, a1 = bv, a2 = bv, a3 = bv;
        const T* q = win + j * js + c;
        const T* wq = wT + c;
        // Walk one pointer per operand: unrolling over k would make GCC keep 4*K addresses live.
        SC_NOUNROLL
        for (int64_t k = 0; k < Kn; ++k, q += kd, wq += ldwt) {
          const V wv = vload<V>(wq);
          a0 += wv * vload<V>(q);
          a1 += wv * vload<V>(q + js);
          a2 += wv * vload<V>(q + js2);
          a3 += wv * vload<V>(q + js3);
        }
        T* o = out + j * ldo + c;
        vstore(o, a0);
        vstore(o + ldo, a1);
        vstore(o + 2 * ldo, a2);
        vstore(o + 3 * ldo, a3);
      }
      for (; j < n; ++j) {
        V a0 = bv;
        const T* q = win + j * js + c;
        const T* wq = wT + c;
        SC_NOUNROLL
        for (int64_t k = 0; k < Kn; ++k, q += kd, wq += ldwt) a0 += vload<V>(wq) * vload<V>(q);
        vstore(out + j * ldo + c, a0);
      }
    }
  }
};

// Channel-last weight gradient of one tile:
//   tp[k*cw + c] = sum_j dy[j*ldd + c] * win[(j*s + k*d)*ldw + c]   (k < K, c < cw)
template <typename T, int KT>
struct DwClBwdWOp {
  template <int VB>
  static SC_INLINE void run(const T* dy, int64_t ldd, const T* win, int64_t ldw, int64_t n,
                            int64_t cw, int64_t s, int64_t d, int64_t K, T* tp) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    const int64_t js = s * ldw;
    const int64_t kd = d * ldw;
    for (int64_t c = 0; c < cw; c += W) {
      if constexpr (KT > 0) {
        V a[KT];
        SC_UNROLL
        for (int k = 0; k < KT; ++k) a[k] = V{};
        for (int64_t j = 0; j < n; ++j) {
          const V gv = vload<V>(dy + j * ldd + c);
          const T* q = win + j * js + c;
          SC_UNROLL
          for (int k = 0; k < KT; ++k) a[k] += gv * vload<V>(q + k * kd);
        }
        SC_UNROLL
        for (int k = 0; k < KT; ++k) vstore(tp + k * cw + c, a[k]);
      } else {
        for (int64_t k = 0; k < K; ++k) {
          V a0 = V{}, a1 = V{};
          const T* q = win + k * kd + c;
          int64_t j = 0;
          for (; j + 2 <= n; j += 2) {
            a0 += vload<V>(dy + j * ldd + c) * vload<V>(q + j * js);
            a1 += vload<V>(dy + (j + 1) * ldd + c) * vload<V>(q + (j + 1) * js);
          }
          if (j < n) a0 += vload<V>(dy + j * ldd + c) * vload<V>(q + j * js);
          vstore(tp + k * cw + c, a0 + a1);
        }
      }
    }
  }
};

// Channel-last input gradient of one tile for stride > 1 (stride 1 reuses DwClFwdOp):
//   out[r*ldo + c] = sum over k with (T0 + r - k*d) = s*j: wT[k*ldwt + c] * dy[(j - jb0)*ldd + c]
// for r < nt. rows/ks: scratch of K entries each.
template <typename T, int KT>
struct DwClBwdXOp {
  template <int VB>
  static SC_INLINE void run(const T* dy, int64_t ldd, int64_t jb0, const T* wT, int64_t ldwt,
                            T* out, int64_t ldo, int64_t T0, int64_t nt, int64_t cw, int64_t s,
                            int64_t d, int64_t K, int64_t* rows, int64_t* ks) {
    using V = vec_t<T, VB>;
    constexpr int W = VB / sizeof(T);
    for (int64_t r = 0; r < nt; ++r) {
      const int64_t t = T0 + r;
      int64_t m = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t v = t - k * d;
        const int64_t q = floor_div(v, s);
        if (q * s == v) {
          rows[m] = (q - jb0) * ldd;
          ks[m] = k * ldwt;
          ++m;
        }
      }
      T* o = out + r * ldo;
      for (int64_t c = 0; c < cw; c += W) {
        V a0 = V{};
        for (int64_t i = 0; i < m; ++i) a0 += vload<V>(wT + ks[i] + c) * vload<V>(dy + rows[i] + c);
        vstore(o + c, a0);
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------
// GEMM: C[M x N] (= bias / 0, or +=) A[M x Kd] * B[Kd x N].
// A is packed by pack_a in panels of kMR rows; B and C are row-major (ldb, ldc). The kernel may
// read B columns and write C up to round_up(M, kMR) rows and round_up(N, kNPad) columns: callers
// size their buffers accordingly (padding holds finite values: scratch is zero-initialised).
// ------------------------------------------------------------------------------------------------
constexpr int64_t kMR = 6;
constexpr int64_t kNPad = 64;
constexpr int64_t kKC = 128;

// Leading dimension for a GEMM B or C buffer with n columns: padded to kNPad, plus 16 elements so
// that consecutive rows do not fall into the same L1 sets (a power-of-two row stride would leave
// the B panel only part of the cache).
inline int64_t gemm_ld(int64_t n) { return round_up(std::max<int64_t>(n, 1), kNPad) + 16; }

// dst[(mb*Kd + k)*kMR + r] = src[(mb*kMR + r)*sm + k*sk], zero for rows >= M.
template <typename T>
inline void pack_a(int64_t M, int64_t Kd, const T* src, int64_t sm, int64_t sk, T* dst) {
  const int64_t Mb = ceil_div(M, kMR);
  for (int64_t mb = 0; mb < Mb; ++mb) {
    T* panel = dst + mb * kMR * Kd;
    if (sm == 1 && mb * kMR + kMR <= M) {
      // A transposed source (pw^T): a panel's kMR rows are adjacent elements of each source row,
      // so walk k outside (one source line per k, sequential writes) rather than kMR strided passes.
      for (int64_t k = 0; k < Kd; ++k) {
        const T* s = src + mb * kMR + k * sk;
        for (int64_t r = 0; r < kMR; ++r) panel[k * kMR + r] = s[r];
      }
      continue;
    }
    for (int64_t r = 0; r < kMR; ++r) {
      const int64_t m = mb * kMR + r;
      if (m < M) {
        const T* s = src + m * sm;
        for (int64_t k = 0; k < Kd; ++k) panel[k * kMR + r] = s[k * sk];
      } else {
        for (int64_t k = 0; k < Kd; ++k) panel[k * kMR + r] = T(0);
      }
    }
  }
}

// Micro-kernel: C[kMR x NV*W] (= bias | 0 when init, else +=) A[kMR x kl] * B[kl x NV*W], with A's
// element (r, k) at a[r][k * KSTEP]: packed panels (a[r] = panel + r, KSTEP = kMR, GemmOp), rows
// read in place (KSTEP = 1) or, KSTEP = 0, a run-time stride kstep (a transposed matrix read in
// place: GemmRowsOp).
template <int KSTEP, typename T, typename V, int W, int NV>
SC_INLINE void gemm_micro(const T* const* a, int64_t kstep, const T* b, int64_t ldb, T* c, int64_t ldc,
                          int64_t kl, bool init, const T* bias) {
  const int64_t ks = KSTEP > 0 ? KSTEP : kstep;
  V acc[kMR][NV];
  SC_UNROLL
  for (int r = 0; r < kMR; ++r) {
    SC_UNROLL
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = init ? (bias ? vbcast<V>(bias[r]) : V{}) : vload<V>(c + r * ldc + v * W);
    }
  }
  for (int64_t k = 0; k < kl; ++k) {
    V bv[NV];
    SC_UNROLL
    for (int v = 0; v < NV; ++v) bv[v] = vload<V>(b + k * ldb + v * W);
    SC_UNROLL
    for (int r = 0; r < kMR; ++r) {
      const V av = vbcast<V>(a[r][k * ks]);
      SC_UNROLL
      for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
    }
  }
  SC_UNROLL
  for (int r = 0; r < kMR; ++r) {
    SC_UNROLL
    for (int v = 0; v < NV; ++v) vstore(c + r * ldc + v * W, acc[r][v]);
  }
}

#if SEPCONV1D_X86
// x86 forms with explicit FMAs (embedded broadcasts): the generic form's a * b + c is not contracted
// under -std=c++17.
#define SC_GEMM_MICRO(NAME, TARGET, T, VT, W, LOAD, STORE, SET1, FMA, ZERO)                         \
  template <int KSTEP, int NV>                                                                      \
  TARGET inline void NAME(const T* const* a, int64_t kstep, const T* b, int64_t ldb, T* c,           \
                          int64_t ldc, int64_t kl, bool init, const T* bias) {                      \
    const int64_t ks = KSTEP > 0 ? KSTEP : kstep;                                                   \
    VT acc[kMR][NV];                                                                                \
    SC_UNROLL                                                                                       \
    for (int r = 0; r < kMR; ++r) {                                                                 \
      SC_UNROLL                                                                                     \
      for (int v = 0; v < NV; ++v) {                                                                \
        acc[r][v] = init ? (bias ? SET1(bias[r]) : ZERO()) : LOAD(c + r * ldc + v * W);             \
      }                                                                                             \
    }                                                                                               \
    for (int64_t k = 0; k < kl; ++k) {                                                              \
      VT bv[NV];                                                                                    \
      SC_UNROLL                                                                                     \
      for (int v = 0; v < NV; ++v) bv[v] = LOAD(b + k * ldb + v * W);                              \
      SC_UNROLL                                                                                     \
      for (int r = 0; r < kMR; ++r) {                                                               \
        const VT av = SET1(a[r][k * ks]);                                                           \
        SC_UNROLL                                                                                   \
        for (int v = 0; v < NV; ++v) acc[r][v] = FMA(av, bv[v], acc[r][v]);                        \
      }                                                                                             \
    }                                                                                               \
    SC_UNROLL                                                                                       \
    for (int r = 0; r < kMR; ++r) {                                                                 \
      SC_UNROLL                                                                                     \
      for (int v = 0; v < NV; ++v) STORE(c + r * ldc + v * W, acc[r][v]);                          \
    }                                                                                               \
  }

SC_GEMM_MICRO(gemm_micro_avx512_f32, SC_TARGET_AVX512, float, __m512, 16, _mm512_loadu_ps,
              _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_setzero_ps)
SC_GEMM_MICRO(gemm_micro_avx512_f64, SC_TARGET_AVX512, double, __m512d, 8, _mm512_loadu_pd,
              _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_setzero_pd)
SC_GEMM_MICRO(gemm_micro_avx2_f32, SC_TARGET_AVX2, float, __m256, 8, _mm256_loadu_ps,
              _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_setzero_ps)
SC_GEMM_MICRO(gemm_micro_avx2_f64, SC_TARGET_AVX2, double, __m256d, 4, _mm256_loadu_pd,
              _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_setzero_pd)
#undef SC_GEMM_MICRO
#endif

// Vectors per micro-kernel row at width VB (its columns: gemm_nr).
template <int VB>
constexpr int gemm_nv() {
  return VB == 64 ? 4 : 2;
}

// Columns per micro-kernel call at width VB.
template <typename T, int VB>
constexpr int64_t gemm_nr() {
  return gemm_nv<VB>() * (VB / static_cast<int>(sizeof(T)));
}

// One micro-kernel call compiled for the ISA width VB, NV vectors wide.
template <int KSTEP, int VB, int NV, typename T>
SC_INLINE void gemm_micro_nv(const T* const* a, int64_t kstep, const T* b, int64_t ldb, T* c,
                             int64_t ldc, int64_t kl, bool init, const T* bias) {
  using V = vec_t<T, VB>;
  constexpr int W = VB / sizeof(T);
#if SEPCONV1D_X86
  if constexpr (VB == 64 && std::is_same_v<T, float>) {
    gemm_micro_avx512_f32<KSTEP, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else if constexpr (VB == 64) {
    gemm_micro_avx512_f64<KSTEP, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else if constexpr (VB == 32 && std::is_same_v<T, float>) {
    gemm_micro_avx2_f32<KSTEP, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else if constexpr (VB == 32) {
    gemm_micro_avx2_f64<KSTEP, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else {
    gemm_micro<KSTEP, T, V, W, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  }
#else
  gemm_micro<KSTEP, T, V, W, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
#endif
}

// The micro-kernel over `cols` columns (1..gemm_nr): full width, or at the last column block only
// the vectors that hold columns. dH's products have n + K - 1 columns (a tile and its halo), so a
// full-width last block computed up to 63 dead columns (Vocos' 134 as 192, Citrinet's 260 as 320;
// their float32 backwards ran 7-10% longer that way: csrc/NOTES.md, forty-ninth session).
// Each output still sums its products in k order: the bits do not depend on the width.
template <int KSTEP, int VB, typename T>
SC_INLINE void gemm_micro_for(const T* const* a, int64_t kstep, const T* b, int64_t ldb, T* c, int64_t ldc,
                              int64_t kl, bool init, const T* bias, int64_t cols) {
  constexpr int NV = gemm_nv<VB>();
  constexpr int64_t W = VB / static_cast<int64_t>(sizeof(T));
  const int64_t nv = ceil_div(cols, W);
  if (nv >= NV) {
    gemm_micro_nv<KSTEP, VB, NV>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else if (nv == 1) {
    gemm_micro_nv<KSTEP, VB, 1>(a, kstep, b, ldb, c, ldc, kl, init, bias);
  } else if constexpr (NV == 4) {  // AVX-512's 4 vectors; AVX2's 2 leave only nv == 1 here
    if (nv == 2) {
      gemm_micro_nv<KSTEP, VB, 2>(a, kstep, b, ldb, c, ldc, kl, init, bias);
    } else {
      gemm_micro_nv<KSTEP, VB, 3>(a, kstep, b, ldb, c, ldc, kl, init, bias);
    }
  }
}

// B's kl x NR block at b (rows ldb apart) as the micro-kernel reads it: copied into a contiguous
// micro-panel (rows NR apart) where at least kPackPanels row panels of A will read it, else in place.
// Packed, the micro-kernel walks one stream instead of kl rows 1-4 KB apart (the backward's H^T and
// dy tiles); the values are unchanged. Citrinet's float32 separable backward on a 2-core Sapphire
// Rapids VM: 25.5 -> 20.1 ms (csrc/NOTES.md, forty-eighth session).
constexpr int64_t kPackPanels = 4;

template <typename T, int64_t NR>
SC_INLINE const T* b_panel(const T* b, int64_t ldb, int64_t kl, bool pack, T* dst, int64_t& ld) {
  if (!pack) {
    ld = ldb;
    return b;
  }
  for (int64_t k = 0; k < kl; ++k) std::memcpy(dst + k * NR, b + k * ldb, NR * sizeof(T));
  ld = NR;
  return dst;
}

template <typename T>
struct GemmOp {
  template <int VB>
  static SC_INLINE void run(int64_t M, int64_t N, int64_t Kd, const T* Ap, const T* B, int64_t ldb,
                            T* C, int64_t ldc, const T* bias, bool accumulate) {
    constexpr int64_t NR = gemm_nr<T, VB>();
    const int64_t Mb = ceil_div(M, kMR);
    const int64_t Np = round_up(N, NR);
    if (Kd == 0) {
      if (accumulate) return;
      for (int64_t m = 0; m < Mb * kMR; ++m) {
        const T v = bias ? bias[m] : T(0);
        for (int64_t j = 0; j < Np; ++j) C[m * ldc + j] = v;
      }
      return;
    }
    alignas(64) T bpanel[kKC * NR];
    const bool pack = Mb >= kPackPanels;
    for (int64_t k0 = 0; k0 < Kd; k0 += kKC) {
      const int64_t kl = std::min(kKC, Kd - k0);
      const bool init = (k0 == 0) && !accumulate;
      for (int64_t n0 = 0; n0 < Np; n0 += NR) {
        int64_t lb = 0;
        const T* bp = b_panel<T, NR>(B + k0 * ldb + n0, ldb, kl, pack, bpanel, lb);
        for (int64_t mb = 0; mb < Mb; ++mb) {
          const T* panel = Ap + mb * kMR * Kd + k0 * kMR;
          const T* rows[kMR];
          for (int r = 0; r < kMR; ++r) rows[r] = panel + r;
          gemm_micro_for<kMR, VB>(rows, kMR, bp, lb, C + mb * kMR * ldc + n0, ldc, kl, init,
                                  bias ? bias + mb * kMR : nullptr, N - n0);
        }
      }
    }
  }
};

// GEMM with A read in place: C[M x N] (= bias | 0, or += when accumulate) A[M x Kd] * B[Kd x N],
// A's element (m, k) at A[m * rs + k * ks]: a row-major matrix (rs = lda, ks = 1) or a transposed
// one (rs = 1, ks = lda), so a weight matrix or a tile needs no packed copy (the forward's float32
// product: A = pw; the backward's: A = dy's tile, and pw^T). Like GemmOp it reads B columns and
// writes C up to round_up(N, NR) columns and round_up(M, kMR) rows (rows of A past M repeat row
// M - 1; their results land in C's padding). Same arithmetic, in the same order, as GemmOp.
template <typename T>
struct GemmRowsOp {
  template <int VB>
  static SC_INLINE void run(int64_t M, int64_t N, int64_t Kd, const T* A, int64_t rs, int64_t ks,
                            const T* B, int64_t ldb, T* C, int64_t ldc, const T* bias, bool accumulate) {
    constexpr int64_t NR = gemm_nr<T, VB>();
    const int64_t Mb = ceil_div(M, kMR);
    const int64_t Np = round_up(N, NR);
    if (Kd == 0 && accumulate) return;
    alignas(64) T bpanel[kKC * NR];
    const bool pack = Mb >= kPackPanels;
    for (int64_t k0 = 0; k0 < std::max<int64_t>(Kd, 1); k0 += kKC) {
      const int64_t kl = std::max<int64_t>(0, std::min(kKC, Kd - k0));
      const bool init = k0 == 0 && !accumulate;
      for (int64_t n0 = 0; n0 < Np; n0 += NR) {
        int64_t lb = 0;
        const T* b = b_panel<T, NR>(B + k0 * ldb + n0, ldb, kl, pack, bpanel, lb);
        for (int64_t mb = 0; mb < Mb; ++mb) {
          const T* rows[kMR];
          for (int r = 0; r < kMR; ++r) rows[r] = A + std::min(mb * kMR + r, M - 1) * rs + k0 * ks;
          T* c = C + mb * kMR * ldc + n0;
          const T* bp = bias ? bias + mb * kMR : nullptr;
          if (ks == 1) {
            gemm_micro_for<1, VB>(rows, 1, b, lb, c, ldc, kl, init, bp, N - n0);
          } else {
            gemm_micro_for<0, VB>(rows, ks, b, lb, c, ldc, kl, init, bp, N - n0);
          }
        }
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------
// Window loaders and the row input gradient.
// ------------------------------------------------------------------------------------------------

// Loads the input positions p0 + ph + s*i (i < PL) of one row into phase ph of buf
// (buf[ph*PL + i]), zero outside [0, L). With this layout a strided convolution reads every tap as
// a contiguous run: tap offset k*d lives in phase (k*d) % s at index (k*d) / s + j.
template <typename S, typename T>
inline void load_row_phases(const S* row, int64_t sl, int64_t L, int64_t p0, int64_t s, int64_t PL,
                            T* buf) {
  for (int64_t ph = 0; ph < s; ++ph) {
    T* dst = buf + ph * PL;
    const int64_t q0 = p0 + ph;
    const int64_t ilo = clamp64(ceil_div(-q0, s), 0, PL);
    const int64_t ihi = clamp64(ceil_div(L - q0, s), ilo, PL);
    std::fill(dst, dst + ilo, T(0));
    if (ihi > ilo) load_row(row + (q0 + s * ilo) * sl, s * sl, dst + ilo, ihi - ilo);
    std::fill(dst + ihi, dst + PL, T(0));
  }
}

// Offsets of the K taps into a phase buffer built by load_row_phases.
inline void phase_offsets(int64_t K, int64_t s, int64_t d, int64_t PL, int64_t* off) {
  for (int64_t k = 0; k < K; ++k) off[k] = ((k * d) % s) * PL + (k * d) / s;
}

// The input of one channel row's outputs whose window starts at position p0 and spans W positions
// (stride s, dilation d, K taps): the row itself where it can be read in place (S == T, stride 1,
// unit position stride, the window inside [0, L)), else the window loaded into buf in phase
// layout. off[k] receives tap k's offset into the returned run.
template <typename S, typename T>
inline const T* row_window(const S* xrow, int64_t sl, int64_t L, int64_t p0, int64_t W, int64_t K,
                           int64_t s, int64_t d, std::vector<T>& buf, int64_t* off) {
  if constexpr (std::is_same_v<S, T>) {
    if (s == 1 && sl == 1 && p0 >= 0 && p0 + W <= L) {
      for (int64_t k = 0; k < K; ++k) off[k] = k * d;
      return reinterpret_cast<const T*>(xrow + p0);
    }
  }
  const int64_t PL = ceil_div(W, s);
  ensure_size(buf, s * PL);
  load_row_phases(xrow, sl, L, p0, s, PL, buf.data());
  phase_offsets(K, s, d, PL, off);
  return buf.data();
}

// Channel-last window: win[r*ldw + c] = x(position p0 + r, channel c) for r < nrows, c < cb; rows
// outside [0, L) are zero over the full width ldw. src points at (batch b, channel c0).
template <typename S, typename T>
inline void load_window_cl(const S* src, int64_t sl, int64_t sc, int64_t L, int64_t p0,
                           int64_t nrows, int64_t cb, T* win, int64_t ldw) {
  for (int64_t r = 0; r < nrows; ++r) {
    const int64_t pos = p0 + r;
    if (pos < 0 || pos >= L) {
      std::fill(win + r * ldw, win + (r + 1) * ldw, T(0));
    } else {
      load_row(src + pos * sl, sc, win + r * ldw, cb);
    }
  }
}

// Scratch for row_input_grad.
template <typename T>
struct RowGradScratch {
  std::vector<T> tmp;
  std::vector<T> wr;
  std::vector<int64_t> off;
};

// Input gradient of one row tile. g[m] holds dy at output index jb0 + m (zero outside the valid
// range); out[r] = dx at padded coordinate T0 + r (r < T1 - T0):
//   dx[t] = sum over k, j with j*s + k*d = t of w[k] * dy[j].
// Split by residue t % s, each residue is a correlation of dy with the taps k*d = t (mod s).
template <typename T, int KT>
inline void row_input_grad(const T* g, int64_t jb0, const T* w, int64_t K, int64_t s, int64_t d,
                           int64_t T0, int64_t T1, T* out, RowGradScratch<T>& sc) {
  const int64_t nt = T1 - T0;
  if (nt <= 0) return;
  ensure_size(sc.off, K);
  ensure_size(sc.wr, K);
  if (s == 1) {
    for (int64_t k = 0; k < K; ++k) {
      sc.off[k] = T0 - k * d - jb0;
      sc.wr[k] = w[k];
    }
    isa_call<CorrOp<T, KT>>(g, static_cast<const int64_t*>(sc.off.data()),
                            static_cast<const T*>(sc.wr.data()), K, T(0), out, nt);
    return;
  }
  ensure_size(sc.tmp, nt / s + 1);
  for (int64_t r = 0; r < s; ++r) {
    const int64_t tr = T0 + ((r - T0) % s + s) % s;  // first t >= T0 with t % s == r
    if (tr >= T1) continue;
    const int64_t nr = (T1 - 1 - tr) / s + 1;
    const int64_t u0 = (tr - r) / s;
    int64_t ntaps = 0;
    for (int64_t k = 0; k < K; ++k) {
      if ((k * d) % s != r) continue;
      sc.off[ntaps] = u0 - (k * d - r) / s - jb0;
      sc.wr[ntaps] = w[k];
      ++ntaps;
    }
    T* o = out + (tr - T0);
    if (ntaps == 0) {
      for (int64_t m = 0; m < nr; ++m) o[m * s] = T(0);
      continue;
    }
    const int64_t* offp = sc.off.data();
    const T* wp = sc.wr.data();
    if (KT > 0 && ntaps == K) {
      isa_call<CorrOp<T, KT>>(g, offp, wp, ntaps, T(0), sc.tmp.data(), nr);
    } else {
      isa_call<CorrOp<T, 0>>(g, offp, wp, ntaps, T(0), sc.tmp.data(), nr);
    }
    for (int64_t m = 0; m < nr; ++m) o[m * s] = sc.tmp[m];
  }
}

// Input-gradient ownership of output tile [j0, j1) (tile jt of ntiles): the input positions
// [i0, i1) whose gradient this tile writes (the tiles partition [0, L)), and the range [jb0, jb1)
// of grad_out that both the owned input gradient and the tile itself need.
struct TileSpan {
  int64_t i0, i1;    // owned input positions
  int64_t T0, T1;    // the same in padded coordinates (+ pad_left)
  int64_t jb0, jb1;  // grad_out range to load
};

inline TileSpan tile_span(int64_t jt, int64_t ntiles, int64_t j0, int64_t j1, const ConvGeometry& g,
                          bool need_x) {
  TileSpan t;
  const int64_t s = g.stride, pl = g.pad_left, L = g.length;
  t.i0 = jt == 0 ? 0 : clamp64(j0 * s - pl, 0, L);
  t.i1 = jt == ntiles - 1 ? L : clamp64(j1 * s - pl, 0, L);
  if (!need_x || t.i1 < t.i0) t.i1 = t.i0;
  t.T0 = t.i0 + pl;
  t.T1 = t.i1 + pl;
  t.jb0 = j0;
  t.jb1 = j1;
  if (t.T1 > t.T0) {
    t.jb0 = std::min(j0, floor_div(t.T0 - (g.kernel_size - 1) * g.dilation, s));
    t.jb1 = std::max(j1, floor_div(t.T1 - 1, s) + 1);
  }
  return t;
}

// Reads weight-like tensor data (WT) into the accumulation type.
template <typename WT, typename T>
inline std::vector<T> to_acc_vector(const Tensor& t, int64_t n) {
  std::vector<T> out(static_cast<size_t>(n));
  if (n == 0) return out;
  const WT* p = static_cast<const WT*>(t.const_data_ptr());
  for (int64_t i = 0; i < n; ++i) out[i] = to_acc<T>(p[i]);
  return out;
}

}  // namespace cpu
}  // namespace sepconv1d
