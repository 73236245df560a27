// Launch planning for the depthwise kernels: path choice (CF / CL tile kernels, the
// register-direct CF / CL forwards and backwards, the tensor-core CF kernels, or the direct
// kernels), tile sizes, shared-memory extents, grid and split sizes. Torch-free so that the same planning runs under the host emulator
// (DW_EMULATE). The includer defines
//   DW_HOST_CHECK(cond, msg)  host-side argument / size check that throws
//   DW_CHECK_LAUNCH(name)     error check right after a kernel launch
#pragma once

#include "common/dispatch.h"
#include "cuda/depthwise_kernels.cuh"
#include "cuda/depthwise_fwd_reg.cuh"
#include "cuda/depthwise_bwd_reg.cuh"
#include "cuda/depthwise_bwd_cl_reg.cuh"
#include "cuda/depthwise_tc.cuh"
#include "cuda/depthwise_rows.cuh"

#ifndef DW_EMULATE
#include <cuda_runtime.h>

#include "cuda/smem_opt_in.cuh"
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#ifndef DW_HOST_CHECK
#error "define DW_HOST_CHECK(cond, msg) before including depthwise_launch.cuh"
#endif
#ifndef DW_CHECK_LAUNCH
#error "define DW_CHECK_LAUNCH(name) before including depthwise_launch.cuh"
#endif

#ifdef DW_EMULATE
#define DW_LAUNCH(kern, grid, smem, stream, ...) \
  ::dwemu::launch((kern), (grid), ::sepconv1d::cuda::dwk::kThreads, (smem), __VA_ARGS__)
#else
#define DW_LAUNCH(kern, grid, smem, stream, ...)                                    \
  (kern)<<<dim3(static_cast<unsigned>(grid)), ::sepconv1d::cuda::dwk::kThreads, (smem), \
           (stream)>>>(__VA_ARGS__)
#endif

namespace sepconv1d {
namespace cuda {
namespace dwk {

// Strides of a (B, C, L) tensor in elements.
struct Desc3 {
  int64_t sb, sc, sl;
};

// Problem sizes: y[b, c, j] = bias[c] + sum_k w[c, k] * x[b, c, j*s - pl + k*d].
struct Problem {
  int64_t B, C, L, Lo, K, s, d, pl;
};

struct DevInfo {
  int device = 0;
  int sms = 132;
  int64_t smem_optin = 48 * 1024;  // largest dynamic shared memory per block
};

// Test knobs (the extension always uses the defaults).
struct Tuning {
  bool allow_specialized = true;  // K = 3, 4, 5, 9 compiled kernels (rows: 3, 5, 7, 9, 11, 31)
  bool allow_reg_fwd = true;      // register-direct CF and CL forwards (depthwise_fwd_reg.cuh)
  bool allow_reg_bwd = true;      // register-direct CF and CL backwards (depthwise_bwd_reg*.cuh)
  bool allow_tc = true;           // tensor-core CF forward / backward of half types (depthwise_tc.cuh)
  int tc_units = 2;               // ... the backward staging rows of alignment <= tc_units bytes
                                  // in whole 16-byte units (TcAlign::units; 0: 2-byte rows
                                  // element-wise)
  bool reg_shifted = true;        // register-direct CF kernels on co-aligned rows off the 16-byte
                                  // grid too (cf_coaligned), each row on its own grid
  bool reg_realign = true;        // with reg_shifted: the CF forward on x and y rows at different
                                  // shifts too (x realigned in registers, kRealign), and the
                                  // backward on x at another shift than dy and dx (kRealignX)
  bool force_direct = false;
  int64_t smem_limit = -1;        // < 0: the device limit
  int64_t max_grid = INT_MAX;     // cap on grid size (tests force the grid-stride loops)
  int64_t force_split = 0;        // > 0: blocks per channel (group) in split kernels
  bool allow_rt_dense = true;     // the run-time-K CF forward's dense form (long float kernels)
  int rt_rows = -1;               // the run-time-K CF forward's row groups (rt_row_group): -1
                                  // where they measured faster, 1 wherever a row is at most
                                  // kThreads / 2 items, 0 never
  bool allow_ystage = true;       // CF tile forwards stage y rows that are not 16-byte aligned
                                  // through shared memory (run-time K: float32 / float64;
                                  // compiled K: rows without V-element alignment)
  bool allow_ystage_ct = true;    // ... and, of those, the compiled-K forward (A/B of its own)
  bool force_ystage = false;      // stage wherever the run-time-K kernel can, one item per
                                  // thread in one row per block included (A/B)
  bool allow_rt_regs = true;      // the run-time-K CF backward's dw partials in registers (float
                                  // accumulation, kp <= kBwdRtRegsMax)
  bool allow_dx_forward = true;   // the backward's dx as a forward of dy (dx_by_forward)
  int rows = -1;                  // short-row CF kernels: -1 where they measured faster (rows_
                                  // preferred), 0 never, 1 wherever they apply (rows_plan)
  int64_t rows_span = 0;          // rows kernels: outputs per warp pass; 0: rows_plan's rule
  int rows_db = -1;               // rows forward double-buffered: -1 where it measured faster
                                  // (rows_db_preferred), 0 never, 1 wherever it fits
  int rows_words = -1;            // rows forward on word-aligned rows by 4-byte copies: -1 or 1
                                  // wherever it applies (rows_words_apply) and fits, 0 never
  int rows_words_bwd = -1;        // the rows backward likewise (rows_words_bwd_apply)
  int rows_words16 = -1;          // the words forward copies and stores 16 bytes at a time
                                  // between the row ends where a unit's rows allow: -1 from K 9,
                                  // 1 at every K, 0 never
  int rows_mma = -1;              // the rows kernels' arithmetic on the tensor cores (half
                                  // types) where compiled (rows_mma_compiled): -1 where it
                                  // measured faster, 1 wherever compiled, 0 never
  int rows_mma_bwd = -1;          // the rows backwards' dx likewise, where compiled
                                  // (rows_mma_bwd_compiled; 0 never; also off where rows_mma is 0)
  int rows_mma_dw = -1;           // with it, the backwards' dw / db too (0: on the CUDA cores)
};

enum class Path { CF, CL, Direct };

// Longest padded kernel (kp) whose dw partials the run-time-K CF backward keeps in registers
// (tiers of 16, 32, 64 and 128 taps; longer kernels reduce each chunk of V taps per tile).
constexpr int64_t kBwdRtRegsMax = 128;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }  // a >= 0, b > 0
inline int64_t floor_div(int64_t a, int64_t b) {                           // b > 0
  int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}
inline int64_t floor_to(int64_t a, int64_t m) { return floor_div(a, m) * m; }
inline int64_t pos_mod(int64_t a, int64_t m) { return a - floor_to(a, m); }
inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

inline bool ptr_aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Unit stride along L where a tensor of that length has more than one position.
inline bool cf_ok(const Desc3& t, int64_t len) { return len <= 1 || t.sl == 1; }
// Unit stride along C where there is more than one channel.
inline bool cl_ok(const Desc3& t, int64_t C) { return C <= 1 || t.sc == 1; }

// Vector (V-element) accesses of CF rows / CL positions are aligned for every row when the base
// pointer and the strides that step between rows are.
template <typename T, int V>
bool cf_vec_ok(const void* p, const Desc3& t) {
  return p != nullptr && ptr_aligned(p, V * sizeof(T)) && t.sb % V == 0 && t.sc % V == 0;
}
template <typename T, int V>
bool cl_vec_ok(const void* p, const Desc3& t) {
  return p != nullptr && ptr_aligned(p, V * sizeof(T)) && t.sb % V == 0 && t.sl % V == 0;
}

// Access level (kVecGroup / kVecOne / 0, see depthwise_kernels.cuh) for fetch groups of G vectors.
template <typename T, int V, int G>
int cf_vec_level(const void* p, const Desc3& t) {
  if (cf_vec_ok<T, G * V>(p, t)) return kVecGroup;
  return cf_vec_ok<T, V>(p, t) ? kVecOne : 0;
}
// Calls f(std::true_type{}) or f(std::false_type{}): a run-time flag as a template argument.
template <typename F>
void with_flag(bool flag, F&& f) {
  if (flag) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

// Whether every row of CF tensors a and b (B x C rows) lies at the same shift off the 16-byte grid,
// which the register-direct kernels need (they walk each row on its own grid, reg_row_shift): the
// base pointers, and the batch and channel strides where those dimensions have more than one
// entry, agree modulo 16 bytes. Rows 16-byte aligned in both are co-aligned.
template <typename T>
bool cf_coaligned(const void* a, const Desc3& ad, const void* b, const Desc3& bd, int64_t B,
                  int64_t C) {
  const auto m16 = [](int64_t v) { return v % 16 == 0; };
  const int64_t e = int64_t(sizeof(T));
  return m16(int64_t(reinterpret_cast<uintptr_t>(a) - reinterpret_cast<uintptr_t>(b))) &&
         (B <= 1 || m16((ad.sb - bd.sb) * e)) && (C <= 1 || m16((ad.sc - bd.sc) * e));
}

// Where the realigning register-direct kernels (x at another shift than y, or than dy and dx)
// beat what such rows took before (H100, csrc/NOTES.md sixty-eighth session). Forward: half types,
// over the tensor-core kernel (bf16 slice K 9 107 against 121 us, fp16 K 5 73 against 100, Mamba's
// 'valid' 130 against 169); float32 keeps the tile kernel, at copy speed there (K 9 183 against
// the realigning 187). Backward: float32 (K 3 / K 9 4-7%) and half types to K 5 (bf16 K 3 169
// against 181, fp16 K 5 136 against 202); the half K 9 backward lost to the tensor-core one (202
// against 180 us). Kernels that would not pay are not compiled.
template <typename T, int K_>
constexpr bool reg_realign_fwd_pays() {
  return sizeof(T) == 2;
}
template <typename T, int K_>
constexpr bool reg_realign_bwd_pays() {
  return sizeof(T) == 4 || (sizeof(T) == 2 && K_ <= 5);
}

template <typename T, int V, int G>
int cl_vec_level(const void* p, const Desc3& t) {
  if (cl_vec_ok<T, G * V>(p, t)) return kVecGroup;
  return cl_vec_ok<T, V>(p, t) ? kVecOne : 0;
}

// Alignment in bytes of every row of a CF tensor: the largest of 16 / 8 / 4 / 2 (at least the
// element size) that divides the base pointer and the batch / channel strides in bytes. The
// tensor-core kernels stage and store rows in units of it (TcAlign); 16 is cf_vec_level's
// kVecGroup for 16-bit T.
template <typename T>
int cf_row_granule(const void* p, const Desc3& t) {
  const uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p)) | uint64_t(t.sb) * sizeof(T) |
                        uint64_t(t.sc) * sizeof(T);
  int g = 16;
  while (g > int(sizeof(T)) && bits % uint64_t(g) != 0) g /= 2;
  return g;
}

inline int64_t smem_limit(const DevInfo& dev, const Tuning& tune) {
  return tune.smem_limit >= 0 ? tune.smem_limit : dev.smem_optin;
}

// Everything a tile kernel keeps in int must stay far from overflow; shared-memory sizes bound
// most of it, this bounds the rest.
inline bool tile_ints_ok(const Problem& pr) {
  const int64_t lim = int64_t(1) << 24;
  return pr.K <= lim && pr.s <= lim && pr.d <= lim && pr.pl <= lim;
}

// Opts a kernel in to more than 48 KiB of dynamic shared memory and prefers the maximum shared
// memory carveout (the tile kernels are occupancy-bound by shared memory, not by L1 hits).
template <typename Kern>
void prepare_kernel(Kern kern, int64_t smem, int device) {
#ifndef DW_EMULATE
  DW_HOST_CHECK(opt_in_smem(reinterpret_cast<const void*>(kern), smem, device,
                            /*max_carveout=*/true) == cudaSuccess,
                "cudaFuncSetAttribute(MaxDynamicSharedMemorySize) failed");
#else
  (void)kern;
  (void)smem;
  (void)device;
#endif
}

// Resident blocks per SM of kern with smem bytes of dynamic shared memory (occupancy API, cached
// per kernel, device and size); the emulator, or a failed query, gives `fallback` (the
// __launch_bounds__ minimum).
template <typename Kern>
int64_t resident_blocks(Kern kern, size_t smem, int device, int fallback) {
#ifdef DW_EMULATE
  (void)kern;
  (void)smem;
  (void)device;
  return fallback;
#else
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t>, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(reinterpret_cast<const void*>(kern), device, smem);
  auto it = cache.find(key);
  if (it == cache.end()) {
    int nb = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kern, kThreads, smem) != cudaSuccess) {
      (void)cudaGetLastError();  // a sizing hint only: clear this call's error
      nb = 0;
    }
    if (nb < 1) nb = fallback;
    it = cache.emplace(key, nb).first;
  }
  return it->second;
#endif
}

// Threads per row group of the run-time-K CF forward (dw_fwd_cf_rt_kernel) for rows of
// row_items items: the items rounded up to whole quarter warps where at least two such groups fit
// a block, else kThreads (one row's tile per block). Tuning::rt_rows -1: where that measured
// faster (float32, B32 C512 unless noted, csrc/NOTES.md, sixty-first to sixty-third sessions):
// rows whose y is 16-byte aligned or staged through shared memory (`y_coalesced`; H200, aligned
// L1024 K63 1.48x; H100, staged, L835 K63 1.30x, K33 1.25x against one row per block stored
// directly), and other rows (half types' unaligned y, stored element by element) in groups of at
// most 32 threads, four or more rows per block (H200, L418 K44 1.20x, C1024 L250 K33 1.65x, B128
// L210 K41 2.34x): in two groups per block they lost (L835 K33 0.80x), twice the rows in flight
// per SM storing twice as many partial sectors. 1: wherever two groups fit; 0: never.
constexpr int64_t kRtRowGroupMaxItems = kThreads / 2;  // longer rows never share a block
inline int64_t rt_row_group(int64_t row_items, bool y_coalesced, const Tuning& tune) {
  if (tune.rt_rows == 0 || row_items > kRtRowGroupMaxItems) return kThreads;
  const int64_t group = ceil_div(row_items, 8) * 8;
  return tune.rt_rows > 0 || y_coalesced || group <= 32 ? group : kThreads;
}

// Calls f(IC<K>{}) with K in {3, 4, 5, 9} when a compiled kernel exists and applies, else
// f(IC<0>{}).
template <typename T, typename F>
void with_kernel_size(const Problem& pr, bool fast, const Tuning& tune, F&& f) {
  if constexpr (std::is_same_v<T, double>) {
    f(IC<0>{});  // float64 is for correctness: generic kernels only
  } else {
    if (fast && tune.allow_specialized) {
      dispatch_kernel_size(pr.K, [&](auto kc) { f(IC<decltype(kc)::value>{}); });
    } else {
      f(IC<0>{});
    }
  }
}

// Channel vectors per block of the register-direct channel-last kernels: the power of two that
// covers the tensor's ncv channel vectors, at most one per thread.
inline int64_t cl_reg_channel_block(int64_t ncv) {
  int64_t cb = 1;
  while (cb < ncv && cb < kThreads) cb *= 2;
  return cb;
}

// Blocks per channel (CF) / channel group (CL) of a split kernel: enough blocks for ~16 per SM in
// all, never more than the work items of one channel.
inline int64_t choose_split(int64_t groups, int64_t work, const DevInfo& dev, const Tuning& tune) {
  int64_t split = tune.force_split > 0 ? tune.force_split : ceil_div(int64_t(dev.sms) * 16, groups);
  split = clamp64(split, 1, std::max<int64_t>(work, 1));
  split = std::min<int64_t>(split, std::max<int64_t>(1, int64_t(INT_MAX) / groups));
  return split;
}

// Blocks per channel group of the channel-last register-direct kernels (few groups of many long
// grid-stride walks over `units` work units each; `per_sm` blocks resident per SM): the split, up
// to choose_split's, that best fills whole waves of the device (groups * split against multiples
// of SMs * per_sm) and divides the units evenly; of splits within half a percent of the best, the
// largest. The candidates are the largest split that fits each whole number of waves, and
// choose_split's own (a few host operations per launch). On the H200, against one wave rounded
// up (the backward) or 16 blocks per SM (the forward): channel-last backward bf16 K = 5 76 -> 90%
// of a copy, K = 9 59 -> 65%, Mamba 77 -> 82%; forward +0.3-1%. (The channel-first
// register-direct backward, one group per channel, measured slightly slower with it: it keeps
// choose_split.)
inline int64_t wave_split(int64_t groups, int64_t units, int64_t per_sm, const DevInfo& dev,
                          const Tuning& tune) {
  const int64_t most = choose_split(groups, units, dev, tune);
  if (tune.force_split > 0) return most;
  const int64_t cap = std::max<int64_t>(1, int64_t(dev.sms) * std::max<int64_t>(per_sm, 1));
  const int64_t u = std::max<int64_t>(units, 1);
  auto efficiency = [&](int64_t s) {
    const double waves = double(ceil_div(groups * s, cap));
    return double(groups * s) / (waves * double(cap)) * (double(u) / double(s)) / double(ceil_div(u, s));
  };
  int64_t best = 1;
  double best_eff = -1.0;
  const int64_t nwaves = ceil_div(groups * most, cap);
  for (int64_t w = 1; w <= nwaves + 1; ++w) {
    const int64_t s = w > nwaves ? most : clamp64(w * cap / groups, 1, most);
    const double eff = efficiency(s);
    if (eff >= best_eff - 0.005 && s >= best) best = s;
    best_eff = std::max(best_eff, eff);
  }
  return best;
}


// ------------------------------------------------------------------------------------------------
// Short-row kernels (depthwise_rows.cuh)
// ------------------------------------------------------------------------------------------------
constexpr int64_t kRowsMaxLen = 2048;  // longest row (input or output) the rows kernels take

// Byte extent [lo, hi) of a (B, C, len) view with non-negative strides (all of it lies in the
// view's storage).
template <typename T>
std::pair<const char*, const char*> view_extent(const T* p, const Desc3& d, int64_t B, int64_t C,
                                                int64_t len) {
  const int64_t last = (B - 1) * d.sb + (C - 1) * d.sc + (len - 1) * d.sl;
  const char* lo = reinterpret_cast<const char*>(p);
  return {lo, lo + (last + 1) * int64_t(sizeof(T))};
}

// Geometry of one rows launch: rows per warp pass, batch rows per block, blocks per channel.
struct RowsPlan {
  int rpw = 0;
  int64_t per = 0, split = 0;
};

// Whether the rows kernels apply (CF layout is the caller's test): float / half / bfloat16,
// stride 1, dilation 1, 1 <= K <= 32, 0 <= pad_left < K, rows of at most kRowsMaxLen.
template <typename T>
bool rows_apply(const Problem& pr, bool fast) {
  return sizeof(T) <= 4 && fast && pr.K >= 1 && pr.K <= kRowsMaxTaps && pr.pl >= 0 &&
         pr.pl < pr.K && pr.L >= 1 && pr.L <= kRowsMaxLen && pr.Lo <= kRowsMaxLen;
}

// Where the rows kernels measured faster than the kernel the problem takes otherwise (H200,
// scripts/depthwise_rows_ab.py, csrc/NOTES.md, thirty-ninth, forty-sixth, fiftieth and fifty-first
// sessions).
// `aligned`: the rows of every tensor read or written are 16-byte aligned (the register-direct
// kernels' condition).
//   forward, rows of at most 256: always (with the words kernel: FastConformer L210 K9 bf16 3.8x,
//     float32 2.7x; Citrinet L250 K11 3.3x / 3.0x; L64 K3 3.4x / 2.2x; aligned L256 K5 1.5x / 1.03x);
//   forward, longer rows that are not aligned or whose K is not compiled: half types up to 1024
//     (Conformer L500 K31 1.3x, L835 / 1023 K9 1.4x, Vocos L1024 K7 1.4x; L2047 K15 0.89x), float32
//     up to 2048 (Conformer 1.6x, L835 K9 1.3x, Vocos 1.2x, L1023 K9 1.03x, L2047 K15 2.2x); aligned
//     rows with a compiled K keep the register-direct kernels (L2048 K9 0.68x / 0.61x);
//   backward (remeasured in the fifty-first session with K 3, 5 and 9 exact in the rows kernels; 7,
//     11 and 31 became exact after, which only speeds the rows side further; bf16 / float32):
//     rows of at most 256: always (L64 K3 3.7x / 2.3x, FastConformer L210 2.8x / 2.8x, Citrinet
//       L250 1.4x / 2.2x, aligned L256 K5 1.6x / 1.10x);
//     rows of 257-1024 that are not aligned or whose K is not compiled: float32 at any K, half
//       types up to K 11 (L300 K7 1.75x / 2.7x, L500 K9 1.41x, L500 K11 1.14x / 1.66x, L835 K9
//       1.09x / 1.20x, L1023 K9 1.12x / 1.06x, Vocos L1024 K7 1.06x / 1.19x, float32 L835 K15 1.25x
//       and Conformer L500 K31 1.61x; half types at K15 L835 0.81x, Conformer K31 0.69x);
//     aligned rows with a compiled K: half types up to 512 (L512 K9 1.15x, L512 K3 1.09x; L1000 K3
//       0.78x, L1024 K9 0.84x), float32 none (L500 K9 0.77x, L512 K3 0.80x);
//     longer rows lose (L2047 K15 0.74x, L2048 K9 0.80x / 0.61x).
// `mma_reach`: where the words kernels' tensor-core arithmetic will run (rows_mma_reach), the
// longest rows the rules below give way to: every half-type row up to it goes to the rows
// kernels. From the tables (H100, depthwise_rows_ab.py rule_mma, csrc/NOTES.md, fifty-seventh
// session; bf16, fp16 alike):
//   forward, half types from K 13: kRowsMaxLen (L1500 K21 1.25x, L2048 K15 and K31 1.03x; up to
//     1024 the rule above already took them: L512 K31 2.2x, L1024 K31 1.6x);
//   backward, half types where dx runs on the tensor cores (tap counts from 12), dx alone there: 512 (Conformer L500 K31 1.09x,
//     L500 K13 1.26x, L512 K15 1.11x, L300 K21 1.52x; L512 K31 0.98x, L768 K21 1.00x, L1000 K15
//     0.92x, L1024 K31 0.86x);
//   backward with dw / db on the tensor cores too: 1536 (Conformer 1.27x, L512 K31 1.33x, L768 K21
//     1.33x, L1000 K15 1.11x, L1024 K31 1.09x, L1500 K21 1.13x; L2048 K15 and K31 0.85x);
//   the other rows backward (odd lengths, views one element in; depthwise_rows_ab.py mma_bwd_odd,
//     fifty-eighth session) alike: with dw / db on the tensor cores L301 K13 1.46x, L499 K21 1.43x,
//     L501 K31 1.15x, L835 K15 1.12x, L1023 K13-31 1.13-1.16x, L1501 K21 1.07x (L2047 K15 and K31
//     0.77x); with dx alone L301 K13 1.34x, L499 K21 1.09x, L501 K31 1.00x (L835 K15 0.91x, L1023
//     K31 0.83x).
// SEPCONV1D_DW_ROWS (Tuning::rows) overrides.
template <typename T>
bool rows_preferred(const Problem& pr, bool aligned, bool backward, int64_t mma_reach) {
  const int64_t len = std::max(pr.L, pr.Lo);
  bool compiled = false;
  dispatch_kernel_size(pr.K, [&](auto kc) { compiled = decltype(kc)::value > 0; });
  if (len <= 256 || (sizeof(T) == 2 && len <= mma_reach)) return true;
  if (backward) {
    if (sizeof(T) == 2) return pr.K <= 11 && (len <= 512 || ((!aligned || !compiled) && len <= 1024));
    return (!aligned || !compiled) && len <= 1024;
  }
  return (!aligned || !compiled) && len <= (sizeof(T) == 2 ? 1024 : kRowsMaxLen);
}

// Whether the words backward at tap count KP computes dx on the tensor cores (half types,
// rows_mma_bwd_compiled, dx wanted, not switched off), and whether dw / db go there beside it
// (`dw_db` wanted, Tuning::rows_mma_dw): the launch and rows_mma_reach's rule both ask these.
template <typename T, int KP>
bool rows_bwd_mma(bool want_x, const Tuning& tune) {
  return sizeof(T) == 2 && rows_mma_bwd_compiled<KP>() && want_x && tune.rows_mma != 0 && tune.rows_mma_bwd != 0;
}
template <typename T, int KP>
bool rows_bwd_mma_dw(bool want_x, bool dw_db, const Tuning& tune) {
  return rows_bwd_mma<T, KP>(want_x, tune) && dw_db && tune.rows_mma_dw != 0;
}

// How far the rows kernels' tensor-core arithmetic moves rows_preferred's rules (0: not at all):
// half types, the forward from K 13 where the words kernel takes the rows (`words`:
// rows_words_apply; it measured 1.3x or more over the CUDA cores there), the backward wherever its
// dx runs there (rows_bwd_mma at the tap count the launch dispatches to), with (`dw_db`,
// rows_bwd_mma_dw) or without dw / db beside it, in either rows backward (the words kernel and the
// other, whose tensor cores run on rows longer than 256, measured alike; `words` is not read).
template <typename T>
int64_t rows_mma_reach(const Problem& pr, bool words, bool backward, bool dw_db, const Tuning& tune) {
  if (sizeof(T) != 2 || tune.rows_mma == 0) return 0;
  if (!backward) return words && pr.K >= 13 ? kRowsMaxLen : 0;
  int64_t reach = 0;
  dispatch_padded_taps(pr.K, tune.allow_specialized, [&](auto kp) {
    constexpr int KP = decltype(kp)::value;
    if constexpr (KP > 0) {
      if (rows_bwd_mma<T, KP>(true, tune)) reach = rows_bwd_mma_dw<T, KP>(true, dw_db, tune) ? 1536 : 512;
    }
  });
  return reach;
}

// Where the double-buffered rows forward (the next pass's rows fetched by cp.async while this pass
// computes) measured faster than the single-buffered one (H200, scripts/depthwise_rows_ab.py db,
// csrc/NOTES.md, forty-fifth session): float32 everywhere (0.97-1.28x: Conformer L500 K31 1.23x,
// L2047 K15 1.28x, FastConformer L210 0.97x), half types on rows of at most 128 or longer than 256
// (L64 K3 1.05x, Conformer 1.13x, L835 K9 1.17x, L1024 K7 1.20x). Half-type rows of 129-256 take
// 8 rows per warp pass, whose second buffer halves the blocks per SM: FastConformer L210 0.91x,
// Citrinet L250 1.00x, L256 K5 0.99x. SEPCONV1D_DW_ROWS_DB (Tuning::rows_db) overrides.
template <typename T>
bool rows_db_preferred(const Problem& pr) {
  const int64_t len = std::max(pr.L, pr.Lo);
  return sizeof(T) == 4 || len <= 128 || len > 256;
}

// The words forward's grid: each warp takes a run of upw consecutive units (RowsUnit), so that the
// next unit's copies overlap this one's work. Blocks are a whole number b of blocks per SM (b up to
// the resident ones, per_sm), so that every SM gets the same work; of the b whose runs cover the
// units with the least excess (b * upw against units / (SMs * warps)), within 2% of the best, the
// largest (more warps to hide latency).
struct RowsWarpRuns {
  int64_t grid, upw;
};
inline RowsWarpRuns rows_warp_runs(int64_t units, int64_t per_sm, const DevInfo& dev, const Tuning& tune) {
  const int64_t sms = std::max<int64_t>(dev.sms, 1);
  const int64_t most = std::max<int64_t>(1, std::min(per_sm, ceil_div(tune.max_grid, sms)));
  auto runs = [&](int64_t b) {  // b blocks per SM (the grid capped by max_grid: tests)
    const int64_t blocks = std::min(sms * b, tune.max_grid);
    const int64_t upw = ceil_div(units, blocks * kWarps);
    return RowsWarpRuns{ceil_div(ceil_div(units, upw), int64_t(kWarps)), upw};
  };
  auto efficiency = [&](int64_t b) {
    return double(units) / double(std::min(sms * b, tune.max_grid) * kWarps * runs(b).upw);
  };
  double best = 0.0;
  for (int64_t b = 1; b <= most; ++b) best = std::max(best, efficiency(b));
  int64_t pick = 1;
  for (int64_t b = 1; b <= most; ++b) {
    if (efficiency(b) >= 0.98 * best) pick = b;
  }
  return runs(pick);
}

// Whether every row of a (B, C, len) view starts on a 4-byte boundary (for half types: an aligned
// base and even batch / channel strides; float32 rows always do). Whole words also need even
// lengths, which the callers test.
template <typename T>
bool word_rows(const T* p, const Desc3& d) {
  return sizeof(T) == 4 || (ptr_aligned(p, 4) && d.sb % 2 == 0 && d.sc % 2 == 0);
}

// Whether the words forward (dw_fwd_cf_rows_words_kernel) applies: every row of x and y starts on
// a 4-byte boundary and, for half types, rows hold whole words (even lengths).
template <typename T>
bool rows_words_apply(const Problem& pr, const T* x, const Desc3& xd, const T* y, const Desc3& yd) {
  if (sizeof(T) == 4) return true;
  return word_rows(x, xd) && word_rows(y, yd) && pr.L % 2 == 0 && pr.Lo % 2 == 0;
}

// Whether the words backward (dw_bwd_cf_rows_words_kernel) applies: as rows_words_apply, for dy
// and the tensors the call reads or writes (x where dw is wanted, dx where dx is).
template <typename T>
bool rows_words_bwd_apply(const Problem& pr, const T* dy, const Desc3& dyd, const T* x,
                          const Desc3& xd, const T* dx, const Desc3& dxd, bool want_w) {
  if (sizeof(T) == 4) return true;
  return word_rows(dy, dyd) && (!want_w || word_rows(x, xd)) && (dx == nullptr || word_rows(dx, dxd)) &&
         pr.L % 2 == 0 && pr.Lo % 2 == 0;
}

template <typename T>
bool rows_wanted(const Problem& pr, bool fast, bool aligned, bool backward, int64_t mma_reach,
                 const Tuning& tune) {
  if (!rows_apply<T>(pr, fast) || tune.rows == 0) return false;
  return tune.rows == 1 || rows_preferred<T>(pr, aligned, backward, mma_reach);
}

// Rows per warp pass: about `span` outputs per pass, 2048 for half types on rows of at most 256,
// else 512 (H200, B128 C512 L210 K9 bf16: forward 54 -> 45 us, backward 109 -> 96 with 8 rows per
// pass instead of 3; longer rows and float32 lose with more, the shared memory then limiting the
// blocks per SM; csrc/NOTES.md, thirty-ninth session); blocks per channel as the split kernels.
template <typename T>
RowsPlan rows_plan(const Problem& pr, const DevInfo& dev, const Tuning& tune) {
  RowsPlan p;
  const int64_t len = std::max<int64_t>(std::max(pr.L, pr.Lo), 1);
  const int64_t span =
      tune.rows_span > 0 ? tune.rows_span : (sizeof(T) == 2 && len <= 256 ? 2048 : 512);
  p.rpw = int(clamp64(ceil_div(span, len), 1, kRowsMaxRowsPerWarp));
  const int64_t passes = ceil_div(pr.B, int64_t(kWarps) * p.rpw);
  const int64_t split = choose_split(pr.C, passes, dev, tune);
  p.per = ceil_div(pr.B, split);
  p.split = ceil_div(pr.B, p.per);
  return p;
}

template <typename T, typename W>
bool forward_rows(const Problem& pr, const T* x, const Desc3& xd, const W* w, const W* bias, T* y,
                  const Desc3& yd, cudaStream_t stream, const DevInfo& dev, const Tuning& tune) {
  if constexpr (sizeof(T) > 4) {
    return false;
  } else {
    const RowsPlan plan = rows_plan<T>(pr, dev, tune);
    RowsFwdArgs<T, W> a{};
    a.x = x;
    a.w = w;
    a.bias = bias;
    a.y = y;
    std::tie(a.x_lo, a.x_hi) = view_extent(x, xd, pr.B, pr.C, pr.L);
    a.B = pr.B;
    a.C = pr.C;
    a.xsb = xd.sb;
    a.xsc = xd.sc;
    a.ysb = yd.sb;
    a.ysc = yd.sc;
    a.L = int(pr.L);
    a.Lo = int(pr.Lo);
    a.K = int(pr.K);
    a.pl = int(pr.pl);
    a.rpw = plan.rpw;
    a.nv = int(ceil_div(pr.Lo, 8));
    a.per = plan.per;
    a.split = plan.split;
    const int64_t grid = std::min<int64_t>(pr.C * plan.split, std::min<int64_t>(tune.max_grid, INT_MAX));
    bool launched = false;
    dispatch_padded_taps(pr.K, tune.allow_specialized, [&](auto kp) {
      constexpr int KP = decltype(kp)::value;
      if constexpr (KP > 0) {  // dispatch_padded_taps never calls KP = 0 (dispatch_int's miss)
        a.nx = 8 * (a.nv + rows_window_vecs<KP>() - 1);
        a.pitch = a.nx + 8 * a.nv;
        const int64_t row_bytes = int64_t(kWarps) * a.rpw * int64_t(sizeof(T));
        // Word-aligned rows: x copied straight to its staged place, with no realignment. It
        // measured faster than the other rows forwards wherever it applies (1.00-2.2x:
        // scripts/depthwise_rows_ab.py words; csrc/NOTES.md, forty-sixth session). Where a unit's
        // rows (rpw batch rows) share one offset within 16-byte chunks (the batch stride a whole
        // number of chunks), x and y move 16 bytes at a time between the row ends, x staged at
        // that offset: the windows then start up to E - 1 elements into their vectors (OFF), which
        // the staged rows' vectors cover. Elsewhere by 4-byte words (OFF 0 or 1). The 16-byte
        // form takes fewer copy instructions but often one more vector per window, so it pays
        // from K 9 (H200, H100 in brackets; `depthwise_rows_ab.py words16`, csrc/NOTES.md,
        // fiftieth session: FastConformer L210 K9 bf16 1.22x [1.24x], float32 1.16x [1.03x];
        // Citrinet L250 K11 1.10x / 1.31x; Conformer L500 K31 1.03x / 1.09x; L2047 K15 float32
        // 1.19x; below K 9 half types lose, Vocos L1024 K7 bf16 0.94x [0.95x], L64 K3 0.92x
        // [0.91x], while float32 wins on the H200 only, 1.02-1.12x [0.95-1.05x]).
        constexpr int E = int(16 / sizeof(T));
        const int nx_words = 8 * (a.nv + rows_window_vecs<KP, E - 1>() - 1);
        const bool chunks = tune.rows_words16 == 1 || (tune.rows_words16 < 0 && pr.K >= 9);
        const bool one_row = a.rpw == 1 || pr.B == 1;  // a unit of one row
        const int x16 = chunks && (one_row || (xd.sb * int64_t(sizeof(T))) % 16 == 0) ? 1 : 0;
        const int y16 = chunks && (one_row || (yd.sb * int64_t(sizeof(T))) % 16 == 0) ? 1 : 0;
        // The tensor-core arithmetic reads whole 128-output blocks: rows staged that far, where
        // that fits.
        auto words_smem = [&](int nx) { return row_bytes * (2 * nx + 8 * a.nv + (y16 ? E : 0)); };
        bool mma = sizeof(T) == 2 && rows_mma_compiled<KP>() && tune.rows_mma != 0;
        int nx_run = mma ? std::max(nx_words, 8 * rows_mma_vecs(a.nv, rows_mma_max_shifts<T, KP>())) : nx_words;
        if (mma && words_smem(nx_run) > smem_limit(dev, tune)) {
          mma = false;
          nx_run = nx_words;
        }
        const int64_t smem_words = words_smem(nx_run);
        if (tune.rows_words != 0 && rows_words_apply<T>(pr, x, xd, y, yd) &&
            smem_words <= smem_limit(dev, tune)) {
          a.nx = nx_run;
          a.x16 = x16;
          a.y16 = y16;
          a.mma = mma ? 1 : 0;
          a.raw_pitch = 0;
          const int64_t smem = smem_words;
          auto kern = &dw_fwd_cf_rows_words_kernel<T, W, KP>;
          if constexpr (sizeof(T) == 2 && rows_mma_compiled<KP>()) {
            if (mma) kern = &dw_fwd_cf_rows_words_mma_kernel<T, W, KP>;
          }
          prepare_kernel(kern, smem, dev.device);
          a.groups = ceil_div(pr.B, int64_t(a.rpw));
          a.units = pr.C * a.groups;
          const RowsWarpRuns runs = rows_warp_runs(a.units, resident_blocks(kern, size_t(smem), dev.device, 4),
                                                   dev, tune);
          a.upw = runs.upw;
          DW_LAUNCH(kern, runs.grid, size_t(smem), stream, a);
          DW_CHECK_LAUNCH(mma ? "dw_fwd_cf_rows_kernel/words_mma" : "dw_fwd_cf_rows_kernel/words");
          launched = true;
          return;
        }
        // Half types' arithmetic on the tensor cores where compiled, as in the words forward: the
        // rows then staged to whole 128-output blocks plus the shifts, where that fits. It pays on
        // rows longer than 256 (H100, bf16 / fp16, depthwise_rows_ab.py mma_odd, csrc/NOTES.md,
        // fifty-seventh session: L501 K31 1.33x / 1.32x, L1023 K31 1.37x, L499 K21 1.20x, L835 K15
        // 1.21x, L1023 and L2047 K15 1.10x); shorter rows take 8 per warp pass single-buffered,
        // where the longer staged rows cost more than the products save (L211 K13 0.89x, L251 K11
        // 1.00x). SEPCONV1D_DW_ROWS_MMA=1 takes it at every length.
        bool tc = sizeof(T) == 2 && rows_mma_compiled<KP>() && tune.rows_mma != 0 &&
                  (tune.rows_mma == 1 || std::max(pr.L, pr.Lo) > 256);
        const int nx_cuda = a.nx;
        auto single_smem = [&](int nx) { return row_bytes * (nx + 8 * a.nv); };
        if (tc) {
          const int nx_mma = std::max(nx_cuda, 8 * rows_mma_vecs(a.nv, rows_mma_shifts<KP, 0>()));
          tc = single_smem(nx_mma) <= smem_limit(dev, tune);
          if (tc) a.nx = nx_mma;
        }
        a.pitch = a.nx + 8 * a.nv;
        // Double-buffered where preferred and its raw buffer (the next pass's aligned chunks) fits.
        const int raw_pitch = a.nx + int(16 / sizeof(T));
        const bool db = (tune.rows_db == 1 || (tune.rows_db < 0 && rows_db_preferred<T>(pr))) &&
                        row_bytes * (a.pitch + raw_pitch) <= smem_limit(dev, tune);
        a.raw_pitch = db ? raw_pitch : 0;
        const int64_t smem = row_bytes * (a.pitch + a.raw_pitch);
        if (smem > smem_limit(dev, tune)) return;
        auto kern = db ? &dw_fwd_cf_rows_kernel<T, W, KP, true> : &dw_fwd_cf_rows_kernel<T, W, KP, false>;
        if constexpr (sizeof(T) == 2 && rows_mma_compiled<KP>()) {
          if (tc) kern = db ? &dw_fwd_cf_rows_mma_kernel<T, W, KP, true> : &dw_fwd_cf_rows_mma_kernel<T, W, KP, false>;
        }
        prepare_kernel(kern, smem, dev.device);
        DW_LAUNCH(kern, grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH(tc ? (db ? "dw_fwd_cf_rows_kernel/mma_db" : "dw_fwd_cf_rows_kernel/mma")
                            : (db ? "dw_fwd_cf_rows_kernel/db" : "dw_fwd_cf_rows_kernel"));
        launched = true;
      }
    });
    return launched;
  }
}

// The arguments both rows backwards share: pointers, sizes, strides and what is wanted.
template <typename T, typename W>
RowsBwdArgs<T, W> rows_bwd_args(const Problem& pr, const T* dy, const Desc3& dyd, const T* x,
                                const Desc3& xd, const W* w, T* dx, const Desc3& dxd, bool want_w,
                                bool want_b) {
  RowsBwdArgs<T, W> a{};
  a.dy = dy;
  a.x = x;
  a.w = w;
  a.dx = dx;
  a.B = pr.B;
  a.C = pr.C;
  a.dysb = dyd.sb;
  a.dysc = dyd.sc;
  a.xsb = xd.sb;
  a.xsc = xd.sc;
  a.dxsb = dxd.sb;
  a.dxsc = dxd.sc;
  a.L = int(pr.L);
  a.Lo = int(pr.Lo);
  a.K = int(pr.K);
  a.pl = int(pr.pl);
  a.want_x = dx != nullptr;
  a.want_w = want_w;
  a.want_b = want_b;
  a.nvx = int(ceil_div(pr.L, 8));
  return a;
}

// dx (when dx != nullptr) and the partial sums of dw / db (into part: [split][K+1][C], when
// want_wb) of the rows kernel; false (nothing launched) where its shared memory does not fit.
template <typename T, typename W>
bool backward_rows(const Problem& pr, const RowsPlan& plan, const T* dy, const Desc3& dyd,
                   const T* x, const Desc3& xd, const W* w, T* dx, const Desc3& dxd,
                   acc_of<T>* part, bool want_w, bool want_b, cudaStream_t stream,
                   const DevInfo& dev, const Tuning& tune) {
  if constexpr (sizeof(T) > 4) {
    return false;
  } else {
    RowsBwdArgs<T, W> a = rows_bwd_args(pr, dy, dyd, x, xd, w, dx, dxd, want_w, want_b);
    a.part = part;
    std::tie(a.dy_lo, a.dy_hi) = view_extent(dy, dyd, pr.B, pr.C, pr.Lo);
    if (want_w) std::tie(a.x_lo, a.x_hi) = view_extent(x, xd, pr.B, pr.C, pr.L);
    a.rpw = plan.rpw;
    a.per = plan.per;
    a.split = plan.split;
    const int64_t grid = std::min<int64_t>(pr.C * plan.split, std::min<int64_t>(tune.max_grid, INT_MAX));
    bool launched = false;
    dispatch_padded_taps(pr.K, tune.allow_specialized, [&](auto kp) {
      constexpr int KP = decltype(kp)::value;
      if constexpr (KP > 0) {
        const bool want_wb = want_w || want_b;
        const int64_t D = KP - 1 - pr.pl;
        a.nwi = want_wb ? int(ceil_div(pr.Lo + D, 8)) : 0;
        a.nu = std::max(a.want_x ? a.nvx : 0, a.nwi);
        const int nd_cuda = 8 * (a.nu + rows_window_vecs<KP>() - 1);
        // Half types' dx on the tensor cores where the words backward's is (rows_bwd_mma), and dw /
        // db beside it (rows_bwd_mma_dw), on rows longer than 256 (SEPCONV1D_DW_ROWS_MMA=1: at
        // every length): dy's staged rows then reach whole 128-position blocks of dx plus the
        // shifts and whole steps of 32 vectors, x's the D tiles' reach, where that fits.
        bool mma = rows_bwd_mma<T, KP>(a.want_x, tune) &&
                   (tune.rows_mma == 1 || std::max(pr.L, pr.Lo) > 256);
        bool mmaw = mma && rows_bwd_mma_dw<T, KP>(a.want_x, want_wb, tune);
        auto pitch_of = [&](int nd, int nxb) { return nd + (want_w ? nxb : 0) + (a.want_x ? 8 * a.nvx : 0); };
        auto block_bytes = [&](int nd, int nxb, bool scratch) {
          const int64_t floats = (KP + 1) + (scratch ? rows_dw_mma_scratch<KP>() : 0);
          return int64_t(kWarps) * (floats * 4 + a.rpw * int64_t(pitch_of(nd, nxb)) * int64_t(sizeof(T)));
        };
        int nd = nd_cuda, nxb = want_w ? nd_cuda : 0;
        if (mma) nd = std::max(nd, 8 * rows_mma_vecs(a.nvx, rows_mma_bwd_shifts<KP>()));
        if (mmaw) {
          nd = std::max(nd, 8 * rows_dw_mma_dy_vecs(a.nwi));
          if (want_w) nxb = std::max(nxb, 8 * rows_dw_mma_x_vecs<KP>(a.nwi));
        }
        if (mma && block_bytes(nd, nxb, mmaw) > smem_limit(dev, tune)) {
          mma = mmaw = false;
          nd = nd_cuda;
          nxb = want_w ? nd_cuda : 0;
        }
        a.nd = nd;
        a.nxb = nxb;
        a.pitch = pitch_of(nd, nxb);
        const int64_t smem = block_bytes(nd, nxb, mmaw);
        if (smem > smem_limit(dev, tune)) return;
        auto kern = &dw_bwd_cf_rows_kernel<T, W, KP>;
        if constexpr (sizeof(T) == 2 && rows_mma_bwd_compiled<KP>()) {
          if (mma) kern = mmaw ? &dw_bwd_cf_rows_mma_kernel<T, W, KP, true> : &dw_bwd_cf_rows_mma_kernel<T, W, KP>;
        }
        prepare_kernel(kern, smem, dev.device);
        DW_LAUNCH(kern, grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH(mmaw ? "dw_bwd_cf_rows_kernel/mma_dw" : (mma ? "dw_bwd_cf_rows_kernel/mma" : "dw_bwd_cf_rows_kernel"));
        launched = true;
      }
    });
    return launched;
  }
}

// The words backward: dx (when dx != nullptr) and the dw / db sums of each unit into its own slot
// of part ([groups][K+1][C], from alloc(slots) where want_w || want_b; nullptr there, or more slots
// than max_slots, launches nothing). Returns the slots written (0 for dx alone), or -1 where it
// launched nothing (the rows condition, or shared memory). Rows per unit: about 512 outputs
// (SEPCONV1D_DW_ROWS_SPAN overrides), halved until a block's shared memory allows 3 blocks per SM
// (csrc/NOTES.md, forty-seventh and forty-eighth sessions).
template <typename T, typename W, typename SlotAlloc>
int64_t backward_rows_words(const Problem& pr, const RowsPlan& plan, const T* dy, const Desc3& dyd,
                            const T* x, const Desc3& xd, const W* w, T* dx, const Desc3& dxd,
                            bool want_w, bool want_b, int64_t max_slots, SlotAlloc&& alloc,
                            cudaStream_t stream, const DevInfo& dev, const Tuning& tune) {
  if constexpr (sizeof(T) > 4) {
    return -1;
  } else {
    if (tune.rows_words_bwd == 0 || !rows_words_bwd_apply<T>(pr, dy, dyd, x, xd, dx, dxd, want_w)) {
      return -1;
    }
    constexpr int EPW = int(4 / sizeof(T));
    const bool want_wb = want_w || want_b;
    RowsBwdArgs<T, W> a = rows_bwd_args(pr, dy, dyd, x, xd, w, dx, dxd, want_w, want_b);
    int64_t slots = -1;
    dispatch_padded_taps(pr.K, tune.allow_specialized, [&](auto kp) {
      constexpr int KP = decltype(kp)::value;
      if constexpr (KP > 0) {
        constexpr int NW = rows_window_vecs<KP>();
        a.sd = int(ceil_div(KP - 1 - pr.pl, EPW) * EPW);
        // x at the first whole word from KP - 1 + OD = sd + pl (OD = sd - D): the dw windows then
        // start DX = sx - (KP - 1) - OD = 0 or 1 elements into their vectors.
        a.sx = int(ceil_div(a.sd + pr.pl, EPW) * EPW);
        a.nwi = want_wb ? int(ceil_div(a.sd + pr.Lo, 8)) : 0;
        a.nu = std::max(a.want_x ? a.nvx : 0, a.nwi);
        a.nd = 8 * (a.nu + NW - 1);
        // dx on the tensor cores (half types, rows_mma_bwd_compiled KPs): dy's staged rows then
        // reach whole 128-position blocks of dx plus the shifts.
        const bool mma = rows_bwd_mma<T, KP>(a.want_x, tune);
        if (mma) a.nd = std::max(a.nd, 8 * rows_mma_vecs(a.nvx, rows_mma_bwd_shifts<KP>()));
        // dw / db on the tensor cores beside it (rows_dw_mma): the rows staged to whole steps of
        // 32 vectors, x to the D tiles' reach, and a D scratch per warp.
        const bool mmaw = rows_bwd_mma_dw<T, KP>(a.want_x, want_wb, tune);
        if (mmaw) a.nd = std::max(a.nd, 8 * rows_dw_mma_dy_vecs(a.nwi));
        a.ldy = int(std::min<int64_t>(pr.Lo, a.nd - a.sd));  // whole words (all even for halves)
        a.nxb = want_w ? 8 * (a.nwi + NW - 1) : 0;
        if (mmaw && want_w) a.nxb = std::max(a.nxb, 8 * rows_dw_mma_x_vecs<KP>(a.nwi));
        a.lx = want_w ? int(std::min<int64_t>(pr.L, a.nxb - a.sx)) : 0;
        // (dx may be null: nothing is stored then, and either entry point does.)
        const bool dx_direct = rows_bwd_dx_direct<T, KP>(cf_row_granule<T>(dx, dxd) >= 8);
        auto block_bytes = [&](int rpw) {
          const bool staged = !dx_direct && a.want_x;
          const int64_t dx_rows = staged ? int64_t(rpw) * 8 * a.nvx : 0;
          const int64_t per_warp = 2 * int64_t(rpw) * (a.nd + a.nxb) + dx_rows;
          const int64_t scratch = mmaw ? int64_t(rows_dw_mma_scratch<KP>()) * int64_t(sizeof(float)) : 0;
          return int64_t(kWarps) * (per_warp * int64_t(sizeof(T)) + scratch);
        };
        const int64_t limit = smem_limit(dev, tune);
        // About 512 outputs per warp pass at every length and type: the half-type rule's 2048 at
        // rows of at most 256 lost here (H100, FastConformer bf16: 104 us at 2048, 79 at 512).
        const int64_t len = std::max<int64_t>(std::max(pr.L, pr.Lo), 1);
        int rpw = tune.rows_span > 0 ? plan.rpw
                                     : int(clamp64(ceil_div(int64_t(512), len), 1, kRowsMaxRowsPerWarp));
        while (rpw > 1 && block_bytes(rpw) * 3 > limit) rpw = (rpw + 1) / 2;
        const int64_t smem = block_bytes(rpw);
        if (smem > limit) return;
        a.rpw = rpw;
        a.groups = ceil_div(pr.B, int64_t(rpw));
        a.units = pr.C * a.groups;
        if (want_wb) {
          if (a.groups > max_slots) return;
          a.part = alloc(a.groups);
          if (a.part == nullptr) return;
        }
        auto kern = rows_bwd_words_kernel<T, W, KP>(dx_direct, mma, mmaw);
        prepare_kernel(kern, smem, dev.device);
        const RowsWarpRuns runs = rows_warp_runs(a.units, resident_blocks(kern, size_t(smem), dev.device, 4),
                                                 dev, tune);
        a.upw = runs.upw;
        DW_LAUNCH(kern, runs.grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH(mmaw ? "dw_bwd_cf_rows_kernel/words_mma_dw"
                             : (mma ? "dw_bwd_cf_rows_kernel/words_mma" : "dw_bwd_cf_rows_kernel/words"));
        slots = want_wb ? a.groups : 0;
      }
    });
    return slots;
  }
}

// ------------------------------------------------------------------------------------------------
// Forward
// ------------------------------------------------------------------------------------------------
template <typename T, typename W>
void forward(const Problem& pr, const T* x, const Desc3& xd, const W* w, const W* bias, T* y,
             const Desc3& yd, cudaStream_t stream, const DevInfo& dev, const Tuning& tune = {}) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  if (pr.B == 0 || pr.C == 0 || pr.Lo == 0) return;
  const bool fast = pr.s == 1 && pr.d == 1;
  const int64_t d_eff = pr.K == 1 ? 1 : pr.d;  // dilation is irrelevant for one tap
  const int64_t kp = ceil_div(pr.K, V) * V;
  const int64_t limit = smem_limit(dev, tune);
  Path path = Path::Direct;
  if (!tune.force_direct && pr.L > 0 && tile_ints_ok(pr) && d_eff <= (int64_t(1) << 24)) {
    if (cf_ok(xd, pr.L) && cf_ok(yd, pr.Lo)) {
      path = Path::CF;
    } else if (cl_ok(xd, pr.C) && cl_ok(yd, pr.C)) {
      path = Path::CL;
    }
  }

  FwdArgs<T, W> a{};
  a.x = x;
  a.w = w;
  a.bias = bias;
  a.y = y;
  a.B = pr.B;
  a.C = pr.C;
  a.L = pr.L;
  a.Lo = pr.Lo;
  a.pl = pr.pl;
  a.K = int(std::min<int64_t>(pr.K, INT_MAX));
  a.s = int(std::min<int64_t>(pr.s, INT_MAX));
  a.d = int(std::min<int64_t>(d_eff, INT_MAX));
  a.kp = int(std::min<int64_t>(kp, INT_MAX));
  a.xsb = xd.sb;
  a.xsc = xd.sc;
  a.xsl = xd.sl;
  a.ysb = yd.sb;
  a.ysc = yd.sc;
  a.ysl = yd.sl;
  a.fast = fast;

  if (path == Path::CF) {
    // Compiled K with 16-byte-aligned rows and a compiled pad_left: the register-direct kernel.
    // Run-time K of half types, stride and dilation 1: the tensor-core kernel (rows of any
    // alignment). Other run-time K, stride and dilation 1: dw_fwd_cf_rt_kernel. Otherwise the tile
    // kernel (compiled K, or the general path). Every tile starts on an N = G*V boundary (16 bytes
    // of T).
    constexpr int G = gvec_of<T>();
    constexpr int64_t N = int64_t(G) * V;
    a.x_vec = cf_vec_level<T, V, G>(x, xd);
    a.y_vec = cf_vec_level<T, V, G>(y, yd);
    // Short rows: the rows kernel (one warp per row, several rows per pass).
    const int64_t mma_reach = rows_mma_reach<T>(
        pr, tune.rows_words != 0 && rows_words_apply<T>(pr, x, xd, y, yd), false, false, tune);
    if (rows_wanted<T>(pr, fast, a.x_vec == kVecGroup && a.y_vec == kVecGroup, false, mma_reach, tune) &&
        forward_rows<T, W>(pr, x, xd, w, bias, y, yd, stream, dev, tune)) {
      return;
    }
    bool launched = false;
    with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
      constexpr int KC = decltype(kc)::value;
      if constexpr (KC > 0) {
        // Rows off the 16-byte grid at the same shift in x and y (odd lengths): the same kernel,
        // each row on its own grid (items from element -shift, so one more vector may be needed).
        // x and y rows at different shifts (a slice of x, 'valid' outputs of odd length): the
        // kernel realigns x to y's grid in registers (kRealign).
        const bool aligned = a.x_vec == kVecGroup && a.y_vec == kVecGroup;
        const bool coaligned =
            aligned || (tune.reg_shifted && cf_coaligned<T>(x, xd, y, yd, pr.B, pr.C));
        constexpr bool kRealignPays = reg_realign_fwd_pays<T, KC>();
        const bool realign = kRealignPays && !coaligned && tune.reg_shifted && tune.reg_realign;
        if (tune.allow_reg_fwd && (coaligned || realign)) {
          FwdArgs<T, W> ra = a;
          ra.ntiles = ceil_div(pr.Lo + (aligned ? 0 : N - 1), reg_fwd_span<T>());  // items per row
          ra.total = pr.B * pr.C * ra.ntiles;
          const int64_t grid =
              clamp64(ceil_div(ra.total, kWarps), 1, std::min<int64_t>(tune.max_grid, INT_MAX));
          launched = with_reg_pad<KC>(pr.pl, [&](auto pc) {
            constexpr int PC = decltype(pc)::value;
            if (realign) {  // (kRealignPays: no realigning kernel is compiled where it is false)
              auto kern = &dw_fwd_cf_reg_kernel<T, W, KC, PC, true, kRealignPays>;
              DW_LAUNCH(kern, grid, size_t(0), stream, ra);
            } else {
              with_flag(!aligned, [&](auto shift) {
                constexpr bool S = decltype(shift)::value;
                auto kern = &dw_fwd_cf_reg_kernel<T, W, KC, PC, S>;
                DW_LAUNCH(kern, grid, size_t(0), stream, ra);
              });
            }
            DW_CHECK_LAUNCH(realign ? "dw_fwd_cf_reg_kernel/realign" : "dw_fwd_cf_reg_kernel");
          });
          if (launched) return;
        }
      }
      // Half types where the register-direct kernel did not launch (run-time K, or a compiled K
      // on rows that are not 16-byte aligned): the tensor-core kernel, copies and stores in units
      // of each tensor's row alignment. On such rows it beats the tile kernel that compiled K took
      // before: bf16 B128 C512 L210, tile kernel at K 9 181 us, tensor-core kernel at K 8 156; B8
      // L8191 71 against 63 (csrc/NOTES.md, thirty-seventh session).
      if constexpr (sizeof(T) == 2) {
        if (fast && tune.allow_tc && pr.K <= tc_max_k()) {
          TcAlign al;
          al.x = cf_row_granule<T>(x, xd);
          al.out = cf_row_granule<T>(y, yd);
          FwdArgs<T, W> ta = a;
          ta.off = int(pos_mod(-pr.pl, 8));
          ta.kp = int(ceil_div(pr.K + 7 + ta.off, 16));  // shifts
          ta.tile = int(clamp64(ceil_div(pr.Lo, kTcBlockOut) * kTcBlockOut, kTcBlockOut, kTcMaxTile));
          ta.nsm = int(tc_rows(ta.tile, ta.kp));
          ta.ntiles = ceil_div(pr.Lo, ta.tile);
          ta.total = pr.B * pr.C * ta.ntiles;
          const int64_t wave = int64_t(dev.sms) * tc_fwd_min_blocks<T, W>();
          const int64_t grid = clamp64(std::min<int64_t>(ta.total, wave), 1,
                                       std::min<int64_t>(tune.max_grid, INT_MAX));
          const size_t smem = size_t(ta.nsm) * 16 * 2;  // two staging buffers
          with_tc_shifts(ta.kp, [&](auto sc) {
            auto kern = &dw_fwd_cf_tc_kernel<T, W, decltype(sc)::value>;
            prepare_kernel(kern, int64_t(smem), dev.device);
            DW_LAUNCH(kern, grid, smem, stream, ta, al);
            DW_CHECK_LAUNCH("dw_fwd_cf_tc_kernel");
          });
          launched = true;
          return;
        }
      }
      // Run-time K, stride 1, dilation 1: dw_fwd_cf_rt_kernel. Padded form: tiles of up to
      // kCfRtItems items per thread, whole items. Dense form (float32 / float64 on 16-byte-aligned
      // rows, K >= kCfRtDenseMinK): the row split evenly into tiles of at most that size (whole
      // groups of N; the last item of a tile may be partial). Item m's window starts at tile vector
      // sh + cf_rt_vecs() * m (sh = off / V) and reads kp / V + R - 1 vectors (the ring's
      // prefetch); weights kp + V.
      // Short rows (rt_row_group): row groups, each row one tile of its own, as many groups of
      // whole quarter warps per block as fit (one row per block leaves most of the block idle: a
      // float32 row of 250 is 16 items of a block's 128, csrc/NOTES.md, sixty-first session).
      if constexpr (KC == 0) {
        // group: threads per row group, kThreads for one row's tile per block.
        const auto launch_rt = [&](auto dense_c, int64_t group) {
          constexpr bool DENSE = decltype(dense_c)::value;
          constexpr int NOUT = cf_rt_item<T, DENSE>();
          const int64_t per_item = int64_t(kThreads) * NOUT;
          int64_t tile;
          if (group < kThreads) {
            tile = ceil_div(pr.Lo, N) * N;  // the row, whole groups of N (items may be partial)
          } else if constexpr (DENSE) {
            const int64_t tiles = ceil_div(pr.Lo, per_item * kCfRtItems);
            tile = ceil_div(ceil_div(pr.Lo, tiles), N) * N;
          } else {
            tile = per_item * clamp64(ceil_div(pr.Lo, per_item), 1, kCfRtItems);
          }
          const int off = int(pos_mod(-pr.pl, N));
          const int sh = off / V;
          const int64_t last_item = ceil_div(tile, NOUT) - 1;
          const int64_t nvec = sh + last_item * cf_rt_vecs<DENSE>() + kp / V + kCfRtRingMax - 1;
          const int64_t nsm = ceil_div(nvec, G) * G;
          const int64_t slots = cf_rt_slot<DENSE>(int(nsm) - 1, sh) + 1;
          // One group's x tile and weights, whole blocks of 8 vectors (the next group's bank
          // pattern is the first's).
          const int64_t gstride = ceil_div(slots * V + kp + V, 8 * V) * 8 * V;
          const int64_t rows = kThreads / group;
          // y rows that are not 16-byte aligned go through the quarter warps' shared areas
          // behind the tiles (cf_rt_items_staged): in row groups (H100: 1.25-1.9x), and in one
          // row per block where every thread has two or more items (L4097 K127 1.04x) or the
          // row is longer than a group takes (H200: L1501 K63 1.14x, L1029 K41 1.04x). A row
          // that a group would take, alone in a block (rt_rows 0, or a group that does not fit),
          // measured slower staged (H100, L835 K63 128 -> 143 us; csrc/NOTES.md, sixty-third and
          // sixty-fourth sessions) and stores directly.
          const bool ystage =
              std::is_same_v<T, A> && tune.allow_ystage && a.y_vec != kVecGroup &&
              (rows > 1 || ceil_div(tile, per_item) > 1 ||
               ceil_div(pr.Lo, NOUT) > kRtRowGroupMaxItems || tune.force_ystage);
          const int64_t tiles_elems = rows > 1 ? rows * gstride : slots * V + kp + V;
          const int64_t smem =
              (tiles_elems + (ystage ? cf_rt_stage_elems<A, NOUT>() : 0)) * int64_t(sizeof(A));
          if (smem > limit) return;
          a.items = int(ceil_div(tile, per_item));
          a.tile = int(tile);
          a.off = off;
          a.nsm = int(nsm);
          a.ntiles = ceil_div(pr.Lo, tile);
          a.rows = int(rows);
          a.group = int(group);
          a.gstride = rows > 1 ? int(gstride) : 0;
          a.ystage = int(tiles_elems);
          a.total = rows > 1 ? ceil_div(pr.B * pr.C, rows) : pr.B * pr.C * a.ntiles;
          const int64_t grid = clamp64(a.total, 1, std::min<int64_t>(tune.max_grid, INT_MAX));
          const auto run = [&](auto kern, const char* name) {
            prepare_kernel(kern, smem, dev.device);
            DW_LAUNCH(kern, grid, size_t(smem), stream, a);
            DW_CHECK_LAUNCH(name);
          };
          if constexpr (std::is_same_v<T, A>) {
            if (ystage) {
              run(&dw_fwd_cf_rt_kernel<T, W, DENSE, true>,
                  rows > 1 ? "dw_fwd_cf_rt_kernel/rows/ystage" : "dw_fwd_cf_rt_kernel/ystage");
              launched = true;
              return;
            }
          }
          run(&dw_fwd_cf_rt_kernel<T, W, DENSE, false>,
              rows > 1 ? "dw_fwd_cf_rt_kernel/rows" : "dw_fwd_cf_rt_kernel");
          launched = true;
        };
        // Row groups where the rule takes them and their tiles fit, else one row per block.
        const auto launch_rt_rows = [&](auto dense_c) {
          constexpr int NOUT = cf_rt_item<T, decltype(dense_c)::value>();
          // y reaches memory in whole runs where aligned, or where staged (float32 / float64).
          const bool y_coalesced =
              a.y_vec == kVecGroup || (std::is_same_v<T, A> && tune.allow_ystage);
          const int64_t group = rt_row_group(ceil_div(pr.Lo, NOUT), y_coalesced, tune);
          if (group < kThreads) launch_rt(dense_c, group);
          if (!launched) launch_rt(dense_c, int64_t(kThreads));
        };
        if (fast) {
          if constexpr (std::is_same_v<T, A>) {
            if (tune.allow_rt_dense && a.x_vec == kVecGroup && pr.K >= kCfRtDenseMinK) {
              launch_rt_rows(std::true_type{});
            }
          }
          if (!launched) launch_rt_rows(std::false_type{});
          if (launched) return;
        }
      }
      const int64_t per_item = int64_t(kThreads) * cf_fwd_item<T>();
      const int items = int(clamp64(ceil_div(pr.Lo, per_item), 1, kCfItemsFwd));
      const int64_t tile = per_item * items;
      // Fast paths read up to tile + off + kp + V elements (windows of the last item); the
      // general path (tile - 1)*s + (K - 1)*d + 1 + off.
      const int64_t x_ext =
          std::max(tile + kp + N + V, (tile - 1) * pr.s + (pr.K - 1) * d_eff + N);
      const int64_t nsm = ceil_div(x_ext, N) * G;
      // Compiled K on y rows without V-element alignment: y through the warps' shared areas
      // behind the tile (cf_fwd_fast).
      const bool ystage = KC > 0 && tune.allow_ystage && tune.allow_ystage_ct && a.y_vec == 0;
      const int64_t smem =
          (nsm * V + kp + (ystage ? int64_t(kThreads) * V : 0)) * int64_t(sizeof(A));
      if (smem > limit) return;
      a.ystage = ystage ? int(nsm * V + kp) : 0;
      a.items = items;
      a.tile = int(tile);
      a.off = int(pos_mod(-pr.pl, N));
      a.nsm = int(nsm);
      a.ntiles = ceil_div(pr.Lo, tile);
      a.total = pr.B * pr.C * a.ntiles;
      const int64_t grid = std::min<int64_t>(a.total, tune.max_grid);
      auto kern = &dw_fwd_cf_kernel<T, W, KC, kCfItemsFwd>;
      prepare_kernel(kern, smem, dev.device);
      DW_LAUNCH(kern, grid, size_t(smem), stream, a);
      DW_CHECK_LAUNCH(ystage ? "dw_fwd_cf_kernel/ystage" : "dw_fwd_cf_kernel");
      launched = true;
    });
    if (launched) return;
  } else if (path == Path::CL) {
    // Compiled K with 16-byte-aligned positions of x and y: the register-direct kernel (any
    // padding). Otherwise the tile kernel.
    a.x_vec = cl_vec_level<T, V, gvec_of<T>()>(x, xd);
    a.y_vec = cl_vec_level<T, V, gvec_of<T>()>(y, yd);
    if (tune.allow_reg_fwd && a.x_vec == kVecGroup && a.y_vec == kVecGroup) {
      bool launched = false;
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        constexpr int KC = decltype(kc)::value;
        if constexpr (KC > 0) {
          using Cfg = ClReg<T, KC>;
          const int64_t ncv = ceil_div(pr.C, Cfg::NV);  // channel vectors
          const int64_t cb = cl_reg_channel_block(ncv);
          const int64_t groups = ceil_div(ncv, cb);
          FwdArgs<T, W> ra = a;
          ra.tile = int(cb);
          ra.ntiles = ceil_div(pr.Lo, Cfg::TP);  // position chunks per batch
          ra.total = pr.B * ra.ntiles;
          auto kern = &dw_fwd_cl_reg_kernel<T, W, KC>;
          ra.split = wave_split(groups, ceil_div(ra.total, kThreads / cb),
                                resident_blocks(kern, 0, dev.device, Cfg::kMinBlocks), dev, tune);
          const int64_t grid = groups * ra.split;
          DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
          DW_LAUNCH(kern, grid, size_t(0), stream, ra);
          DW_CHECK_LAUNCH("dw_fwd_cl_reg_kernel");
          launched = true;
        }
      });
      if (launched) return;
    }
    const int64_t per_item = int64_t(kClGroups) * V;
    const int items = int(clamp64(ceil_div(pr.Lo, per_item), 1, kClItemsFwd));
    const int64_t tile = per_item * items;
    const int64_t nrows = std::max(tile + kp - 1, (tile - 1) * pr.s + (pr.K - 1) * d_eff + 1);
    const int64_t smem = (nrows + kp) * kClVecs * V * int64_t(sizeof(A));
    if (smem <= limit) {
      const int64_t groups = ceil_div(pr.C, int64_t(kClVecs) * V);
      a.items = items;
      a.tile = int(tile);
      a.off = 0;
      a.nsm = int(nrows);
      a.ntiles = ceil_div(pr.Lo, tile);
      a.total = pr.B * a.ntiles;
      a.split = choose_split(groups, a.total, dev, tune);
      const int64_t grid = groups * a.split;
      DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        auto kern = &dw_fwd_cl_kernel<T, W, decltype(kc)::value, kClItemsFwd>;
        prepare_kernel(kern, smem, dev.device);
        DW_LAUNCH(kern, grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH("dw_fwd_cl_kernel");
      });
      return;
    }
  }

  // Direct kernel: any layout and size.
  DirectArgs<T, W> da{};
  da.x = x;
  da.w = w;
  da.bias = bias;
  da.y = y;
  da.B = pr.B;
  da.C = pr.C;
  da.L = pr.L;
  da.Lo = pr.Lo;
  da.K = pr.K;
  da.s = pr.s;
  da.d = pr.d;
  da.pl = pr.pl;
  da.xsb = xd.sb;
  da.xsc = xd.sc;
  da.xsl = xd.sl;
  da.ysb = yd.sb;
  da.ysc = yd.sc;
  da.ysl = yd.sl;
  const int64_t grid = clamp64(ceil_div(pr.B * pr.C * pr.Lo, kThreads), 1,
                               std::min<int64_t>(tune.max_grid, int64_t(dev.sms) * 64));
  auto kern = &dw_fwd_direct_kernel<T, W>;
  DW_LAUNCH(kern, grid, size_t(0), stream, da);
  DW_CHECK_LAUNCH("dw_fwd_direct_kernel");
}

// ------------------------------------------------------------------------------------------------
// Backward
// ------------------------------------------------------------------------------------------------
// One call's partial sums as runs (none when split is 0: sums over nothing).
template <typename A>
RedRuns<A> one_run(const A* part, int64_t split) {
  RedRuns<A> runs{};
  runs.part[0] = part;
  runs.split[0] = split;
  runs.n = split > 0 ? 1 : 0;
  return runs;
}

// dw / db = the sum of the runs' partial sums (or, with sums, the (K + 1) x C sums themselves),
// written by one dw_reduce_kernel launch.
template <typename A, typename W>
void reduce_runs(const RedRuns<A>& runs, int64_t K, int64_t C, W* dw, W* db, cudaStream_t stream,
                 const DevInfo& dev, A* sums = nullptr) {
  if (C <= 0 || (dw == nullptr && db == nullptr && sums == nullptr)) return;
  auto kern = &dw_reduce_kernel<A, W>;
  const int64_t grid = clamp64(ceil_div((K + 1) * C, kRedOut), 1, int64_t(dev.sms) * 32);
  DW_LAUNCH(kern, grid, size_t(0), stream, runs, K, C, dw, db, sums);
  DW_CHECK_LAUNCH("dw_reduce_kernel");
}

// Whether the backward's dx, where it reaches the tile kernels, runs as the forward of dy with the
// flipped kernel (dx[i] = sum_m w[K-1-m] dy[i - (K-1-pl) + m]: pads K-1-pl and K-1-pr): float32,
// stride 1, dilation 1, pads within the kernel span, rows the short-row kernels would not take at
// K <= 32, and a K where the forward's run-time-K items beat the fused backward's per-vector dx by
// more than a second read of dy costs. H100, float32 B32 C512 (csrc/NOTES.md, fifty-ninth
// session), dx alone, fused -> forward: L8192 K63 1055 -> 451 us, K31 695 -> 426, K15 544 -> 416,
// K7 456 -> 456 (so from K 10); with dw and db beside it, where their partials are in registers
// (K 33-128): all three at L8192 K63 1903 -> 1352, L4096 K33 697 -> 624, L835 K63 294 -> 290,
// L1670 K75 674 -> 615, L4096 K127 1822 -> 1274 (sixtieth session; the phase rows of K87 d2 read
// 650 against 642, kept for one rule); not at K <= 32 (L8192 K31 1035 either way). Past the
// register tiers the fused kernel's one pass over dy and x beats two (the phase rows of K87 d2
// with dw / db per chunk of taps: 821 -> 878). Half types reach the tile kernels only without the
// tensor-core kernel: not taken.
template <typename T>
bool dx_by_forward(const Problem& pr, bool want_wb, const Tuning& tune) {
  if (!std::is_same_v<T, float> || !tune.allow_dx_forward) return false;
  if (pr.s != 1 || pr.d != 1 || pr.K < 10) return false;
  if (pr.K <= 32 && std::max(pr.L, pr.Lo) <= kRowsMaxLen) return false;
  const int64_t pad_right = pr.Lo + pr.K - 1 - pr.L - pr.pl;
  if (pr.pl < 0 || pr.pl > pr.K - 1 || pad_right < 0 || pad_right > pr.K - 1) return false;
  return !want_wb || (pr.K > 32 && pr.K <= kBwdRtRegsMax && tune.allow_rt_regs);
}

// The flipped kernel of dx_by_forward into wf (C * K elements of W).
template <typename W>
void flip_weights(const W* w, W* wf, int64_t C, int64_t K, cudaStream_t stream, const DevInfo& dev) {
  if (C <= 0 || K <= 0) return;
  const int64_t grid = clamp64(ceil_div(C * K, kThreads), 1, int64_t(dev.sms) * 8);
  DW_LAUNCH(&dw_flip_weights_kernel<W>, grid, size_t(0), stream, w, wf, C, K);
  DW_CHECK_LAUNCH("dw_flip_weights_kernel");
}

// dx (when not nullptr) in dxd's layout, dw (C, K) and db (C) contiguous in W (when not nullptr).
// alloc(bytes) returns device memory for the partial sums that stays valid for the launches.
// wflip: nullptr, or the flipped kernel (flip_weights) where dx_by_forward holds.
// defer: nullptr, or where the call's partial sums are appended as a run instead of being reduced
// into dw / db here (the caller reduces all its runs with reduce_runs; dw / db then only say
// which gradients are wanted, and alloc's memory must stay valid until that launch).
template <typename T, typename W, typename Alloc>
void backward(const Problem& pr, const T* dy, const Desc3& dyd, const T* x, const Desc3& xd,
              const W* w, T* dx, const Desc3& dxd, W* dw, W* db, Alloc&& alloc,
              cudaStream_t stream, const DevInfo& dev, const Tuning& tune = {},
              RedRuns<acc_of<T>>* defer = nullptr, const W* wflip = nullptr) {
  using A = acc_of<T>;
  constexpr int V = vec_of<A>();
  bool want_x = dx != nullptr && pr.B > 0 && pr.C > 0 && pr.L > 0;
  const bool want_w = dw != nullptr && pr.C > 0;
  const bool want_b = db != nullptr && pr.C > 0;
  if (!want_x && !want_w && !want_b) return;
  const bool want_wb = want_w || want_b;
  // dw/db = the sum of `split` partial sums (split = 0: zeros), per_split bytes each; kernels
  // with a free choice of split keep the workspace at most 64 MiB.
  const int64_t per_split = (pr.K + 1) * pr.C * int64_t(sizeof(A));
  auto cap_split = [&](int64_t split) {
    const int64_t most = (int64_t(64) << 20) / std::max<int64_t>(per_split, 1);
    return std::max<int64_t>(1, std::min(split, most));
  };
  auto launch_reduce = [&](const A* part, int64_t split) {
    if (defer != nullptr) {
      DW_HOST_CHECK(defer->n < kRedMaxRuns, "sepconv1d: too many deferred depthwise reductions");
      if (split > 0 && defer->fold != nullptr) {  // this call's own sum first (see RedRuns)
        reduce_runs<A, W>(one_run(part, split), pr.K, pr.C, nullptr, nullptr, stream, dev,
                          defer->fold);
        part = defer->fold;
        split = 1;
      }
      defer->fold = nullptr;
      if (split > 0) {
        defer->part[defer->n] = part;
        defer->split[defer->n] = split;
        ++defer->n;
      }
      return;
    }
    reduce_runs<A, W>(one_run(part, split), pr.K, pr.C, want_w ? dw : nullptr,
                      want_b ? db : nullptr, stream, dev);
  };
  if (pr.B == 0 || pr.Lo == 0) {
    if (want_wb) launch_reduce(nullptr, 0);  // sums over nothing
    return;
  }
  const bool fast = pr.s == 1 && pr.d == 1;
  const int64_t d_eff = pr.K == 1 ? 1 : pr.d;
  const int64_t kp = ceil_div(pr.K, V) * V;
  const int64_t limit = smem_limit(dev, tune);
  Path path = Path::Direct;
  if (!tune.force_direct && pr.L > 0 && tile_ints_ok(pr) && d_eff <= (int64_t(1) << 24)) {
    const bool cf = cf_ok(dyd, pr.Lo) && cf_ok(xd, pr.L) && (!want_x || cf_ok(dxd, pr.L));
    const bool cl = cl_ok(dyd, pr.C) && cl_ok(xd, pr.C) && (!want_x || cl_ok(dxd, pr.C));
    if (cf) {
      path = Path::CF;
    } else if (cl) {
      path = Path::CL;
    }
  }

  BwdArgs<T, W> a{};
  a.dy = dy;
  a.x = x;
  a.w = w;
  a.dx = want_x ? dx : nullptr;
  a.B = pr.B;
  a.C = pr.C;
  a.L = pr.L;
  a.Lo = pr.Lo;
  a.pl = pr.pl;
  a.K = int(std::min<int64_t>(pr.K, INT_MAX));
  a.s = int(std::min<int64_t>(pr.s, INT_MAX));
  a.d = int(std::min<int64_t>(d_eff, INT_MAX));
  a.kp = int(std::min<int64_t>(kp, INT_MAX));
  a.dysb = dyd.sb;
  a.dysc = dyd.sc;
  a.dysl = dyd.sl;
  a.xsb = xd.sb;
  a.xsc = xd.sc;
  a.xsl = xd.sl;
  a.dxsb = dxd.sb;
  a.dxsc = dxd.sc;
  a.dxsl = dxd.sl;
  a.want_x = want_x;
  a.want_w = want_w;
  a.want_b = want_b;
  a.fast = fast;

  // The dy tile starts dlo positions before the tile's first output: far enough left for the
  // leftmost dx tap (dx[i] reads dy[(i + pl - k*d) / s]); with stride 1, dilation 1 this is also
  // where the run-time-K kernels' front-padded flipped kernel starts.
  const int64_t dlo_raw = std::min<int64_t>(0, floor_div(pr.pl - (kp - 1) * d_eff, pr.s));


  if (path == Path::CF) {
    constexpr int G = gvec_of<T>();
    a.dy_vec = cf_vec_level<T, V, G>(dy, dyd);
    a.x_vec = cf_vec_level<T, V, G>(x, xd);
    a.dx_vec = want_x ? cf_vec_level<T, V, G>(dx, dxd) : 0;
    // Short rows: the rows kernel (dx, dw and db in one pass over the rows).
    const bool rows_aligned = a.dy_vec == kVecGroup && (!want_w || a.x_vec == kVecGroup) &&
                              (!want_x || a.dx_vec == kVecGroup);
    // (Either rows backward: the words kernel's tensor cores and the other's measured alike.)
    const int64_t mma_reach = !want_x ? 0 : rows_mma_reach<T>(pr, false, true, want_w || want_b, tune);
    if (rows_wanted<T>(pr, fast, rows_aligned, true, mma_reach, tune)) {
      const RowsPlan plan = rows_plan<T>(pr, dev, tune);
      // Word-aligned rows: the words backward (word copies, each warp a run of units).
      A* wpart = nullptr;
      const int64_t slots = backward_rows_words<T, W>(
          pr, plan, dy, dyd, x, xd, w, want_x ? dx : nullptr, dxd, want_w, want_b,
          cap_split(std::numeric_limits<int64_t>::max()),
          [&](int64_t n) { return wpart = static_cast<A*>(alloc(size_t(n * per_split))); }, stream,
          dev, tune);
      if (slots >= 0) {
        if (want_wb) launch_reduce(wpart, slots);
        return;
      }
      const int64_t split = want_wb ? cap_split(plan.split) : plan.split;
      if (split == plan.split) {
        A* part = want_wb ? static_cast<A*>(alloc(size_t(split * per_split))) : nullptr;
        if (backward_rows<T, W>(pr, plan, dy, dyd, x, xd, w, want_x ? dx : nullptr, dxd, part,
                                want_w, want_b, stream, dev, tune)) {
          if (want_wb) launch_reduce(part, split);
          return;
        }
      }
    }
    // Compiled K and pad_left with 16-byte-aligned rows of every tensor read or written: the
    // register-direct kernel (one warp per SPAN positions of a row, blocks per channel).
    // Rows off the 16-byte grid at the same shift in dy, x and dx (odd lengths): the same kernel,
    // each row on its own grid.
    const bool reg_aligned = a.dy_vec == kVecGroup && (!want_w || a.x_vec == kVecGroup) &&
                             (!want_x || a.dx_vec == kVecGroup);
    // x at another shift than dy and dx (a slice's backward with Lo = L): x realigned (kRealignX).
    const bool dy_dx_coaligned =
        tune.reg_shifted && (!want_x || cf_coaligned<T>(dy, dyd, dx, dxd, pr.B, pr.C));
    const bool reg_coaligned =
        dy_dx_coaligned && (!want_w || cf_coaligned<T>(dy, dyd, x, xd, pr.B, pr.C));
    const bool realign_x = !reg_aligned && !reg_coaligned && dy_dx_coaligned && tune.reg_realign;
    if (fast && tune.allow_reg_bwd && (reg_aligned || reg_coaligned || realign_x)) {
      bool launched = false;
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        constexpr int KC = decltype(kc)::value;
        if constexpr (KC > 0) {
          constexpr bool kRealignPays = reg_realign_bwd_pays<T, KC>();
          if (realign_x && !kRealignPays) return;  // the tensor-core / tile kernels below
          BwdArgs<T, W> ra = a;
          constexpr int64_t NVB = 16 / int64_t(sizeof(T));  // elements per vector
          const int64_t span = std::max(pr.L, pr.Lo) + (reg_aligned ? 0 : NVB - 1);
          ra.ntiles = ceil_div(span, reg_bwd_span<T>());
          ra.work = pr.B * ra.ntiles;
          ra.split = cap_split(choose_split(pr.C, ceil_div(ra.work, kWarps), dev, tune));
          const int64_t grid = pr.C * ra.split;
          DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
          launched = with_reg_pad<KC>(pr.pl, [&](auto pc) {
            if (want_wb) ra.part = static_cast<A*>(alloc(size_t(ra.split * per_split)));
            if (realign_x) {  // (kRealignPays here: none is compiled where it is false)
              auto kern = &dw_bwd_cf_reg_kernel<T, W, KC, decltype(pc)::value, true, kRealignPays>;
              DW_LAUNCH(kern, grid, size_t(0), stream, ra);
            } else {
              with_flag(!reg_aligned, [&](auto shift) {
                constexpr bool S = decltype(shift)::value;
                auto kern = &dw_bwd_cf_reg_kernel<T, W, KC, decltype(pc)::value, S>;
                DW_LAUNCH(kern, grid, size_t(0), stream, ra);
              });
            }
            DW_CHECK_LAUNCH(realign_x ? "dw_bwd_cf_reg_kernel/realign" : "dw_bwd_cf_reg_kernel");
            if (want_wb) launch_reduce(ra.part, ra.split);
          });
        }
      });
      if (launched) return;
    }
    // Half types where the register-direct kernel did not launch (run-time K, or a compiled K
    // on rows that are not 16-byte aligned): the tensor-core kernel, copies and stores in units of
    // each tensor's row alignment. On such rows the tile kernel that compiled K took before is
    // 1.5-1.7x slower (bf16, tile kernel at K 9 against the tensor-core kernel at K 8: B128 C512
    // L210 333 / 198 us, B32 L835 129 / 86, B8 L8191 184 / 126).
    if (fast && tune.allow_tc && sizeof(T) == 2 && pr.K <= tc_max_k()) {
      TcAlign al;
      al.dy = cf_row_granule<T>(dy, dyd);
      if (want_w) al.x = cf_row_granule<T>(x, xd);
      if (want_x) al.out = cf_row_granule<T>(dx, dxd);
      al.units = tune.tc_units;
      bool launched = false;
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        if constexpr (sizeof(T) == 2) {
          BwdArgs<T, W> ta = a;
          const int64_t span = std::max(pr.L, pr.Lo);
          const int64_t tile = clamp64(ceil_div(span, kTcBlockOut) * kTcBlockOut, kTcBlockOut,
                                       kTcMaxTileBwd);
          const int64_t pl_flip = pr.K - 1 - pr.pl;  // dx = the flipped kernel over dy
          ta.od = int(pos_mod(-pl_flip, 8));
          ta.sd = int(ceil_div(pr.K + 7 + ta.od, 16));
          ta.ox = int(pos_mod(-pr.pl, 8));
          ta.sx = int(ceil_div(pr.K + 7 + ta.ox, 16));
          const int64_t ex = -pl_flip - ta.od;  // dx rows' first element, relative to p0
          const int64_t e0 = want_x ? std::min<int64_t>(ex, 0) : 0;
          ta.dyr = int(-e0 / 8);
          const int64_t nsm_dy = std::max(want_x ? (ex - e0) / 8 + tc_rows(tile, ta.sd) : 0,
                                          want_wb ? ta.dyr + tile / 8 : 0);
          const int64_t nsm_x = want_w ? tc_rows(tile, ta.sx) : 0;
          if (nsm_dy > kTcBwdMaxRows) return;  // pads far beyond the kernel span
          ta.dlo = int(e0);
          ta.tile = int(tile);
          ta.nsm_dy = int(nsm_dy);
          ta.nsm_x = int(nsm_x);
          ta.ntiles = ceil_div(span, tile);
          ta.work = pr.B * ta.ntiles;
          ta.split = cap_split(choose_split(pr.C, ta.work, dev, tune));
          const int64_t grid = pr.C * ta.split;
          DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
          // Two staging buffers, and two raw areas of a unit more per tensor in 16-byte units
          // (dy, and x where dw is wanted); the end-of-block reduction reuses them (D sums, db).
          const int64_t raw = (al.by_units(al.dy) ? nsm_dy + 1 : 0) +
                              (want_w && al.by_units(al.x) ? nsm_x + 1 : 0);
          const int64_t smem = std::max<int64_t>(2 * (nsm_dy + nsm_x + raw) * 16,
                                                 int64_t(16 * kTcMaxShifts * 8 + kWarps) * 4);
          if (want_wb) ta.part = static_cast<A*>(alloc(size_t(ta.split * per_split)));
          with_tc_shifts(std::max(ta.sd, ta.sx), [&](auto sc) {
            auto kern = &dw_bwd_cf_tc_kernel<T, W, decltype(sc)::value>;
            prepare_kernel(kern, smem, dev.device);
            DW_LAUNCH(kern, grid, size_t(smem), stream, ta, al);
            DW_CHECK_LAUNCH("dw_bwd_cf_tc_kernel");
          });
          if (want_wb) launch_reduce(ta.part, ta.split);
          launched = true;
        }
      });
      if (launched) return;
    }
    // dx as the forward of dy with the flipped kernel (dx_by_forward); the tile kernel below
    // then computes dw and db alone, or nothing.
    if (want_x && wflip != nullptr && dx_by_forward<T>(pr, want_wb, tune)) {
      const Problem fp{pr.B, pr.C, pr.Lo, pr.L, pr.K, 1, 1, pr.K - 1 - pr.pl};
      forward<T, W>(fp, dy, dyd, wflip, nullptr, dx, dxd, stream, dev, tune);
      want_x = false;
      a.want_x = false;
      a.dx = nullptr;
      a.dx_vec = 0;
      if (!want_wb) return;
    }
    // Both tiles start on an N = G*V boundary (16-byte fetch groups of T). Thread items of V
    // outputs, up to cf_bwd_items<T>() of them on the fast paths (4096-output tiles for half
    // types); the general path keeps kCfItemsBwd, so its shared tiles (which grow with the
    // stride) stay as they were.
    constexpr int64_t N = int64_t(G) * V;
    const int64_t per_item = int64_t(kThreads) * V;
    const int64_t span = std::max(pr.Lo, ceil_div(pr.L, pr.s));
    const int max_items = fast ? cf_bwd_items<T>() : kCfItemsBwd;
    const int items = int(clamp64(ceil_div(span, per_item), 1, max_items));
    const int64_t tile = per_item * items;
    const int64_t dlo = floor_to(dlo_raw, N);
    const int64_t dyj = -dlo;
    // Fast paths read x up to tile + off + kp + V (off < N: the window base moves by whole
    // vectors); the general path (tile - 1)*s + (K - 1)*d + 1 + off.
    const int64_t x_ext = std::max(tile + kp + N + V, (tile - 1) * pr.s + (pr.K - 1) * d_eff + N);
    const int64_t dy_ext = std::max({dyj + tile, tile + dyj + pr.pl + kp + 2 * V + 1,
                                     dyj + floor_div(tile * pr.s - 1 + pr.pl, pr.s) + 1});
    const int64_t nsm_x = want_w ? ceil_div(x_ext, N) * G : 0;
    const int64_t nsm_dy = ceil_div(dy_ext, N) * G;
    const int64_t smem = ((nsm_x + nsm_dy) * V + kp + (kp + 1) * kWarps) * int64_t(sizeof(A));
    if (smem <= limit) {
      a.items = items;
      a.tile = int(tile);
      a.off = int(pos_mod(-pr.pl, N));
      a.dlo = int(dlo);
      a.nsm_x = int(nsm_x);
      a.nsm_dy = int(nsm_dy);
      a.ntiles = std::max(ceil_div(pr.Lo, tile), ceil_div(pr.L, tile * pr.s));
      a.work = pr.B * a.ntiles;
      a.split = choose_split(pr.C, a.work, dev, tune);
      const int64_t grid = pr.C * a.split;
      DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
      if (want_wb) {
        a.part = static_cast<A*>(alloc(size_t(a.split * per_split)));
      }
      auto launch = [&](auto kern) {
        prepare_kernel(kern, smem, dev.device);
        DW_LAUNCH(kern, grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH("dw_bwd_cf_kernel");
      };
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        constexpr int KC = decltype(kc)::value;
        constexpr int IT = cf_bwd_items<T>();
        // Run-time K with float accumulation: the dw partials in registers where kp fits a tier
        // (dx alone keeps the leaner kernel: the tiers hold up to 230 registers).
        if constexpr (KC == 0 && std::is_same_v<A, float>) {
          if (fast && want_w && tune.allow_rt_regs && kp <= kBwdRtRegsMax) {
            if (kp <= 16) {
              launch(&dw_bwd_cf_kernel<T, W, 0, IT, 16>);
            } else if (kp <= 32) {
              launch(&dw_bwd_cf_kernel<T, W, 0, IT, 32>);
            } else if (kp <= 64) {
              launch(&dw_bwd_cf_kernel<T, W, 0, IT, 64>);
            } else {
              launch(&dw_bwd_cf_kernel<T, W, 0, IT, kBwdRtRegsMax>);
            }
            return;
          }
        }
        launch(&dw_bwd_cf_kernel<T, W, KC, IT>);
      });
      if (want_wb) launch_reduce(a.part, a.split);
      return;
    }
  } else if (path == Path::CL) {
    // Compiled K with 16-byte-aligned positions of dy, x (when dw is wanted) and dx (when
    // wanted): the register-direct kernel (depthwise_bwd_cl_reg.cuh, any padding), one wave of
    // blocks (equal work per block); the workspace stays <= 64 MiB.
    a.dy_vec = cl_vec_level<T, V, gvec_of<T>()>(dy, dyd);
    a.x_vec = cl_vec_level<T, V, gvec_of<T>()>(x, xd);
    a.dx_vec = want_x ? cl_vec_level<T, V, gvec_of<T>()>(dx, dxd) : 0;
    if (tune.allow_reg_bwd && pr.pl >= 0 && a.dy_vec == kVecGroup &&
        (!want_w || a.x_vec == kVecGroup) && (!want_x || a.dx_vec == kVecGroup)) {
      bool launched = false;
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        constexpr int KC = decltype(kc)::value;
        if constexpr (KC > 0) {
          using Cfg = ClRegBwd<T, KC>;
          auto kern = &dw_bwd_cl_reg_kernel<T, W, KC>;
          const int64_t ncv = ceil_div(pr.C, Cfg::NV);  // channel vectors
          const int64_t cb = cl_reg_channel_block(ncv);
          const int64_t groups = ceil_div(ncv, cb);
          const size_t smem = size_t(cl_bwd_reg_smem_floats<T, KC>(cb, want_x, want_wb)) * 4;
          BwdArgs<T, W> ra = a;
          ra.tile = int(cb);
          ra.ntiles = cl_bwd_reg_ntiles<KC, Cfg::TP>(pr.L, pr.Lo, pr.pl);
          ra.work = pr.B * ra.ntiles;
          int64_t split = wave_split(groups, ceil_div(ra.work, kThreads / cb),
                                     resident_blocks(kern, smem, dev.device, Cfg::kMinBlocks), dev, tune);
          if (want_wb) {
            split = cap_split(split);
            ra.part = static_cast<A*>(alloc(size_t(split * per_split)));
          }
          ra.split = split;
          const int64_t grid = groups * split;
          DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
          DW_LAUNCH(kern, grid, smem, stream, ra);
          DW_CHECK_LAUNCH("dw_bwd_cl_reg_kernel");
          if (want_wb) launch_reduce(ra.part, split);
          launched = true;
        }
      });
      if (launched) return;
    }
    const int64_t per_item = int64_t(kClGroups) * V;
    const int64_t span = std::max(pr.Lo, ceil_div(pr.L, pr.s));
    const int items = int(clamp64(ceil_div(span, per_item), 1, kClItemsBwd));
    const int64_t tile = per_item * items;
    const int64_t dlo = dlo_raw;
    const int64_t x_rows = std::max(tile + kp - 1, (tile - 1) * pr.s + (pr.K - 1) * d_eff + 1);
    const int64_t dy_rows = std::max({tile - dlo, tile + pr.pl - dlo,
                                      floor_div(tile * pr.s - 1 + pr.pl, pr.s) + 1 - dlo});
    const int64_t nsm_x = want_w ? x_rows : 0;
    const int64_t smem = (nsm_x + dy_rows + kp + kp + 1) * kClVecs * V * int64_t(sizeof(A));
    if (smem <= limit) {
      const int64_t groups = ceil_div(pr.C, int64_t(kClVecs) * V);
      a.items = items;
      a.tile = int(tile);
      a.off = 0;
      a.dlo = int(dlo);
      a.nsm_x = int(nsm_x);
      a.nsm_dy = int(dy_rows);
      a.ntiles = std::max(ceil_div(pr.Lo, tile), ceil_div(pr.L, tile * pr.s));
      a.work = pr.B * a.ntiles;
      a.split = choose_split(groups, a.work, dev, tune);
      const int64_t grid = groups * a.split;
      DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
      if (want_wb) {
        a.part = static_cast<A*>(alloc(size_t(a.split * per_split)));
      }
      with_kernel_size<T>(pr, fast, tune, [&](auto kc) {
        auto kern = &dw_bwd_cl_kernel<T, W, decltype(kc)::value, kClItemsBwd>;
        prepare_kernel(kern, smem, dev.device);
        DW_LAUNCH(kern, grid, size_t(smem), stream, a);
        DW_CHECK_LAUNCH("dw_bwd_cl_kernel");
      });
      if (want_wb) launch_reduce(a.part, a.split);
      return;
    }
  }

  // Direct kernels.
  DirectArgs<T, W> da{};
  da.x = x;
  da.dy = dy;
  da.w = w;
  da.y = dx;
  da.B = pr.B;
  da.C = pr.C;
  da.L = pr.L;
  da.Lo = pr.Lo;
  da.K = pr.K;
  da.s = pr.s;
  da.d = pr.d;
  da.pl = pr.pl;
  da.xsb = xd.sb;
  da.xsc = xd.sc;
  da.xsl = xd.sl;
  da.ysb = dxd.sb;
  da.ysc = dxd.sc;
  da.ysl = dxd.sl;
  da.dysb = dyd.sb;
  da.dysc = dyd.sc;
  da.dysl = dyd.sl;
  da.want_w = want_w;
  da.want_b = want_b;
  if (want_x) {
    const int64_t grid = clamp64(ceil_div(pr.B * pr.C * pr.L, kThreads), 1,
                                 std::min<int64_t>(tune.max_grid, int64_t(dev.sms) * 64));
    auto kern = &dw_bwd_dx_direct_kernel<T, W>;
    DW_LAUNCH(kern, grid, size_t(0), stream, da);
    DW_CHECK_LAUNCH("dw_bwd_dx_direct_kernel");
  }
  if (want_wb) {
    const int64_t work = ceil_div(pr.B * pr.Lo, kThreads);
    const int64_t split = cap_split(choose_split(pr.C, work, dev, tune));
    da.split = split;
    da.part = static_cast<A*>(alloc(size_t(split * per_split)));
    const int64_t grid = pr.C * split;
    DW_HOST_CHECK(grid <= INT_MAX, "sepconv1d: too many channels for the CUDA grid");
    auto kern = &dw_bwd_dw_direct_kernel<T, W>;
    DW_LAUNCH(kern, grid, size_t(0), stream, da);
    DW_CHECK_LAUNCH("dw_bwd_dw_direct_kernel");
    launch_reduce(da.part, split);
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
