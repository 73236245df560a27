// bfloat16 products for the CPU separable backward of bfloat16 activations (bf16 operands,
// float32 accumulators, as the CUDA kernels' MMA). Its two products per tile are
//   d pw partial[Cout x Cin] (+)= DY[Cout x T] * H[Cin x T]^T        (gemm_rows_a)
//   DH[Cin x T]               = pw^T[Cin x Cout] * DY[Cout x T]      (gemm_packed)
// with DY and H bf16 values held in float rows. Two back ends share one packed layout:
//   * AMX (TDPBF16PS on 16 x 16 float32 tiles), on CPUs with AMX-BF16 (Sapphire Rapids and
//     later): 1.1-1.6 TFLOP/s per core, oneDNN's bf16 rate and ~8x our float32 GEMM
//     (csrc/NOTES.md, forty-fifth session);
//   * AVX512-BF16 dot products (VDPBF16PS on 8 x 48 float32 register blocks), on CPUs with
//     AVX512-BF16 but no AMX (AMD Zen 4 and later, Cooper Lake): twice the float32 FMA's products
//     per instruction (csrc/NOTES.md, forty-seventh session).
// bf16_gemm_path() picks one once per process; kBf16None keeps the float32 GEMM.
//
// Compiled without -m flags, like the rest of the CPU code: every function that issues AVX-512,
// AVX512-BF16 or AMX instructions carries SC_TARGET_BF16 or SC_TARGET_AMX, and callers check
// bf16_gemm_path() once (for AMX it also asks Linux for the tile-data permission). The tile
// instructions are inline asm with memory clobbers: GCC 12's tile intrinsics do not declare the
// memory a tile load reads, so stores into a buffer that only a tile load reads could be dropped.
//
// Layouts (bf16 as uint16_t bit patterns, buffers 64-byte aligned):
//   packed A: panels of 16 rows; per panel one 16 x 32 tile (1 KiB) per 32 k, zero padded.
//   packed B: panels of 16 columns; per panel, row p of a 32-k tile holds the 16 pairs
//             {B[2p][n], B[2p + 1][n]} (the "VNNI" form TDPBF16PS and VDPBF16PS read), zero
//             padded. Within a panel the pair rows of consecutive k run on contiguously.
//
// Reproducibility: on either back end every C element is its initial value (or 0) plus the
// products of k in increasing order, through the same instructions whatever the block: its bits do
// not depend on how M or N are split across calls or threads (the two back ends differ from each
// other). Both instructions ignore MXCSR: bf16 denormal inputs count as zero and denormal float32
// results flush to zero; the float32 -> bf16 rounding of the packing (VCVTNE2PS2BF16) is to nearest
// even, as the forward's and the CUDA kernels' are.
#pragma once

#include "cpu/cpu_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#if SEPCONV1D_X86
#include <cpuid.h>
#define SEPCONV1D_BF16_GEMM 1
#else
#define SEPCONV1D_BF16_GEMM 0
#endif
#if SEPCONV1D_X86 && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define SEPCONV1D_AMX 1
#else
#define SEPCONV1D_AMX 0
#endif

namespace sepconv1d {
namespace cpu {
namespace bf16 {

enum Path : int { kNone = 0, kDot = 1, kAmx = 2 };

namespace detail {

// The CPU has AVX512-BF16 and the AVX-512 kernels are in use.
inline bool has_avx512_bf16() {
#if SEPCONV1D_BF16_GEMM
  unsigned a, b, c, d;
  return cpu_isa() == kIsaAvx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
#else
  return false;
#endif
}

// The CPU has AMX-TILE and AMX-BF16, the OS enables tile state, and Linux grants this process the
// tile-data permission (asked once).
inline bool amx_usable() {
#if SEPCONV1D_AMX
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;  // AMX-BF16, AMX-TILE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;  // XTILECFG, XTILEDATA enabled by the OS
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace detail

// Which back end the bf16 backward products take, chosen once per process: AMX, else AVX512-BF16,
// else none (the float32 GEMM). SEPCONV1D_CPU_ISA caps it, so that the tests cover every path on
// one machine: `amx` (the default choice), `avx512_bf16` (AMX off), `avx512` or lower (both off).
inline Path bf16_gemm_path() {
  static const Path path = [] {
    if (!detail::has_avx512_bf16()) return kNone;
    const char* cap = std::getenv("SEPCONV1D_CPU_ISA");
    const bool amx_ok = cap == nullptr || std::strcmp(cap, "amx") == 0;
    const bool dot_ok = amx_ok || std::strcmp(cap, "avx512_bf16") == 0;
    if (amx_ok && detail::amx_usable()) return kAmx;
    return dot_ok ? kDot : kNone;
  }();
  return path;
}

inline int64_t packed_a_elems(int64_t M, int64_t K) { return round_up(M, 16) * round_up(K, 32); }
inline int64_t packed_b_elems(int64_t N, int64_t K) { return round_up(N, 16) * round_up(K, 32); }

// 64-byte aligned bf16 buffer, grown on demand (kept by its owner across tiles).
struct PackedBuffer {
  struct Free {
    void operator()(uint16_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint16_t[], Free> ptr;
  int64_t capacity = 0;
  uint16_t* get(int64_t elems) {
    if (elems > capacity) {
      const size_t bytes = static_cast<size_t>(round_up(std::max<int64_t>(elems, 32) * 2, 64));
      ptr.reset(static_cast<uint16_t*>(std::aligned_alloc(64, bytes)));
      capacity = elems;
    }
    return ptr.get();
  }
};

#if SEPCONV1D_BF16_GEMM

#define SC_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define SC_TARGET_AMX \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

// GCC 12 reports -Wmaybe-uninitialized inside AVX-512 intrinsics used through target attributes.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace detail {

// n (<= 32, rest zero) consecutive floats -> 32 bf16 (nearest even) in one register.
SC_TARGET_BF16 SC_INLINE __m512i load32(const float* p, int64_t n) {
  __m512 lo, hi;
  if (n >= 32) {
    lo = _mm512_loadu_ps(p);
    hi = _mm512_loadu_ps(p + 16);
  } else {
    const int64_t nl = clamp64(n, 0, 16), nh = clamp64(n - 16, 0, 16);
    lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << nl) - 1), p);
    hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << nh) - 1), p + 16);
  }
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// Rows x and y (n <= 16 valid, null = zeros) -> 16 words {bf16 x[i], bf16 y[i]}.
SC_TARGET_BF16 SC_INLINE __m512i pair16(const float* x, const float* y, int64_t n) {
  alignas(64) static const uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                       21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __mmask16 m = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << clamp64(n, 0, 16)) - 1);
  const __m512 vx = x ? _mm512_maskz_loadu_ps(m, x) : _mm512_setzero_ps();
  const __m512 vy = y ? _mm512_maskz_loadu_ps(m, y) : _mm512_setzero_ps();
  const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(vy, vx));  // x0..x15, y0..y15
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), v);
}

// In-place transpose of a 16 x 16 matrix of 32-bit elements held in 16 registers.
SC_TARGET_BF16 SC_INLINE void transpose16(__m512i r[16]) {
  __m512i t[16], s[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    s[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    s[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    s[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    s[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i x0 = _mm512_shuffle_i32x4(s[j], s[4 + j], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(s[j], s[4 + j], 0xEE);
    const __m512i y0 = _mm512_shuffle_i32x4(s[8 + j], s[12 + j], 0x44);
    const __m512i y1 = _mm512_shuffle_i32x4(s[8 + j], s[12 + j], 0xEE);
    r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    r[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
    r[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
  }
}

}  // namespace detail

// Packed A from rows contiguous along k: A[m][k] = src[m * ld + k], m < M, k < K.
SC_TARGET_BF16 inline void pack_a_rows(const float* src, int64_t ld, int64_t M, int64_t K,
                                      uint16_t* dst) {
  const int64_t KB = round_up(K, 32) / 32;
  for (int64_t m0 = 0; m0 < M; m0 += 16) {
    const int64_t mr = std::min<int64_t>(16, M - m0);
    for (int64_t kb = 0; kb < KB; ++kb) {
      uint16_t* tile = dst + ((m0 / 16) * KB + kb) * 512;
      for (int64_t i = 0; i < 16; ++i) {
        const __m512i v = i < mr ? detail::load32(src + (m0 + i) * ld + kb * 32, K - kb * 32)
                                 : _mm512_setzero_si512();
        _mm512_store_si512(tile + i * 32, v);
      }
    }
  }
}

// Packed A from a transposed source: A[m][k] = src[k * ld + m] (pw^T from pw). Pairs of source
// rows become 32-bit words, then 16 x 16 transposes.
SC_TARGET_BF16 inline void pack_a_transposed(const float* src, int64_t ld, int64_t M, int64_t K,
                                            uint16_t* dst) {
  const int64_t KB = round_up(K, 32) / 32;
  for (int64_t kb = 0; kb < KB; ++kb) {
    for (int64_t m0 = 0; m0 < M; m0 += 16) {
      __m512i r[16];
      for (int64_t p = 0; p < 16; ++p) {
        const int64_t k = kb * 32 + 2 * p;
        r[p] = detail::pair16(k < K ? src + k * ld + m0 : nullptr,
                              k + 1 < K ? src + (k + 1) * ld + m0 : nullptr, M - m0);
      }
      detail::transpose16(r);
      uint16_t* tile = dst + ((m0 / 16) * KB + kb) * 512;
      for (int i = 0; i < 16; ++i) _mm512_store_si512(tile + i * 32, r[i]);
    }
  }
}

// Packed B from rows along k (B = src^T): B[k][n] = src[n * ld + k] (H rows for d pw).
SC_TARGET_BF16 inline void pack_b_transposed(const float* src, int64_t ld, int64_t N, int64_t K,
                                            uint16_t* dst) {
  const int64_t Kp = round_up(K, 32), KB = Kp / 32;
  for (int64_t n0 = 0; n0 < N; n0 += 16) {
    const int64_t nr = std::min<int64_t>(16, N - n0);
    uint16_t* panel = dst + (n0 / 16) * Kp * 16;
    for (int64_t kb = 0; kb < KB; ++kb) {
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        r[i] = i < nr ? detail::load32(src + (n0 + i) * ld + kb * 32, K - kb * 32)
                      : _mm512_setzero_si512();
      }
      detail::transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_store_si512(panel + kb * 512 + i * 32, r[i]);
    }
  }
}

// Packed B from rows along n: B[k][n] = src[k * ld + n] (DY rows for DH).
SC_TARGET_BF16 inline void pack_b_rows(const float* src, int64_t ld, int64_t K, int64_t N,
                                      uint16_t* dst) {
  const int64_t Kp = round_up(K, 32);
  for (int64_t kp = 0; kp < Kp / 2; ++kp) {
    const int64_t k = 2 * kp;
    const float* x = k < K ? src + k * ld : nullptr;
    const float* y = k + 1 < K ? src + (k + 1) * ld : nullptr;
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
      const __m512i w = detail::pair16(x ? x + n0 : nullptr, y ? y + n0 : nullptr, N - n0);
      _mm512_store_si512(dst + ((n0 / 16) * (Kp / 2) + kp) * 32, w);
    }
  }
}

#if SEPCONV1D_AMX

// Tile numbers are immediates (printed with %c).
#define SC_TILE_LOAD(t, base, stride_bytes)                                                   \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(static_cast<const void*>(base)), \
                   "r"(static_cast<long>(stride_bytes)), "i"(t)                            \
                   : "memory")
#define SC_TILE_STORE(t, base, stride_bytes)                                            \
  __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(static_cast<void*>(base)), \
                   "r"(static_cast<long>(stride_bytes)), "i"(t)                      \
                   : "memory")
#define SC_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm%c0" ::"i"(t))
// tile tc += tile ta * tile tb (AT&T operand order)
#define SC_TILE_DP(tc, ta, tb) \
  __asm__ volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(tc), "i"(ta), "i"(tb))

// Loads the tile configuration (8 tiles of 16 rows x 64 bytes) for the calling thread on entry
// and releases the tiles on exit: the configuration is per thread, and oneDNN (the forward's
// products) loads its own.
struct TileScope {
  TileScope() {
    struct alignas(64) Config {
      uint8_t palette, start_row, reserved[14];
      uint16_t colsb[16];
      uint8_t rows[16];
    } cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; ++i) {
      cfg.colsb[i] = 64;
      cfg.rows[i] = 16;
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
  }
  ~TileScope() { __asm__ volatile("tilerelease" ::: "memory"); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

namespace amx_detail {

// C tile load (or zero) / store; partial tiles go through a 16 x 16 scratch.
template <int TILE>
SC_TARGET_AMX SC_INLINE void c_load(const float* c, int64_t ldc, int64_t rows, int64_t cols,
                                    bool load, float* scr) {
  if (!load) {
    SC_TILE_ZERO(TILE);
  } else if (rows == 16 && cols == 16) {
    SC_TILE_LOAD(TILE, c, ldc * 4);
  } else {
    const __mmask16 m = static_cast<__mmask16>((1u << cols) - 1);
    for (int64_t i = 0; i < 16; ++i) {
      _mm512_store_ps(scr + i * 16, i < rows ? _mm512_maskz_loadu_ps(m, c + i * ldc) : _mm512_setzero_ps());
    }
    SC_TILE_LOAD(TILE, scr, 64);
  }
}
template <int TILE>
SC_TARGET_AMX SC_INLINE void c_store(float* c, int64_t ldc, int64_t rows, int64_t cols, float* scr) {
  if (rows == 16 && cols == 16) {
    SC_TILE_STORE(TILE, c, ldc * 4);
    return;
  }
  SC_TILE_STORE(TILE, scr, 64);
  const __mmask16 m = static_cast<__mmask16>((1u << cols) - 1);
  for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(c + i * ldc, m, _mm512_load_ps(scr + i * 16));
}

// One C block of MT x NT tiles of 16 x 16 (rows <= 16 MT, cols <= 16 NT valid) over nk k-blocks:
// tiles 0-3 hold C, 4-5 A, 6-7 B. a0 / a1: the two A panels' tiles, b0 / b1: the two B panels'
// (consecutive k-blocks 1 KiB apart). next_b0 / next_b1: the next block's B tiles, prefetched
// into L1 two k-steps ahead.
template <int MT, int NT>
SC_TARGET_AMX SC_INLINE void block(const char* a0, const char* a1, const char* b0, const char* b1,
                                   int64_t nk, float* c, int64_t ldc, int64_t rows, int64_t cols,
                                   bool load_c, const char* next_b0, const char* next_b1) {
  constexpr int64_t kPrefetch = 2;
  alignas(64) float scr[4][256];
  const int64_t r0 = std::min<int64_t>(rows, 16), r1 = rows - r0;
  const int64_t c0 = std::min<int64_t>(cols, 16), c1 = cols - c0;
  c_load<0>(c, ldc, r0, c0, load_c, scr[0]);
  if (NT == 2) c_load<1>(c + 16, ldc, r0, c1, load_c, scr[1]);
  if (MT == 2) c_load<2>(c + 16 * ldc, ldc, r1, c0, load_c, scr[2]);
  if (MT == 2 && NT == 2) c_load<3>(c + 16 * ldc + 16, ldc, r1, c1, load_c, scr[3]);
  for (int64_t j = 0; j < nk; ++j) {
    SC_TILE_LOAD(4, a0, 64);
    SC_TILE_LOAD(6, b0, 64);
    SC_TILE_DP(0, 4, 6);
    if (NT == 2) {
      SC_TILE_LOAD(7, b1, 64);
      SC_TILE_DP(1, 4, 7);
    }
    if (MT == 2) {
      SC_TILE_LOAD(5, a1, 64);
      SC_TILE_DP(2, 5, 6);
      if (NT == 2) SC_TILE_DP(3, 5, 7);
    }
    const int64_t jj = j + kPrefetch;
    const char* q0 = jj < nk ? b0 + kPrefetch * 1024 : (next_b0 ? next_b0 + (jj - nk) * 1024 : nullptr);
    const char* q1 = jj < nk ? b1 + kPrefetch * 1024 : (next_b1 ? next_b1 + (jj - nk) * 1024 : nullptr);
    if (q0) {
      for (int l = 0; l < 16; ++l) _mm_prefetch(q0 + 64 * l, _MM_HINT_T0);
    }
    if (NT == 2 && q1) {
      for (int l = 0; l < 16; ++l) _mm_prefetch(q1 + 64 * l, _MM_HINT_T0);
    }
    a0 += 1024;
    a1 += 1024;
    b0 += 1024;
    b1 += 1024;
  }
  c_store<0>(c, ldc, r0, c0, scr[0]);
  if (NT == 2) c_store<1>(c + 16, ldc, r0, c1, scr[1]);
  if (MT == 2) c_store<2>(c + 16 * ldc, ldc, r1, c0, scr[2]);
  if (MT == 2 && NT == 2) c_store<3>(c + 16 * ldc + 16, ldc, r1, c1, scr[3]);
}

// A strip of <= 32 rows of C (A panels ap0, ap1 of KB tiles) against packed B columns [0, N):
// k-chunks of 8 blocks (the strip's 16 KiB of A stays in L1) outside, 32-column blocks inside.
template <int MT>
SC_TARGET_AMX SC_INLINE void strip(const uint16_t* ap0, const uint16_t* ap1, const uint16_t* Bp,
                                   int64_t KB, float* C, int64_t ldc, int64_t rows, int64_t N,
                                   bool accumulate) {
  constexpr int64_t kChunk = 8;
  const int64_t nblk = ceil_div(N, 32);
  for (int64_t kb0 = 0; kb0 < KB; kb0 += kChunk) {
    const int64_t nk = std::min(KB, kb0 + kChunk) - kb0;
    const bool load_c = accumulate || kb0 > 0;
    const char* a0 = reinterpret_cast<const char*>(ap0 + kb0 * 512);
    const char* a1 = reinterpret_cast<const char*>(ap1 + kb0 * 512);
    for (int64_t nb = 0; nb < nblk; ++nb) {
      const int64_t n0 = nb * 32, cols = std::min<int64_t>(32, N - n0);
      const char* b0 = reinterpret_cast<const char*>(Bp + ((n0 / 16) * KB + kb0) * 512);
      const char* b1 = b0 + KB * 1024;  // the next 16-column panel
      const char* nb0 = nb + 1 < nblk ? b0 + KB * 2048 : nullptr;
      const char* nb1 = nb + 1 < nblk && N - n0 - 32 > 16 ? nb0 + KB * 1024 : nullptr;
      if (cols > 16) {
        block<MT, 2>(a0, a1, b0, b1, nk, C + n0, ldc, rows, cols, load_c, nb0, nb1);
      } else {
        block<MT, 1>(a0, a1, b0, b1, nk, C + n0, ldc, rows, cols, load_c, nb0, nb1);
      }
    }
  }
}

}  // namespace amx_detail

#endif  // SEPCONV1D_AMX

namespace detail {

// N columns per group, a multiple of `unit`: a group's packed B (<= ~1 MiB) stays in L2 while the
// strips of C pass over it.
inline int64_t n_group(int64_t N, int64_t KB, int64_t unit) {
  constexpr int64_t kL2Bytes = int64_t(1) << 20;
  return std::min(round_up(N, unit), std::max<int64_t>(1, kL2Bytes / (KB * unit * 64)) * unit);
}

}  // namespace detail

#if SEPCONV1D_AMX
namespace amx_detail {

// The loops over N groups and 32-row strips of C; a_strip(m0, rows) gives the strip's packed A
// (its second 16-row panel KB tiles after the first).
template <typename AStrip>
SC_TARGET_AMX void gemm_strips(AStrip a_strip, const uint16_t* Bp, float* C, int64_t ldc, int64_t M,
                               int64_t N, int64_t KB, bool accumulate) {
  const int64_t NG = detail::n_group(N, KB, 32);
  TileScope tiles;
  for (int64_t g0 = 0; g0 < N; g0 += NG) {
    const int64_t ng = std::min(NG, N - g0);
    const uint16_t* Bg = Bp + (g0 / 16) * KB * 512;
    for (int64_t m0 = 0; m0 < M; m0 += 32) {
      const int64_t rows = std::min<int64_t>(32, M - m0);
      const uint16_t* ap0 = a_strip(m0, rows);
      float* c = C + m0 * ldc + g0;
      if (rows > 16) {
        strip<2>(ap0, ap0 + KB * 512, Bg, KB, c, ldc, rows, ng, accumulate);
      } else {
        strip<1>(ap0, ap0, Bg, KB, c, ldc, rows, ng, accumulate);
      }
    }
  }
}

}  // namespace amx_detail
#endif  // SEPCONV1D_AMX

// ------------------------------------------------------------------------------------------------
// AVX512-BF16: C in registers, 8 rows x 3 panels of 16 columns (24 accumulators, 3 B registers
// and one broadcast A pair: 28 of the 32 zmm). Per k pair, 3 B loads and 8 broadcasts feed 24
// VDPBF16PS. The 8 rows are half of a packed A panel, so A needs no other layout.
// ------------------------------------------------------------------------------------------------
namespace dot_detail {

constexpr int kRows = 8;
constexpr int kPanels = 3;
// k-blocks (of 32) per pass over a C block: the block's B (3 KiB per k-block) and the strip's A
// (2 KiB per k-block) stay in a 32 KiB L1 while the strip's 8-row blocks reuse that B.
constexpr int64_t kKChunk = 4;

// C[rows x cols] (+)= A[8 rows] * B[NR panels] over k-blocks [0, nk). a: row 0 of the block in its
// packed A panel at the first k-block; b: the first B panel at that k-block, the others `bstride`
// elements apart. rows <= 8, cols <= 16 NR; the padding rows and columns of the packed operands are
// zeros, so the block always computes whole registers and masks only C's loads and stores.
template <int NR>
SC_TARGET_BF16 SC_INLINE void block(const uint16_t* a, const uint16_t* b, int64_t bstride,
                                    int64_t nk, float* c, int64_t ldc, int64_t rows, int64_t cols,
                                    bool load_c) {
  __m512 acc[kRows][NR];
  __mmask16 cm[NR];
  for (int j = 0; j < NR; ++j) {
    const int64_t cj = clamp64(cols - 16 * j, 0, 16);
    cm[j] = static_cast<__mmask16>((uint32_t(1) << cj) - 1);
  }
  SC_UNROLL for (int i = 0; i < kRows; ++i) {
    SC_UNROLL for (int j = 0; j < NR; ++j) {
      acc[i][j] = load_c && i < rows ? _mm512_maskz_loadu_ps(cm[j], c + i * ldc + 16 * j)
                                     : _mm512_setzero_ps();
    }
  }
  for (int64_t kb = 0; kb < nk; ++kb) {
    const uint16_t* ak = a + kb * 512;
    const uint16_t* bk = b + kb * 512;
    SC_UNROLL for (int p = 0; p < 16; ++p) {
      __m512bh bv[NR];
      SC_UNROLL for (int j = 0; j < NR; ++j) {
        bv[j] = reinterpret_cast<__m512bh>(_mm512_load_si512(bk + j * bstride + p * 32));
      }
      SC_UNROLL for (int i = 0; i < kRows; ++i) {
        int32_t pair;  // A[i][2p], A[i][2p + 1]
        std::memcpy(&pair, ak + i * 32 + 2 * p, sizeof pair);
        const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
        SC_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
      }
    }
  }
  SC_UNROLL for (int i = 0; i < kRows; ++i) {
    if (i < rows) {
      SC_UNROLL for (int j = 0; j < NR; ++j) _mm512_mask_storeu_ps(c + i * ldc + 16 * j, cm[j], acc[i][j]);
    }
  }
}

// The loops: N groups (packed B in L2), 32-row strips of C (a_strip(m0, rows) gives the strip's
// packed A, its second 16-row panel KB tiles after the first), k-chunks, 48-column blocks, 8-row
// blocks. Each C element takes its k-blocks in increasing order whatever the block shape.
template <typename AStrip>
SC_TARGET_BF16 void gemm_strips(AStrip a_strip, const uint16_t* Bp, float* C, int64_t ldc,
                                int64_t M, int64_t N, int64_t KB, bool accumulate) {
  constexpr int64_t kCols = 16 * kPanels;
  const int64_t NG = detail::n_group(N, KB, kCols);
  const int64_t bstride = KB * 512;  // elements between B panels
  for (int64_t g0 = 0; g0 < N; g0 += NG) {
    const int64_t g1 = std::min(N, g0 + NG);
    for (int64_t m0 = 0; m0 < M; m0 += 32) {
      const int64_t rows = std::min<int64_t>(32, M - m0);
      const uint16_t* ap = a_strip(m0, rows);
      for (int64_t kb0 = 0; kb0 < KB; kb0 += kKChunk) {
        const int64_t nk = std::min(KB, kb0 + kKChunk) - kb0;
        const bool load_c = accumulate || kb0 > 0;
        for (int64_t n0 = g0; n0 < g1; n0 += kCols) {
          const int64_t cols = std::min(kCols, g1 - n0);
          const uint16_t* b = Bp + (n0 / 16) * bstride + kb0 * 512;
          for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
            const uint16_t* a = ap + (r0 / 16) * bstride + (r0 % 16) * 32 + kb0 * 512;
            float* c = C + (m0 + r0) * ldc + n0;
            const int64_t nr = std::min<int64_t>(kRows, rows - r0);
            if (cols > 32) {
              block<3>(a, b, bstride, nk, c, ldc, nr, cols, load_c);
            } else if (cols > 16) {
              block<2>(a, b, bstride, nk, c, ldc, nr, cols, load_c);
            } else {
              block<1>(a, b, bstride, nk, c, ldc, nr, cols, load_c);
            }
          }
        }
      }
    }
  }
}

}  // namespace dot_detail

// C[M x N] (+)= A * B: A packed (pack_a_*), B packed (pack_b_*), C float32 with row stride ldc.
// accumulate = false overwrites C. Writes only C's M x N elements. Callers never pass K = 0 and
// call only where bf16_gemm_path() != kNone.
inline void gemm_packed(const uint16_t* Ap, const uint16_t* Bp, float* C, int64_t ldc, int64_t M,
                        int64_t N, int64_t K, bool accumulate) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const int64_t KB = round_up(K, 32) / 32;
  auto a_strip = [&](int64_t m0, int64_t) { return Ap + (m0 / 16) * KB * 512; };
#if SEPCONV1D_AMX
  if (bf16_gemm_path() == kAmx) return amx_detail::gemm_strips(a_strip, Bp, C, ldc, M, N, KB, accumulate);
#endif
  dot_detail::gemm_strips(a_strip, Bp, C, ldc, M, N, KB, accumulate);
}

// C[M x N] (+)= A * B with A's rows read from float rows along k (A[m][k] = src[m * lda + k]; each
// 32-row strip is packed into `strip_buf`, 32 * round_up(K, 32) elements, once per N group) and
// B packed.
inline void gemm_rows_a(const float* A, int64_t lda, const uint16_t* Bp, float* C, int64_t ldc,
                        int64_t M, int64_t N, int64_t K, bool accumulate, uint16_t* strip_buf) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const int64_t KB = round_up(K, 32) / 32;
  auto pack_strip = [&](int64_t m0, int64_t rows) -> const uint16_t* {
    pack_a_rows(A + m0 * lda, lda, rows, K, strip_buf);
    return strip_buf;
  };
#if SEPCONV1D_AMX
  if (bf16_gemm_path() == kAmx) return amx_detail::gemm_strips(pack_strip, Bp, C, ldc, M, N, KB, accumulate);
#endif
  dot_detail::gemm_strips(pack_strip, Bp, C, ldc, M, N, KB, accumulate);
}

#pragma GCC diagnostic pop

#endif  // SEPCONV1D_BF16_GEMM

}  // namespace bf16
}  // namespace cpu
}  // namespace sepconv1d
