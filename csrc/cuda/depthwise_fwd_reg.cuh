// Register-direct depthwise forwards without shared memory: channel-first (stride 1, dilation 1,
// compiled K, co-aligned rows of x and y, compiled pad_left) and, at the end of the file,
// channel-last (same, with 16-byte-aligned positions and any padding).
// Torch-free, like depthwise_kernels.cuh; the path choice is forward() in depthwise_launch.cuh.
//
// Why: the tile kernel (dw_fwd_cf_kernel) stages every tile global -> registers -> fp32 shared
// memory -> registers behind two block barriers: ~26 thread instructions per output, and a block
// that loads, waits, computes and stores keeps too few bytes in flight at short rows. Here each
// byte of x is loaded once into registers and used from there; the halo comes from the
// neighbouring lanes by warp shuffles.
//
// Work item = one warp, SPAN = 32 * kRegVecs vectors of NV = 16 / sizeof(T) consecutive outputs of
// one (b, c) row (1024 outputs for half types, 512 for float). Lane l owns the vectors
// v0 + 32u + l (u < kRegVecs): every load and store instruction of the warp covers 512
// consecutive bytes. Output vector v reads x elements [v*NV - P, v*NV + NV - 1 + K - 1 - P]
// (P = pad_left), i.e. x vectors v - HL .. v + HR of the same index grid (x and y rows co-aligned:
// both 16-byte aligned, or both the same shift s past it, as the odd-length rows of contiguous
// tensors are; vector v then starts at element NV v - s); vector v - h is lane l - h's vector of
// the same step, or for the first h lanes, lane 32 - h + l's vector of the previous step. One more
// register vector per lane (`edge`) holds the step-(-1) vector for lanes >= 32 - HL and the
// step-kRegVecs vector for lanes < HR, so only those few lanes load anything twice. Every load of
// the item is issued before any compute.
//
// Row edges: vectors wholly outside [0, L) are zeros without a memory access, a vector across the
// row's start or end is loaded element by element; items whose loads all lie inside the row (a
// warp-uniform test) skip the checks. Stores are 16-byte, element by element only for a vector
// across the row's start or end.
//
// Arithmetic matches dw_fwd_cf_kernel bit for bit: fp32 accumulator starts at the bias (or 0),
// one fmaf per tap in tap order k = 0..K-1, then one rounding to T.
#pragma once

#include "cuda/depthwise_kernels.cuh"

namespace sepconv1d {
namespace cuda {
namespace dwk {

constexpr int kRegVecs = 4;           // 16-byte vectors per lane per work item (64 B in flight)
// __launch_bounds__ minimum blocks per SM: 64 registers (32 warps per SM) for K <= 5; K = 9 holds
// 9 weights and a 16-element window: 72 registers (28 warps, 56 KB of loads in flight per SM);
// float32 K = 9 on rows off the 16-byte grid (kShift) spilled 20 bytes there: 80 (24 warps).
template <typename T, int K_, bool kShift>
constexpr int reg_fwd_min_blocks() {
  return K_ <= 5 ? 8 : (kShift && sizeof(T) == 4 ? 6 : 7);
}

// Elements per work item (one warp).
template <typename T>
constexpr int64_t reg_fwd_span() {
  return int64_t(32) * kRegVecs * int64_t(16 / sizeof(T));
}

// pad_left values compiled per K: 0 ('valid'), (K-1)/2 and K/2 ('same', both roundings for even
// K), K-1 (causal). Others take the tile kernel.
template <int K_, typename F>
bool with_reg_pad(int64_t pl, F&& f) {
  if (pl == 0) {
    f(IC<0>{});
  } else if (pl == (K_ - 1) / 2) {
    f(IC<(K_ - 1) / 2>{});
  } else if (pl == K_ / 2) {
    f(IC<K_ / 2>{});
  } else if (pl == K_ - 1) {
    f(IC<K_ - 1>{});
  } else {
    return false;
  }
  return true;
}

// Shape of the window of one output vector, in 32-bit words of 16-byte vectors.
template <typename T, int K_, int P>
struct RegWindow {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "float, half or bfloat16 activations");
  static_assert(P >= 0 && P <= K_ - 1, "pad_left within the kernel span");
  static constexpr int NV = int(16 / sizeof(T));  // elements per vector
  static constexpr int EPW = int(4 / sizeof(T));  // elements per word
  static constexpr int HL = (P + NV - 1) / NV;            // halo vectors on the left
  static constexpr int HR = (K_ - 1 - P + NV - 1) / NV;   // and on the right
  static constexpr int NVEC = HL + 1 + HR;
  static_assert(HL < 16 && HR < 16, "edge lanes of the left and right halo do not overlap");
  // Element e of window vector m (m = HL is the lane's own vector) is read by some tap.
  static constexpr bool need_elem(int m, int e) {
    const int rel = (m - HL) * NV + e;  // relative to the vector's first output
    return rel >= -P && rel <= NV - 1 + K_ - 1 - P;
  }
  static constexpr bool need_word(int m, int q) {
    return need_elem(m, q * EPW) || need_elem(m, q * EPW + EPW - 1);
  }
};

// The row's shift (row_shift) for the register-direct kernels, which walk each row on its own
// 16-byte grid from element -shift (rows of every tensor of a launch co-aligned: the same shift,
// cf_coaligned in depthwise_launch.cuh; 0 on aligned rows). The emulator counts shifted rows.
template <typename T>
DW_DEV int reg_row_shift(const T* row) {
  const int s = row_shift(row);
#ifdef DW_EMULATE
  if (s != 0) g_emu_reg_shifted_items += 1;
#endif
  return s;
}

// A vector across a row end (or both ends), element by element, zeros outside [0, len).
template <typename T>
DW_DEV uint4 reg_load_edge(const T* row, int64_t e, int64_t len) {
  constexpr int NV = int(16 / sizeof(T));
  T t[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) t[i] = e + i >= 0 && e + i < len ? row[e + i] : zero_of<T>();
  uint4 r;
  memcpy(&r, t, 16);
  return r;
}
// Which register-direct kernels call the row-edge paths out of line (kCold). Inlined at each load
// site of an item (ten in the backward) they made the 16-bit K 9 backward 64 KB of code, and
// instruction fetch its largest stall on rows off the 16-byte grid: out of line it gained 4.9%
// (bf16 L4097), while the K 3 / K 5 backwards lost 4.8% / 2.8% and the forwards 1-2% (H100,
// csrc/NOTES.md: sixty-sixth and sixty-eighth sessions). The realigning kernels were measured,
// and kept their register caps, only out of line.
template <typename T, int K_, bool kBackward, bool kRealign>
constexpr bool reg_cold_edges() {
  return kRealign || (kBackward && sizeof(T) == 2 && K_ == 9);
}
template <typename T>
DW_DEV_COLD uint4 reg_load_edge_cold(const T* row, int64_t e, int64_t len) {
  return reg_load_edge<T>(row, e, len);
}

// One 16-byte vector of x at element e of a unit-stride row of length len, as raw words (row + e
// 16-byte aligned). checked: zeros outside [0, len), element by element for a vector across the
// row's end or (kShift: rows off the 16-byte grid) its start (e is on the row's grid, so a vector
// is wholly inside, across an end, or wholly outside).
template <typename T, bool kShift, bool kCold>
DW_DEV void reg_load(const T* row, int64_t e, int64_t len, bool checked, uint32_t (&r)[4]) {
  constexpr int NV = int(16 / sizeof(T));
  uint4 v;
  if (!checked || (e >= 0 && e + NV <= len)) {
    DW_ASSERT(e >= 0 && e + NV <= len);
    DW_ASSERT(reinterpret_cast<uintptr_t>(row + e) % 16 == 0);
    v = __ldg(reinterpret_cast<const uint4*>(row + e));
  } else if (e < len && (kShift ? e + NV > 0 : e >= 0)) {
    if constexpr (kCold) {
      v = reg_load_edge_cold<T>(row, e, len);
    } else {
      v = reg_load_edge<T>(row, e, len);
    }
  } else {
    v = make_uint4(0u, 0u, 0u, 0u);  // +0.0 in every type
  }
  r[0] = v.x;
  r[1] = v.y;
  r[2] = v.z;
  r[3] = v.w;
}

// NV outputs (one 16-byte vector) at a 16-byte-aligned address, no bounds check.
template <typename T>
DW_DEV void cf_store_full(T* q, const float* v) {
  DW_ASSERT(reinterpret_cast<uintptr_t>(q) % 16 == 0);
  if constexpr (std::is_same_v<T, float>) {
    st_v4f32(q, v[0], v[1], v[2], v[3]);
  } else {
    st_v4u32(q, pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]), pack2<T>(v[4], v[5]),
             pack2<T>(v[6], v[7]));
  }
}

// The elements of a vector (raw words of T) that lie in [0, len), one by one; inline or (kCold)
// out of line, as reg_load_edge.
template <typename T>
DW_DEV void reg_store_edge(T* row, int64_t j, int64_t len, uint4 bits) {
  constexpr int NV = int(16 / sizeof(T));
  T t[NV];
  memcpy(t, &bits, 16);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    if (j + i >= 0 && j + i < len) row[j + i] = t[i];
  }
}
template <typename T>
DW_DEV_COLD void reg_store_edge_cold(T* row, int64_t j, int64_t len, uint4 bits) {
  reg_store_edge<T>(row, j, len, bits);
}

// NV outputs of a vector at element j of a unit-stride row of length len (row + j 16-byte
// aligned): one store inside the row, element by element across its end or (kShift) its start,
// none outside.
template <typename T, bool kShift, bool kCold>
DW_DEV void reg_store_checked(T* row, int64_t j, int64_t len, const float* v) {
  constexpr int NV = int(16 / sizeof(T));
  if (j >= 0 && j + NV <= len) {
    cf_store_full<T>(row + j, v);
  } else if (j < len && (kShift ? j + NV > 0 : j >= 0)) {
    uint4 bits;
    if constexpr (std::is_same_v<T, float>) {
      memcpy(&bits, v, 16);
    } else {  // the same rounding as out_cvt
      bits = make_uint4(pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]), pack2<T>(v[4], v[5]),
                        pack2<T>(v[6], v[7]));
    }
    if constexpr (kCold) {
      reg_store_edge_cold<T>(row, j, len, bits);
    } else {
      reg_store_edge<T>(row, j, len, bits);
    }
  }
}

// Element e (compile-time after unrolling) of a raw vector of N 32-bit words, widened to float.
template <typename T, int N>
DW_DEV float reg_elem(const uint32_t (&r)[N], int e) {
  if constexpr (std::is_same_v<T, float>) {
    return bits_to_float(r[e]);
  } else {
    float lo, hi;
    unpack2<T>(r[e >> 1], lo, hi);
    return (e & 1) ? hi : lo;
  }
}

// The 16 bytes that start d elements into the 32 bytes (a, b), for x rows at another shift than
// y's (kRealign): a virtual x vector on y's grid from two vectors of x's own grid. Branch-free in
// d (warp-uniform): two levels of word selects, then (16-bit, odd d) a half-word funnel.
template <typename T>
DW_DEV void reg_funnel(const uint32_t (&a)[4], const uint32_t (&b)[4], int d, uint32_t (&v)[4]) {
  const uint32_t w[8] = {a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]};
  const int m = sizeof(T) == 4 ? d : d >> 1;  // whole words
  uint32_t t[7];
#pragma unroll
  for (int q = 0; q < 7; ++q) t[q] = (m & 1) ? w[q + 1] : w[q];
  uint32_t s[5];
#pragma unroll
  for (int q = 0; q < 5; ++q) s[q] = (m & 2) ? t[q + 2] : t[q];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (sizeof(T) == 4) {
      v[q] = s[q];
    } else {  // elements 2q + (d & 1) and the next: the high half of s[q] and the low of s[q + 1]
      v[q] = (d & 1) ? ((s[q] >> 16) | (s[q + 1] << 16)) : s[q];
    }
  }
}

// The item's vectors realigned from x's grid to the item's (kRealign): `own` (U steps) and `edge`
// were loaded d elements before the lane's vectors, on x's own 16-byte grid, with one more lane
// loading step U (lanes <= HR). Each vector then continues in the next lane's (lane 31: in lane
// 0's of the next step, or of step U, which lane 0 holds in `edge`; lane 31's step -1 edge in lane
// 0's step 0). Every shuffle sends raw vectors, so the edges' go first.
template <typename T, int U>
DW_DEV void reg_realign(uint32_t (&own)[U][4], uint32_t (&edge)[4], int d, int lane) {
  uint32_t nxt_edge[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    nxt_edge[q] = __shfl_sync(0xffffffffu, lane == 0 ? own[0][q] : edge[q], (lane + 1) & 31);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint32_t nxt[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t send = lane == 0 ? (u + 1 < U ? own[u + 1 < U ? u + 1 : 0][q] : edge[q]) : own[u][q];
      nxt[q] = __shfl_sync(0xffffffffu, send, (lane + 1) & 31);
    }
    reg_funnel<T>(own[u], nxt, d, own[u]);
  }
  reg_funnel<T>(edge, nxt_edge, d, edge);
}

// Builds the window of step u from the lane's raw vectors `own` (U of them) and `edge` (the vector
// of step -1 for lanes >= 32 - HL, of step U for lanes < HR), and widens it to floats:
// f[m * NV + e] = element e of window vector m (m = HL: the lane's own vector), 0 where no tap reads.
template <typename T, typename Win, int U>
DW_DEV void reg_window(const uint32_t (&own)[U][4], const uint32_t (&edge)[4], int u, int lane,
                       float (&f)[Win::NVEC * Win::NV]) {
  constexpr int NV = Win::NV;
  constexpr int HL = Win::HL;
  constexpr int HR = Win::HR;
  uint32_t win[Win::NVEC][4] = {};
#pragma unroll
  for (int q = 0; q < 4; ++q) win[HL][q] = own[u][q];
  const uint32_t* before = u == 0 ? edge : own[u > 0 ? u - 1 : 0];
  const uint32_t* after = u == U - 1 ? edge : own[u < U - 1 ? u + 1 : 0];
#pragma unroll
  for (int h = 1; h <= HL; ++h) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (Win::need_word(HL - h, q)) {
        const uint32_t send = lane >= 32 - h ? before[q] : own[u][q];
        win[HL - h][q] = __shfl_sync(0xffffffffu, send, (lane - h) & 31);
      }
    }
  }
#pragma unroll
  for (int h = 1; h <= HR; ++h) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (Win::need_word(HL + h, q)) {
        const uint32_t send = lane < h ? after[q] : own[u][q];
        win[HL + h][q] = __shfl_sync(0xffffffffu, send, (lane + h) & 31);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < Win::NVEC; ++m) {
#pragma unroll
    for (int e = 0; e < NV; ++e) {
      f[m * NV + e] = Win::need_elem(m, e) ? reg_elem<T, 4>(win[m], e) : 0.0f;
    }
  }
}

// p.ntiles: work items (warps) per row = ceil(Lo / SPAN); p.total = B * C * p.ntiles. kShift:
// rows may start off the 16-byte grid (x and y co-aligned), each item from element -shift of its
// span, p.ntiles = ceil((Lo + NV - 1) / SPAN) (a kernel of its own: the head checks cost the
// float32 K 9 kernel 8 registers, reg_fwd_min_blocks, which the aligned rows do not pay).
// kRealign (with kShift): x rows at any shift, y's own (a slice x[..., 1:], 'valid' outputs of a
// contiguous x): the items walk y's grid; each lane loads x on x's grid, d = (x shift - y shift)
// mod NV elements before its vector, and builds its vector on y's grid from that one and the next
// lane's (reg_funnel); one more lane loads step U for it. The window is then the co-aligned one.
template <typename T, typename W, int K_, int P, bool kShift, bool kRealign = false>
__global__ void __launch_bounds__(kThreads, reg_fwd_min_blocks<T, K_, kShift>())
    dw_fwd_cf_reg_kernel(const FwdArgs<T, W> p) {
  static_assert(kShift || !kRealign, "realigned rows are shifted rows");
  constexpr bool kCold = reg_cold_edges<T, K_, false, kRealign>();
  using Win = RegWindow<T, K_, P>;
  constexpr int NV = Win::NV;
  constexpr int HL = Win::HL;
  constexpr int HR = Win::HR;
  constexpr int U = kRegVecs;
  constexpr int64_t SPAN = reg_fwd_span<T>();
  constexpr int64_t STEP = int64_t(32) * NV;  // elements between a lane's vectors
  const int lane = int(threadIdx.x) & 31;
  const int64_t nwarps = int64_t(gridDim.x) * kWarps;
  for (int64_t item = int64_t(blockIdx.x) * kWarps + int64_t(threadIdx.x >> 5); item < p.total;
       item += nwarps) {
    const int64_t row = udiv(item, p.ntiles);
    const int64_t b = udiv(row, p.C);
    const int64_t c = row - b * p.C;
    const T* xrow = p.x + b * p.xsb + c * p.xsc;
    T* yrow = p.y + b * p.ysb + c * p.ysc;
    // First output (and x element) of the item, on the row's 16-byte grid (x's shift is y's, or
    // with kRealign x is read d elements earlier, on its own grid).
    const int64_t e0 = (item - row * p.ntiles) * SPAN - (kShift ? reg_row_shift(yrow) : 0);
    const int64_t el = e0 + int64_t(lane) * NV;  // this lane's first vector
    const int d = kRealign ? (row_shift(xrow) - row_shift(yrow)) & (NV - 1) : 0;
    constexpr int HRL = kRealign ? HR + 1 : HR;  // lanes that load step U

    // All x loads of the item first (memory-level parallelism), checks only near row edges.
    uint32_t xr[U][4];
    uint32_t edge[4] = {0u, 0u, 0u, 0u};
    auto load_all = [&](bool checked) {
#pragma unroll
      for (int u = 0; u < U; ++u) reg_load<T, kShift, kCold>(xrow, el - d + u * STEP, p.L, checked, xr[u]);
      if (lane >= 32 - HL) {
        reg_load<T, kShift, kCold>(xrow, el - d - STEP, p.L, checked, edge);  // step -1
      } else if (lane < HRL) {
        reg_load<T, kShift, kCold>(xrow, el - d + SPAN, p.L, checked, edge);  // step U
      }
    };
    if (e0 - d - HL * NV >= 0 && e0 - d + SPAN + HRL * NV <= p.L) {  // warp-uniform
      load_all(false);
    } else {
      load_all(true);
    }
    if constexpr (kRealign) reg_realign<T, U>(xr, edge, d, lane);
    // Warp-uniform: every store a whole vector.
    const bool full_item = (!kShift || e0 >= 0) && e0 + SPAN <= p.Lo;
    float wr[K_];
#pragma unroll
    for (int k = 0; k < K_; ++k) wr[k] = float(in_cvt(p.w[c * K_ + k]));
    const float bv = p.bias ? float(in_cvt(p.bias[c])) : 0.0f;

    // Steps past the row end (only in a row's last item) compute zeros and store nothing: no
    // early exit, so that the shuffles stay warp-uniform without a branch per step.
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float xf[Win::NVEC * NV];
      reg_window<T, Win, U>(xr, edge, u, lane, xf);
      // Same order as dw_fwd_cf_kernel: bias, then taps k = 0..K-1.
      float acc[NV];
#pragma unroll
      for (int i = 0; i < NV; ++i) acc[i] = bv;
#pragma unroll
      for (int k = 0; k < K_; ++k) {
#pragma unroll
        for (int i = 0; i < NV; ++i) acc[i] = dfma(wr[k], xf[HL * NV + i - P + k], acc[i]);
      }
      const int64_t j = el + u * STEP;
      if (full_item) {
        cf_store_full<T>(yrow + j, acc);
      } else {
        reg_store_checked<T, kShift, kCold>(yrow, j, p.Lo, acc);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Register-direct channel-last forward
// ------------------------------------------------------------------------------------------------
// x and y are (B, L, C) buffers viewed as (B, C, L): unit stride along C, positions (rows) 16-byte
// aligned (host: cl_vec_level == kVecGroup for both). Same case as the CF kernel otherwise:
// stride 1, dilation 1, compiled K; any padding (pad_left is a run-time offset here).
//
// A thread owns one channel vector of NV = VB / sizeof(T) channels (c0 .. c0 + NV - 1) for the
// whole launch (weights and bias stay in registers) and, per work item, TP consecutive output
// positions j0 .. j0 + TP - 1. It loads the TP + K - 1 input rows q0 .. q0 + TP + K - 2
// (q0 = j0 - pad_left) of its channel vector, all before any compute (VB-byte loads; rows
// outside [0, L) are zeros without a memory access), then computes and stores the TP outputs.
// No shared memory, no barriers, no shuffles: the halo along positions is the K - 1 extra rows,
// read again by the neighbouring item (L2 / L1 hits).
//
// Block = CB channel vectors (consecutive lanes: a warp load / store moves min(CB, 32) x VB
// contiguous bytes per position) x PB = kThreads / CB position slots. Grid = channel groups x split; the block
// (g, s) walks the items s*PB + slot, stepping split*PB (grid-stride over (b, position chunk)).
//
// Registers: K*NV weights + (TP + K - 1)*VB/4 raw row words (and their float conversions) + NV
// accumulators. A 16-byte vector of 8 half channels would need 24-72 weight registers alone, so
// VB is 4 or 8 bytes (see ClReg; every warp access still covers 128-256 contiguous bytes).
//
// A ragged last channel vector (C % NV != 0; reachable only with position strides padded past C)
// is loaded and stored element by element; its missing channels compute zeros that are not stored.
//
// Arithmetic matches dw_fwd_cl_kernel bit for bit: fp32 accumulator starts at the bias (or 0), one
// fmaf per tap in tap order k = 0..K-1 (zero rows included), then one rounding to T.
template <typename T, int K_>
struct ClReg {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "float, half or bfloat16 activations");
  // Chosen for 0 spills (ptxas sm_90): half types 8-byte vectors (4 channels) of 8 positions for
  // K = 3, else 4-byte vectors (2 channels) of 16 positions; float 8-byte vectors (2 channels) of
  // 8 positions for K <= 4, 4-byte (1 channel) of 16 positions for K = 5 and 32 for K = 9 (halo
  // re-reads 25% of the rows: 16 -> 24 -> 32 positions took 79.7 -> 81.0 -> 82.6% of copy on the
  // H200; 32 at 80 registers, 6 blocks per SM, 0 spills).
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int VB = kHalf ? (K_ == 3 ? 8 : 4) : (K_ <= 4 ? 8 : 4);  // bytes per row
  static constexpr int NV = int(VB / sizeof(T));  // channels per thread
  static constexpr int WPV = VB / 4;              // 32-bit words per row vector
  static constexpr int TP = kHalf ? (K_ == 3 ? 8 : 16) : (K_ <= 4 ? 8 : (K_ == 9 ? 32 : 16));
  static constexpr int R = TP + K_ - 1;           // input rows per work item
  // Blocks per SM for __launch_bounds__: 64 registers (32 warps per SM); K = 9 needs 80 (24
  // warps) for 0 spills.
  static constexpr int kMinBlocks = K_ == 9 ? 6 : 8;
};

// Modes of a work item: every row and output inside the tensor and the channel vector whole (no
// checks), the vector whole but some rows or outputs outside, a ragged last channel vector.
constexpr int kClInterior = 0;
constexpr int kClEdge = 1;
constexpr int kClRagged = 2;

// Row q of the thread's channel vector (src = the vector at position 0): zeros outside [0, L)
// (checked modes), one VB-byte load, or (kClRagged) the first nch channels element by element.
template <typename T, int VB, int MODE>
DW_DEV void cl_reg_load(const T* src, int64_t q, int64_t L, int64_t sl, int nch,
                        uint32_t (&r)[VB / 4]) {
  constexpr int NV = int(VB / sizeof(T));
#pragma unroll
  for (int i = 0; i < VB / 4; ++i) r[i] = 0u;  // +0.0 in every type
  if (MODE != kClInterior && uint64_t(q) >= uint64_t(L)) return;
  DW_ASSERT(q >= 0 && q < L);
  const T* a = src + q * sl;
  if constexpr (MODE == kClRagged) {
    T t[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) t[i] = i < nch ? a[i] : zero_of<T>();
    memcpy(r, t, VB);
  } else {
    DW_ASSERT(nch == NV);
    DW_ASSERT(reinterpret_cast<uintptr_t>(a) % VB == 0);
    if constexpr (VB == 16) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(a));
      r[0] = v.x;
      r[1] = v.y;
      r[2] = v.z;
      r[3] = v.w;
    } else if constexpr (VB == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(a));
      r[0] = v.x;
      r[1] = v.y;
    } else {
      static_assert(VB == 4, "4-, 8- or 16-byte channel vectors");
      r[0] = __ldg(reinterpret_cast<const unsigned int*>(a));
    }
  }
}

DW_DEV uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

// NV outputs of one position: one VB-byte store, or the first nch channels element by element.
template <typename T, int VB, int MODE>
DW_DEV void cl_reg_store(T* q, const float* v, int nch) {
  constexpr int NV = int(VB / sizeof(T));
  if constexpr (MODE != kClRagged) {
    DW_ASSERT(reinterpret_cast<uintptr_t>(q) % VB == 0);
    uint32_t u[VB / 4];
#pragma unroll
    for (int i = 0; i < VB / 4; ++i) {
      if constexpr (std::is_same_v<T, float>) {
        u[i] = float_bits(v[i]);
      } else {
        u[i] = pack2<T>(v[2 * i], v[2 * i + 1]);
      }
    }
    if constexpr (VB == 16) {
      st_v4u32(q, u[0], u[1], u[2], u[3]);
    } else if constexpr (VB == 8) {
      st_v2u32(q, u[0], u[1]);
    } else {
#ifdef DW_EMULATE
      std::memcpy(q, &u[0], 4);
#else
      *reinterpret_cast<uint32_t*>(q) = u[0];
#endif
    }
  } else {
#pragma unroll
    for (int e = 0; e < NV; ++e) {
      if (e < nch) q[e] = out_cvt<T>(v[e]);
    }
  }
}

// p.tile: CB, channel vectors per block (a power of two <= kThreads); p.ntiles: position chunks
// of TP per batch; p.total = B * p.ntiles work items per channel vector; p.split: blocks per
// channel group (grid = ceil(ceil(C / NV) / CB) * split).
template <typename T, typename W, int K_>
__global__ void __launch_bounds__(kThreads, ClReg<T, K_>::kMinBlocks)
    dw_fwd_cl_reg_kernel(const FwdArgs<T, W> p) {
  using Cfg = ClReg<T, K_>;
  constexpr int VB = Cfg::VB;
  constexpr int NV = Cfg::NV;
  constexpr int WPV = Cfg::WPV;
  constexpr int TP = Cfg::TP;
  constexpr int R = Cfg::R;
  const int cb = p.tile;
  const int tid = int(threadIdx.x);
  const int64_t g = int64_t(blockIdx.x) / p.split;
  const int64_t sidx = int64_t(blockIdx.x) - g * p.split;
  const int64_t c0 = (g * cb + (tid & (cb - 1))) * NV;
  if (c0 >= p.C) return;  // no barriers or shuffles follow
  const int nch = p.C - c0 < NV ? int(p.C - c0) : NV;
  const bool full = nch == NV;
  const int pb = kThreads / cb;

  float wr[K_][NV];
  float bv[NV];
#pragma unroll
  for (int e = 0; e < NV; ++e) {
    const bool have = e < nch;
#pragma unroll
    for (int k = 0; k < K_; ++k) wr[k][e] = have ? float(in_cvt(p.w[(c0 + e) * K_ + k])) : 0.0f;
    bv[e] = (have && p.bias) ? float(in_cvt(p.bias[c0 + e])) : 0.0f;
  }

  auto item = [&](auto mode, int64_t j0, const T* xsrc, T* ydst) {
    constexpr int MODE = decltype(mode)::value;
    const int64_t q0 = j0 - p.pl;  // x position of window row 0
    // All loads of the item first (memory-level parallelism).
    uint32_t xr[R][WPV];
#pragma unroll
    for (int r = 0; r < R; ++r) cl_reg_load<T, VB, MODE>(xsrc, q0 + r, p.L, p.xsl, nch, xr[r]);
#pragma unroll
    for (int i = 0; i < TP; ++i) {
      // Same order as dw_fwd_cl_kernel: bias, then taps k = 0..K-1.
      float acc[NV];
#pragma unroll
      for (int e = 0; e < NV; ++e) acc[e] = bv[e];
#pragma unroll
      for (int k = 0; k < K_; ++k) {
#pragma unroll
        for (int e = 0; e < NV; ++e) {
          acc[e] = dfma(wr[k][e], reg_elem<T, WPV>(xr[i + k], e), acc[e]);
        }
      }
      const int64_t j = j0 + i;
      if (MODE == kClInterior || j < p.Lo) {
        DW_ASSERT(j < p.Lo);
        cl_reg_store<T, VB, MODE>(ydst + j * p.ysl, acc, nch);
      }
    }
  };

  for (int64_t it = sidx * pb + tid / cb; it < p.total; it += p.split * pb) {
    const int64_t b = udiv(it, p.ntiles);
    const int64_t j0 = (it - b * p.ntiles) * TP;
    const T* xsrc = p.x + b * p.xsb + c0;
    T* ydst = p.y + b * p.ysb + c0;
    if (!full) {
      item(IC<kClRagged>{}, j0, xsrc, ydst);
    } else if (j0 - p.pl >= 0 && j0 - p.pl + R <= p.L && j0 + TP <= p.Lo) {
      item(IC<kClInterior>{}, j0, xsrc, ydst);
    } else {
      item(IC<kClEdge>{}, j0, xsrc, ydst);
    }
  }
}

}  // namespace dwk
}  // namespace cuda
}  // namespace sepconv1d
