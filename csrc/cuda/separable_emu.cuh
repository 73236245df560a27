// Host emulation of the CUDA subset the separable kernels use, to run their index maths, pipeline
// and fragment layouts on a machine without a GPU (never part of the extension build; see
// tests/emulation/separable_emu_test.cpp). Include it before any separable header, with -DSEP_EMULATE.
//
//  - A launch runs blockDim std::threads that execute the grid's blocks one after another;
//    __syncthreads is a std::barrier over the block, warp collectives (ldmatrix, mma.sync) exchange
//    operands through a per-warp buffer between two warp barriers.
//  - Dynamic shared memory is a malloc'd buffer of exactly the requested size, filled with 0xFF
//    bytes (NaN / -1) before every block; every shared address an emulated instruction touches is
//    range- and alignment-checked.
//  - cp.async copies are queued per thread and performed at cp.async.wait_group, so reading a
//    staged buffer before the wait (and the barrier after it) reads stale bytes; global source
//    addresses are alignment-checked like the hardware requires.
//  - mma.sync computes the exact products in double and adds them to the fp32 accumulator once;
//    tf32 operands are truncated to 10 mantissa bits as the tensor cores read them.
#pragma once

#ifndef SEP_EMULATE
#error "separable_emu.cuh is for host emulation builds (-DSEP_EMULATE) only"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <algorithm>
#include <barrier>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct SepEmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace sepemu {

struct WarpX {  // operands of one warp collective, one slot per lane
  const void* ptr[32];
  uint32_t a[32][4];
  uint32_t b[32][2];
  std::barrier<>* bar;
};

struct PendingCopy {
  void* dst;
  const void* src;
  int bytes, total;
};

inline thread_local SepEmuDim3 tl_thread, tl_block, tl_bdim, tl_gdim;
inline thread_local unsigned char* tl_smem = nullptr;
inline thread_local size_t tl_smem_bytes = 0;
inline thread_local std::barrier<>* tl_bar = nullptr;
inline thread_local WarpX* tl_warp = nullptr;
inline thread_local std::vector<PendingCopy>* tl_pending = nullptr;

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "SEP_EMU check failed: %s at %s:%d\n", what, file, line);
  std::abort();
}
#define SEP_EMU_CHECK(cond, what)                                   \
  do {                                                              \
    if (!(cond)) ::sepemu::fail(what, __FILE__, __LINE__);          \
  } while (0)

inline unsigned char* dynamic_smem() { return tl_smem; }

// A shared-memory access of `bytes` bytes at p must lie inside the dynamic buffer, aligned.
inline void check_smem(const void* p, size_t bytes, size_t align) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  SEP_EMU_CHECK(c >= tl_smem && c + bytes <= tl_smem + tl_smem_bytes, "shared access in bounds");
  SEP_EMU_CHECK((c - tl_smem) % align == 0, "shared access aligned");
}

inline unsigned lane() { return tl_thread.x & 31u; }
inline void warp_sync() { tl_warp->bar->arrive_and_wait(); }

// Runs kern(args...) on `grid` blocks of `block` threads with `smem` bytes of dynamic shared memory.
template <typename Kern, typename... Args>
void launch(Kern kern, long long grid, int block, size_t smem, const Args&... args) {
  SEP_EMU_CHECK(grid >= 1 && grid <= INT_MAX, "grid size");
  SEP_EMU_CHECK(block % 32 == 0 && block >= 32 && block <= 1024, "block size");
  std::barrier<> bar(block);
  const int nwarps = block / 32;
  std::vector<std::unique_ptr<std::barrier<>>> wbars;
  std::vector<WarpX> warps(static_cast<size_t>(nwarps));
  for (int w = 0; w < nwarps; ++w) {
    wbars.emplace_back(new std::barrier<>(32));
    warps[static_cast<size_t>(w)].bar = wbars.back().get();
  }
  unsigned char* sm = smem > 0 ? static_cast<unsigned char*>(std::aligned_alloc(128, (smem + 127) / 128 * 128)) : nullptr;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(block));
  for (int t = 0; t < block; ++t) {
    threads.emplace_back([&, t]() {
      std::vector<PendingCopy> pending;
      tl_thread = SepEmuDim3{unsigned(t), 0, 0};
      tl_bdim = SepEmuDim3{unsigned(block), 1, 1};
      tl_gdim = SepEmuDim3{unsigned(grid), 1, 1};
      tl_smem = sm;
      tl_smem_bytes = smem;
      tl_bar = &bar;
      tl_warp = &warps[static_cast<size_t>(t / 32)];
      tl_pending = &pending;
      for (long long g = 0; g < grid; ++g) {
        if (t == 0 && sm != nullptr) std::memset(sm, 0xFF, smem);
        bar.arrive_and_wait();
        tl_block = SepEmuDim3{unsigned(g), 0, 0};
        kern(args...);
        SEP_EMU_CHECK(pending.empty(), "cp.async copies still pending at kernel end");
        bar.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::free(sm);
}

inline uint32_t ld32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t ld16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float half_bits_to_float(uint16_t b) { return __half2float(__ushort_as_half(b)); }

}  // namespace sepemu

#define threadIdx (::sepemu::tl_thread)
#define blockIdx (::sepemu::tl_block)
#define blockDim (::sepemu::tl_bdim)
#define gridDim (::sepemu::tl_gdim)

inline void __syncthreads() { ::sepemu::tl_bar->arrive_and_wait(); }

inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline double __hiloint2double(int hi, int lo) {
  const uint64_t u = (uint64_t(uint32_t(hi)) << 32) | uint32_t(lo);
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

namespace sepconv1d {
namespace cuda {
namespace sep {

using std::fma;
using std::max;
using std::min;

// ---- PTX wrappers (see separable_ptx.cuh) ---------------------------------------------------------

inline void cp_async_queue(void* smem, const void* gmem, int bytes, int total) {
  sepemu::check_smem(smem, size_t(total), size_t(total));
  SEP_EMU_CHECK(reinterpret_cast<uintptr_t>(gmem) % uintptr_t(total) == 0,
                "cp.async global source aligned to the copy size");
  SEP_EMU_CHECK(bytes >= 0 && bytes <= total, "cp.async src-size");
  sepemu::tl_pending->push_back({smem, gmem, bytes, total});
}
inline void cp_async16(void* smem, const void* gmem, int src_bytes) {
  cp_async_queue(smem, gmem, src_bytes, 16);
}
inline void cp_async4(void* smem, const void* gmem) { cp_async_queue(smem, gmem, 4, 4); }
inline void cp_async8(void* smem, const void* gmem) { cp_async_queue(smem, gmem, 8, 8); }
inline void cp_async_commit() {}
inline void cp_async_wait_all() {
  for (const auto& c : *sepemu::tl_pending) {
    if (c.bytes > 0) std::memcpy(c.dst, c.src, size_t(c.bytes));
    if (c.total > c.bytes) std::memset(static_cast<char*>(c.dst) + c.bytes, 0, size_t(c.total - c.bytes));
  }
  sepemu::tl_pending->clear();
}

// Butterfly exchange inside a warp (every lane of the warp must call it).
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(uint32_t[4]), "");
  sepemu::WarpX& w = *sepemu::tl_warp;
  const unsigned l = sepemu::lane();
  std::memcpy(w.a[l], &v, sizeof(T));
  sepemu::warp_sync();
  T r;
  std::memcpy(&r, w.a[l ^ unsigned(lane_mask & 31)], sizeof(T));
  sepemu::warp_sync();
  return r;
}

// Four 8x8 b16 matrices; lane l gives the row address of row (l & 7) of matrix (l >> 3).
inline void ldmatrix_x4_impl(uint32_t (&r)[4], const void* p, bool trans) {
  sepemu::check_smem(p, 16, 16);
  sepemu::WarpX& w = *sepemu::tl_warp;
  const unsigned l = sepemu::lane();
  w.ptr[l] = p;
  sepemu::warp_sync();
  const unsigned g = l >> 2, q = l & 3;
  for (int i = 0; i < 4; ++i) {
    if (!trans) {  // row g, columns 2q, 2q + 1
      r[i] = sepemu::ld32(static_cast<const char*>(w.ptr[8 * i + g]) + 4 * q);
    } else {  // (row 2q, column g) and (row 2q + 1, column g)
      const uint32_t lo = sepemu::ld16(static_cast<const char*>(w.ptr[8 * i + 2 * q]) + 2 * g);
      const uint32_t hi = sepemu::ld16(static_cast<const char*>(w.ptr[8 * i + 2 * q + 1]) + 2 * g);
      r[i] = lo | (hi << 16);
    }
  }
  sepemu::warp_sync();
}
inline void ldmatrix_x4(uint32_t (&r)[4], const void* p) { ldmatrix_x4_impl(r, p, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { ldmatrix_x4_impl(r, p, true); }

// m16n8k16 (A row-major 16x16, B column-major 16x8), per the PTX ISA fragment layouts:
//   a_i: row g + 8 * (i & 1), columns 2q + 8 * (i >> 1) + {0, 1};  b_i: rows 2q + 8 i + {0, 1},
//   column g;  c_i: row g + 8 * (i >> 1), column 2q + (i & 1).   (g = lane / 4, q = lane % 4)
template <typename T>
inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  sepemu::WarpX& w = *sepemu::tl_warp;
  const unsigned l = sepemu::lane();
  for (int i = 0; i < 4; ++i) w.a[l][i] = a[i];
  for (int i = 0; i < 2; ++i) w.b[l][i] = b[i];
  sepemu::warp_sync();
  auto elem = [](uint32_t word, int half) {
    const uint16_t bits = uint16_t(half ? word >> 16 : word & 0xffffu);
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return double(sepemu::bf16_bits_to_float(bits));
    } else {
      return double(sepemu::half_bits_to_float(bits));
    }
  };
  auto A = [&](int r, int k) {  // lane (r % 8) * 4 + (k % 8) / 2, register (r / 8) + 2 (k / 8)
#ifdef SEP_EMU_MUTATE  // self-test of the harness: a wrong register layout must be caught
    return elem(w.a[(r % 8) * 4 + (k % 8) / 2][2 * (r / 8) + (k / 8)], k & 1);
#else
    return elem(w.a[(r % 8) * 4 + (k % 8) / 2][(r / 8) + 2 * (k / 8)], k & 1);
#endif
  };
  auto B = [&](int k, int c) {  // lane c * 4 + (k % 8) / 2, register k / 8
    return elem(w.b[c * 4 + (k % 8) / 2][k / 8], k & 1);
  };
  const int g = int(l >> 2), q = int(l & 3);
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i >> 1), c = 2 * q + (i & 1);
    double s = 0.0;
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, c);
    d[i] = float(double(d[i]) + s);
  }
  sepemu::warp_sync();
}

// m16n8k8 tf32: a_i: row g + 8 * (i & 1), column q + 4 * (i >> 1); b_i: row q + 4 i, column g.
inline void mma_1688_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  sepemu::WarpX& w = *sepemu::tl_warp;
  const unsigned l = sepemu::lane();
  for (int i = 0; i < 4; ++i) w.a[l][i] = a[i];
  for (int i = 0; i < 2; ++i) w.b[l][i] = b[i];
  sepemu::warp_sync();
  auto tf32 = [](uint32_t u) { return double(__uint_as_float(u & 0xffffe000u)); };
  auto A = [&](int r, int k) { return tf32(w.a[(r % 8) * 4 + (k % 4)][(r / 8) + 2 * (k / 4)]); };
  auto B = [&](int k, int c) { return tf32(w.b[c * 4 + (k % 4)][k / 4]); };
  const int g = int(l >> 2), q = int(l & 3);
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i >> 1), c = 2 * q + (i & 1);
    double s = 0.0;
    for (int k = 0; k < 8; ++k) s += A(r, k) * B(k, c);
    d[i] = float(double(d[i]) + s);
  }
  sepemu::warp_sync();
}

// cvt.rna.tf32.f32: round to nearest, ties away from zero, at 10 mantissa bits.
inline float round_tf32(float v) {
  uint32_t u = __float_as_uint(v);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  return __uint_as_float(u);
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
