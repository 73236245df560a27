// Host emulation of the small CUDA subset the depthwise kernels use, for testing their index maths
// without a GPU (never part of the extension build). Each launch runs blockDim std::threads that
// execute the blocks of the grid one after another; __syncthreads is a std::barrier, warp
// shuffles exchange through a per-warp buffer between two warp barriers (so a divergent shuffle
// or a divergent __syncthreads deadlocks instead of passing silently). Dynamic shared memory is a
// malloc'd buffer of exactly the requested size (AddressSanitizer catches overruns) filled with
// 0xFF bytes (NaN) before every block, so a read of shared memory no thread wrote shows up as NaN.
#pragma once

#ifndef DW_EMULATE
#error "depthwise_emu.cuh is for host emulation builds (-DDW_EMULATE) only"
#endif

#include <barrier>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <vector_functions.h>
#include <vector_types.h>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

#include <driver_types.h>  // cudaStream_t

struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace dwemu {
inline thread_local EmuDim3 tl_thread, tl_block, tl_bdim, tl_gdim;
inline thread_local unsigned char* tl_smem = nullptr;
inline thread_local std::barrier<>* tl_bar = nullptr;
inline thread_local std::barrier<>* tl_wbar = nullptr;
inline thread_local uint64_t* tl_wbuf = nullptr;

inline unsigned char* smem() { return tl_smem; }

inline void check(bool ok, const char* what, const char* file, int line) {
  if (!ok) {
    std::fprintf(stderr, "DW_ASSERT failed: %s at %s:%d\n", what, file, line);
    std::abort();
  }
}
}  // namespace dwemu

#define threadIdx (::dwemu::tl_thread)
#define blockIdx (::dwemu::tl_block)
#define blockDim (::dwemu::tl_bdim)
#define gridDim (::dwemu::tl_gdim)

inline void __syncthreads() { ::dwemu::tl_bar->arrive_and_wait(); }
// All 32 lanes of the warp must call it (a divergent __syncwarp deadlocks).
inline void __syncwarp(unsigned = 0xffffffffu) { ::dwemu::tl_wbar->arrive_and_wait(); }

namespace dwemu {
// Warp exchange: lane l receives v of lane src(l) (all 32 lanes of the warp must call it).
template <typename T, typename Src>
inline T warp_exchange(unsigned mask, T v, Src src) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  check(mask == 0xffffffffu, "full-warp shuffle", __FILE__, __LINE__);
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  const unsigned lane = threadIdx.x & 31u;
  tl_wbuf[lane] = u;
  tl_wbar->arrive_and_wait();
  const uint64_t r = tl_wbuf[src(lane) & 31u];
  tl_wbar->arrive_and_wait();
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}
// Every lane receives the N words of every lane: all[l][i] = word i of lane l.
template <int N>
inline void warp_gather(const uint32_t (&v)[N], uint32_t (&all)[32][N]) {
  const unsigned lane = threadIdx.x & 31u;
  for (int i = 0; i < N; ++i) {
    tl_wbuf[lane] = v[i];
    tl_wbar->arrive_and_wait();
    for (int l = 0; l < 32; ++l) all[l][i] = uint32_t(tl_wbuf[l]);
    tl_wbar->arrive_and_wait();
  }
}
}  // namespace dwemu

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
  return ::dwemu::warp_exchange(mask, v, [&](unsigned l) { return l ^ unsigned(lane_mask); });
}

// Indexed shuffle (width 32): lane l gets the value of lane src_lane mod 32.
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src_lane) {
  return ::dwemu::warp_exchange(mask, v, [&](unsigned) { return unsigned(src_lane); });
}

inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t v = (uint64_t(hi) << 32) | lo;
  return unsigned(v >> (shift & 31u));
}

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}

template <typename T>
inline void __stwb(T* p, T v) {
  *p = v;
}

namespace dwemu {

// Runs kern(args...) on a grid of `grid` blocks of `block` threads with `smem` bytes of dynamic
// shared memory.
template <typename Kern, typename... Args>
void launch(Kern kern, long long grid, int block, size_t smem, const Args&... args) {
  check(grid >= 1 && grid <= INT_MAX, "grid size in [1, 2^31)", __FILE__, __LINE__);
  check(block % 32 == 0 && block >= 32 && block <= 1024, "block size", __FILE__, __LINE__);
  std::barrier<> bar(block);
  std::vector<std::unique_ptr<std::barrier<>>> wbars;
  for (int w = 0; w < block / 32; ++w) wbars.emplace_back(new std::barrier<>(32));
  std::vector<uint64_t> wbuf(size_t(block), 0);
  unsigned char* sm = smem > 0 ? static_cast<unsigned char*>(std::malloc(smem)) : nullptr;
  std::vector<std::thread> threads;
  threads.reserve(size_t(block));
  for (int t = 0; t < block; ++t) {
    threads.emplace_back([&, t]() {
      tl_thread = EmuDim3{unsigned(t), 0, 0};
      tl_bdim = EmuDim3{unsigned(block), 1, 1};
      tl_gdim = EmuDim3{unsigned(grid), 1, 1};
      tl_smem = sm;
      tl_bar = &bar;
      tl_wbar = wbars[size_t(t / 32)].get();
      tl_wbuf = wbuf.data() + (t / 32) * 32;
      for (long long g = 0; g < grid; ++g) {
        if (t == 0 && sm != nullptr) std::memset(sm, 0xFF, smem);
        bar.arrive_and_wait();
        tl_block = EmuDim3{unsigned(g), 0, 0};
        kern(args...);
        bar.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::free(sm);
}

}  // namespace dwemu
