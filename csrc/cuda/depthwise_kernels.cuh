// Depthwise Conv1d CUDA kernels (forward and fused backward). Torch-free: the launch planning lives
// in depthwise_launch.cuh and the torch glue in depthwise_cuda.cu. Compiled with -DDW_EMULATE the
// same code runs on the host under depthwise_emu.cuh (one std::thread per CUDA thread), which is
// how the index maths is tested without a GPU (see tests/emulation/depthwise_emu_test.cpp).
//
// Semantics: y[b,c,j] = bias[c] + sum_k w[c,k] * x[b,c, j*s - pl + k*d], zero padding.
//
// Layouts. CF = channel-first (unit stride along L), CL = channel-last (unit stride along C); any
// batch / other stride. Element types: T (activations) in {float, double, __half, __nv_bfloat16},
// W (weights) in {T, float}; accumulation A = float (double for double).
//
// Vector unit. V = 16 / sizeof(A) elements (4 for float accumulation, 2 for double). Global
// accesses move V elements at once (16 B for float/double, 8 B for half types) when the host has
// checked the alignment; shared tiles always hold A, so every shared access is a 16-byte vector.
//
// CF tile kernels: a block of 128 threads owns a tile of TJ = 128 * V * items consecutive outputs
// of one (b, c) row. The tile of x (plus halo) is converted to A in shared memory, vector-aligned
// to the global element index (origin a0 = floor_V(j0*s - pl)), so the window of a thread that
// owns V consecutive outputs starts OFF = (-pl) mod V elements into a vector. OFF is the same for
// every tile of a launch; the compute is instantiated for each OFF and picked by a uniform switch,
// which keeps all window indices compile-time (registers, no local memory).
//   Fast path (stride 1, dilation 1), compiled K: each thread owns V consecutive outputs per item;
//   the whole window is loaded with 16-byte LDS and reused across all taps.
//   Run-time K, stride 1, dilation 1: dw_fwd_cf_rt_kernel. A thread item is 4V consecutive
//   outputs, the x tile is stored with a 16-byte gap after every 4 vectors (conflict-free LDS.128
//   for windows 64 bytes apart), taps go in chunks of V with a ring of 8 window vectors (one new
//   LDS.128 + one broadcast LDS.128 of weights per 4V*V FMAs, addresses compile-time offsets).
//   Its dense form (float32 / float64, aligned rows, K >= 40): items of 5V outputs in a tile
//   without gaps (windows 80 bytes apart are conflict-free too), copied in by cp.async.
//   General path (any stride/dilation, run-time K): thread t owns outputs t, t+128, ... and reads
//   scalars (lane-consecutive, conflict-free for stride 1).
//   The common fast case (compiled K and pad_left, 16-byte-aligned rows) takes the register-direct
//   forward instead (depthwise_fwd_reg.cuh, no shared memory).
// CL tile kernels: a block owns 32 channel vectors (32*V channels) x TP positions. Warp w covers
//   channel vectors 8w..8w+7 (lane & 7) and 4 position groups (lane >> 3); a thread owns V
//   consecutive positions x V channels per item. Taps in chunks of V; weights live in shared
//   memory as [tap][channel vector][V] (copied to registers per tile when K is compile-time).
// Backward: dx and the dw/db partial sums are computed in one pass over one x tile and one dy
//   tile. dx (stride 1) is the correlation of dy with the flipped kernel; the run-time-K path pads
//   the flipped kernel in front to a multiple of V so its window offset (1 - OFF) mod V is also a
//   compile-time constant. dw/db partials are reduced deterministically: registers -> warp
//   reduce-scatter (fixed butterfly) -> per-warp shared slots (each slot has one owner lane) ->
//   fixed-order sum per block -> workspace part[split][k][c] -> dw_reduce_kernel sums the splits in
//   order. No atomics anywhere, so dw/db are bit-identical run to run on a given device.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#ifdef DW_EMULATE
#include <atomic>

#include "cuda/depthwise_emu.cuh"
#define DW_DEV inline
#define DW_DEV_COLD inline
#define DW_ASSERT(cond) ::dwemu::check((cond), #cond, __FILE__, __LINE__)
#else
#include "cuda/separable_ptx.cuh"
#define DW_DEV __device__ __forceinline__
// Rarely taken paths kept out of line, so that a hot loop's code stays small.
#define DW_DEV_COLD __device__ __noinline__
#define DW_ASSERT(cond) ((void)0)
#endif

namespace sepconv1d {
namespace cuda {
namespace dwk {

constexpr int kThreads = 128;       // every tile kernel
constexpr int kWarps = kThreads / 32;
constexpr int kCfItemsFwd = 4;      // CF forward: up to 4 vectors of outputs per thread
constexpr int kCfItemsBwd = 4;      // CF backward: vectors of outputs per thread (times G, below)
constexpr int kClItemsFwd = 2;      // CL forward: up to 2 runs of V positions per thread
constexpr int kClItemsBwd = 2;      // CL backward
constexpr int kClVecs = 32;         // channel vectors per CL block
constexpr int kClGroups = 4;        // position groups per CL warp (lane >> 3)
constexpr int kCfLoadUnroll = kCfItemsFwd + 1;  // 640 16-byte units per pass: tile + halo
constexpr int kCfRtItems = 4;       // CF forward, run-time K: up to 4 items per thread
constexpr int kCfRtLoadUnroll = 9;  // 1152 units per pass: an 8192-output tile + halo in two
constexpr int kClLoadUnroll = 11;                // 44 rows of 32 vectors per pass
constexpr int kCfBwdLoadUnroll = 5;              // x and dy tiles interleaved, units of G*V
constexpr int kClBwdLoadUnroll = 5;
// CL units of G vectors (16-byte loads of half types) cover G times the rows per pass.
template <int G>
constexpr int cl_load_unroll(int unroll) {
  return (unroll + G - 1) / G;
}
// Minimum resident blocks per SM (__launch_bounds__), i.e. register caps of 64 / 80 / 128 / 128 /
// 128.
constexpr int kCfFwdMinBlocks = 8;
constexpr int kCfRtMinBlocks = 6;
constexpr int kCfBwdMinBlocks = 4;
// The run-time-K CF backward's register tiers (KPT taps of dw partials per thread): three blocks
// per SM for 64 taps (at four the tier spilled), two for 128.
constexpr int cf_bwd_min_blocks(int kpt) {
  return kpt > 64 ? 2 : kpt > 32 ? kCfBwdMinBlocks - 1 : kCfBwdMinBlocks;
}
constexpr int kClFwdMinBlocks = 4;
constexpr int kClBwdMinBlocks = 4;

template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <typename T>
using acc_of = typename AccOf<T>::type;

template <typename A>
constexpr int vec_of() {
  return int(16 / sizeof(A));
}

// Fetch group G: V-vectors per 16-byte global access. 1 for float/double (V elements are already
// 16 bytes), 2 for half types (V elements are 8 bytes), so every type moves 16 bytes per access.
template <typename T>
constexpr int gvec_of() {
  return int(16 / (vec_of<acc_of<T>>() * sizeof(T)));
}

// Outputs per thread item of the CF tile forward (compile-time K): G vectors of V outputs,
// kThreads*V apart (lane-consecutive 16-byte shared reads, conflict-free).
template <typename T>
constexpr int cf_fwd_item() {
  return gvec_of<T>() * vec_of<acc_of<T>>();
}

// Vectors of V outputs per thread of the CF backward (kThreads*V apart, lane-consecutive windows).
// Half types get G times as many, so that their tile moves as many bytes per pass as a float tile
// (the load phase then covers the same number of 16-byte units: one pass of kCfBwdLoadUnroll).
template <typename T>
constexpr int cf_bwd_items() {
  return kCfItemsBwd * gvec_of<T>();
}

// Global access level of a tensor, checked on the host (see *_vec_level in depthwise_launch.cuh):
// 2: groups of G*V elements are aligned (16-byte accesses); 1: only V-element vectors are (half
// types with 8-byte-aligned rows); 0: neither (per-element accesses).
constexpr int kVecGroup = 2;
constexpr int kVecOne = 1;

template <int N>
using IC = std::integral_constant<int, N>;

// Element offset of a row pointer within its 16-byte chunk (the row's shift off the 16-byte grid):
// the short-row kernels' unit copies, the tensor-core backward's unit staging and the
// register-direct kernels' per-row grid start there.
template <typename T>
DW_DEV int row_shift(const T* row) {
  return int((reinterpret_cast<uintptr_t>(row) / sizeof(T)) & (16 / sizeof(T) - 1));
}

// a / b for a >= 0, b > 0. The 32-bit division is several times cheaper than the 64-bit routine
// and covers every realistic tile index.
DW_DEV int64_t udiv(int64_t a, int64_t b) {
  if (((a | b) >> 32) == 0) return int64_t(uint32_t(a) / uint32_t(b));
  return a / b;
}

// ------------------------------------------------------------------------------------------------
// Scalar conversions
// ------------------------------------------------------------------------------------------------
DW_DEV float in_cvt(float v) { return v; }
DW_DEV double in_cvt(double v) { return v; }
DW_DEV float in_cvt(__half v) { return __half2float(v); }
DW_DEV float in_cvt(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T, typename A>
DW_DEV T out_cvt(A v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "unsupported type");
    return __float2bfloat16_rn(static_cast<float>(v));
  }
}

DW_DEV float dfma(float a, float b, float c) { return fmaf(a, b, c); }
DW_DEV double dfma(double a, double b, double c) { return fma(a, b, c); }

DW_DEV float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ------------------------------------------------------------------------------------------------
// Vector accesses. Global: V elements of T (16 B or 8 B), pointer aligned to V*sizeof(T).
// Shared: V elements of A (16 B), pointer aligned to 16.
// ------------------------------------------------------------------------------------------------
template <typename T>
DW_DEV void unpack2(uint32_t u, float& a, float& b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    a = bits_to_float(u << 16);
    b = bits_to_float(u & 0xffff0000u);
  } else {
    static_assert(std::is_same_v<T, __half>, "unpack2: half types only");
    __half2 h;
    memcpy(&h, &u, 4);
    const float2 f = __half22float2(h);
    a = f.x;
    b = f.y;
  }
}

template <typename T>
DW_DEV uint32_t pack2(float a, float b) {
  uint32_t u;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&u, &h, 4);
  } else {
    static_assert(std::is_same_v<T, __half>, "pack2: half types only");
    const __half2 h = __floats2half2_rn(a, b);
    memcpy(&u, &h, 4);
  }
  return u;
}

template <typename T, typename A, int V>
DW_DEV void gload_vec(const T* p, A* o) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(p) % (V * sizeof(T)) == 0);
  if constexpr (std::is_same_v<T, float>) {
    static_assert(V == 4, "float vectors are 4 wide");
    const float4 r = __ldg(reinterpret_cast<const float4*>(p));
    o[0] = r.x;
    o[1] = r.y;
    o[2] = r.z;
    o[3] = r.w;
  } else if constexpr (std::is_same_v<T, double>) {
    static_assert(V == 2, "double vectors are 2 wide");
    const double2 r = __ldg(reinterpret_cast<const double2*>(p));
    o[0] = r.x;
    o[1] = r.y;
  } else {
    static_assert(V == 4, "half vectors are 4 wide");
    const uint2 r = __ldg(reinterpret_cast<const uint2*>(p));
    unpack2<T>(r.x, o[0], o[1]);
    unpack2<T>(r.y, o[2], o[3]);
  }
}

// N elements of T as raw bits (N * sizeof(T) is 8 or 16 bytes; p aligned to that): one load.
// Tiles are fetched raw and converted to A when stored to shared memory, so a half-precision
// fetch holds half the registers of a converted one.
template <typename T, int N>
DW_DEV void gload_raw(const T* p, T* o) {
  static_assert(N * sizeof(T) == 16 || N * sizeof(T) == 8, "8- or 16-byte accesses only");
  DW_ASSERT(reinterpret_cast<uintptr_t>(p) % (N * sizeof(T)) == 0);
  if constexpr (N * sizeof(T) == 16) {
    const uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
    memcpy(o, &r, 16);
  } else {
    const uint2 r = __ldg(reinterpret_cast<const uint2*>(p));
    memcpy(o, &r, 8);
  }
}

template <typename T>
DW_DEV T zero_of() {
  T z;
  memset(&z, 0, sizeof(T));  // +0.0 in every supported type
  return z;
}

// Plain (weak, write-back) vector stores. Written as PTX because the compiler split a vector store
// through a cast pointer into scalar stores in some kernels, and __stwb emits a strong store.
DW_DEV void st_v4f32(float* p, float a, float b, float c, float d) {
#ifdef DW_EMULATE
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
#else
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d));
#endif
}
DW_DEV void st_v2f64(double* p, double a, double b) {
#ifdef DW_EMULATE
  p[0] = a;
  p[1] = b;
#else
  asm volatile("st.global.v2.f64 [%0], {%1, %2};" ::"l"(p), "d"(a), "d"(b));
#endif
}
DW_DEV void st_v2u32(void* p, uint32_t a, uint32_t b) {
#ifdef DW_EMULATE
  std::memcpy(p, &a, 4);
  std::memcpy(static_cast<char*>(p) + 4, &b, 4);
#else
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b));
#endif
}

DW_DEV void st_v4u32(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#ifdef DW_EMULATE
  const uint32_t w[4] = {a, b, c, d};
  std::memcpy(p, w, 16);
#else
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d));
#endif
}

template <typename T, typename A, int V>
DW_DEV void gstore_vec(T* p, const A* v) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(p) % (V * sizeof(T)) == 0);
  if constexpr (std::is_same_v<T, float>) {
    st_v4f32(p, v[0], v[1], v[2], v[3]);
  } else if constexpr (std::is_same_v<T, double>) {
    st_v2f64(p, v[0], v[1]);
  } else {
    st_v2u32(p, pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]));
  }
}

template <typename A, int V>
DW_DEV void sload(const A* s, A* o) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(s) % 16 == 0);
  if constexpr (std::is_same_v<A, float>) {
    const float4 r = *reinterpret_cast<const float4*>(s);
    o[0] = r.x;
    o[1] = r.y;
    o[2] = r.z;
    o[3] = r.w;
  } else {
    const double2 r = *reinterpret_cast<const double2*>(s);
    o[0] = r.x;
    o[1] = r.y;
  }
}

template <typename A, int V>
DW_DEV void sstore(A* s, const A* v) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(s) % 16 == 0);
  if constexpr (std::is_same_v<A, float>) {
    *reinterpret_cast<float4*>(s) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    *reinterpret_cast<double2*>(s) = make_double2(v[0], v[1]);
  }
}

// G*V consecutive outputs at p, aligned to G*V elements: one 16-byte store.
template <typename T, typename A, int V, int G>
DW_DEV void gstore_group(T* p, const A* v) {
  if constexpr (G == 2) {
    static_assert(V == 4, "groups of two vectors are for half types");
    DW_ASSERT(reinterpret_cast<uintptr_t>(p) % 16 == 0);
    st_v4u32(p, pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]), pack2<T>(v[4], v[5]),
             pack2<T>(v[6], v[7]));
  } else {
    gstore_vec<T, A, V>(p, v);
  }
}

// G*V consecutive outputs of a CF row at position j (row has unit stride, length len); vec is
// the row's access level (kVecGroup: one 16-byte store; kVecOne: G stores of V elements).
template <typename T, typename A, int V, int G>
DW_DEV void cf_store(T* row, int64_t j, int64_t len, const A* v, int vec) {
  constexpr int N = G * V;
  // Level kVecOne already aligns a single vector, i.e. a whole group when G == 1.
  const bool group_ok = G == 1 ? vec != 0 : vec == kVecGroup;
  if (group_ok && j + N <= len) {
    gstore_group<T, A, V, G>(row + j, v);
  } else if (G > 1 && vec == kVecOne && j + N <= len) {
#pragma unroll
    for (int q = 0; q < G; ++q) gstore_vec<T, A, V>(row + j + q * V, v + q * V);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) {
      if (j + e < len) row[j + e] = out_cvt<T>(v[e]);
    }
  }
}

// V consecutive channels c..c+V-1 of one CL position (pos points at channel 0, unit stride).
template <typename T, typename A, int V>
DW_DEV void cl_store(T* pos, int64_t c, int64_t C, const A* v, int vec_ok) {
  if (c >= C) return;
  if (vec_ok && c + V <= C) {
    gstore_vec<T, A, V>(pos + c, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (c + e < C) pos[c + e] = out_cvt<T>(v[e]);
    }
  }
}

// Shared memory of a tile kernel (dynamic, 16-byte aligned).
template <typename A>
DW_DEV A* smem_base() {
#ifdef DW_EMULATE
  return reinterpret_cast<A*>(::dwemu::smem());
#else
  extern __shared__ __align__(16) unsigned char dw_smem_raw[];
  return reinterpret_cast<A*>(dw_smem_raw);
#endif
}

// Calls f(IC<off>{}) for off in [0, V): the run-time alignment offset becomes a template argument.
template <int V, typename F>
DW_DEV void with_offset(int off, F&& f) {
  if constexpr (V == 4) {
    switch (off) {
      case 0: f(IC<0>{}); break;
      case 1: f(IC<1>{}); break;
      case 2: f(IC<2>{}); break;
      default: f(IC<3>{}); break;
    }
  } else {
    static_assert(V == 2, "V is 2 or 4");
    if (off == 0) {
      f(IC<0>{});
    } else {
      f(IC<1>{});
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Tile loaders: global (any dtype, zero padding) -> shared (A)
// ------------------------------------------------------------------------------------------------
// A tile to load: shared destination, global source and its extent.
template <typename T, typename A>
struct TileSrc {
  A* s;          // shared destination (nullptr: nothing to load)
  const T* src;  // CF: row (unit stride); CL: batch base (unit channel stride)
  int64_t a0;    // CF: first element (a multiple of G*V); CL: first position
  int64_t len;   // CF: row length; CL: number of positions
  int n;         // CF: V-vectors (a multiple of G); CL: rows (of kClVecs vectors)
  int vec;       // access level of the source (kVecGroup / kVecOne / 0)
};

// Two V-element loads where only V-element alignment holds (half types, 8-byte rows).
template <typename T, int V, int G>
DW_DEV void gload_halves(const T* p, T* r) {
#pragma unroll
  for (int q = 0; q < G; ++q) gload_raw<T, V>(p + q * V, r + q * V);
}

// CF: unit u of the tile = row[a0 + u*N, a0 + u*N + N), N = G*V, zero outside [0, len), raw bits.
// interior: the whole tile lies inside the row (no bounds checks needed).
template <typename T, typename A, int V, int G>
DW_DEV void cf_fetch(const TileSrc<T, A>& t, int u, bool interior, T* r) {
  constexpr int N = G * V;
  const int64_t g = t.a0 + int64_t(u) * N;
  const bool inside = interior || (g >= 0 && g + N <= t.len);
  if (t.vec == kVecGroup && inside) {
    gload_raw<T, N>(t.src + g, r);
  } else if (G > 1 && t.vec == kVecOne && inside) {
    gload_halves<T, V, G>(t.src + g, r);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const int64_t ge = g + e;
      r[e] = (ge >= 0 && ge < t.len) ? t.src[ge] : zero_of<T>();
    }
  }
}

// CL: unit u = channels c0 + (u % UR)*N .. +N of position a0 + u / UR (UR = kClVecs / G units per
// row), zero outside positions [0, len) and channels [0, C); raw bits.
template <typename T, typename A, int V, int G>
DW_DEV void cl_fetch(const TileSrc<T, A>& t, int64_t sl, int64_t c0, int64_t C, int u, T* r) {
  constexpr int N = G * V;
  constexpr int UR = kClVecs / G;
  const int64_t p = t.a0 + u / UR;
  const int64_t c = c0 + int64_t(u % UR) * N;
  if (p >= 0 && p < t.len && c < C) {
    const T* q = t.src + p * sl + c;
    if (t.vec == kVecGroup && c + N <= C) {
      gload_raw<T, N>(q, r);
    } else if (G > 1 && t.vec == kVecOne && c + N <= C) {
      gload_halves<T, V, G>(q, r);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) r[e] = (c + e < C) ? q[e] : zero_of<T>();
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) r[e] = zero_of<T>();
  }
}

// N raw elements converted to A, stored as N / V shared vectors. Units of two vectors sit 32
// bytes apart for consecutive lanes, so a plain pair of 16-byte stores would be 2-way bank
// conflicted; lanes with bit 2 set store their upper vector first, which makes each of the two
// stores cover all 32 banks once per 8 lanes.
template <typename T, typename A, int V, int N>
DW_DEV void sstore_cvt(A* s, const T* r) {
  if constexpr (N == 2 * V) {
    A lo[V], hi[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      lo[e] = A(in_cvt(r[e]));
      hi[e] = A(in_cvt(r[V + e]));
    }
    const bool swap = (threadIdx.x & 4) != 0;
    A first[V], second[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      first[e] = swap ? hi[e] : lo[e];
      second[e] = swap ? lo[e] : hi[e];
    }
    sstore<A, V>(s + (swap ? V : 0), first);
    sstore<A, V>(s + (swap ? 0 : V), second);
  } else {
#pragma unroll
    for (int q = 0; q < N / V; ++q) {
      A v[V];
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = A(in_cvt(r[q * V + e]));
      sstore<A, V>(s + q * V, v);
    }
  }
}

// Loads up to two tiles, global -> registers -> shared (converted to A), in units of N = G*V
// elements (16-byte accesses where aligned). Each pass issues the loads of UNR units of both tiles
// before any shared store, so that a typical tile needs one memory round trip. CL tiles use sl
// (position stride), c0 and C.
template <bool CL, int G, typename T, typename A, int UNR>
DW_DEV void load_tiles(const TileSrc<T, A>& t0, const TileSrc<T, A>& t1, int64_t sl0, int64_t sl1,
                       int64_t c0, int64_t C) {
  constexpr int V = vec_of<A>();
  constexpr int N = G * V;
  const int n0 = t0.s ? (CL ? t0.n * (kClVecs / G) : t0.n / G) : 0;
  const int n1 = t1.s ? (CL ? t1.n * (kClVecs / G) : t1.n / G) : 0;
  const int nmax = n0 > n1 ? n0 : n1;
  const bool in0 = !CL && t0.a0 >= 0 && t0.a0 + int64_t(n0) * N <= t0.len;
  const bool in1 = !CL && t1.a0 >= 0 && t1.a0 + int64_t(n1) * N <= t1.len;
  for (int v0 = threadIdx.x; v0 < nmax; v0 += kThreads * UNR) {
    T r0[UNR][N];
    T r1[UNR][N];
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      const int v = v0 + u * kThreads;
      if (v < n0) {
        if constexpr (CL) {
          cl_fetch<T, A, V, G>(t0, sl0, c0, C, v, r0[u]);
        } else {
          cf_fetch<T, A, V, G>(t0, v, in0, r0[u]);
        }
      }
      if (v < n1) {
        if constexpr (CL) {
          cl_fetch<T, A, V, G>(t1, sl1, c0, C, v, r1[u]);
        } else {
          cf_fetch<T, A, V, G>(t1, v, in1, r1[u]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
      const int v = v0 + u * kThreads;
      if (v < n0) sstore_cvt<T, A, V, N>(t0.s + v * N, r0[u]);
      if (v < n1) sstore_cvt<T, A, V, N>(t1.s + v * N, r1[u]);
    }
  }
}

// Weight tap of shared slot m: m (flip: K-1-(m-lead), i.e. the kernel reversed after `lead`
// zero slots); -1 where the slot holds no tap.
DW_DEV int weight_tap(int m, int K, bool flip, int lead) {
  const int k = flip ? K - 1 - (m - lead) : m;
  return (k >= 0 && k < K) ? k : -1;
}

// CF weights of channel c into ws[0, kp).
template <typename W, typename A>
DW_DEV void cf_load_weights(A* ws, const W* w, int64_t c, int K, int kp, bool flip, int lead) {
  for (int m = threadIdx.x; m < kp; m += kThreads) {
    const int k = weight_tap(m, K, flip, lead);
    ws[m] = k >= 0 ? A(in_cvt(w[c * K + k])) : A(0);
  }
}

// CL weights of channels [c0, c0 + kClVecs*V) into ws[(m*kClVecs + cv)*V + e], same slots.
template <typename W, typename A>
DW_DEV void cl_load_weights(A* ws, const W* w, int64_t c0, int64_t C, int K, int kp, bool flip,
                            int lead) {
  constexpr int V = vec_of<A>();
  const int per_tap = kClVecs * V;
  const int total = kp * per_tap;
  for (int idx = threadIdx.x; idx < total; idx += kThreads) {
    const int m = idx / per_tap;
    const int64_t c = c0 + (idx - m * per_tap);
    const int k = weight_tap(m, K, flip, lead);
    ws[idx] = (c < C && k >= 0) ? A(in_cvt(w[c * K + k])) : A(0);
  }
}

// ------------------------------------------------------------------------------------------------
// Deterministic warp reductions
// ------------------------------------------------------------------------------------------------
template <typename A>
DW_DEV A warp_sum(A v) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// CF: v[q] (q < V, one value per tap) summed over the 32 lanes of the warp and added to
// red[(kbase + q) * kWarps + warp]. Reduce-scatter: after the exchange steps lane l holds the
// partial sums of tap q(l) only, then a plain butterfly finishes. One writer lane per tap.
template <typename A, int V>
DW_DEV void cf_reduce_scatter(const A* v, A* red, int kbase) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if constexpr (V == 4) {
    const bool h16 = (lane & 16) != 0;
    const A send0 = h16 ? v[0] : v[2];
    const A send1 = h16 ? v[1] : v[3];
    A k0 = h16 ? v[2] : v[0];
    A k1 = h16 ? v[3] : v[1];
    k0 += __shfl_xor_sync(0xffffffffu, send0, 16);
    k1 += __shfl_xor_sync(0xffffffffu, send1, 16);
    const bool h8 = (lane & 8) != 0;
    const A send = h8 ? k0 : k1;
    A r = h8 ? k1 : k0;
    r += __shfl_xor_sync(0xffffffffu, send, 8);
    r += __shfl_xor_sync(0xffffffffu, r, 4);
    r += __shfl_xor_sync(0xffffffffu, r, 2);
    r += __shfl_xor_sync(0xffffffffu, r, 1);
    if ((lane & 7) == 0) {
      const int q = (h16 ? 2 : 0) + (h8 ? 1 : 0);
      red[(kbase + q) * kWarps + warp] += r;
    }
  } else {
    static_assert(V == 2, "V is 2 or 4");
    const bool h16 = (lane & 16) != 0;
    const A send = h16 ? v[0] : v[1];
    A r = h16 ? v[1] : v[0];
    r += __shfl_xor_sync(0xffffffffu, send, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 8);
    r += __shfl_xor_sync(0xffffffffu, r, 4);
    r += __shfl_xor_sync(0xffffffffu, r, 2);
    r += __shfl_xor_sync(0xffffffffu, r, 1);
    if ((lane & 15) == 0) {
      const int q = h16 ? 1 : 0;
      red[(kbase + q) * kWarps + warp] += r;
    }
  }
}

// CL: pdw[q][e] (tap q, channel e of this thread's channel vector) summed over the 4 position
// groups (lanes l, l^8, l^16, l^24) and added to acc[((kbase + q) * kClVecs + cv) * V + e].
template <typename A, int V>
DW_DEV void cl_reduce_scatter(const A (&pdw)[V][V], A* acc, int kbase, int cv) {
  const int lane = threadIdx.x & 31;
  const bool h16 = (lane & 16) != 0;
  const bool h8 = (lane & 8) != 0;
  if constexpr (V == 4) {
    A k0[V], k1[V], r[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const A send0 = h16 ? pdw[0][e] : pdw[2][e];
      const A send1 = h16 ? pdw[1][e] : pdw[3][e];
      k0[e] = (h16 ? pdw[2][e] : pdw[0][e]) + __shfl_xor_sync(0xffffffffu, send0, 16);
      k1[e] = (h16 ? pdw[3][e] : pdw[1][e]) + __shfl_xor_sync(0xffffffffu, send1, 16);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const A send = h8 ? k0[e] : k1[e];
      r[e] = (h8 ? k1[e] : k0[e]) + __shfl_xor_sync(0xffffffffu, send, 8);
    }
    const int q = (h16 ? 2 : 0) + (h8 ? 1 : 0);
    A* dst = acc + ((kbase + q) * kClVecs + cv) * V;
    A cur[V];
    sload<A, V>(dst, cur);
#pragma unroll
    for (int e = 0; e < V; ++e) cur[e] += r[e];
    sstore<A, V>(dst, cur);
  } else {
    static_assert(V == 2, "V is 2 or 4");
    A r[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const A send = h16 ? pdw[0][e] : pdw[1][e];
      r[e] = (h16 ? pdw[1][e] : pdw[0][e]) + __shfl_xor_sync(0xffffffffu, send, 16);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) r[e] += __shfl_xor_sync(0xffffffffu, r[e], 8);
    if (!h8) {
      const int q = h16 ? 1 : 0;
      A* dst = acc + ((kbase + q) * kClVecs + cv) * V;
      A cur[V];
      sload<A, V>(dst, cur);
#pragma unroll
      for (int e = 0; e < V; ++e) cur[e] += r[e];
      sstore<A, V>(dst, cur);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Kernel arguments (plain data, passed by value)
// ------------------------------------------------------------------------------------------------
template <typename T, typename W>
struct FwdArgs {
  const T* x;
  const W* w;     // (C, K) contiguous
  const W* bias;  // (C) or nullptr
  T* y;
  int64_t B, C, L, Lo, pl;
  int K, s, d, kp;  // kp: K rounded up to V
  int64_t xsb, xsc, xsl, ysb, ysc, ysl;
  int x_vec, y_vec;   // access levels (kVecGroup / kVecOne / 0), checked on the host
  bool fast;          // stride 1 and dilation 1
  int items;          // active items per thread (<= compile-time ITEMS)
  int tile;           // CF: outputs per tile; CL: positions per tile; CL reg: channel vectors
                      // per block
  int off;            // CF: (-pl) mod G*V, the window offset inside a fetch group
  int nsm;            // CF: shared vectors of the x tile; CL: shared rows of the x tile
  int64_t ntiles;     // tiles per row (CF) / per (b, group) (CL); warp items per row (CF reg);
                      // position chunks per batch (CL reg)
  int64_t total;      // CF: B*C*ntiles work items; CL: B*ntiles work items per channel group
                      // (CF run-time K with row groups: blocks of `rows` rows)
  int64_t split;      // CL: blocks per channel group
  // CF run-time K (dw_fwd_cf_rt_kernel), rows that fit one tile of a few threads' items: `rows`
  // row groups per block of `group` threads each, `gstride` shared elements apart. rows == 1: one
  // tile of one row per block, all kThreads threads.
  int rows = 1;
  int group = kThreads;
  int gstride = 0;
  // y staged through shared memory (rows of y without V-element alignment): shared element
  // offset of the areas; CF run-time K (YSTAGE) the quarter warps', CF compiled K the warps' (0:
  // stored directly).
  int ystage = 0;
};

template <typename T, typename W>
struct BwdArgs {
  const T* dy;
  const T* x;
  const W* w;
  T* dx;           // nullptr unless dx is wanted
  acc_of<T>* part; // [split][K+1][C] partial sums (dw taps, then db), nullptr unless dw/db wanted
  int64_t B, C, L, Lo, pl;
  int K, s, d, kp;
  int64_t dysb, dysc, dysl, xsb, xsc, xsl, dxsb, dxsc, dxsl;
  int dy_vec, x_vec, dx_vec;  // access levels, as in FwdArgs
  bool want_x, want_w, want_b;
  bool fast;
  int items, tile;
  int off;         // CF: (-pl) mod G*V, the x window offset inside a fetch group
  int dlo;         // dy tile starts at j0 + dlo (dlo <= 0); CF: dlo is a multiple of G*V
  int nsm_x, nsm_dy;
  int64_t ntiles;
  int64_t work;    // B*ntiles work items per channel (CF) / channel group (CL)
  int64_t split;   // blocks per channel (CF) / channel group (CL)
  // Tensor-core backward (depthwise_tc.cuh): shifts and window offsets of the dx convolution
  // (sd, od) and of the weight-gradient product (sx, ox), first staged dy row of the outputs (dyr).
  int sd, od, sx, ox, dyr;
};

template <typename T, typename W>
struct DirectArgs {
  const T* x;
  const T* dy;
  const W* w;
  const W* bias;
  T* y;   // forward output, or dx
  acc_of<T>* part;
  int64_t B, C, L, Lo, K, s, d, pl;
  int64_t xsb, xsc, xsl, ysb, ysc, ysl, dysb, dysc, dysl;
  bool want_w, want_b;
  int64_t split;
};

// ------------------------------------------------------------------------------------------------
// Sliding-window convolutions on shared tiles (shared by forward and backward dx)
// ------------------------------------------------------------------------------------------------
// CF, run-time taps: acc[i] += sum_{m in [klo, khi)} ws[m] * src[OFF + i + m] for i < NOUT
// (NOUT = M*V outputs), taps m < nch*V. src is a vector-aligned shared pointer. Taps go in chunks of
// V; the window holds R = M + 2 vectors and slides by one vector per chunk, so each chunk costs one
// LDS.128 of x and one broadcast LDS.128 of weights for NOUT*V FMAs. The window is a ring unrolled
// R chunks at a time (indices stay compile-time: no register moves). Chunks wholly inside
// [klo, khi) skip the per-tap checks. Reads src[0, (nch + R - 1) * V).
template <typename A, int V, int OFF, int NOUT, int R, int ROT, bool CHECK>
DW_DEV void cf_conv_chunk(const A (&win)[R][V], const A* wv, int c, int klo, int khi, A* acc) {
#pragma unroll
  for (int kk = 0; kk < V; ++kk) {
    const int m = c * V + kk;
    if (!CHECK || (m >= klo && m < khi)) {
#pragma unroll
      for (int i = 0; i < NOUT; ++i) {
        const int n = OFF + i + kk;  // compile-time after unrolling
        acc[i] = dfma(wv[kk], win[(ROT + n / V) % R][n % V], acc[i]);
      }
    }
  }
}

template <typename A, int V, int OFF, int NOUT, int R, int ROT>
DW_DEV void cf_conv_step(const A* src, const A* ws, int c, int klo, int khi, A (&win)[R][V],
                         A* acc) {
  sload<A, V>(src + (c + R - 1) * V, win[(ROT + R - 1) % R]);
  A wv[V];
  sload<A, V>(ws + c * V, wv);
  if (c * V >= klo && c * V + V <= khi) {
    cf_conv_chunk<A, V, OFF, NOUT, R, ROT, false>(win, wv, c, klo, khi, acc);
  } else {
    cf_conv_chunk<A, V, OFF, NOUT, R, ROT, true>(win, wv, c, klo, khi, acc);
  }
}

// Steps c + ROT .. c + END - 1 of the ring (only those below nch).
template <typename A, int V, int OFF, int NOUT, int R, int ROT, int END>
DW_DEV void cf_conv_steps(const A* src, const A* ws, int c, int nch, int klo, int khi,
                          A (&win)[R][V], A* acc) {
  if constexpr (ROT < END) {
    if (c + ROT < nch) {
      cf_conv_step<A, V, OFF, NOUT, R, ROT>(src, ws, c + ROT, klo, khi, win, acc);
      cf_conv_steps<A, V, OFF, NOUT, R, ROT + 1, END>(src, ws, c, nch, klo, khi, win, acc);
    }
  }
}

template <typename A, int V, int OFF, int NOUT = V>
DW_DEV void cf_conv_rt(const A* src, const A* ws, int nch, int klo, int khi, A* acc) {
  static_assert(NOUT % V == 0, "whole vectors of outputs");
  constexpr int R = NOUT / V + 2;
  A win[R][V];
#pragma unroll
  for (int q = 0; q < R - 1; ++q) sload<A, V>(src + q * V, win[q]);
  int c = 0;
  for (; c + R <= nch; c += R) {
    cf_conv_steps<A, V, OFF, NOUT, R, 0, R>(src, ws, c, nch, klo, khi, win, acc);
  }
  cf_conv_steps<A, V, OFF, NOUT, R, 0, R - 1>(src, ws, c, nch, klo, khi, win, acc);
}

// CF, compile-time K: acc[i] += sum_{k < K_} w[k] * src[OFF + i + k] for i < NOUT outputs; the
// whole window is loaded once. Reads src[0, NW * V) with NW = (OFF + NOUT + K_ - 2) / V + 1.
template <typename A, int V, int OFF, int K_, int NOUT = V>
DW_DEV void cf_conv_ct(const A* src, const A* w, A* acc) {
  constexpr int NW = (OFF + NOUT - 1 + K_ - 1) / V + 1;
  A win[NW * V];
#pragma unroll
  for (int q = 0; q < NW; ++q) sload<A, V>(src + q * V, win + q * V);
#pragma unroll
  for (int k = 0; k < K_; ++k) {
#pragma unroll
    for (int i = 0; i < NOUT; ++i) acc[i] = dfma(w[k], win[OFF + i + k], acc[i]);
  }
}

// CL, run-time taps: acc[i][e] += sum_{m in [klo, khi)} ws[m][e] * row(i + m)[e] for the thread's
// channel vector; src and wsrc already point at this thread's channel vector, rows / taps are
// kClVecs*V values apart. Window of 2V-1 rows sliding by V rows per chunk.
// Reads rows [0, nch*V + V - 1) of src and taps [0, nch*V) of wsrc.
template <typename A, int V>
DW_DEV void cl_conv_rt(const A* src, const A* wsrc, int nch, int klo, int khi, A (&acc)[V][V]) {
  constexpr int RW = kClVecs * V;
  A win[2 * V - 1][V];
#pragma unroll
  for (int r = 0; r < V - 1; ++r) sload<A, V>(src + r * RW, win[r]);
  for (int c = 0; c < nch; ++c) {
#pragma unroll
    for (int r = 0; r < V; ++r) sload<A, V>(src + (c * V + V - 1 + r) * RW, win[V - 1 + r]);
    A wv[V][V];
#pragma unroll
    for (int kk = 0; kk < V; ++kk) sload<A, V>(wsrc + (c * V + kk) * RW, wv[kk]);
    const bool full = c * V >= klo && c * V + V <= khi;
#pragma unroll
    for (int kk = 0; kk < V; ++kk) {
      const int m = c * V + kk;
      if (full || (m >= klo && m < khi)) {
#pragma unroll
        for (int i = 0; i < V; ++i)
#pragma unroll
          for (int e = 0; e < V; ++e) acc[i][e] = dfma(wv[kk][e], win[i + kk][e], acc[i][e]);
      }
    }
#pragma unroll
    for (int r = 0; r < V - 1; ++r)
#pragma unroll
      for (int e = 0; e < V; ++e) win[r][e] = win[r + V][e];
  }
}

// CL, compile-time K: acc[i][e] += sum_{k < K_} w[k][e] * row(i + k)[e]; rows streamed once.
// Reads rows [0, V + K_ - 1) of src.
template <typename A, int V, int K_>
DW_DEV void cl_conv_ct(const A* src, const A (&w)[K_][V], A (&acc)[V][V]) {
  constexpr int RW = kClVecs * V;
#pragma unroll
  for (int r = 0; r < V + K_ - 1; ++r) {
    A row[V];
    sload<A, V>(src + r * RW, row);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int k = r - i;
      if (k >= 0 && k < K_) {
#pragma unroll
        for (int e = 0; e < V; ++e) acc[i][e] = dfma(w[k][e], row[e], acc[i][e]);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// CF forward
// ------------------------------------------------------------------------------------------------
// Shared layout: xs[nsm * V] | ws[kp] (general path only). xs[v] holds x at a0 + v, a0 = j0*s - pl
// - off (a multiple of N = G*V), so output j0 + jl (stride 1) reads xs[jl + off + k]. Compile-time
// K: each thread item is G vectors of V outputs kThreads*V apart (16-byte lane-consecutive shared
// reads); xw = xs + (off - OFF) with OFF = off mod V, so that every window read is a
// vector-aligned 16-byte LDS. Run-time K with stride 1 and dilation 1 takes dw_fwd_cf_rt_kernel.
// stage (y rows without V-element alignment, p.ystage > 0): each warp's 32 vectors go through a
// 32V-element area of its own, so that its lanes store 32 consecutive outputs per instruction
// instead of each lane storing its own vector element by element (lanes V elements apart: 16
// sectors per warp store). Lanes past the row skip the arithmetic but keep the warp's
// __syncwarp; the items stop where the whole warp is past the row.
template <typename T, typename W, int K_, int ITEMS, int OFF>
DW_DEV void cf_fwd_fast(const FwdArgs<T, W>& p, const acc_of<T>* xw, const acc_of<T>* wr,
                        acc_of<T> bv, T* yrow, int64_t j0, acc_of<T>* stage) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int G = gvec_of<T>();
  constexpr int NOUT = cf_fwd_item<T>();
  static_assert(K_ > 0, "compile-time K only");
  if (stage != nullptr) {
    const int lane = int(threadIdx.x) & 31;
    A* area = stage + (int(threadIdx.x) >> 5) * (32 * V);
#pragma unroll 1
    for (int it = 0; it < ITEMS; ++it) {
      if (it >= p.items) break;
      const int wb = it * kThreads * NOUT + (int(threadIdx.x) - lane) * V;  // the warp's first
      if (j0 + wb >= p.Lo) break;
#pragma unroll
      for (int q = 0; q < G; ++q) {
        const int wq = wb + q * kThreads * V;
        if (j0 + wq + lane * V < p.Lo) {
          A acc[V];
#pragma unroll
          for (int i = 0; i < V; ++i) acc[i] = bv;
          cf_conv_ct<A, V, OFF, K_>(xw + wq + lane * V, wr, acc);
          sstore<A, V>(area + lane * V, acc);
        }
        __syncwarp();
#pragma unroll
        for (int m = 0; m < V; ++m) {
          if (j0 + wq + m * 32 + lane < p.Lo) yrow[j0 + wq + m * 32 + lane] = out_cvt<T>(area[m * 32 + lane]);
        }
        __syncwarp();  // read before the next vector's arithmetic writes the area
      }
    }
    return;
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    if (it >= p.items) break;
    const int jb = it * kThreads * NOUT + int(threadIdx.x) * V;
    if (j0 + jb >= p.Lo) break;
#pragma unroll
    for (int q = 0; q < G; ++q) {
      const int jl = jb + q * kThreads * V;
      A acc[V];
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] = bv;
      cf_conv_ct<A, V, OFF, K_>(xw + jl, wr, acc);
      cf_store<T, A, V, 1>(yrow, j0 + jl, p.Lo, acc, p.y_vec);
    }
  }
}

// Any stride / dilation, run-time K: thread t owns outputs t, t+128, ... (conflict-free scalar
// reads for stride 1).
template <typename T, typename W>
DW_DEV void cf_fwd_general(const FwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* ws,
                           acc_of<T> bv, T* yrow, int64_t j0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  for (int jl = threadIdx.x; jl < p.tile; jl += kThreads) {
    if (j0 + jl >= p.Lo) break;
    A acc = bv;
    const A* xb = xs + jl * p.s + p.off;
    int k = 0;
    for (; k + V <= p.K; k += V) {
      A wv[V];
      sload<A, V>(ws + k, wv);
#pragma unroll
      for (int kk = 0; kk < V; ++kk) acc = dfma(wv[kk], xb[(k + kk) * p.d], acc);
    }
    for (; k < p.K; ++k) acc = dfma(ws[k], xb[k * p.d], acc);
    yrow[j0 + jl] = out_cvt<T>(acc);
  }
}

template <typename T, typename W, int K_, int ITEMS>
__global__ void __launch_bounds__(kThreads, kCfFwdMinBlocks)
    dw_fwd_cf_kernel(const FwdArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int G = gvec_of<T>();
  // Compiled K: stride 1, dilation 1. Run-time K: the general path, which also serves stride and
  // dilation 1 where dw_fwd_cf_rt_kernel's shared memory does not fit.
  DW_ASSERT(K_ == 0 || p.fast);
  A* xs = smem_base<A>();
  A* ws = xs + p.nsm * V;
  A wr[K_ > 0 ? K_ : 1];
  for (int64_t w = blockIdx.x; w < p.total; w += gridDim.x) {
    const int64_t row = udiv(w, p.ntiles);
    const int64_t n = w - row * p.ntiles;
    const int64_t b = udiv(row, p.C);
    const int64_t c = row - b * p.C;
    const int64_t j0 = n * p.tile;
    const int64_t a0 = j0 * p.s - p.pl - p.off;  // multiple of G*V
    __syncthreads();  // the previous tile's readers are done with xs / ws
    {
      const TileSrc<T, A> tx{xs, p.x + b * p.xsb + c * p.xsc, a0, p.L, p.nsm, p.x_vec};
      const TileSrc<T, A> none{nullptr, nullptr, 0, 0, 0, 0};
      load_tiles<false, G, T, A, kCfLoadUnroll>(tx, none, 0, 0, 0, 0);
    }
    if constexpr (K_ > 0) {
#pragma unroll
      for (int k = 0; k < K_; ++k) wr[k] = A(in_cvt(p.w[c * K_ + k]));
    } else {
      cf_load_weights<W, A>(ws, p.w, c, p.K, p.kp, false, 0);
    }
    const A bv = p.bias ? A(in_cvt(p.bias[c])) : A(0);
    __syncthreads();
    T* yrow = p.y + b * p.ysb + c * p.ysc;
    if constexpr (K_ > 0) {
      const A* xw = xs + (p.off & ~(V - 1));
      A* stage = p.ystage > 0 ? xs + p.ystage : nullptr;
      with_offset<V>(p.off & (V - 1), [&](auto o) {
        cf_fwd_fast<T, W, K_, ITEMS, decltype(o)::value>(p, xw, wr, bv, yrow, j0, stage);
      });
    } else {
      cf_fwd_general<T, W>(p, xs, ws, bv, yrow, j0);
    }
  }
}

// cp.async copies of BYTES = 16 (.cg), 8 or 4 (.ca; .cg takes 16 only) bytes (sm_80+; src_bytes <
// BYTES zero-fills the rest, 0 reads nothing), with host versions for the emulator (copied at
// issue, alignment asserted, counted per size in g_tc_emu_staged).
#ifndef DW_EMULATE
template <int BYTES>
DW_DEV void dw_cp_async(void* smem, const void* gmem, int src_bytes) {
  static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (BYTES == 16) {
    sep::cp_async16(smem, gmem, src_bytes);
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(sep::smem_u32(smem)),
                 "l"(gmem), "n"(BYTES), "r"(src_bytes)
                 : "memory");
  }
}
DW_DEV void dw_cp_commit() { sep::cp_async_commit(); }
template <int N>
DW_DEV void dw_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// A whole 16-byte copy to shared address saddr (dw_shared_addr of a pointer plus a constant, which
// ptxas folds into the instruction).
using SharedAddr = uint32_t;
DW_DEV SharedAddr dw_shared_addr(const void* smem) { return sep::smem_u32(smem); }
DW_DEV void dw_cp_async16(SharedAddr saddr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(saddr), "l"(gmem) : "memory");
}
#else
// Copies issued per size in bytes (2: the tensor-core kernels' shared rows staged element-wise)
// and the tensor-core kernels' output elements stored per store size (4: pairs, 2: single
// elements), over all emulated launches.
inline std::atomic<long long> g_tc_emu_staged[17];
inline std::atomic<long long> g_tc_emu_stored[5];
inline std::atomic<long long> g_tc_emu_realigned{0};  // shared rows built from 16-byte units
inline std::atomic<long long> g_emu_reg_shifted_items{0};  // register-direct items of shifted rows
template <int BYTES>
inline void dw_cp_async(void* smem, const void* gmem, int src_bytes) {
  static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4, "cp.async copies 4, 8 or 16 bytes");
  DW_ASSERT(reinterpret_cast<uintptr_t>(smem) % BYTES == 0 &&
            reinterpret_cast<uintptr_t>(gmem) % BYTES == 0);
  DW_ASSERT(src_bytes >= 0 && src_bytes <= BYTES);
  std::memset(smem, 0, BYTES);
  if (src_bytes > 0) std::memcpy(smem, gmem, size_t(src_bytes));
  g_tc_emu_staged[BYTES] += 1;
}
inline void dw_cp_commit() {}
template <int N>
inline void dw_cp_wait() {}
using SharedAddr = uintptr_t;
inline SharedAddr dw_shared_addr(const void* smem) { return reinterpret_cast<uintptr_t>(smem); }
inline void dw_cp_async16(SharedAddr saddr, const void* gmem) {
  dw_cp_async<16>(reinterpret_cast<void*>(saddr), gmem, 16);
}
#endif

// ------------------------------------------------------------------------------------------------
// CF forward, run-time K, stride 1, dilation 1 (dw_fwd_cf_rt_kernel)
// ------------------------------------------------------------------------------------------------
// Long kernels are bound by instruction issue and shared-memory bandwidth, so the loop is built
// to issue almost only FMAs. A thread item is NOUT consecutive outputs (a whole number of 16-byte
// vectors): each new window vector feeds NOUT * V FMAs. The 8 lanes of a quarter warp must read
// their window vectors from 8 different bank groups for a conflict-free LDS.128; two forms of the
// tile get there:
//   padded (every type, every K): items of 4 vectors, a gap slot after every 4 tile vectors, so
//     neighbouring lanes' windows start 5 slots apart (5 l mod 8 is a permutation);
//   dense (DENSE, float32 / float64 rows that are 16-byte aligned, K >= kCfRtDenseMinK): items of
//     5 vectors, no gaps (again 5 l mod 8). The tile is 20% smaller, so 6 blocks fit per SM instead
//     of 5; x is copied by cp.async straight into the tile; each item's first tap takes the bias
//     as its addend. Faster for long kernels, slower for short ones (csrc/NOTES.md, fifteenth
//     session), hence the K threshold.
// The window is a ring of R vectors, unrolled one ring per loop trip, so every load address is
// the trip pointer plus a constant (R is a multiple of the gap period in the padded form). Vectors
// are loaded one or more chunks of taps before their first use, weights (one broadcast LDS.128
// per chunk of V taps) one chunk before.
//
// Tile layout: xs[slots] | ws[kp + V]. Tile vector v (x at a0 + v*V .., a0 = j0 - pl - off, a
// multiple of G*V) sits in slot cf_rt_slot<DENSE>(v, sh), sh = off / V (0, or 1 for half types
// whose windows start one vector into the 8-element fetch group). Item m = it * kThreads + t owns
// outputs j0 + m*NOUT .. + NOUT - 1; its window starts at tile vector sh + m * cf_rt_vecs<DENSE>(),
// element OFF = off mod V. Weights: ws[k] = w[c, k] for k < K, zero up to kp + V (the prefetch
// reads one chunk past kp).
constexpr int kCfRtGap = 4;         // padded form: items of 4 vectors, a gap after every 4
constexpr int kCfRtRing = 8;        // padded form: window vectors in registers (a multiple of 4)
constexpr int kCfRtDenseVecs = 5;   // dense form: items of 5 vectors (odd: conflict-free)
constexpr int kCfRtDenseMinK = 40;  // dense form from this K on
constexpr int kCfRtRingMax = 8;     // the largest ring of either form (the tile is sized for it)

template <bool DENSE>
constexpr int cf_rt_vecs() {
  return DENSE ? kCfRtDenseVecs : kCfRtGap;
}

// Outputs per thread item.
template <typename T, bool DENSE>
constexpr int cf_rt_item() {
  return cf_rt_vecs<DENSE>() * vec_of<acc_of<T>>();
}

// Slot offset of window vector v from the slot of vector 0 (a window starts on a gap group).
template <bool DENSE>
constexpr int cf_rt_off(int v) {
  return DENSE ? v : v + v / kCfRtGap;
}

// Slot of tile vector v (v >= 0, sh in [0, kCfRtGap)); padded: a gap before every vector v = sh
// (mod kCfRtGap), including the first. The launch planning sizes the tile with it too.
template <bool DENSE>
__host__ __device__ inline int cf_rt_slot(int v, int sh) {
  return DENSE ? v : v + int(unsigned(v + kCfRtGap - sh) / kCfRtGap);
}

// Window vectors in registers for window offset OFF: dense, the NOUT + V - 1 elements one chunk
// of V taps reads plus the vector being loaded; padded, kCfRtRing.
template <int V, int OFF, int NOUT, bool DENSE>
constexpr int cf_rt_ring() {
  return DENSE ? (OFF + NOUT + V - 2) / V + 2 : kCfRtRing;
}

// Converts unit v (N = G*V raw elements) to A and stores it as G vectors in their slots.
template <typename T, typename A, int G, bool DENSE>
DW_DEV void cf_rt_store_unit(A* xs, int v, int sh, const T* r) {
  constexpr int V = vec_of<A>();
#pragma unroll
  for (int q = 0; q < G; ++q) {
    A cv[V];
#pragma unroll
    for (int e = 0; e < V; ++e) cv[e] = A(in_cvt(r[q * V + e]));
    sstore<A, V>(xs + cf_rt_slot<DENSE>(v * G + q, sh) * V, cv);
  }
}

// One pass over units v0, v0 + nthr, ... (UNR of them, those below n) of an x tile whose units
// are 16-byte aligned (nthr: the threads loading the tile, a multiple of 8, so units nthr apart
// are whole gap groups apart): units [vlo, vhi) lie wholly inside the row and are loaded, the
// others are stored as zeros. All loads are issued before the first store; addresses are one
// base pointer plus multiples of the thread stride.
template <typename T, typename A, int G, int UNR, bool DENSE>
DW_DEV void cf_rt_load_pass(const TileSrc<T, A>& t, int v0, int n, int vlo, int vhi, int sh, int nthr) {
  constexpr int V = vec_of<A>();
  constexpr int N = G * V;
  static_assert(8 * G % kCfRtGap == 0, "units 8 threads apart are whole gap groups apart");
  const int slot_step = cf_rt_off<DENSE>(nthr * G);     // slots between units nthr apart
  const T* src = t.src + (t.a0 + int64_t(v0) * N);      // may point before the row: never read
  T r[UNR][N];
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    const int v = v0 + u * nthr;
    if (unsigned(v - vlo) < unsigned(vhi - vlo)) {
      gload_raw<T, N>(src + int64_t(u) * nthr * N, r[u]);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) r[u][e] = zero_of<T>();
    }
  }
  int slot[G];
#pragma unroll
  for (int q = 0; q < G; ++q) slot[q] = cf_rt_slot<DENSE>(v0 * G + q, sh);
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    if (v0 + u * nthr < n) {
#pragma unroll
      for (int q = 0; q < G; ++q) {
        A cv[V];
#pragma unroll
        for (int e = 0; e < V; ++e) cv[e] = A(in_cvt(r[u][q * V + e]));
        sstore<A, V>(t.s + (slot[q] + u * slot_step) * V, cv);
      }
    }
  }
}

// The dense form's pass (T == A: float32, float64): the units inside the row go straight into the
// tile by cp.async (no registers, no conversion), the others are stored as zeros. The caller waits
// for the copies.
template <typename A, int UNR>
DW_DEV void cf_rt_copy_pass(const TileSrc<A, A>& t, int v0, int vlo, int vhi, int nthr) {
  constexpr int V = vec_of<A>();
  const A* src = t.src + (t.a0 + int64_t(v0) * V);  // may point before the row: never read
  const SharedAddr dst = dw_shared_addr(t.s + v0 * V);
#pragma unroll
  for (int u = 0; u < UNR; ++u) {
    const int v = v0 + u * nthr;
    if (unsigned(v - vlo) < unsigned(vhi - vlo)) {
      dw_cp_async16(dst + u * nthr * 16, src + int64_t(u) * nthr * V);
    } else if (v < t.n) {
      A z[V];
#pragma unroll
      for (int e = 0; e < V; ++e) z[e] = A(0);
      sstore<A, V>(t.s + v * V, z);
    }
  }
}

// The x tile in units of N = G*V elements, zero outside the row. Rows with 16-byte-aligned units
// (the common case): the tile origin a0 and the row start are multiples of N, so every unit lies
// wholly before the row, wholly inside it, or (the ragged last unit when len % N != 0) across
// its end; the passes load the inside units, and the thread that stored the ragged unit as zeros
// reloads it element by element. Other rows (padded form only): checked per-element loads.
// tid / nthr: the thread among the nthr that load this tile.
template <typename T, typename A, int G, int UNR, bool DENSE>
DW_DEV void cf_rt_load_x(const TileSrc<T, A>& t, int sh, int tid, int nthr) {
  constexpr int V = vec_of<A>();
  constexpr int N = G * V;
  const int n = t.n / G;
  if (t.vec == kVecGroup) {
    // Units [vlo, vhi) of the tile lie wholly inside [0, len), 0 <= vlo <= vhi <= n (hi <= 0
    // when the tile starts past the row: outputs of right padding only).
    const int64_t lo = t.a0 < 0 ? (-t.a0) / N : 0;  // -a0 is a multiple of N
    const int64_t hi = (t.len - t.a0) / N;
    const int vlo = int(lo < n ? lo : n);
    const int vhi = int(hi < vlo ? vlo : (hi < n ? hi : n));
    for (int v0 = tid; v0 < n; v0 += nthr * UNR) {
      if constexpr (DENSE) {
        cf_rt_copy_pass<A, UNR>(t, v0, vlo, vhi, nthr);
      } else {
        cf_rt_load_pass<T, A, G, UNR, DENSE>(t, v0, n, vlo, vhi, sh, nthr);
      }
    }
    if constexpr (DENSE) {
      dw_cp_commit();
      dw_cp_wait<0>();
    }
    if (t.len % N != 0 && vhi < n && tid == vhi % nthr) {
      T r[N];
      cf_fetch<T, A, V, G>(t, vhi, false, r);  // elements past len are zeros
      cf_rt_store_unit<T, A, G, DENSE>(t.s, vhi, sh, r);
    }
  } else {
    constexpr int UNR_EDGE = 2;
    for (int v0 = tid; v0 < n; v0 += nthr * UNR_EDGE) {
      T r[UNR_EDGE][N];
#pragma unroll
      for (int u = 0; u < UNR_EDGE; ++u) {
        const int v = v0 + u * nthr;
        cf_fetch<T, A, V, G>(t, v < n ? v : n - 1, false, r[u]);
      }
#pragma unroll
      for (int u = 0; u < UNR_EDGE; ++u) {
        if (v0 + u * nthr < n) cf_rt_store_unit<T, A, G, DENSE>(t.s, v0 + u * nthr, sh, r[u]);
      }
    }
  }
}

// One chunk of V taps at ring position S: acc[i] += wv[kk] * x[OFF + i + S*V + kk] (window
// relative to the trip's first vector); CHECK: only taps kk < ntaps exist.
template <typename A, int V, int R, int OFF, int NOUT, int S, bool CHECK>
DW_DEV void cf_rt_chunk(const A (&win)[R][V], const A (&wv)[V], int ntaps, A (&acc)[NOUT]) {
#pragma unroll
  for (int kk = 0; kk < V; ++kk) {
    if (!CHECK || kk < ntaps) {
#pragma unroll
      for (int i = 0; i < NOUT; ++i) {
        const int n = OFF + i + kk;  // compile-time after unrolling
        acc[i] = dfma(wv[kk], win[(S + n / V) % R][n % V], acc[i]);
      }
    }
  }
}

// The dense form's first chunk of an item: taps kk < min(K, V), the first one taking the bias as
// its addend (no set-up of the accumulators). The ring holds window vector v in slot
// (v + R - 1) % R here, so that the loop after it finds vector 1 in slot 0.
template <typename A, int V, int R, int OFF, int NOUT>
DW_DEV void cf_rt_first(const A (&win)[R][V], const A (&wv)[V], int K, A bias, A (&acc)[NOUT]) {
#pragma unroll
  for (int i = 0; i < NOUT; ++i) {
    const int n = OFF + i;
    acc[i] = dfma(wv[0], win[(n / V + R - 1) % R][n % V], bias);
  }
#pragma unroll
  for (int kk = 1; kk < V; ++kk) {
    if (kk < K) {
#pragma unroll
      for (int i = 0; i < NOUT; ++i) {
        const int n = OFF + i + kk;
        acc[i] = dfma(wv[kk], win[(n / V + R - 1) % R][n % V], acc[i]);
      }
    }
  }
}

// Step S of a trip: prefetch the weights of chunk S + 1 and window vector S + R - 1 (into the
// slot chunk S - 1 freed), then chunk S. xp: slot of the trip's first window vector; wp: its
// first tap.
template <typename A, int V, int R, bool DENSE, int OFF, int NOUT, int S, bool CHECK>
DW_DEV void cf_rt_step(const A* xp, const A* wp, A (&win)[R][V], A (&wb)[2][V], int ntaps,
                       A (&acc)[NOUT]) {
  sload<A, V>(wp + (S + 1) * V, wb[(S + 1) % 2]);
  sload<A, V>(xp + cf_rt_off<DENSE>(S + R - 1) * V, win[(S + R - 1) % R]);
  cf_rt_chunk<A, V, R, OFF, NOUT, S, CHECK>(win, wb[S % 2], ntaps, acc);
}

// A whole trip of R chunks, the last of which may be partial (kleft: taps left at the trip).
template <typename A, int V, int R, bool DENSE, int OFF, int NOUT, int S = 0>
DW_DEV void cf_rt_trip(const A* xp, const A* wp, int kleft, A (&win)[R][V], A (&wb)[2][V],
                       A (&acc)[NOUT]) {
  if constexpr (S < R - 1) {
    cf_rt_step<A, V, R, DENSE, OFF, NOUT, S, false>(xp, wp, win, wb, V, acc);
    cf_rt_trip<A, V, R, DENSE, OFF, NOUT, S + 1>(xp, wp, kleft, win, wb, acc);
  } else if (kleft >= R * V) {
    cf_rt_step<A, V, R, DENSE, OFF, NOUT, S, false>(xp, wp, win, wb, V, acc);
  } else {
    cf_rt_step<A, V, R, DENSE, OFF, NOUT, S, true>(xp, wp, win, wb, kleft - S * V, acc);
  }
}

// The last kleft < (R - 1) * V taps (fewer than R - 1 chunks), each chunk checked.
template <typename A, int V, int R, bool DENSE, int OFF, int NOUT, int S = 0>
DW_DEV void cf_rt_tail(const A* xp, const A* wp, int kleft, A (&win)[R][V], A (&wb)[2][V],
                       A (&acc)[NOUT]) {
  if constexpr (S < R - 1) {
    if (kleft > S * V) {
      cf_rt_step<A, V, R, DENSE, OFF, NOUT, S, true>(xp, wp, win, wb, kleft - S * V, acc);
      cf_rt_tail<A, V, R, DENSE, OFF, NOUT, S + 1>(xp, wp, kleft, win, wb, acc);
    }
  }
}

// acc[i] += sum_{k < K} ws[k] * x[OFF + i + k] (padded form: acc holds the bias already; dense
// form: acc is set here, bias + ...), x = window vectors from slot pointer xp (a gap group start).
// Reads window vectors [0, ceil(K / V) + R - 1) and ws[0, kp + V).
template <typename A, int V, int OFF, int NOUT, bool DENSE>
DW_DEV void cf_rt_conv(const A* xp, const A* wp, int K, A bias, A (&acc)[NOUT]) {
  constexpr int R = cf_rt_ring<V, OFF, NOUT, DENSE>();
  static_assert(R <= kCfRtRingMax, "the launch planning sizes the tile for kCfRtRingMax");
  static_assert(DENSE || R % kCfRtGap == 0, "trip pointers step by whole gap groups");
  A win[R][V];
  A wb[2][V];
  int kleft = K;
  if constexpr (DENSE) {
    A w0[V];
#pragma unroll
    for (int v = 0; v < R; ++v) sload<A, V>(xp + v * V, win[(v + R - 1) % R]);
    sload<A, V>(wp, w0);
    sload<A, V>(wp + V, wb[0]);
    cf_rt_first<A, V, R, OFF, NOUT>(win, w0, K, bias, acc);
    // The rest starts at chunk 1: window vector 1 (now in slot 0) and tap V.
    xp += V;
    wp += V;
    kleft -= V;
  } else {
#pragma unroll
    for (int v = 0; v < R - 1; ++v) sload<A, V>(xp + cf_rt_off<DENSE>(v) * V, win[v]);
    sload<A, V>(wp, wb[0]);
  }
  // Trips while at least R - 1 whole chunks and a further (whole or partial) one are left.
#pragma unroll 1
  for (; kleft > (R - 1) * V; kleft -= R * V) {
    cf_rt_trip<A, V, R, DENSE, OFF, NOUT>(xp, wp, kleft, win, wb, acc);
    if constexpr (R % 2 == 1) {
      // The trip's last step loaded the next chunk's weights into wb[1]; step 0 reads wb[0].
#pragma unroll
      for (int e = 0; e < V; ++e) wb[0][e] = wb[1][e];
    }
    xp += cf_rt_off<DENSE>(R) * V;
    wp += R * V;
  }
  cf_rt_tail<A, V, R, DENSE, OFF, NOUT>(xp, wp, kleft, win, wb, acc);
}

// The outputs of the item at tile output jl (a multiple of NOUT): acc[i] = output jl + i.
template <typename T, int OFF, bool DENSE, int NOUT>
DW_DEV void cf_rt_item_outputs(const acc_of<T>* xs, const acc_of<T>* ws, int sh, int K, acc_of<T> bv,
                               int jl, acc_of<T> (&acc)[NOUT]) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  if constexpr (!DENSE) {
#pragma unroll
    for (int i = 0; i < NOUT; ++i) acc[i] = bv;
  }
  // Item jl / NOUT: its window starts at tile vector sh + (jl / NOUT) * cf_rt_vecs<DENSE>().
  const A* xw = xs + cf_rt_slot<DENSE>(sh + jl / NOUT * cf_rt_vecs<DENSE>(), sh) * V;
  cf_rt_conv<A, V, OFF, NOUT, DENSE>(xw, ws, K, bv, acc);
}

// The items of thread tid of the p.group that share the tile: outputs ytile[jl .. jl + NOUT) with
// jl < nout (the outputs of the tile that exist), ytile = the tile's first output. Few values live
// across the items: the loop runs at the register cap.
template <typename T, typename W, int OFF, bool DENSE>
DW_DEV void cf_rt_items(const FwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* ws, int sh,
                        acc_of<T> bv, T* ytile, int nout, int tid) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int G = gvec_of<T>();
  constexpr int N = G * V;
  constexpr int NOUT = cf_rt_item<T, DENSE>();
  static_assert(NOUT % N == 0, "items are whole store groups");
#pragma unroll 1
  for (int jl = tid * NOUT; jl < nout; jl += p.group * NOUT) {  // p.group: a parameter, no register
    A acc[NOUT];
    cf_rt_item_outputs<T, OFF, DENSE>(xs, ws, sh, p.K, bv, jl, acc);
    if (p.y_vec == kVecGroup && jl + NOUT <= nout) {  // the common case: no per-group checks
#pragma unroll
      for (int q = 0; q < NOUT; q += N) gstore_group<T, A, V, G>(ytile + jl + q, acc + q);
    } else {
#pragma unroll
      for (int q = 0; q < NOUT; q += N) cf_store<T, A, V, G>(ytile, jl + q, nout, acc + q, p.y_vec);
    }
  }
}

// y staged through shared memory (YSTAGE, rows of y that are not 16-byte aligned): stored
// directly, each lane would write its item's NOUT outputs element by element with lanes NOUT
// elements apart, 32 sectors per warp store (the sixty-second session's probe: aligning y alone
// took row groups from 149 to 68 us at L835 K33, H100). Instead each quarter warp (8 lanes, never
// split across row groups: a group is a multiple of 8 threads) writes its 8 items to an area of its
// own, and its lanes then store 8 consecutive outputs per instruction (4 runs per warp store).
// Area: the 8 items' 16-byte units (U = NOUT / V per item), then 32 bytes of padding, so that the
// four quarters of a warp read 8-bank spans 8 banks apart. Where U is 4 the units of item l are
// XOR-swizzled by (l >> 1) & 3, so that 8 lanes' STS.128 (one phase) hit 8 bank groups; U = 5 is
// conflict-free as it is (5 l mod 8).
template <typename A, int NOUT>
constexpr int cf_rt_stage_pitch() {
  return 8 * NOUT + 32 / int(sizeof(A));
}

template <typename A, int NOUT>
constexpr int64_t cf_rt_stage_elems() {
  return int64_t(kThreads / 8) * cf_rt_stage_pitch<A, NOUT>();
}

// Unit slot of vector v of item l (0..7) in its quarter's area.
template <int U>
DW_DEV int cf_rt_stage_unit(int l, int v) {
  static_assert(U == 4 || U == 5, "items of 4 (padded form) or 5 (dense form) vectors");
  return l * U + (U == 4 ? (v ^ ((l >> 1) & 3)) : v);
}

// cf_rt_items with y staged: every thread of the block runs p.items trips (threads without a row,
// or past it, with nothing to compute or store), so that whole warps meet at __syncwarp.
template <typename T, typename W, int OFF, bool DENSE>
DW_DEV void cf_rt_items_staged(const FwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* ws, int sh,
                               acc_of<T> bv, T* ytile, int nout, int tid, acc_of<T>* stage) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int NOUT = cf_rt_item<T, DENSE>();
  constexpr int U = NOUT / V;
  static_assert(U * V == NOUT && V * sizeof(A) == 16, "items are whole 16-byte units");
  static_assert(U == 5 || NOUT % 8 == 0, "swizzled items hold whole runs of 8 outputs");
  const int lane8 = int(threadIdx.x) & 7;
  A* qs = stage + (int(threadIdx.x) >> 3) * cf_rt_stage_pitch<A, NOUT>();
#pragma unroll 1
  for (int it = 0; it < p.items; ++it) {
    const int q0 = (it * p.group + tid - lane8) * NOUT;  // the quarter's first output
    const int jl = q0 + lane8 * NOUT;
    if (jl < nout) {
      A acc[NOUT];
      cf_rt_item_outputs<T, OFF, DENSE>(xs, ws, sh, p.K, bv, jl, acc);
#pragma unroll
      for (int v = 0; v < U; ++v) sstore<A, V>(qs + cf_rt_stage_unit<U>(lane8, v) * V, acc + v * V);
    }
    __syncwarp();
    // Output q0 + r * 8 + lane8: item l = (r * 8 + lane8) / NOUT, element i of it.
#pragma unroll
    for (int r = 0; r < NOUT; ++r) {
      int idx;
      if constexpr (U == 4) {  // NOUT = 4V is 8 or 16: item and vector offset compile-time
        constexpr int per = 8;
        const int l = r * per / NOUT;
        const int v = (((r * per) % NOUT) / V | lane8 / V) ^ ((l >> 1) & 3);
        idx = (l * U + v) * V + lane8 % V;
      } else {
        idx = r * 8 + lane8;  // unswizzled: the area is the items' outputs in order
      }
      if (q0 + r * 8 + lane8 < nout) ytile[q0 + r * 8 + lane8] = out_cvt<T>(qs[idx]);
    }
    __syncwarp();  // the area is read before the next trip writes it
  }
}

template <typename T, typename W, bool DENSE, bool YSTAGE>
__global__ void __launch_bounds__(kThreads, kCfRtMinBlocks)
    dw_fwd_cf_rt_kernel(const FwdArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int G = gvec_of<T>();
  static_assert(!DENSE || std::is_same_v<T, A>, "the dense form copies x unconverted");
  DW_ASSERT(p.fast);
  DW_ASSERT(!DENSE || p.x_vec == kVecGroup);
  const int sh = p.off / V;
  // Row groups (p.rows > 1): group g of p.group threads (a multiple of 8: a quarter warp's window
  // reads stay in one group) takes row w * p.rows + g of block item w, in its own tile and weights
  // p.gstride elements further (a multiple of 8 vectors: the conflict-free bank pattern carries
  // over); threads past rows * group only keep the barriers. One group: the whole block.
  const int nthr = p.group;
  const int g = int(threadIdx.x) / nthr;
  const int t = int(threadIdx.x) - g * nthr;
  A* xs = smem_base<A>() + int64_t(g < p.rows ? g : 0) * p.gstride;
  A* ws = xs + (cf_rt_slot<DENSE>(p.nsm - 1, sh) + 1) * V;
  const int64_t nrows = p.B * p.C;
  for (int64_t w = blockIdx.x; w < p.total; w += gridDim.x) {
    int64_t row, n;
    if (p.rows > 1) {
      row = w * p.rows + g;
      n = 0;
    } else {
      row = udiv(w, p.ntiles);
      n = w - row * p.ntiles;
    }
    const bool live = g < p.rows && row < nrows;
    if (!live) row = 0;  // a valid row for the address maths; nothing is read or written
    const int64_t b = udiv(row, p.C);
    const int64_t c = row - b * p.C;
    const int64_t j0 = n * p.tile;
    const int64_t a0 = j0 - p.pl - p.off;  // multiple of G*V
    // Weight slot t, the bias and the x tile are fetched before any of them is stored: one
    // memory round trip per tile (kernels longer than nthr - V taps load the rest after).
    const int nw = p.kp + V;
    const A wt = live && t < p.K ? A(in_cvt(p.w[c * p.K + t])) : A(0);
    const A bv = live && p.bias ? A(in_cvt(p.bias[c])) : A(0);
    __syncthreads();  // the previous tile's readers are done with xs / ws
    if (live) {
      const TileSrc<T, A> tx{xs, p.x + b * p.xsb + c * p.xsc, a0, p.L, p.nsm, p.x_vec};
      cf_rt_load_x<T, A, G, (kCfRtLoadUnroll + G - 1) / G, DENSE>(tx, sh, t, nthr);
      if (t < nw) ws[t] = wt;
      for (int m = t + nthr; m < nw; m += nthr) ws[m] = m < p.K ? A(in_cvt(p.w[c * p.K + m])) : A(0);
    }
    __syncthreads();
    T* ytile = p.y + b * p.ysb + c * p.ysc + j0;  // j0 is a multiple of the group: alignment kept
    const int nout = live ? int(p.Lo - j0 < p.tile ? p.Lo - j0 : p.tile) : 0;
    if constexpr (YSTAGE) {
      with_offset<V>(p.off & (V - 1), [&](auto o) {
        cf_rt_items_staged<T, W, decltype(o)::value, DENSE>(p, xs, ws, sh, bv, ytile, nout, t,
                                                            smem_base<A>() + p.ystage);
      });
    } else if (live) {
      with_offset<V>(p.off & (V - 1), [&](auto o) {
        cf_rt_items<T, W, decltype(o)::value, DENSE>(p, xs, ws, sh, bv, ytile, nout, t);
      });
    }
  }
}

// ------------------------------------------------------------------------------------------------
// CF backward: dx, dw and db of one channel per block, deterministic partials
// ------------------------------------------------------------------------------------------------
// Shared layout: xs[nsm_x * V] | dys[nsm_dy * V] | ws[kp] | red[(kp + 1) * kWarps]
// Both tiles start on a fetch-group boundary (N = G*V elements: 16-byte loads for every type).
// x tile as in the forward (origin j0 - pl - off, off = (-pl) mod N); the fast paths read it
// through xw = xs + (off - OFFX), OFFX = off mod V, so output j0 + jl, tap k is xw[jl + OFFX + k].
// dy tile origin j0 + dlo (dlo <= 0, a multiple of N), so dy[j0 + jl] sits at dys[dyj + jl] with
// dyj = -dlo. dx[i] = sum_k w[k] * dy[i + pl - k] (stride 1): with the K taps flipped and
// front-padded to Kpad, the window of dx outputs jl.. starts at dys[jl + bd], bd = dyj + pl -
// (Kpad - 1) >= 0 (the host sizes dlo for Kpad = kp). bd mod V depends on OFFX only (dyj and N
// are multiples of V, pl = -OFFX mod V), so the dx window offset OFFD is compile-time too.
// Each thread item is V consecutive outputs at jl = (it * kThreads + t) * V: every window read is a
// lane-consecutive 16-byte LDS (conflict-free), every dx store one V-element access.

// Compile-time K, stride 1, dilation 1: item-outer, every window loaded once, dw partials in
// registers for the whole block.
template <typename T, typename W, int K_, int ITEMS, int OFFX>
DW_DEV void cf_bwd_fast_ct(const BwdArgs<T, W>& p, const acc_of<T>* xw, const acc_of<T>* dys,
                           const acc_of<T>* ws, acc_of<T>* pdw, acc_of<T>& dbacc, T* dxrow,
                           int64_t j0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  // bd = OFFD (mod V): dyj is a multiple of V and pl = -OFFX (mod V).
  constexpr int OFFD = (((1 - K_ - OFFX) % V) + V) % V;
  const int dyj = -p.dlo;
  const int bd = dyj + int(p.pl) - (K_ - 1);
  DW_ASSERT(bd >= 0 && (bd - OFFD) % V == 0);
  const int qd = (bd - OFFD) / V;
  const bool want_wb = p.want_w || p.want_b;
  // ws holds the reversed kernel from slot 0 (lead 0); registers for this tile only.
  constexpr int KP = (K_ + V - 1) / V * V;
  A wflip[KP];
  if (p.want_x) {
#pragma unroll
    for (int q = 0; q < KP; q += V) sload<A, V>(ws + q, wflip + q);
  }
  // Unrolled as far as a float tile's items (half types loop twice): bounds the code size.
#pragma unroll kCfItemsBwd
  for (int it = 0; it < ITEMS; ++it) {
    if (it >= p.items) break;
    const int jl = (it * kThreads + int(threadIdx.x)) * V;
    const bool dwv = want_wb && (j0 + jl < p.Lo);
    const bool dxv = p.want_x && (j0 + jl < p.L);
    if (!dwv && !dxv) break;  // both bounds only shrink with it
    if (dwv) {
      A dyv[V];
      sload<A, V>(dys + dyj + jl, dyv);
#pragma unroll
      for (int i = 0; i < V; ++i) dbacc += dyv[i];
      if (p.want_w) {
        constexpr int NWX = (OFFX + V - 1 + K_ - 1) / V + 1;
        A xv[NWX * V];
#pragma unroll
        for (int q = 0; q < NWX; ++q) sload<A, V>(xw + jl + q * V, xv + q * V);
#pragma unroll
        for (int k = 0; k < K_; ++k) {
#pragma unroll
          for (int i = 0; i < V; ++i) pdw[k] = dfma(dyv[i], xv[OFFX + i + k], pdw[k]);
        }
      }
    }
    if (dxv) {
      A acc[V];
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] = A(0);
      cf_conv_ct<A, V, OFFD, K_>(dys + jl + qd * V, wflip, acc);
      cf_store<T, A, V, 1>(dxrow, j0 + jl, p.L, acc, p.dx_vec);
    }
  }
}

// Run-time K, stride 1, dilation 1: the dx pass, items of V outputs, each the sliding-window
// correlation of dy with the flipped kernel (ws, padded in front to kp taps).
// dyj = -p.dlo, nch = p.kp / V (the callers' own).
template <typename T, typename W, int OFFX>
DW_DEV void cf_bwd_rt_dx(const BwdArgs<T, W>& p, const acc_of<T>* dys, const acc_of<T>* ws,
                         T* dxrow, int64_t j0, int dyj, int nch) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int OFFD = (V + 1 - OFFX) % V;
  const int bd = dyj + int(p.pl) - (p.kp - 1);
  DW_ASSERT(bd >= 0 && (bd - OFFD) % V == 0);
  const int qd = (bd - OFFD) / V;
#pragma unroll 1
  for (int it = 0; it < p.items; ++it) {
    const int jl = (it * kThreads + int(threadIdx.x)) * V;
    if (j0 + jl >= p.L) break;
    A acc[V];
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] = A(0);
    cf_conv_rt<A, V, OFFD>(dys + jl + qd * V, ws, nch, p.kp - p.K, p.kp, acc);
    cf_store<T, A, V, 1>(dxrow, j0 + jl, p.L, acc, p.dx_vec);
  }
}

// Run-time K, stride 1, dilation 1. ws holds the flipped kernel padded in front to kp taps.
// Three passes over the tile: db, dx (sliding window), dw (V taps per pass, reduced per pass).
template <typename T, typename W, int ITEMS, int OFFX>
DW_DEV void cf_bwd_fast_rt(const BwdArgs<T, W>& p, const acc_of<T>* xw, const acc_of<T>* dys,
                           const acc_of<T>* ws, acc_of<T>* red, acc_of<T>& dbacc, T* dxrow,
                           int64_t j0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  const int dyj = -p.dlo;
  const int nch = p.kp / V;
  if (p.want_w || p.want_b) {
#pragma unroll kCfItemsBwd
    for (int it = 0; it < ITEMS; ++it) {
      if (it >= p.items) break;
      const int jl = (it * kThreads + int(threadIdx.x)) * V;
      if (j0 + jl >= p.Lo) break;
      A dyv[V];
      sload<A, V>(dys + dyj + jl, dyv);
#pragma unroll
      for (int i = 0; i < V; ++i) dbacc += dyv[i];
    }
  }
  if (p.want_x) cf_bwd_rt_dx<T, W, OFFX>(p, dys, ws, dxrow, j0, dyj, nch);
  if (p.want_w) {
    for (int c = 0; c < nch; ++c) {
      A pdw[V];
#pragma unroll
      for (int kk = 0; kk < V; ++kk) pdw[kk] = A(0);
#pragma unroll kCfItemsBwd
      for (int it = 0; it < ITEMS; ++it) {
        if (it >= p.items) break;
        const int jl = (it * kThreads + int(threadIdx.x)) * V;
        if (j0 + jl >= p.Lo) break;
        A dyv[V];
        sload<A, V>(dys + dyj + jl, dyv);
        A xv[3 * V];
        const A* src = xw + jl + c * V;
        sload<A, V>(src, xv);
        sload<A, V>(src + V, xv + V);
        if constexpr (OFFX >= 2) sload<A, V>(src + 2 * V, xv + 2 * V);
#pragma unroll
        for (int kk = 0; kk < V; ++kk) {
          if (c * V + kk < p.K) {
#pragma unroll
            for (int i = 0; i < V; ++i) pdw[kk] = dfma(dyv[i], xv[OFFX + i + kk], pdw[kk]);
          }
        }
      }
      cf_reduce_scatter<A, V>(pdw, red, c * V);
    }
  }
}

// Run-time K up to KPT taps, stride 1, dilation 1: cf_bwd_fast_rt's db and dx passes, and a dw
// pass whose partial sums stay in registers for the whole block (reduced once, at its end, as the
// compiled-K path does). Each item's x window slides over the taps as a ring of R vectors: one
// new LDS.128 per chunk of V taps (V*V FMAs) instead of the V-tap pass's dy and two or three
// window loads plus a warp reduction per chunk and tile, which left that pass bound by shared
// memory (csrc/NOTES.md, fifty-ninth session). Taps kp..KPT of pdw are never accumulated.
template <typename T, typename W, int KPT, int ITEMS, int OFFX>
DW_DEV void cf_bwd_fast_rt_regs(const BwdArgs<T, W>& p, const acc_of<T>* xw,
                                const acc_of<T>* dys, const acc_of<T>* ws, acc_of<T>* pdw,
                                acc_of<T>& dbacc, T* dxrow, int64_t j0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int NCH = KPT / V;
  constexpr int R = (OFFX + 2 * V - 2) / V + 1;  // window vectors one chunk of taps reads
  static_assert(KPT % V == 0, "whole chunks of taps");
  const int dyj = -p.dlo;
  const int nch = p.kp / V;
  if (p.want_x) cf_bwd_rt_dx<T, W, OFFX>(p, dys, ws, dxrow, j0, dyj, nch);
  if (p.want_w || p.want_b) {
#pragma unroll 1
    for (int it = 0; it < p.items; ++it) {
      const int jl = (it * kThreads + int(threadIdx.x)) * V;
      if (j0 + jl >= p.Lo) break;
      A dyv[V];
      sload<A, V>(dys + dyj + jl, dyv);
#pragma unroll
      for (int i = 0; i < V; ++i) dbacc += dyv[i];
      if (!p.want_w) continue;
      // win[(c + q) % R] holds window vector c + q of the chunk c of taps.
      const A* src = xw + jl;
      A win[R][V];
#pragma unroll
      for (int q = 0; q < R - 1; ++q) sload<A, V>(src + q * V, win[q]);
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        if (c >= nch) break;  // uniform
        sload<A, V>(src + (c + R - 1) * V, win[(c + R - 1) % R]);
#pragma unroll
        for (int kk = 0; kk < V; ++kk) {
#pragma unroll
          for (int i = 0; i < V; ++i) {
            const int n = OFFX + i + kk;
            pdw[c * V + kk] = dfma(dyv[i], win[(c + n / V) % R][n % V], pdw[c * V + kk]);
          }
        }
      }
    }
  }
}

// Any stride / dilation, run-time K. ws holds the unflipped kernel (kp taps, zero padded).
template <typename T, typename W>
DW_DEV void cf_bwd_general(const BwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* dys,
                           const acc_of<T>* ws, acc_of<T>* red, acc_of<T>& dbacc, T* dxrow,
                           int64_t j0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  const int dyj = -p.dlo;
  const int tj = p.tile;
  if (p.want_w || p.want_b) {
    for (int jl = threadIdx.x; jl < tj; jl += kThreads) {
      if (j0 + jl >= p.Lo) break;
      dbacc += dys[dyj + jl];
    }
  }
  if (p.want_w) {
    const int nch = p.kp / V;
    for (int c = 0; c < nch; ++c) {
      A pdw[V];
#pragma unroll
      for (int kk = 0; kk < V; ++kk) pdw[kk] = A(0);
      for (int jl = threadIdx.x; jl < tj; jl += kThreads) {
        if (j0 + jl >= p.Lo) break;
        const A g = dys[dyj + jl];
        const A* xb = xs + jl * p.s + p.off;
#pragma unroll
        for (int kk = 0; kk < V; ++kk) {
          const int k = c * V + kk;
          if (k < p.K) pdw[kk] = dfma(g, xb[k * p.d], pdw[kk]);
        }
      }
      cf_reduce_scatter<A, V>(pdw, red, c * V);
    }
  }
  if (p.want_x) {
    // dx[i] = sum_k w[k] dy[(i + pl - k*d) / s] over the k where the division is exact.
    // num = i + pl - k*d = q*s + r with 0 <= r < s, updated incrementally.
    const int64_t i0 = j0 * p.s;
    const int64_t dy_a0 = j0 + p.dlo;
    const int ti = tj * p.s;
    const int dq = p.d / p.s;
    const int dr = p.d - dq * p.s;
    for (int il = threadIdx.x; il < ti; il += kThreads) {
      const int64_t i = i0 + il;
      if (i >= p.L) break;
      const int64_t num = i + p.pl;
      int64_t q = num / p.s;
      int r = int(num - q * p.s);
      A acc = A(0);
      for (int k = 0; k < p.K; ++k) {
        if (r == 0) acc = dfma(ws[k], dys[q - dy_a0], acc);
        r -= dr;
        q -= dq;
        if (r < 0) {
          r += p.s;
          q -= 1;
        }
      }
      dxrow[i] = out_cvt<T>(acc);
    }
  }
}

// K_ > 0: compiled K. K_ == 0: run-time K, with dw / db partials in KPT registers where KPT > 0
// (cf_bwd_fast_rt_regs; the host takes it for stride 1, dilation 1, kp <= KPT), else per pass.
template <typename T, typename W, int K_, int ITEMS, int KPT = 0>
__global__ void __launch_bounds__(kThreads, cf_bwd_min_blocks(KPT))
    dw_bwd_cf_kernel(const BwdArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int G = gvec_of<T>();
  A* xs = smem_base<A>();
  A* dys = xs + p.nsm_x * V;
  A* ws = dys + p.nsm_dy * V;
  A* red = ws + p.kp;  // [(kp + 1) * kWarps]: per-warp dw taps, then db
  const int64_t c = blockIdx.x / p.split;
  const int64_t sidx = blockIdx.x - c * p.split;
  const bool want_wb = p.want_w || p.want_b;
  const int tid = threadIdx.x;
  for (int i = tid; i < (p.kp + 1) * kWarps; i += kThreads) red[i] = A(0);
  // The fast paths correlate with the reversed kernel (run-time K: after kp - K zero slots, so
  // that its window offset is (1 - off) mod V), the general path uses the kernel as is.
  if (p.want_x) cf_load_weights<W, A>(ws, p.w, c, p.K, p.kp, p.fast, K_ > 0 ? 0 : p.kp - p.K);
  static_assert(K_ == 0 || KPT == 0, "register taps are the run-time-K form");
  constexpr int KR = K_ > 0 ? K_ : KPT;  // dw partials held in registers across the tiles
  A pdw[KR > 0 ? KR : 1];
#pragma unroll
  for (int k = 0; k < (KR > 0 ? KR : 1); ++k) pdw[k] = A(0);
  A dbacc = A(0);
  __syncthreads();
  for (int64_t wi = sidx; wi < p.work; wi += p.split) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t n = wi - b * p.ntiles;
    const int64_t j0 = n * p.tile;
    __syncthreads();  // previous tile consumed
    {
      const TileSrc<T, A> tdy{dys, p.dy + b * p.dysb + c * p.dysc, j0 + p.dlo, p.Lo, p.nsm_dy,
                              p.dy_vec};
      const TileSrc<T, A> tx{p.want_w ? xs : nullptr, p.x + b * p.xsb + c * p.xsc,
                             j0 * p.s - p.pl - p.off, p.L, p.nsm_x, p.x_vec};
      load_tiles<false, G, T, A, kCfBwdLoadUnroll>(tdy, tx, 0, 0, 0, 0);
    }
    __syncthreads();
    T* dxrow = p.want_x ? p.dx + b * p.dxsb + c * p.dxsc : nullptr;
    // Fast paths: x window base shifted by whole vectors, compile-time offset OFFX = off mod V.
    const A* xw = xs + (p.off & ~(V - 1));
    if constexpr (K_ > 0) {
      with_offset<V>(p.off & (V - 1), [&](auto o) {
        cf_bwd_fast_ct<T, W, K_, ITEMS, decltype(o)::value>(p, xw, dys, ws, pdw, dbacc, dxrow, j0);
      });
    } else if constexpr (KPT > 0) {
      DW_ASSERT(p.fast && p.kp <= KPT);
      with_offset<V>(p.off & (V - 1), [&](auto o) {
        cf_bwd_fast_rt_regs<T, W, KPT, ITEMS, decltype(o)::value>(p, xw, dys, ws, pdw, dbacc,
                                                                  dxrow, j0);
      });
    } else {
      if (p.fast) {
        with_offset<V>(p.off & (V - 1), [&](auto o) {
          cf_bwd_fast_rt<T, W, ITEMS, decltype(o)::value>(p, xw, dys, ws, red, dbacc, dxrow, j0);
        });
      } else {
        cf_bwd_general<T, W>(p, xs, dys, ws, red, dbacc, dxrow, j0);
      }
    }
  }
  if (!want_wb) return;  // uniform: no shared reductions follow
  if constexpr (KR > 0) {
    if (p.want_w) {
#pragma unroll
      for (int c0 = 0; c0 < KR; c0 += V) {
        if (K_ == 0 && c0 >= p.kp) break;  // uniform; red has kp tap slots
        A v[V];
#pragma unroll
        for (int kk = 0; kk < V; ++kk) v[kk] = (c0 + kk < KR) ? pdw[c0 + kk] : A(0);
        cf_reduce_scatter<A, V>(v, red, c0);
      }
    }
  }
  {
    const A t = warp_sum(dbacc);
    if ((tid & 31) == 0) red[p.kp * kWarps + (tid >> 5)] += t;
  }
  __syncthreads();
  for (int k = tid; k <= p.K; k += kThreads) {
    const int slot = k < p.K ? k : p.kp;
    A s = A(0);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[slot * kWarps + w];
    p.part[(sidx * (p.K + 1) + k) * p.C + c] = s;
  }
}

// ------------------------------------------------------------------------------------------------
// CL forward
// ------------------------------------------------------------------------------------------------
// Shared layout: xs[nsm rows][kClVecs][V] | ws[kp][kClVecs][V]. Row r holds position j0*s - pl + r.
// Thread (cv, pg) owns channel vector cv and, per item, the V positions rl.. with
// rl = (it * kClGroups + pg) * V.

// This thread's channel vector of K_ weight slots from the shared weights (slot stride kClVecs*V).
template <typename A, int V, int K_>
DW_DEV void cl_weights_regs(const A* wsrc, A (&wr)[K_][V]) {
#pragma unroll
  for (int k = 0; k < K_; ++k) sload<A, V>(wsrc + k * kClVecs * V, wr[k]);
}

template <typename T, typename W, int K_, int ITEMS>
__global__ void __launch_bounds__(kThreads, kClFwdMinBlocks)
    dw_fwd_cl_kernel(const FwdArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int RW = kClVecs * V;
  A* xs = smem_base<A>();
  A* ws = xs + p.nsm * RW;
  const int64_t g = blockIdx.x / p.split;
  const int64_t sidx = blockIdx.x - g * p.split;
  const int64_t c0 = g * RW;
  const int lane = threadIdx.x & 31;
  const int cv = (threadIdx.x >> 5) * 8 + (lane & 7);
  const int pg = lane >> 3;
  const int64_t ch0 = c0 + cv * V;
  cl_load_weights<W, A>(ws, p.w, c0, p.C, p.K, p.kp, false, 0);
  A bv[V];
#pragma unroll
  for (int e = 0; e < V; ++e) bv[e] = (p.bias && ch0 + e < p.C) ? A(in_cvt(p.bias[ch0 + e])) : A(0);
  for (int64_t wi = sidx; wi < p.total; wi += p.split) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t n = wi - b * p.ntiles;
    const int64_t j0 = n * p.tile;
    __syncthreads();  // previous tile consumed (first pass: orders the weight stores)
    {
      constexpr int G = gvec_of<T>();
      const TileSrc<T, A> tx{xs, p.x + b * p.xsb, j0 * p.s - p.pl, p.L, p.nsm, p.x_vec};
      const TileSrc<T, A> none{nullptr, nullptr, 0, 0, 0, 0};
      load_tiles<true, G, T, A, cl_load_unroll<G>(kClLoadUnroll)>(tx, none, p.xsl, 0, c0, p.C);
    }
    __syncthreads();
    T* yb = p.y + b * p.ysb;
    if (K_ > 0 || p.fast) {
      A wr[K_ > 0 ? K_ : 1][V];
      if constexpr (K_ > 0) cl_weights_regs<A, V, K_>(ws + cv * V, wr);
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        if (it >= p.items) break;
        const int rl = (it * kClGroups + pg) * V;
        if (j0 + rl >= p.Lo) break;
        A acc[V][V];
#pragma unroll
        for (int i = 0; i < V; ++i)
#pragma unroll
          for (int e = 0; e < V; ++e) acc[i][e] = bv[e];
        if constexpr (K_ > 0) {
          cl_conv_ct<A, V, K_>(xs + rl * RW + cv * V, wr, acc);
        } else {
          cl_conv_rt<A, V>(xs + rl * RW + cv * V, ws + cv * V, p.kp / V, 0, p.K, acc);
        }
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const int64_t j = j0 + rl + i;
          if (j < p.Lo) cl_store<T, A, V>(yb + j * p.ysl, ch0, p.C, acc[i], p.y_vec);
        }
      }
    } else if constexpr (K_ == 0) {
      // any stride / dilation: one position at a time, positions pg, pg + 4, ...
      for (int jl = pg; jl < p.tile; jl += kClGroups) {
        if (j0 + jl >= p.Lo) break;
        A acc[V];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = bv[e];
        for (int k = 0; k < p.K; ++k) {
          A wv[V], xv[V];
          sload<A, V>(ws + k * RW + cv * V, wv);
          sload<A, V>(xs + (jl * p.s + k * p.d) * RW + cv * V, xv);
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] = dfma(wv[e], xv[e], acc[e]);
        }
        cl_store<T, A, V>(yb + (j0 + jl) * p.ysl, ch0, p.C, acc, p.y_vec);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// CL backward
// ------------------------------------------------------------------------------------------------
// Shared layout (rows of kClVecs*V values): xs[nsm_x] | dys[nsm_dy] | ws[kp] | dacc[kp + 1]
// dy tile row r is dy position j0 + dlo + r (dlo <= 0), so dy[j0 + jl] is row jl + dyr, dyr = -dlo.
// dacc[k][cv][e]: block partial of dw tap k (k < kp) and db (slot kp); one owner lane per entry.
template <typename T, typename W, int K_, int ITEMS>
DW_DEV void cl_bwd_fast(const BwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* dys,
                        const acc_of<T>* ws, acc_of<T>* dacc, acc_of<T>* dbacc, T* dxb,
                        int64_t j0, int64_t ch0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int RW = kClVecs * V;
  const int lane = threadIdx.x & 31;
  const int cv = (threadIdx.x >> 5) * 8 + (lane & 7);
  const int pg = lane >> 3;
  const int K = K_ > 0 ? K_ : p.K;
  const int nch = (K + V - 1) / V;
  const int dyr = -p.dlo;
  if (p.want_b) {
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      if (it >= p.items) break;
      const int rl = (it * kClGroups + pg) * V;
      if (j0 + rl >= p.Lo) break;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        A g[V];
        sload<A, V>(dys + (rl + dyr + i) * RW + cv * V, g);
#pragma unroll
        for (int e = 0; e < V; ++e) dbacc[e] += g[e];
      }
    }
  }
  if (p.want_x) {
    // dx[i] = sum_m wflip[m] * dy[i + pl - (Kpad - 1) + m]: row rl + bd + i + m.
    const int bd = dyr + int(p.pl) - ((K_ > 0 ? K_ : p.kp) - 1);
    DW_ASSERT(bd >= 0);
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      if (it >= p.items) break;
      const int rl = (it * kClGroups + pg) * V;
      if (j0 + rl >= p.L) break;
      A acc[V][V];
#pragma unroll
      for (int i = 0; i < V; ++i)
#pragma unroll
        for (int e = 0; e < V; ++e) acc[i][e] = A(0);
      if constexpr (K_ > 0) {
        A wflip[K_][V];  // reversed kernel from slot 0
        cl_weights_regs<A, V, K_>(ws + cv * V, wflip);
        cl_conv_ct<A, V, K_>(dys + (rl + bd) * RW + cv * V, wflip, acc);
      } else {
        cl_conv_rt<A, V>(dys + (rl + bd) * RW + cv * V, ws + cv * V, p.kp / V, p.kp - p.K, p.kp,
                         acc);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int64_t j = j0 + rl + i;
        if (j < p.L) cl_store<T, A, V>(dxb + j * p.dxsl, ch0, p.C, acc[i], p.dx_vec);
      }
    }
  }
  if (p.want_w) {
#pragma unroll
    for (int c = 0; c < nch; ++c) {
      A pdw[V][V];
#pragma unroll
      for (int kk = 0; kk < V; ++kk)
#pragma unroll
        for (int e = 0; e < V; ++e) pdw[kk][e] = A(0);
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        if (it >= p.items) break;
        const int rl = (it * kClGroups + pg) * V;
        if (j0 + rl >= p.Lo) break;
        A g[V][V];  // dy rows rl + dyr + i (positions past Lo are zero in the tile)
#pragma unroll
        for (int i = 0; i < V; ++i) sload<A, V>(dys + (rl + dyr + i) * RW + cv * V, g[i]);
#pragma unroll
        for (int r = 0; r < 2 * V - 1; ++r) {
          // x row rl + c*V + r meets dy row rl + i at tap c*V + (r - i)
          if (c * V + (r >= V ? r - V + 1 : 0) < K) {
            A xv[V];
            sload<A, V>(xs + (rl + c * V + r) * RW + cv * V, xv);
#pragma unroll
            for (int i = 0; i < V; ++i) {
              const int kk = r - i;
              if (kk >= 0 && kk < V && c * V + kk < K) {
#pragma unroll
                for (int e = 0; e < V; ++e) pdw[kk][e] = dfma(g[i][e], xv[e], pdw[kk][e]);
              }
            }
          }
        }
      }
      cl_reduce_scatter<A, V>(pdw, dacc, c * V, cv);
    }
  }
}

template <typename T, typename W>
DW_DEV void cl_bwd_general(const BwdArgs<T, W>& p, const acc_of<T>* xs, const acc_of<T>* dys,
                           const acc_of<T>* ws, acc_of<T>* dacc, acc_of<T>* dbacc, T* dxb,
                           int64_t j0, int64_t ch0) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int RW = kClVecs * V;
  const int lane = threadIdx.x & 31;
  const int cv = (threadIdx.x >> 5) * 8 + (lane & 7);
  const int pg = lane >> 3;
  const int dyr = -p.dlo;
  const int tp = p.tile;
  if (p.want_b) {
    for (int jl = pg; jl < tp; jl += kClGroups) {
      if (j0 + jl >= p.Lo) break;
      A g[V];
      sload<A, V>(dys + (jl + dyr) * RW + cv * V, g);
#pragma unroll
      for (int e = 0; e < V; ++e) dbacc[e] += g[e];
    }
  }
  if (p.want_w) {
    const int nch = p.kp / V;
    for (int c = 0; c < nch; ++c) {
      A pdw[V][V];
#pragma unroll
      for (int kk = 0; kk < V; ++kk)
#pragma unroll
        for (int e = 0; e < V; ++e) pdw[kk][e] = A(0);
      for (int jl = pg; jl < tp; jl += kClGroups) {
        if (j0 + jl >= p.Lo) break;
        A g[V];
        sload<A, V>(dys + (jl + dyr) * RW + cv * V, g);
#pragma unroll
        for (int kk = 0; kk < V; ++kk) {
          const int k = c * V + kk;
          if (k < p.K) {
            A xv[V];
            sload<A, V>(xs + (jl * p.s + k * p.d) * RW + cv * V, xv);
#pragma unroll
            for (int e = 0; e < V; ++e) pdw[kk][e] = dfma(g[e], xv[e], pdw[kk][e]);
          }
        }
      }
      cl_reduce_scatter<A, V>(pdw, dacc, c * V, cv);
    }
  }
  if (p.want_x) {
    const int64_t i0 = j0 * p.s;
    const int ti = tp * p.s;
    const int dq = p.d / p.s;
    const int dr = p.d - dq * p.s;
    const int64_t dy_a0 = j0 + p.dlo;
    for (int il = pg; il < ti; il += kClGroups) {
      const int64_t i = i0 + il;
      if (i >= p.L) break;
      const int64_t num = i + p.pl;
      int64_t q = num / p.s;
      int r = int(num - q * p.s);
      A acc[V];
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] = A(0);
      for (int k = 0; k < p.K; ++k) {
        if (r == 0) {
          A wv[V], g[V];
          sload<A, V>(ws + k * RW + cv * V, wv);
          sload<A, V>(dys + int(q - dy_a0) * RW + cv * V, g);
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] = dfma(wv[e], g[e], acc[e]);
        }
        r -= dr;
        q -= dq;
        if (r < 0) {
          r += p.s;
          q -= 1;
        }
      }
      cl_store<T, A, V>(dxb + i * p.dxsl, ch0, p.C, acc, p.dx_vec);
    }
  }
}

template <typename T, typename W, int K_, int ITEMS>
__global__ void __launch_bounds__(kThreads, kClBwdMinBlocks)
    dw_bwd_cl_kernel(const BwdArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  constexpr int RW = kClVecs * V;  // values per shared row
  A* xs = smem_base<A>();
  A* dys = xs + p.nsm_x * RW;
  A* ws = dys + p.nsm_dy * RW;
  A* dacc = ws + p.kp * RW;
  const int64_t g = blockIdx.x / p.split;
  const int64_t sidx = blockIdx.x - g * p.split;
  const int64_t c0 = g * RW;
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int cv = (tid >> 5) * 8 + (lane & 7);
  const int64_t ch0 = c0 + cv * V;
  const bool want_wb = p.want_w || p.want_b;
  for (int i = tid; i < (p.kp + 1) * RW; i += kThreads) dacc[i] = A(0);
  // fast paths: reversed kernel (run-time K after kp - K zero slots); general path: as is
  if (p.want_x) cl_load_weights<W, A>(ws, p.w, c0, p.C, p.K, p.kp, p.fast, K_ > 0 ? 0 : p.kp - p.K);
  A dbacc[V];
#pragma unroll
  for (int e = 0; e < V; ++e) dbacc[e] = A(0);
  __syncthreads();
  for (int64_t wi = sidx; wi < p.work; wi += p.split) {
    const int64_t b = udiv(wi, p.ntiles);
    const int64_t n = wi - b * p.ntiles;
    const int64_t j0 = n * p.tile;
    __syncthreads();
    {
      constexpr int G = gvec_of<T>();
      const TileSrc<T, A> tdy{dys, p.dy + b * p.dysb, j0 + p.dlo, p.Lo, p.nsm_dy, p.dy_vec};
      const TileSrc<T, A> tx{p.want_w ? xs : nullptr, p.x + b * p.xsb, j0 * p.s - p.pl, p.L,
                             p.nsm_x, p.x_vec};
      load_tiles<true, G, T, A, cl_load_unroll<G>(kClBwdLoadUnroll)>(tdy, tx, p.dysl, p.xsl, c0,
                                                                     p.C);
    }
    __syncthreads();
    T* dxb = p.want_x ? p.dx + b * p.dxsb : nullptr;
    if (K_ > 0 || p.fast) {
      cl_bwd_fast<T, W, K_, ITEMS>(p, xs, dys, ws, dacc, dbacc, dxb, j0, ch0);
    } else if constexpr (K_ == 0) {
      cl_bwd_general<T, W>(p, xs, dys, ws, dacc, dbacc, dxb, j0, ch0);
    }
  }
  if (!want_wb) return;
  if (p.want_b) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      dbacc[e] += __shfl_xor_sync(0xffffffffu, dbacc[e], 16);
      dbacc[e] += __shfl_xor_sync(0xffffffffu, dbacc[e], 8);
    }
    if (lane < 8) {
      A* dst = dacc + (p.kp * kClVecs + cv) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) dst[e] += dbacc[e];
    }
  }
  __syncthreads();
  const int total = (p.K + 1) * RW;
  for (int idx = tid; idx < total; idx += kThreads) {
    const int k = idx / RW;
    const int rem = idx - k * RW;
    const int64_t ch = c0 + rem;
    if (ch < p.C) {
      const int slot = k < p.K ? k : p.kp;
      p.part[(sidx * (p.K + 1) + k) * p.C + ch] = dacc[slot * RW + rem];
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Direct kernels: any layout, any size, no shared tiles. Used when no tile kernel applies
// (mixed layouts, very large K*dilation or stride, L == 0).
// ------------------------------------------------------------------------------------------------
template <typename T, typename W>
__global__ void __launch_bounds__(kThreads) dw_fwd_direct_kernel(const DirectArgs<T, W> p) {
  using A = acc_of<T>;
  const int64_t total = p.B * p.C * p.Lo;
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total; idx += step) {
    const int64_t j = idx % p.Lo;
    const int64_t r = idx / p.Lo;
    const int64_t c = r % p.C;
    const int64_t b = r / p.C;
    A acc = p.bias ? A(in_cvt(p.bias[c])) : A(0);
    const T* xr = p.x + b * p.xsb + c * p.xsc;
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t pos = j * p.s - p.pl + k * p.d;
      if (pos >= 0 && pos < p.L) {
        acc = dfma(A(in_cvt(p.w[c * p.K + k])), A(in_cvt(xr[pos * p.xsl])), acc);
      }
    }
    p.y[b * p.ysb + c * p.ysc + j * p.ysl] = out_cvt<T>(acc);
  }
}

template <typename T, typename W>
__global__ void __launch_bounds__(kThreads) dw_bwd_dx_direct_kernel(const DirectArgs<T, W> p) {
  using A = acc_of<T>;
  const int64_t total = p.B * p.C * p.L;
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total; idx += step) {
    const int64_t i = idx % p.L;
    const int64_t r = idx / p.L;
    const int64_t c = r % p.C;
    const int64_t b = r / p.C;
    const T* gr = p.dy + b * p.dysb + c * p.dysc;
    A acc = A(0);
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t num = i + p.pl - k * p.d;
      if (num < 0) break;  // decreasing in k
      if (num % p.s == 0) {
        const int64_t j = num / p.s;
        if (j < p.Lo) acc = dfma(A(in_cvt(p.w[c * p.K + k])), A(in_cvt(gr[j * p.dysl])), acc);
      }
    }
    p.y[b * p.ysb + c * p.ysc + i * p.ysl] = out_cvt<T>(acc);
  }
}

// Block (c, split index): partial dw/db of channel c over the (b, j) pairs of this split, one
// chunk of V taps per pass (shared memory independent of K). Writes part[sidx][k][c].
template <typename T, typename W>
__global__ void __launch_bounds__(kThreads) dw_bwd_dw_direct_kernel(const DirectArgs<T, W> p) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  __shared__ A red[(V + 1) * kWarps];
  const int64_t c = blockIdx.x / p.split;
  const int64_t sidx = blockIdx.x - c * p.split;
  const int tid = threadIdx.x;
  const int64_t npairs = p.B * p.Lo;
  const int64_t step = p.split * kThreads;
  // chunk index kc covers taps [kc*V, kc*V + V); the extra last pass (kc == nch) is db.
  const int64_t nch = p.want_w ? (p.K + V - 1) / V : 0;
  for (int64_t kc = 0; kc <= nch; ++kc) {
    const bool is_db = (kc == nch);
    if (is_db && !p.want_b) break;
    for (int i = tid; i < (V + 1) * kWarps; i += kThreads) red[i] = A(0);
    __syncthreads();
    A pdw[V];
#pragma unroll
    for (int kk = 0; kk < V; ++kk) pdw[kk] = A(0);
    A db = A(0);
    for (int64_t pi = sidx * kThreads + tid; pi < npairs; pi += step) {
      const int64_t b = pi / p.Lo;
      const int64_t j = pi - b * p.Lo;
      const A g = A(in_cvt(p.dy[b * p.dysb + c * p.dysc + j * p.dysl]));
      if (is_db) {
        db += g;
      } else {
        const T* xr = p.x + b * p.xsb + c * p.xsc;
#pragma unroll
        for (int kk = 0; kk < V; ++kk) {
          const int64_t k = kc * V + kk;
          const int64_t pos = j * p.s - p.pl + k * p.d;
          if (k < p.K && pos >= 0 && pos < p.L) {
            pdw[kk] = dfma(g, A(in_cvt(xr[pos * p.xsl])), pdw[kk]);
          }
        }
      }
    }
    if (is_db) {
      const A t = warp_sum(db);
      if ((tid & 31) == 0) red[V * kWarps + (tid >> 5)] = t;
    } else {
      cf_reduce_scatter<A, V>(pdw, red, 0);
    }
    __syncthreads();
    if (is_db) {
      if (tid == 0) {
        A s = A(0);
        for (int w = 0; w < kWarps; ++w) s += red[V * kWarps + w];
        p.part[(sidx * (p.K + 1) + p.K) * p.C + c] = s;
      }
    } else if (tid < V) {
      const int64_t k = kc * V + tid;
      if (k < p.K) {
        A s = A(0);
        for (int w = 0; w < kWarps; ++w) s += red[tid * kWarps + w];
        p.part[(sidx * (p.K + 1) + k) * p.C + c] = s;
      }
    }
    __syncthreads();
  }
}

// wf[c, k] = w[c, K - 1 - k] (contiguous (C, K)): the flipped kernel, with which the backward's
// dx is the forward of dy (dx_by_forward in depthwise_launch.cuh).
template <typename W>
__global__ void __launch_bounds__(kThreads) dw_flip_weights_kernel(const W* w, W* wf, int64_t C,
                                                                   int64_t K) {
  const int64_t n = C * K;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    const int64_t c = i / K;
    wf[i] = w[c * K + (K - 1 - (i - c * K))];
  }
}

// Partial sums to add up: n runs, run r holding split[r] consecutive (K + 1) x C partial sums at
// part[r]. One run per depthwise backward call; several when a caller (the separable backward's
// batch chunks) defers the reduction of its calls to one launch at the end. fold: set (by the
// caller's workspace allocator) for a call whose partial sums are too large to keep until then:
// they are first summed into fold ((K + 1) x C), which becomes the call's run (split 1).
constexpr int kRedMaxRuns = 8;
template <typename A>
struct RedRuns {
  const A* part[kRedMaxRuns];
  int64_t split[kRedMaxRuns];
  int n;
  A* fold;
};

// dw[c, k] = sum over all runs' splits of part[s][k][c]; db[c] likewise from slot K (or, with
// sums, the (K + 1) x C sums themselves into sums, in the partial-sum layout). A block owns
// kRedOut consecutive outputs; its threads split the splits into kRedPh phases (thread: output
// o = tid % kRedOut, phase tid / kRedOut, summing splits phase, phase + kRedPh, ... of each run
// in run order), and the phase sums are added in phase order: the order depends only on the
// runs' splits, so results are bit-identical run to run. Many short chains instead of one per
// output: one thread per output walking all splits serially took 390 us for the channel-last
// backward (528 splits x 5120 outputs, 40 blocks); 32 outputs x 4 phases per block still 68-110 us.
constexpr int kRedOut = 8;
constexpr int kRedPh = kThreads / kRedOut;
template <typename A, typename W>
__global__ void __launch_bounds__(kThreads) dw_reduce_kernel(const RedRuns<A> runs, int64_t K,
                                                             int64_t C, W* dw, W* db, A* sums) {
  __shared__ A red[kRedPh][kRedOut];
  const int64_t total = (K + 1) * C;
  const int o = int(threadIdx.x) % kRedOut;
  const int ph = int(threadIdx.x) / kRedOut;
  for (int64_t base = int64_t(blockIdx.x) * kRedOut; base < total;
       base += int64_t(gridDim.x) * kRedOut) {
    const int64_t idx = base + o;
    A s = A(0);
    if (idx < total) {
      for (int r = 0; r < runs.n; ++r) {
        const A* src = runs.part[r] + idx;
        const int64_t split = runs.split[r];
#pragma unroll 4
        for (int64_t si = ph; si < split; si += kRedPh) s += src[si * total];
      }
    }
    red[ph][o] = s;
    __syncthreads();
    if (ph == 0 && idx < total) {
      A t = red[0][o];
#pragma unroll
      for (int q = 1; q < kRedPh; ++q) t += red[q][o];
      if (sums != nullptr) {
        sums[idx] = t;
      } else {
        const int64_t k = idx / C;
        const int64_t c = idx - k * C;
        W* dst = (k < K) ? (dw ? dw + c * K + k : nullptr) : (db ? db + c : nullptr);
        if (dst != nullptr) *dst = out_cvt<W>(t);
      }
    }
    __syncthreads();
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
