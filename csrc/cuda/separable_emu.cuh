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
//  - wgmma (sm_90a) decodes the shared-memory descriptors (128-byte swizzle, K-major) and computes
//    each thread's accumulator fragment; the products are taken both at issue and at
//    wgmma.wait_group and must agree, so operands not ready at issue or overwritten before the wait
//    are caught. Shared addresses start at kSmemBase (not 1024-aligned) so the kernels' base
//    alignment is exercised.
//  - mbarriers keep their state (arrivals, transaction bytes, completed phases) in a host table;
//    a parity wait blocks until that phase has completed. Bulk copies land at issue and then
//    complete their bytes on the barrier (a wgmma still reading the overwritten stage is caught
//    by the issue/wait comparison). Named barriers are std::barriers of their thread count.
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
#include <condition_variable>
#include <map>
#include <mutex>
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
#undef __grid_constant__
#define __grid_constant__

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
  long long group;  // commit group (the number of commits before it was issued)
};
inline thread_local long long tl_commits = 0;

inline thread_local SepEmuDim3 tl_thread, tl_block, tl_bdim, tl_gdim;
inline thread_local unsigned char* tl_smem = nullptr;
inline thread_local size_t tl_smem_bytes = 0;
inline thread_local std::barrier<>* tl_bar = nullptr;
inline thread_local WarpX* tl_warp = nullptr;
inline thread_local std::barrier<>* tl_wgbar = nullptr;  // this thread's warpgroup (128 threads)
inline thread_local std::vector<PendingCopy>* tl_pending = nullptr;

// A wgmma issued by this thread and not yet waited for: its accumulator fragment, descriptors,
// N, operand type, and the products as computed at issue.
struct PendingWg {
  float* d;
  uint64_t da, db;
  int n;
  int kind;  // WgElem
  std::vector<double> at_issue;
  long long group;  // wgmma commit group (commits before it was issued)
};
inline thread_local std::vector<PendingWg> tl_wg_pending;
inline thread_local long long tl_wg_commits = 0;
// mbarrier state by address (reset by mbarrier.init), shared by the threads of a launch.
struct Mbar {
  int count = 0;
  int pending = 0;       // arrivals still missing in the current phase
  long long tx = 0;      // transaction bytes still expected in the current phase
  long long phases = 0;  // completed phases
};
inline std::mutex g_mbar_mu;
inline std::condition_variable g_mbar_cv;
inline std::map<const void*, Mbar> g_mbar;
// Named barriers (bar.sync id, count) of the current launch.
inline std::mutex g_named_mu;
inline std::map<int, std::unique_ptr<std::barrier<>>> g_named;

// Shared-memory address of the dynamic buffer's first byte (a multiple of 16, not of 1024).
constexpr uint32_t kSmemBase = 512;

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
  g_named.clear();
  const int nwarps = block / 32;
  std::vector<std::unique_ptr<std::barrier<>>> wbars;
  std::vector<WarpX> warps(static_cast<size_t>(nwarps));
  std::vector<std::unique_ptr<std::barrier<>>> wgbars;
  for (int w = 0; w < (block + 127) / 128; ++w) {
    wgbars.emplace_back(new std::barrier<>(std::min(128, block - 128 * w)));
  }
  for (int w = 0; w < nwarps; ++w) {
    wbars.emplace_back(new std::barrier<>(32));
    warps[static_cast<size_t>(w)].bar = wbars.back().get();
  }
  unsigned char* sm = smem > 0 ? static_cast<unsigned char*>(std::aligned_alloc(1024, (smem + 1023) / 1024 * 1024)) : nullptr;
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
      tl_wgbar = wgbars[static_cast<size_t>(t / 128)].get();
      tl_pending = &pending;
      for (long long g = 0; g < grid; ++g) {
        if (t == 0 && sm != nullptr) std::memset(sm, 0xFF, smem);
        bar.arrive_and_wait();
        tl_block = SepEmuDim3{unsigned(g), 0, 0};
        kern(args...);
        SEP_EMU_CHECK(pending.empty(), "cp.async copies still pending at kernel end");
        SEP_EMU_CHECK(tl_wg_pending.empty(), "wgmma groups not waited for at kernel end");
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
// (hi:lo) >> (shift & 31), the low 32 bits (CUDA's funnel shift right, clamped form aside).
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t shift) {
  const uint64_t v = (uint64_t(hi) << 32) | lo;
  return uint32_t(v >> (shift & 31u));
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
  sepemu::tl_pending->push_back({smem, gmem, bytes, total, sepemu::tl_commits});
}
inline void cp_async16(void* smem, const void* gmem, int src_bytes) {
  cp_async_queue(smem, gmem, src_bytes, 16);
}
inline void cp_async4(void* smem, const void* gmem) { cp_async_queue(smem, gmem, 4, 4); }
inline void cp_async8(void* smem, const void* gmem) { cp_async_queue(smem, gmem, 8, 8); }
inline void cp_async8z(void* smem, const void* gmem, int src_bytes) {
  cp_async_queue(smem, gmem, src_bytes, 8);
}
inline void cp_async_commit() { ++sepemu::tl_commits; }
// Performs the copies of every committed group but the n most recent ones.
inline void cp_async_wait_groups(int n) {
  auto& q = *sepemu::tl_pending;
  std::vector<sepemu::PendingCopy> keep;
  for (const auto& c : q) {
    if (c.group < sepemu::tl_commits - n) {
      if (c.bytes > 0) std::memcpy(c.dst, c.src, size_t(c.bytes));
      if (c.total > c.bytes) std::memset(static_cast<char*>(c.dst) + c.bytes, 0, size_t(c.total - c.bytes));
    } else {
      keep.push_back(c);
    }
  }
  q.swap(keep);
}
inline void cp_async_wait_all() { cp_async_wait_groups(0); }
template <int N>
inline void cp_async_wait_group() {
  cp_async_wait_groups(N);
}

// Warp exchanges (every lane of the warp must call them): lane l publishes v and reads the value
// of lane src.
template <typename T>
inline T emu_warp_read(T v, unsigned src) {
  static_assert(sizeof(T) <= sizeof(uint32_t[4]), "");
  sepemu::WarpX& w = *sepemu::tl_warp;
  std::memcpy(w.a[sepemu::lane()], &v, sizeof(T));
  sepemu::warp_sync();
  T r;
  std::memcpy(&r, w.a[src & 31u], sizeof(T));
  sepemu::warp_sync();
  return r;
}
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  return emu_warp_read(v, sepemu::lane() ^ unsigned(lane_mask & 31));
}
template <typename T>
inline T __shfl_sync(unsigned, T v, int src_lane) {
  return emu_warp_read(v, unsigned(src_lane));
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

// ---- sm_90a wgmma (see separable_wgmma.cuh) ------------------------------------------------------

inline uint32_t smem_u32(const void* p) {
  sepemu::check_smem(p, 0, 1);
  return sepemu::kSmemBase + uint32_t(static_cast<const unsigned char*>(p) - sepemu::tl_smem);
}
inline uint64_t wg_desc(const void* p) {
  const uint32_t a = smem_u32(p);
  return uint64_t((a & 0x3FFFFu) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}
inline void fence_proxy_async() {}
inline void wg_fence() {}
inline void wg_commit() { ++sepemu::tl_wg_commits; }

// Operand element types: bf16, fp16, tf32 (fp32 bit patterns; the tensor cores read the top 19
// bits, as the mma.sync emulation does).
enum WgElem : int { kWgBf16 = 0, kWgF16 = 1, kWgTf32 = 2 };
inline int wg_elem_bytes(int kind) { return kind == kWgTf32 ? 4 : 2; }

// Element (row r, k) of a K-major operand in the 128-byte swizzle: rows of 128 bytes, groups of 8
// rows SBO apart; address bits [4, 7) XOR bits [7, 10).
inline double wg_operand(uint64_t desc, int r, int k, int kind) {
  SEP_EMU_CHECK((desc >> 62) == 1, "wgmma descriptor: 128-byte swizzle");
  const uint32_t start = uint32_t(desc & 0x3FFFu) << 4;
  const uint32_t sbo = uint32_t((desc >> 32) & 0x3FFFu) << 4;
  SEP_EMU_CHECK(sbo == 1024, "wgmma descriptor: SBO of 8 rows of 128 bytes");
  const uint32_t es = uint32_t(wg_elem_bytes(kind));
  const uint32_t lin = start + uint32_t(r / 8) * sbo + uint32_t(r % 8) * 128 + es * uint32_t(k);
  const uint32_t phys = lin ^ (((lin >> 7) & 7u) << 4);
  SEP_EMU_CHECK(phys >= sepemu::kSmemBase, "wgmma operand in shared memory");
  const unsigned char* e = sepemu::tl_smem + (phys - sepemu::kSmemBase);
  sepemu::check_smem(e, es, es);
  if (kind == kWgTf32) return double(__uint_as_float(sepemu::ld32(e) & 0xffffe000u));
  const uint16_t bits = sepemu::ld16(e);
  return kind == kWgBf16 ? double(sepemu::bf16_bits_to_float(bits))
                         : double(sepemu::half_bits_to_float(bits));
}

// The products of one m64nNkK (K = 32 bytes of operand: 16 or 8 elements) for this thread's
// fragment (rows 16 w + g (+8), columns 8 j + 2 q (+1); w = warp in the warpgroup, g = lane / 4,
// q = lane % 4), in fragment order.
inline std::vector<double> wg_products(uint64_t da, uint64_t db, int n, int kind) {
  const int t = int(threadIdx.x % 128u);
  const int w = t / 32, g = (t % 32) / 4, q = t % 4;
  const int kk = 32 / wg_elem_bytes(kind);
  std::vector<double> out(size_t(n / 2));
  for (int j = 0; j < n / 8; ++j)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e) {
        const int row = 16 * w + g + 8 * h, col = 8 * j + 2 * q + e;
        double s = 0.0;
        for (int k = 0; k < kk; ++k) s += wg_operand(da, row, k, kind) * wg_operand(db, col, k, kind);
        out[size_t(4 * j + 2 * h + e)] = s;
      }
  return out;
}

template <typename Tm, int N>
struct Wgmma {
  static void mma(float (&d)[N / 2], uint64_t da, uint64_t db) {
    constexpr int kKind = std::is_same_v<Tm, __nv_bfloat16> ? kWgBf16
                          : std::is_same_v<Tm, __half>      ? kWgF16
                                                            : kWgTf32;
    sepemu::tl_wg_pending.push_back(
        {d, da, db, N, kKind, wg_products(da, db, N, kKind), sepemu::tl_wg_commits});
  }
};

// Completes every committed group but the kPending newest.
template <int kPending, int N>
inline void wg_wait(float (&)[N]) {
  std::vector<sepemu::PendingWg> keep;
  for (auto& w : sepemu::tl_wg_pending) {
    if (w.group >= sepemu::tl_wg_commits - kPending) {
      keep.push_back(w);
      continue;
    }
    const std::vector<double> now = wg_products(w.da, w.db, w.n, w.kind);
    for (size_t i = 0; i < now.size(); ++i) {
      SEP_EMU_CHECK(now[i] == w.at_issue[i] || (std::isnan(now[i]) && std::isnan(w.at_issue[i])),
                    "wgmma operands changed between issue and wait");
      w.d[i] = float(double(w.d[i]) + now[i]);
    }
  }
  sepemu::tl_wg_pending.swap(keep);
  // The products are those of one warpgroup operation: once wait_group returns in any warp, they
  // are done for the whole warpgroup (which may then release or refill the operands' buffers), so
  // no thread goes on before every thread of its warpgroup has its products.
  sepemu::tl_wgbar->arrive_and_wait();
}

// ---- mbarriers, bulk copies, named barriers (see separable_wgmma.cuh) ---------------------------

inline sepemu::Mbar& mbar_state(uint64_t* bar) {
  sepemu::check_smem(bar, 8, 8);
  auto it = sepemu::g_mbar.find(bar);
  SEP_EMU_CHECK(it != sepemu::g_mbar.end() && it->second.count > 0, "mbarrier initialised");
  return it->second;
}
inline void mbar_settle(sepemu::Mbar& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phases;
    m.pending = m.count;
    sepemu::g_mbar_cv.notify_all();
  }
}
inline void mbar_init(uint64_t* bar, int count) {
  sepemu::check_smem(bar, 8, 8);
  SEP_EMU_CHECK(count > 0, "mbarrier count");
  std::lock_guard<std::mutex> lk(sepemu::g_mbar_mu);
  sepemu::g_mbar[bar] = sepemu::Mbar{count, count, 0, 0};
}
inline void mbar_init_fence() {}
inline void mbar_arrive(uint64_t* bar) {
  std::lock_guard<std::mutex> lk(sepemu::g_mbar_mu);
  sepemu::Mbar& m = mbar_state(bar);
  SEP_EMU_CHECK(m.pending > 0, "mbarrier arrivals within the count");
  --m.pending;
  mbar_settle(m);
}
inline void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  std::lock_guard<std::mutex> lk(sepemu::g_mbar_mu);
  sepemu::Mbar& m = mbar_state(bar);
  SEP_EMU_CHECK(m.pending > 0, "mbarrier arrivals within the count");
  m.tx += bytes;
  --m.pending;
  mbar_settle(m);
}
// Blocks until the phase of this parity has completed: the hardware's try_wait.parity succeeds
// while the current (incomplete) phase has the other parity. A waiter more than one phase behind
// cannot tell, so the kernels never let a barrier run two phases ahead of a waiter.
inline void mbar_wait(uint64_t* bar, uint32_t parity) {
  std::unique_lock<std::mutex> lk(sepemu::g_mbar_mu);
  sepemu::Mbar& m = mbar_state(bar);
  sepemu::g_mbar_cv.wait(lk, [&] { return uint32_t(m.phases & 1) != (parity & 1u); });
}
inline void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  SEP_EMU_CHECK(bytes % 16 == 0 && bytes > 0, "bulk copy size a multiple of 16");
  SEP_EMU_CHECK(reinterpret_cast<uintptr_t>(src) % 16 == 0, "bulk copy source 16-byte aligned");
  sepemu::check_smem(dst, bytes, 16);
  std::memcpy(dst, src, bytes);
  std::lock_guard<std::mutex> lk(sepemu::g_mbar_mu);
  sepemu::Mbar& m = mbar_state(bar);
  m.tx -= bytes;
  SEP_EMU_CHECK(m.tx >= 0, "bulk copy bytes expected on the barrier first");
  mbar_settle(m);
}
template <int N, bool kInc>
inline void set_max_regs() {}
inline void __syncwarp(unsigned = 0xffffffffu) { sepemu::warp_sync(); }
inline void named_bar_sync(int id, int count) {
  SEP_EMU_CHECK(id >= 1 && id < 16 && count % 32 == 0, "named barrier id and count");
  std::barrier<>* b;
  {
    std::lock_guard<std::mutex> lk(sepemu::g_named_mu);
    auto& slot = sepemu::g_named[id];
    if (!slot) slot.reset(new std::barrier<>(count));
    b = slot.get();
  }
  b->arrive_and_wait();
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
