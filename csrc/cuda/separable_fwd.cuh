// Fused depthwise-separable Conv1d forward: a block owns a tile of BM output channels and walks
// a list of "items" (batch b, BN output positions); per item it loops over the input channels in
// chunks of BK: it stages x (+ halo) and the depthwise weights with cp.async, computes the
// depthwise chunk h (BK x BN) on chip in the accumulation type, stores it in the GEMM operand type
// to shared memory and multiplies it with the pointwise weight chunk (BM x BK) on tensor cores
// (bf16/fp16 m16n8k16 or TF32 m16n8k8 mma.sync; on sm_90a bf16/fp16 wgmma, kGemmWg) or with a
// register-blocked SIMT GEMM (fp32, fp64). The finished tile (+ folded bias) is stored straight
// from the accumulators.
//
// Pointwise weights are either streamed per chunk (W ring of two stages) or, when BM x Cin fits,
// loaded once per block and kept resident while the block walks many items (persistent: grid =
// Cout tiles x workers); that removes the dominant L2 traffic (W re-reads).
//
// Cout tiles and the depthwise: the blocks are split into "groups" of Cout tiles. A block of group
// g walks its items and, per item, makes one pass per Cout tile of the group (ppg tiles per
// group). The depthwise of an item is computed once, during the first pass, and kept in shared
// memory (one h chunk per chunk of input channels) for the other passes: with one group
// (ppg = n_mt) the depthwise runs once per output position instead of once per Cout tile
// (Cout = 1536 in BM = 256 tiles: 6x fewer depthwise FMAs). With ppg = 1 every block owns one
// Cout tile (two h stages). The host picks the fewest groups that still fill the GPU.
//
// The (item, pass, chunk) triples of a block form one flat stream f = 0, 1, ... with one
// __syncthreads per step: wait cp.async; sync; issue W(f+1) (streamed) and, if step f+2 is in a
// first pass, X(f+2); then GEMM W(f) x h(f) and, if step f+1 is in a first pass, depthwise
// X(f+1) -> h(f+1) (in opposite orders in warps 0-3 and 4-7, which pair up on the four
// schedulers, so FMA and tensor pipes overlap); store the tile if f ends its pass.
// Global loads run a full step ahead of their use.
//
// wgmma (kGemmWg): W and h^T live in the 128-byte swizzle (separable_wgmma.cuh); W streams
// through a ring of 4 stages loaded 2 steps ahead; a step issues GEMM(f) asynchronously, runs the
// depthwise of step f+1 while the tensor cores work, and waits only for GEMM(f-1) (all of them
// before a tile is stored); at least 3 h slots, so no slot is rewritten while a GEMM reads it.
#pragma once

#include <cuda.h>  // CUtensorMap (the type only: maps are encoded through the runtime's driver entry point)

#include "common/dispatch.h"
#include "cuda/separable_common.cuh"

namespace sepconv1d {
namespace cuda {
namespace sep {

// Everything the forward kernel reads from the host plan. Offsets in bytes, sizes in elements.
struct FwdParams {
  DwParams dw;       // x, depthwise weights (dwb == nullptr: folded into bias)
  void* y;
  const void* wp;    // prepared pointwise weights (see FwdTile::kWTransposed)
  const void* bias;  // folded bias, acc type, [cout_pad]
  int64_t ysb, ysc, ysl;
  int64_t Lout;
  int cout, cin_pad, cout_pad;
  int n_mt, n_lt;
  int n_items;    // batch * n_lt
  int n_groups;   // Cout-tile groups; block b: group b % n_groups, worker b / n_groups
  int ppg;        // Cout tiles per group (passes per item); group g owns tiles g * ppg, ...
  int n_workers;  // blocks per group; worker w takes items w, w + n_workers, ...
  int resident;   // 1: the whole W tile (BM x cin_pad) lives in shared memory at sm_w[0] (ppg 1)
  int wpitch;     // row pitch (elements) of the W buffer: streamed WP, resident WPR
  int y_pair;     // channel-first y, pairs (n, n+1) aligned: one 2-element store
  int y_vec4;     // channel-first y, quads aligned: one 4-element store (SIMT)
  int y_vec8;     // channel-first y, groups of 8 aligned: one 16-byte store (wgmma, 16-bit y)
  int h_slots;    // h chunks in shared memory: kMinHSlots (ppg == 1), or max(n_chunks, kMinHSlots)
  int h_bytes;    // bytes per h chunk (aligned)
  int sm_w[2], sm_x[2], sm_dw[2], sm_h;
  int w_bytes;    // wgmma: bytes per W stage; stage s at sm_w[0] + s * w_bytes (kWStages stages)
  int w_stages;   // warp-specialised: W stages in the ring
  int sm_bar;     // warp-specialised: the mbarriers (W full / empty, h full / empty, x full)
  // Warp-specialised kernels with kXTma: the producers' x windows come by the copy engine through
  // x_map, a 3-d tiled tensor map over x's (L, Cin, batch) with box xpitch x BK x 1 (positions and
  // channels outside x read as zeros), encoded by the host (ws_x_map_fits).
  CUtensorMap x_map;
  // kDwMma kernels (16-bit x, weights of x's type) need no preparation kernel: W comes through
  // w_map, a tensor map over pw_raw (Cout x Cin, contiguous rows) as (Cin, Cout, 1) with box
  // 64 x 64 x 1 and the 128-byte swizzle, which lays a box out as ws_w_index does (positions
  // outside pw read as zeros); the producers bulk-copy the taps and the depthwise bias from dw.dwp
  // (rows of K) and dw.dwb (or nullptr) in x's type and add the bias to h; the epilogue adds
  // pwb_raw (x's type, or nullptr) instead of the folded bias.
  CUtensorMap w_map;
  const void* pw_raw;
  const void* pwb_raw;
};

// Compile-time tile geometry shared by the kernel and the host plan.
// MMA paths: 8 warps, each a 64 x WN tile (WN = 32: <= 128 registers, two blocks per SM;
// WN = 64: half the shared-memory operand traffic per MMA, one block per SM). BN = 8 * 64 * WN / BM.
// wgmma (kGemmWg): two warpgroups, each BM / 2 rows x BN columns in m64nBNk16 steps, BK = 64,
// W and h^T in the 128-byte swizzle (rows of 64 channels); WN is 64 (one block per SM).
template <typename Tx, typename Tm, int kGemm, int BM_, int BN_, int BK_, int WN_ = 32>
struct FwdTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WN = WN_;
  static constexpr int kNT = WN / 8;  // n8 MMA tiles per warp
  using Tacc = typename AccOf<Tx>::type;
  static constexpr bool kSimt = kGemm == kGemmSimt;
  static constexpr bool kTf32 = kGemm == kGemmTf32 || (kGemm == kGemmWg && sizeof(Tm) == 4);
  static constexpr bool kWg = kGemm == kGemmWg;
  static constexpr int kWgRows = BM / 2;      // wgmma: rows per warpgroup
  static constexpr int kWgMB = kWgRows / 64;  // wgmma: m64 blocks per warpgroup
  // Streamed W stages and how many steps ahead W is loaded. wgmma: 2 steps ahead (steps without
  // a depthwise are short, so one step of lead left the products waiting on L2) into a ring of 4,
  // because the products of a step are still running during the next one.
  static constexpr int kWStages = kWg ? 4 : 2;
  static constexpr int kWLead = kWg ? 2 : 1;
  // Fewest h slots: wgmma keeps two steps' products in flight while the next depthwise writes.
  static constexpr int kMinHSlots = kWg ? 3 : 2;
  // MMA paths: W as [BM][pitch] (k contiguous); SIMT: W^T as [k][pitch] (m contiguous).
  static constexpr bool kWTransposed = kSimt;
  // Streamed chunk pitch; all pitches are odd multiples of 16 B (conflict-free ldmatrix rows),
  // except wgmma's swizzled 128-byte rows.
  static constexpr int WP = kSimt ? BM + 4 : kWg ? BK : (kGemm == kGemmMma16 ? BK + 8 : BK + 4);
  static constexpr int W_ELEMS = kSimt ? BK * WP : BM * WP;
  // Resident pitch for cin_pad input channels (cin_pad % BK == 0).
  static constexpr int resident_pitch(int cin_pad) {
    return kSimt ? BM + 4 : cin_pad + (kGemm == kGemmMma16 ? 8 : 4);
  }
  static constexpr int64_t resident_elems(int cin_pad) {
    return kSimt ? static_cast<int64_t>(cin_pad) * (BM + 4)
                 : static_cast<int64_t>(BM) * resident_pitch(cin_pad);
  }
  // h chunk as [BK][HP] (n contiguous); wgmma: h^T as [BN][BK] (k contiguous, swizzled).
  static constexpr int HP = kSimt ? BN + 4 : kWg ? BK : BN + 8;
  static constexpr int H_ELEMS = kWg ? BN * BK : BK * HP;
  // Accumulators per thread.
  static constexpr int kAccRegs =
      kSimt ? (BM / 16) * (BN / 16) : kWg ? kWgRows * BN / 128 : 16 * kNT;
  static constexpr int kV = 16 / static_cast<int>(sizeof(Tx));  // x elements per 16 B
  // Outputs per depthwise item: 16 (window and weights shared by twice the outputs) where the
  // register budget allows it (16-bit x, WN = 64 tiles with up to 255 registers), 4 on BN 32
  // tiles (32 channels x 8 items: one per producer thread), else 8.
  static constexpr int kItemT = (WN == 64 && sizeof(Tx) == 2) ? 16 : BN == 32 ? 4 : 8;
  static_assert(kGemm != kGemmMma16 || (BK % 16 == 0 && BM % 64 == 0 && BN * BM == 8 * 64 * WN),
                "mma16 tiles: 8 warps of 64 x WN");
  static_assert(kGemm != kGemmTf32 || (BK % 8 == 0 && BM % 64 == 0 && BN * BM == 8 * 64 * WN),
                "tf32 tiles: 8 warps of 64 x WN");
  static_assert(!kWg || (BK * sizeof(Tm) == 128 && WN == 64 && (BM == 128 || BM == 256) &&
                         (BN == 64 || BN == 128 || (BN == 32 && sizeof(Tm) == 4)) &&
                         kAccRegs <= 128),
                "wgmma tiles: two warpgroups of (BM / 2) x BN, BK = one 128-byte row");
  static_assert(WN == 32 || WN == 64, "");
  static_assert(!kSimt || ((BM / 16) % 4 == 0 && (BN / 16) % 4 == 0), "simt thread tile in 4s");
  static_assert(BN % kItemT == 0, "BN must be a multiple of the depthwise item width");
  static_assert(kThreads % BK == 0, "");
};

// Two consecutive outputs (dst 2-element aligned).
__device__ __forceinline__ void store_pair(float* dst, float a, float b) {
  *reinterpret_cast<float2*>(dst) = make_float2(a, b);
}
__device__ __forceinline__ void store_pair(__half* dst, float a, float b) {
  *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* dst, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(a, b);
}

// Two fp32 values as one packed 16-bit pair (low half = a).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// In a quad (lanes 4k .. 4k + 3, q = lane % 4): w[j] of lane s -> w[s] of lane j (4 x 4
// transpose of 32-bit words) in two butterfly rounds, with selects instead of register indexing.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int q) {
  // Round 1 (partner q ^ 1): swap w[1] <-> w[0] on odd/even lanes, and w[3] <-> w[2].
  {
    const bool odd = q & 1;
    const uint32_t s0 = odd ? w[0] : w[1];
    const uint32_t s1 = odd ? w[2] : w[3];
    const uint32_t r0 = __shfl_xor_sync(0xffffffffu, s0, 1);
    const uint32_t r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
    if (odd) { w[0] = r0; w[2] = r1; } else { w[1] = r0; w[3] = r1; }
  }
  // Round 2 (partner q ^ 2): swap the 2 x 2 blocks.
  {
    const bool hi = q & 2;
    const uint32_t s0 = hi ? w[0] : w[2];
    const uint32_t s1 = hi ? w[1] : w[3];
    const uint32_t r0 = __shfl_xor_sync(0xffffffffu, s0, 2);
    const uint32_t r1 = __shfl_xor_sync(0xffffffffu, s1, 2);
    if (hi) { w[0] = r0; w[1] = r1; } else { w[2] = r0; w[3] = r1; }
  }
}

// 16 bytes to global memory (dst 16-byte aligned).
template <typename T>
__device__ __forceinline__ void store16(T* dst, const uint32_t (&w)[4]) {
  *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
}

// The epilogue's vectors of a fragment row (i, h) of a wgmma tile (accumulator layout in
// wg_store_tile's comment), biased by bm:
// * row_run: the lane's pairs of n8 tiles 4 G .. 4 G + 3, 16-bit, as 4 packed pairs (with h in
//   perm_h_row's order, 8 consecutive columns: wg_store_runs);
// * row_octet: lane q's 8 consecutive columns of n8 tile 4 G + q, 16-bit, as 4 packed pairs (the
//   lanes of a quad trade row_run's pairs: a 4 x 4 transpose);
// * row_quad: the lane's pairs of n8 tiles 2 G (a) and 2 G + 1 (b), and r, the pair lane q ^ 1
//   sent: even lanes own columns (a, r), odd lanes (r, b), 4 consecutive ones. 16-bit as packed
//   words (a[0], b[0], r[0]), float32 as values. The callers select with whole vectors
//   (odd ? (r, b) : (a, r)): selecting the elements one by one, LLVM split some of the stores.
template <typename Tx, int BN>
__device__ __forceinline__ void row_run(const float* acc, int i, int h, int G, float bm,
                                        uint32_t (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int idx = i * (BN / 2) + (4 * G + j) * 4 + 2 * h;
    if constexpr (sizeof(Tx) == 2) w[j] = pack2<Tx>(acc[idx] + bm, acc[idx + 1] + bm);
  }
}
template <typename Tx, int BN>
__device__ __forceinline__ void row_octet(const float* acc, int i, int h, int G, float bm, int tq,
                                          uint32_t (&w)[4]) {
  row_run<Tx, BN>(acc, i, h, G, bm, w);
  quad_transpose(w, tq);
}
template <typename Tx, int BN, typename V>
__device__ __forceinline__ void row_quad(const float* acc, int i, int h, int G, float bm, bool odd,
                                         V (&a)[2], V (&b)[2], V (&r)[2]) {
  const int ia = i * (BN / 2) + 2 * G * 4 + 2 * h, ib = ia + 4;
  if constexpr (sizeof(Tx) == 2) {
    a[0] = pack2<Tx>(acc[ia] + bm, acc[ia + 1] + bm);
    b[0] = pack2<Tx>(acc[ib] + bm, acc[ib + 1] + bm);
    r[0] = __shfl_xor_sync(0xffffffffu, odd ? a[0] : b[0], 1);
  } else {
    a[0] = acc[ia] + bm;
    a[1] = acc[ia + 1] + bm;
    b[0] = acc[ib] + bm;
    b[1] = acc[ib + 1] + bm;
    r[0] = __shfl_xor_sync(0xffffffffu, odd ? a[0] : b[0], 1);
    r[1] = __shfl_xor_sync(0xffffffffu, odd ? a[1] : b[1], 1);
  }
}

// Rows of odd pitch: lane q's pair of n8 tile jn (v[0], v[1]) and the first value of its right
// neighbour's pair (lane 3: lane 0's of tile jn + 1), for the pair shifted by one element.
template <int BN>
__device__ __forceinline__ void row_shifted(const float* acc, int i, int h, int jn, float bm,
                                            int lane, float (&v)[3]) {
  constexpr int kNJ = BN / 8;
  const int tq = lane & 3, src = (lane & ~3) | ((tq + 1) & 3);
  const int idx = i * (BN / 2) + jn * 4 + 2 * h;
  v[0] = acc[idx] + bm;
  v[1] = acc[idx + 1] + bm;
  const float next0 = jn + 1 < kNJ ? acc[idx + 4] + bm : 0.0f;
  v[2] = __shfl_sync(0xffffffffu, tq == 0 ? next0 : v[0], src);
}

// Rows of 16-bit y that are not 16-byte aligned, in whole 16-byte units: w holds the lane's 8
// consecutive columns (row_octet), prev the 8 before them, a (1-7) the row's element offset within
// its 16-byte unit; out gets elements [8 - a, 16 - a) of (prev, w), the unit that starts a columns
// before w's first. Two selects by the word offset, then a funnel shift by the odd element. The same
// operation as the depthwise rows' rows_realign (depthwise_rows.cuh) in another select form: one
// shared helper would change one of the two kernels' code, to be timed on the device first.
__device__ __forceinline__ void units_shift(const uint32_t (&prev)[4], const uint32_t (&w)[4],
                                            int a, uint32_t (&out)[4]) {
  const int sidx = 8 - a;  // first element taken, 1-7
  const uint32_t cat[8] = {prev[0], prev[1], prev[2], prev[3], w[0], w[1], w[2], w[3]};
  uint32_t t[6], u[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) t[i] = (sidx & 4) ? cat[i + 2] : cat[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) u[i] = (sidx & 2) ? t[i + 1] : t[i];
  const uint32_t sh = (sidx & 1) ? 16u : 0u;
#pragma unroll
  for (int k = 0; k < 4; ++k) out[k] = __funnelshift_r(u[k], u[k + 1], sh);
}
// Elements [e0, e1) of the packed 16-bit words w to dst[0, e1 - e0), one 2-byte store each (the
// partial units at a tile's ends).
template <typename Tx>
__device__ __forceinline__ void store_elems(Tx* dst, const uint32_t (&w)[4], int e0, int e1) {
  unsigned short* d = reinterpret_cast<unsigned short*>(dst) - e0;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (e >= e0 && e < e1) d[e] = static_cast<unsigned short>(w[e >> 1] >> (16 * (e & 1)));
  }
}

// One 4-, 8- or 16-byte store of 32-bit words to global memory (dst aligned to its size), written
// as one instruction, for the ragged tiles' epilogue: there the compiler merged the whole
// vectors' stores with the partial ones' element stores and split them into words.
__device__ __forceinline__ void st_global_v1(void* dst, uint32_t a) {
#ifdef SEP_EMULATE
  *static_cast<uint32_t*>(dst) = a;
#else
  asm volatile("st.global.b32 [%0], %1;" ::"l"(dst), "r"(a));
#endif
}
__device__ __forceinline__ void st_global_v2(void* dst, uint32_t a, uint32_t b) {
#ifdef SEP_EMULATE
  *static_cast<uint2*>(dst) = make_uint2(a, b);
#else
  asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(dst), "r"(a), "r"(b));
#endif
}
__device__ __forceinline__ void st_global_v4(void* dst, uint32_t a, uint32_t b, uint32_t c,
                                             uint32_t d) {
#ifdef SEP_EMULATE
  *static_cast<uint4*>(dst) = make_uint4(a, b, c, d);
#else
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(a), "r"(b), "r"(c),
               "r"(d));
#endif
}
// The low 16 bits of a packed pair, as one 16-bit output.
__device__ __forceinline__ void st_low_half(void* dst, uint32_t bits) {
  *static_cast<uint16_t*>(dst) = static_cast<uint16_t>(bits & 0xffffu);
}
// Two consecutive 16-bit outputs (dst 4-byte aligned), as one store.
template <typename Tx>
__device__ __forceinline__ void st_global_pair(Tx* dst, float a, float b) {
  st_global_v1(dst, pack2<Tx>(a, b));
}

// Elements [e, 8) (head) or [0, e) (tail), e in 1-7, of the packed unit u to its 16-byte-aligned
// dst: at most three stores (8, 4 and 2 bytes) where store_elems takes eight. Head: 2 bytes at e
// if e is odd, 4 at the even s = e + (e & 1) if s % 4 == 2, 8 at 4 if e <= 4. Tail: 8 bytes at 0
// if e >= 4, 4 at e & 4 if e & 2, 2 at e & 6 if e & 1. The words are picked by selects (an
// indexed register array would go to local memory).
template <typename Tx>
__device__ __forceinline__ void store_unit_part(Tx* dst, const uint32_t (&u)[4], bool head, int e) {
  const int s = e + (e & 1);
  const bool p8 = head ? e <= 4 : e >= 4, p4 = head ? (s & 2) != 0 : (e & 2) != 0;
  const bool p2 = e & 1;
  const int o8 = head ? 4 : 0, o4 = head ? s : e & 4, o2 = head ? e : e & 6;
  auto word = [&](int k) { return k == 0 ? u[0] : k == 1 ? u[1] : k == 2 ? u[2] : u[3]; };
  unsigned short* d = reinterpret_cast<unsigned short*>(dst);
  if (p8) st_global_v2(d + o8, o8 ? u[2] : u[0], o8 ? u[3] : u[1]);
  if (p4) st_global_v1(d + o4, word(o4 >> 1));
  if (p2) d[o2] = static_cast<unsigned short>(word(o2 >> 1) >> (16 * (o2 & 1)));
}

// wgmma: warpgroup wn issues the products of one BK chunk, W rows [wn BM / 2, (wn + 1) BM / 2)
// times h^T (both swizzled, K-major), into its accumulators asynchronously (one commit group); the
// caller waits. A k step starts 32 bytes further into the rows: +2 in the descriptor's address field.
// A k step (k16 for 16-bit operands, k8 for tf32) is always 32 bytes of a 128-byte row.
template <typename Tm, int BM, int BN, int BK, bool kFenceCommit = true>
__device__ __forceinline__ void wg_gemm_chunk(float* acc, const Tm* wsb, const Tm* hsb, int wn) {
  constexpr int kRows = BM / 2, kMB = kRows / 64;
  constexpr int kSteps = BK * static_cast<int>(sizeof(Tm)) / 32;
  const uint64_t db0 = wg_desc(hsb);
  const uint64_t da0 = wg_desc(wsb + wn * kRows * BK);
  if constexpr (kFenceCommit) wg_fence();
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
#pragma unroll
    for (int mi = 0; mi < kMB; ++mi) {
      const uint64_t da = da0 + static_cast<uint64_t>(mi * 64 * 128 / 16 + 2 * kk);
      Wgmma<Tm, BN>::mma(*reinterpret_cast<float(*)[BN / 2]>(acc + mi * (BN / 2)), da,
                         db0 + static_cast<uint64_t>(2 * kk));
    }
  }
  if constexpr (kFenceCommit) wg_commit();
}

// The first cnt (< 2 N) elements of N packed 16-bit pairs (low half first) to dst (4-byte
// aligned): whole pairs, then the straddling pair's low half alone.
template <typename Tx, int N>
__device__ __forceinline__ void store_words_upto(Tx* dst, const uint32_t (&w)[N], int cnt) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (2 * j + 1 < cnt) {
      st_global_v1(reinterpret_cast<uint32_t*>(dst) + j, w[j]);
    } else if (2 * j < cnt) {
      st_low_half(dst + 2 * j, w[j]);
    }
  }
}

// One fragment row (i, h) of a 16-bit channel-first tile whose y row yrow (at the tile's first
// column) is 2- or 4-byte aligned, in whole 16-byte units: lane q's 8 consecutive columns
// (segment m = 4 G + q, row_octet) shifted by the row's offset a within its unit, the a columns
// before them taken from the lane that holds segment m - 1 (lane q - 1, or for q = 0 lane 3's of
// the previous G; units_shift), one 16-byte store each. The tile's first unit (lane 0, G 0: its
// own segment rotated, [a, 8)) and last (lane 3 at the last G: [0, a)) go by store_unit_part.
// kRagged: columns [0, nv) only (nv <= BN), the units across nv by store_unit_part too, and a
// first unit that nv ends inside element by element. Rows with a = 0 store the segments as they
// are, in the same instructions.
template <typename Tx, int BN, bool kRagged>
__device__ __forceinline__ void store_row_units(const float* acc, int i, int h, float bm, int lane,
                                                bool rok, Tx* yrow, int nv) {
  constexpr int kSegs = BN / 32;  // G: segments 4 G .. 4 G + 3
  const int tq = lane & 3;
  const int a = static_cast<int>((reinterpret_cast<uintptr_t>(yrow) / sizeof(Tx)) & 7);
  const int src = (lane & ~3) | ((tq + 3) & 3);
  uint32_t last[4] = {0u, 0u, 0u, 0u};  // lane 3: its previous segment
  uint32_t lead[4];                     // lane 0: the tile's first unit, stored with the last
#pragma unroll
  for (int G = 0; G < kSegs; ++G) {
    uint32_t w[4], prev[4], out[4];
    row_octet<Tx, BN>(acc, i, h, G, bm, tq, w);
    const bool first = G == 0 && tq == 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      prev[k] = __shfl_sync(0xffffffffu, tq == 3 ? last[k] : w[k], src);
      last[k] = w[k];
      if (first) prev[k] = w[k];  // the tile's first unit: its segment rotated
    }
    units_shift(prev, w, a, out);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[k] = a == 0 ? w[k] : out[k];
      if (G == 0) lead[k] = out[k];
    }
    const int u0 = 32 * G + 8 * tq - a;  // the unit's first column
    Tx* unit = yrow + u0;
    if (rok) {
      if (first && a != 0) {
        // Stored below; a tile of fewer columns than its first unit holds, element by element.
        if (kRagged && nv < 8 - a) store_elems<Tx>(yrow, w, 0, nv);
      } else if (!kRagged || u0 + 8 <= nv) {
        st_global_v4(unit, out[0], out[1], out[2], out[3]);  // one instruction (st_global_v1's note)
      } else if (u0 < nv) {
        store_unit_part<Tx>(unit, out, false, nv - u0);
      }
    }
    if (G == kSegs - 1) {
      // The tile's first unit ([a, 8), lane 0) and its last ([0, a), lane 3: the columns after
      // its last whole unit, from w rotated) in one set of stores.
      uint32_t rot[4], part[4];
      units_shift(w, w, a, rot);
      const bool is_lead = tq == 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) part[k] = is_lead ? lead[k] : rot[k];
      const bool go = rok && a != 0 &&
                      (is_lead ? !kRagged || nv >= 8 - a : tq == 3 && (!kRagged || u0 + 8 < nv));
      if (go) {
        store_unit_part<Tx>(is_lead ? yrow - a : unit + 8, part, is_lead,
                            is_lead || !kRagged ? a : min(a, nv - u0 - 8));
      }
    }
  }
}

// wg_store_tile's ragged tiles of channel-first y (the last position tile of each row, Cout
// tiles past cout): rows [0, mvalid) and columns [0, nv) of the tile at yb (y's batch row start
// + j0), in the same vectors as the whole tiles, each whole where it ends below nv and element by
// element where it crosses it, instead of a per-element loop with a bounds check and 64-bit index
// maths per element. Every lane runs every shuffle; only the stores are guarded. A separate
// function: written as one template with the whole tiles' path, the whole tiles lost 2-5% (the
// alignment branch moved into the row loop, and their plain vector stores were split). 16-bit y
// only (wg_store_tile's kRaggedVectors says why).
template <typename Tx, int BM, int BN>
__device__ __forceinline__ void wg_store_ragged_cf(const FwdParams& p, const float* acc,
                                                const float* bias_pre, Tx* yb, int m0, int t,
                                                int mvalid, int nv) {
  static_assert(sizeof(Tx) == 2, "16-bit y");
  constexpr int kRows = BM / 2, kMB = kRows / 64, kNJ = BN / 8;
  const int lane = t & 31, wm = (t >> 5) & 3, wn = t >> 7, g8 = lane >> 2, tq = lane & 3;
  const bool odd = tq & 1;
  auto row_of = [&](int i, int h) { return wn * kRows + i * 64 + wm * 16 + g8 + h * 8; };
  auto idx_of = [&](int i, int jn, int h) { return i * (BN / 2) + jn * 4 + 2 * h; };
#pragma unroll
  for (int i = 0; i < kMB; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool rok = row_of(i, h) < mvalid;
      const float bm = bias_pre[i * 2 + h];
      Tx* yrow = yb + static_cast<int64_t>(m0 + row_of(i, h)) * p.ysc;
      if (p.y_vec8) {
        // As the whole tiles: lane q stores the 8 columns of tile 4 G + q after a quad transpose.
#pragma unroll
        for (int G = 0; G < kNJ / 4; ++G) {
          uint32_t w[4];
          row_octet<Tx, BN>(acc, i, h, G, bm, tq, w);
          const int c0 = 32 * G + 8 * tq;
          if (rok && c0 + 8 <= nv) {
            st_global_v4(yrow + c0, w[0], w[1], w[2], w[3]);
          } else if (rok && c0 < nv) {
            store_words_upto<Tx, 4>(yrow + c0, w, nv - c0);
          }
        }
      } else if (BN == 128 && !p.y_vec4) {
        // As the whole tiles (wg_store_tile's kYUnits), up to column nv.
        store_row_units<Tx, BN, true>(acc, i, h, bm, lane, rok, yrow, nv);
      } else if (p.y_vec4) {
        // As the whole tiles: lanes q and q ^ 1 trade a pair, each stores 4 consecutive columns.
#pragma unroll
        for (int G = 0; G < kNJ / 2; ++G) {
          const int c0 = 16 * G + 2 * tq + (odd ? 6 : 0);
          const bool whole = rok && c0 + 4 <= nv, part = rok && c0 < nv && c0 + 4 > nv;
          uint32_t a[2], b[2], r[2];
          row_quad<Tx, BN>(acc, i, h, G, bm, odd, a, b, r);
          const uint2 q = odd ? make_uint2(r[0], b[0]) : make_uint2(a[0], r[0]);
          const uint32_t w[2] = {q.x, q.y};
          if (whole) {
            st_global_v2(yrow + c0, w[0], w[1]);
          } else if (part) {
            store_words_upto<Tx, 2>(yrow + c0, w, nv - c0);
          }
        }
      } else if (p.y_pair) {
#pragma unroll
        for (int jn = 0; jn < kNJ; ++jn) {
          const int idx = idx_of(i, jn, h);
          const int c = 8 * jn + 2 * tq;
          const float v0 = acc[idx] + bm, v1 = acc[idx + 1] + bm;
          if (rok && c + 1 < nv) {
            st_global_pair(yrow + c, v0, v1);
          } else if (rok && c < nv) {
            yrow[c] = static_cast<Tx>(v0);
          }
        }
      } else {
        // As the whole tiles: rows starting at an odd element store shifted pairs.
        const bool sh = (reinterpret_cast<uintptr_t>(yrow) / sizeof(Tx)) & 1;
        if (rok && sh && tq == 0) yrow[0] = static_cast<Tx>(acc[idx_of(i, 0, h)] + bm);
#pragma unroll
        for (int jn = 0; jn < kNJ; ++jn) {
          float v[3];
          row_shifted<BN>(acc, i, h, jn, bm, lane, v);
          const int c = 8 * jn + 2 * tq + (sh ? 1 : 0);  // the lane's first column
          if (rok && c + 1 < nv) {
            st_global_pair(yrow + c, sh ? v[1] : v[0], sh ? v[2] : v[1]);
          } else if (rok && c < nv) {
            yrow[c] = static_cast<Tx>(sh ? v[1] : v[0]);
          }
        }
      }
    }
  }
}

// wgmma epilogue: thread t of the two warpgroups adds the prefetched folded bias to its
// accumulators and stores them to y rows [m0, m0 + BM) x outputs [j0, j0 + BN) of batch b, then
// zeroes them. Fragment (i, jn, h, e) in acc[i * BN / 2 + 4 jn + 2 h + e]: row
// wn * BM / 2 + 64 i + 16 wm + g8 + 8 h, column 8 jn + 2 tq + e (wn = warpgroup, wm = warp in it,
// g8 = lane / 4, tq = lane % 4); bias_pre[2 i + h] is the bias of that row. kRaggedVectors:
// ragged tiles of channel-first y in vectors (wg_store_ragged_cf), for 16-bit y in pass-major
// kernels. The others keep the smaller per-pair form: the chunk-major kernel inlines this once
// per Cout pass of its group (with the vectors its consumers spilled 2056 bytes instead of 844,
// QuartzNet-block fp16 +5%), and with float32 y the TF32 kernel without the x tensor map spilled
// 204 bytes (none before; QuartzNet-first TF32 +5%) while the others gained nothing measurable.
template <typename Tx, int BM, int BN, bool kRaggedVectors = (sizeof(Tx) == 2)>
__device__ __forceinline__ void wg_store_tile(const FwdParams& p, float* acc,
                                              const float* bias_pre, int64_t b, int64_t j0, int m0,
                                              int t) {
  constexpr int kRows = BM / 2, kMB = kRows / 64, kNJ = BN / 8;
  const int lane = t & 31, wm = (t >> 5) & 3, wn = t >> 7, g8 = lane >> 2, tq = lane & 3;
  const int mvalid = min(BM, p.cout - m0);
  const int nvalid = static_cast<int>(min64(BN, p.Lout - j0));
  Tx* yb = static_cast<Tx*>(p.y) + b * p.ysb;
  auto row_of = [&](int i, int h) { return wn * kRows + i * 64 + wm * 16 + g8 + h * 8; };
  auto idx_of = [&](int i, int jn, int h) { return i * (BN / 2) + jn * 4 + 2 * h; };
  if (sizeof(Tx) == 2 && p.y_vec8 && mvalid == BM && nvalid == BN) {
    // Full tile of 16-byte-aligned channel-first y: lanes of a quad hold columns 2q, 2q + 1 of
    // each n8 tile; a 4 x 4 transpose of packed pairs over the quad gives lane q the 8
    // consecutive columns of tile 4 G + q, stored with one 16-byte store (whole 32-byte sectors)
    // instead of four 4-byte stores.
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float bm = bias_pre[i * 2 + h];
        Tx* yrow = yb + static_cast<int64_t>(m0 + row_of(i, h)) * p.ysc + j0 + 8 * tq;
#pragma unroll
        for (int G = 0; G < kNJ / 4; ++G) {
          uint32_t w[4];
          row_octet<Tx, BN>(acc, i, h, G, bm, tq, w);
          store16(yrow + G * 32, w);
        }
      }
    }
  } else if (p.ysl == 1 && mvalid == BM && nvalid == BN) {
    // Any other full tile of channel-first y (float32, or 16-bit rows not 16-byte aligned: L % 8
    // != 0, as in Conformer's 500, QuartzNet's 835): one row pointer per fragment row and no
    // per-pair checks, which the ragged path's branches and 64-bit index maths per element cost
    // (bf16 seed shape with 8-byte rows 180 -> 113 us, TF32 seed 204 -> 193: csrc/NOTES.md
    // "Twenty-ninth session"). Rows of 4-element alignment: lanes q and q ^ 1 trade one pair of
    // each two n8 tiles (2 G, 2 G + 1), so each lane stores 4 consecutive columns at once, even
    // lanes of tile 2 G and odd lanes of 2 G + 1; rows of 2-element alignment: pairs; rows of odd
    // pitch: pairs shifted by one element where a row starts at an odd one. 16-bit rows not of
    // 4-element alignment in pass-major BN 128 kernels: whole 16-byte units instead (kYUnits).
    const bool odd = tq & 1;
    constexpr bool kYUnits = kRaggedVectors && sizeof(Tx) == 2 && BN == 128;
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float bm = bias_pre[i * 2 + h];
        Tx* yrow = yb + static_cast<int64_t>(m0 + row_of(i, h)) * p.ysc + j0;
        if (kYUnits && !p.y_vec4) {
          // 16-bit rows of 2- or 4-byte alignment (pass-major BN 128 kernels): whole 16-byte units
          // (store_row_units). Against pairs and shifted pairs (harness, us): seed shape at L 4094
          // 175.5 -> 156.4, 4095 194.8 -> 180.6, B64 L 1001 112.8 -> 98.9, FastConformer L 210
          // 86.4 -> 82.6; the tile's two partial units in one set of at most three stores instead
          // of element by element (csrc/NOTES.md "Forty-second session"): 4094 159.7 -> 145.3, fp16
          // 4095 184.6 -> 167.6, y rows of 4098 137.2 -> 119.1. Rows of 4-element alignment keep
          // the 8-byte lane pairs (seed shape with y rows of 4100: 105.3 against 114.8 in units),
          // BN 64 its pairs (Citrinet L 250 95.3 against 102.3 in the first units form).
          store_row_units<Tx, BN, false>(acc, i, h, bm, lane, true, yrow, BN);
        } else if (p.y_vec4) {
#pragma unroll
          for (int G = 0; G < kNJ / 2; ++G) {
            Tx* dst = yrow + 16 * G + 2 * tq + (odd ? 6 : 0);
            if constexpr (sizeof(Tx) == 2) {
              uint32_t a[2], b[2], r[2];
              row_quad<Tx, BN>(acc, i, h, G, bm, odd, a, b, r);
              *reinterpret_cast<uint2*>(dst) =
                  odd ? make_uint2(r[0], b[0]) : make_uint2(a[0], r[0]);
            } else {
              float a[2], b[2], r[2];
              row_quad<Tx, BN>(acc, i, h, G, bm, odd, a, b, r);
              *reinterpret_cast<float4*>(dst) =
                  odd ? make_float4(r[0], r[1], b[0], b[1]) : make_float4(a[0], a[1], r[0], r[1]);
            }
          }
        } else if (p.y_pair) {
#pragma unroll
          for (int jn = 0; jn < kNJ; ++jn) {
            const int idx = idx_of(i, jn, h);
            store_pair(yrow + 8 * jn + 2 * tq, acc[idx] + bm, acc[idx + 1] + bm);
          }
        } else {
          // Rows of odd pitch: a row starting at an odd element (sh) stores the pairs (2 q + 1,
          // 2 q + 2), each lane taking its right neighbour's first value (lane 3 that of lane 0's
          // next tile), and its first and last columns alone; the other rows store their own pairs.
          const bool sh = (reinterpret_cast<uintptr_t>(yrow) / sizeof(Tx)) & 1;
          if (sh && tq == 0) yrow[0] = static_cast<Tx>(acc[idx_of(i, 0, h)] + bm);
#pragma unroll
          for (int jn = 0; jn < kNJ; ++jn) {
            float v[3];
            row_shifted<BN>(acc, i, h, jn, bm, lane, v);
            Tx* dst = yrow + 8 * jn + 2 * tq + (sh ? 1 : 0);
            if (jn + 1 == kNJ && sh && tq == 3) {
              *dst = static_cast<Tx>(v[1]);  // the tile's last column
            } else {
              store_pair(dst, sh ? v[1] : v[0], sh ? v[2] : v[1]);
            }
          }
        }
      }
    }
  } else if (kRaggedVectors && p.ysl == 1) {
    if constexpr (kRaggedVectors) {  // not instantiated for float32 y (16-bit only)
      wg_store_ragged_cf<Tx, BM, BN>(p, acc, bias_pre, yb + j0, m0, t, mvalid, nvalid);
    }
  } else {
    // Ragged tiles (without kRaggedVectors), channel-last y: pairs where y allows them, else
    // elements.
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = row_of(i, h);
        if (m >= mvalid) continue;
        const float bm = bias_pre[i * 2 + h];
        Tx* yrow = yb + static_cast<int64_t>(m0 + m) * p.ysc;
#pragma unroll
        for (int jn = 0; jn < kNJ; ++jn) {
          const int n = jn * 8 + 2 * tq;
          const float v0 = acc[idx_of(i, jn, h)] + bm;
          const float v1 = acc[idx_of(i, jn, h) + 1] + bm;
          if (p.y_pair && n + 1 < nvalid) {
            store_pair(yrow + j0 + n, v0, v1);
          } else {
            if (n < nvalid) yrow[(j0 + n) * p.ysl] = static_cast<Tx>(v0);
            if (n + 1 < nvalid) yrow[(j0 + n + 1) * p.ysl] = static_cast<Tx>(v1);
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kMB * BN / 2; ++i) acc[i] = 0.0f;
}

// The epilogue of the kernels whose producers store h in perm_h_row's order (16-bit y: the
// pass-major kernels with the tensor-core depthwise). There lane q of fragment row (i, h) holds,
// in n8 tiles 4 G .. 4 G + 3, the 8 consecutive columns 32 G + 8 q .. + 7 (run G), so it stores
// each run without trading values across the quad (wg_store_tile's 16-bit paths spend 96 selects
// and 32 shuffles per warp and tile on that): one 16-byte store on 16-byte-aligned rows, two
// 8-byte or four 4-byte stores on 8- and 4-byte-aligned ones; on rows of odd pitch the pairs
// shifted by one element where a row starts at an odd one, the run's last element paired with the
// next run's first (one shuffle per run). Ragged tiles store whole runs below the valid columns
// and the run that crosses them in pairs and an element (element by element on rows of odd
// pitch); y that is not channel-first element by element. Then zeroes the accumulators. Every
// vector store is written as one instruction (st_global_v*): with plain stores, LLVM merged the
// paths' stores and split the 16-byte one into words.
template <typename Tx, int BM, int BN>
__device__ __forceinline__ void wg_store_runs(const FwdParams& p, float* acc, const float* bias_pre,
                                              int64_t b, int64_t j0, int m0, int t) {
  static_assert(sizeof(Tx) == 2, "16-bit y");
  constexpr int kRows = BM / 2, kMB = kRows / 64, kRuns = BN / 32;
  const int lane = t & 31, wm = (t >> 5) & 3, wn = t >> 7, g8 = lane >> 2, tq = lane & 3;
  const int mvalid = min(BM, p.cout - m0);
  const int nvalid = static_cast<int>(min64(BN, p.Lout - j0));
  Tx* yb = static_cast<Tx*>(p.y) + b * p.ysb;
  auto row_of = [&](int i, int h) { return wn * kRows + i * 64 + wm * 16 + g8 + h * 8; };
  if (p.ysl == 1 && mvalid == BM && nvalid == BN) {
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float bm = bias_pre[i * 2 + h];
        Tx* yrow = yb + static_cast<int64_t>(m0 + row_of(i, h)) * p.ysc + j0 + 8 * tq;
        if (p.y_vec8) {
#pragma unroll
          for (int G = 0; G < kRuns; ++G) {
            uint32_t w[4];
            row_run<Tx, BN>(acc, i, h, G, bm, w);
            st_global_v4(yrow + 32 * G, w[0], w[1], w[2], w[3]);
          }
        } else if (p.y_vec4) {
#pragma unroll
          for (int G = 0; G < kRuns; ++G) {
            uint32_t w[4];
            row_run<Tx, BN>(acc, i, h, G, bm, w);
            st_global_v2(yrow + 32 * G, w[0], w[1]);
            st_global_v2(yrow + 32 * G + 4, w[2], w[3]);
          }
        } else if (p.y_pair) {
#pragma unroll
          for (int G = 0; G < kRuns; ++G) {
            uint32_t w[4];
            row_run<Tx, BN>(acc, i, h, G, bm, w);
#pragma unroll
            for (int k = 0; k < 4; ++k) st_global_v1(yrow + 32 * G + 2 * k, w[k]);
          }
        } else {
          // Rows of odd pitch. A row starting at an odd element (sh) stores the pairs (2 k + 1,
          // 2 k + 2) of each run, the last with the first element of lane q + 1's run (lane 3:
          // lane 0's next run); its first column goes alone, and so does its last. j0 and 8 q are
          // even, so yrow has the row start's parity.
          const bool sh = (reinterpret_cast<uintptr_t>(yrow) / sizeof(Tx)) & 1;
          const int src = (lane & ~3) | ((tq + 1) & 3);
          uint32_t w[kRuns][4];
#pragma unroll
          for (int G = 0; G < kRuns; ++G) row_run<Tx, BN>(acc, i, h, G, bm, w[G]);
          if (sh && tq == 0) st_low_half(yrow, w[0][0]);
#pragma unroll
          for (int G = 0; G < kRuns; ++G) {
            const uint32_t give = tq == 0 ? (G + 1 < kRuns ? w[G + 1][0] : 0u) : w[G][0];
            const uint32_t next = __shfl_sync(0xffffffffu, give, src);
            Tx* dst = yrow + 32 * G + (sh ? 1 : 0);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              const uint32_t hi = k < 3 ? w[G][k + 1] : next;
              const uint32_t shifted = (w[G][k] >> 16) | (hi << 16);
              if (k == 3 && G + 1 == kRuns && sh && tq == 3) {
                st_low_half(dst + 2 * k, shifted);  // the row's last column
              } else {
                st_global_v1(dst + 2 * k, sh ? shifted : w[G][k]);
              }
            }
          }
        }
      }
    }
  } else {
    // Ragged tiles (the last position tile of a row, Cout tiles past cout), and y that is not
    // channel-first. No lane trades values here, so rows past cout are skipped.
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (row_of(i, h) >= mvalid) continue;
        const float bm = bias_pre[i * 2 + h];
        Tx* yrow = yb + static_cast<int64_t>(m0 + row_of(i, h)) * p.ysc + j0 * p.ysl;
        const bool words = p.ysl == 1 && (p.y_vec8 || p.y_vec4 || p.y_pair);
#pragma unroll
        for (int G = 0; G < kRuns; ++G) {
          uint32_t w[4];
          row_run<Tx, BN>(acc, i, h, G, bm, w);
          const int c0 = 32 * G + 8 * tq;
          if (words && c0 + 8 <= nvalid) {
            if (p.y_vec8) {
              st_global_v4(yrow + c0, w[0], w[1], w[2], w[3]);
            } else if (p.y_vec4) {
              st_global_v2(yrow + c0, w[0], w[1]);
              st_global_v2(yrow + c0 + 4, w[2], w[3]);
            } else {
#pragma unroll
              for (int k = 0; k < 4; ++k) st_global_v1(yrow + c0 + 2 * k, w[k]);
            }
          } else if (words && c0 < nvalid) {
            store_words_upto<Tx, 4>(yrow + c0, w, nvalid - c0);
          } else if (!words) {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              if (c0 + e < nvalid) {
                st_low_half(yrow + static_cast<int64_t>(c0 + e) * p.ysl, w[e >> 1] >> (16 * (e & 1)));
              }
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kMB * BN / 2; ++i) acc[i] = 0.0f;
}

// Two blocks per SM (<= 128 registers) except float64, whose double-width depthwise window and
// accumulators need more registers (correctness path).
template <typename Tx, typename Tm, int kGemm, int BM, int BN, int BK, int WN, bool kXcl>
__global__ void __launch_bounds__(kThreads, (sizeof(Tx) == 8 || WN == 64) ? 1 : 2)
    sep_fwd_kernel(const FwdParams p) {
  using Tile = FwdTile<Tx, Tm, kGemm, BM, BN, BK, WN>;
  constexpr int kNT = Tile::kNT;
  using Tacc = typename Tile::Tacc;
  using Dw = DwStage<Tx, Tm, Tile::kTf32, BK, BN, Tile::HP, kXcl, Tile::kItemT, Tile::kWg>;
  constexpr int HP = Tile::HP;
  constexpr bool kSimt = Tile::kSimt;
  constexpr bool kWg = Tile::kWg;

  SEP_DYNAMIC_SMEM(smem_raw);
  // wgmma's swizzle atoms need 1024-byte-aligned buffers: the plan adds 1024 bytes of slack.
  unsigned char* smem = smem_raw;
  if constexpr (kWg) smem += (1024u - (smem_u32(smem_raw) & 1023u)) & 1023u;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;

  const int group = static_cast<int>(blockIdx.x % p.n_groups);
  const int worker = static_cast<int>(blockIdx.x / p.n_groups);
  const int mt0 = group * p.ppg;               // first Cout tile of the group
  const int passes = min(p.ppg, p.n_mt - mt0);  // Cout tiles of this group
  const int n_chunks = p.cin_pad / BK;
  const int wpitch = p.wpitch;

  // Ring stage s (0, 1) of each buffer; selected, not indexed, so nothing lands in local memory.
  // The offsets go through opaque() so the pointers are rebuilt at each use instead of being
  // hoisted out of the stream loop into (64-bit) registers.
  auto ws = [&](int s) {
    if constexpr (kWg) return reinterpret_cast<Tm*>(smem + opaque(p.sm_w[0] + s * p.w_bytes));
    return reinterpret_cast<Tm*>(smem + opaque(s ? p.sm_w[1] : p.sm_w[0]));
  };
  auto xs = [&](int s) { return reinterpret_cast<Tx*>(smem + opaque(s ? p.sm_x[1] : p.sm_x[0])); };
  auto dws = [&](int s) {
    return reinterpret_cast<Tacc*>(smem + opaque(s ? p.sm_dw[1] : p.sm_dw[0]));
  };
  auto hs = [&](int s) { return reinterpret_cast<Tm*>(smem + opaque(p.sm_h + s * p.h_bytes)); };

  // Position in the flat stream: chunk of pass of item. Valid while item < n_items. h0 is the h
  // slot of chunk 0 of the item; chunk k lives in slot (h0 + k) mod h_slots. ppg == 1: two
  // slots, alternating chunk by chunk. Shared h: h_slots = n_chunks (h0 stays 0, chunk k in slot
  // k), so the next item's chunk 0, computed during the last step of this item, lands in slot 0,
  // which no pass of this item reads any more; with a single chunk, two slots alternate by item.
  // b and lt (batch, position tile) of the item are derived once per item, not per use.
  struct Cursor {
    int chunk, pass, item, h0, b, lt;
  };
  auto at_item = [&](Cursor& c) {
    c.b = c.item / p.n_lt;
    c.lt = c.item - c.b * p.n_lt;
  };
  auto next = [&](Cursor c) {
    if (++c.chunk == n_chunks) {
      c.chunk = 0;
      if (++c.pass == passes) {
        c.pass = 0;
        c.item += p.n_workers;
        c.h0 = (c.h0 + n_chunks) % p.h_slots;
        at_item(c);
      }
    }
    return c;
  };
  auto h_slot = [&](Cursor c) {
    const int s = c.h0 + c.chunk;  // < 2 * h_slots when h_slots >= n_chunks
    if constexpr (kWg) return s % p.h_slots;
    return p.h_slots == 2 ? (s & 1) : (s >= p.h_slots ? s - p.h_slots : s);
  };
  auto m0_of = [&](Cursor c) { return (mt0 + c.pass) * BM; };
  // first output position of the item, input position of its window element 0
  auto item_j0 = [&](const Cursor& c) { return static_cast<int64_t>(c.lt) * BN; };
  auto item_p0 = [&](const Cursor& c) { return item_j0(c) * p.dw.stride - p.dw.pad_left; };

  // ---- loaders (cp.async; the caller commits) ----------------------------------------------------
  // Streamed W chunk c0 .. c0 + BK of Cout tile m0 (MMA: BM rows x BK; SIMT: BK rows x BM).
  auto load_w_chunk = [&](int chunk, int m0, int stage) {
    const int t = opaque(threadIdx.x);
    const int c0 = chunk * BK;
    constexpr int kRows = kSimt ? BK : BM;
    constexpr int kVecPerRow = (kSimt ? BM : BK) * static_cast<int>(sizeof(Tm)) / 16;
    constexpr int kElPerVec = 16 / static_cast<int>(sizeof(Tm));
    // A thread copies vector v of rows r0, r0 + kRowStep, ... (fixed per thread: no division,
    // one 64-bit pointer step per row).
    static_assert(kThreads % kVecPerRow == 0 && kRows % (kThreads / kVecPerRow) == 0, "");
    constexpr int kRowStep = kThreads / kVecPerRow;
    const int r0 = t / kVecPerRow;
    const int v = t % kVecPerRow;
    const int src_pitch = kSimt ? p.cout_pad : p.cin_pad;
    const Tm* src = static_cast<const Tm*>(p.wp) +
                    (kSimt ? static_cast<int64_t>(c0 + r0) * src_pitch + m0
                           : static_cast<int64_t>(m0 + r0) * src_pitch + c0) + v * kElPerVec;
    // wgmma: 16-byte chunk v of row r lands at chunk v ^ (r % 8); kRowStep % 8 == 0, so the
    // chunk is the same for all rows of this thread.
    Tm* dst = ws(stage) + r0 * Tile::WP + (kWg ? (v ^ (r0 & 7)) : v) * kElPerVec;
    static_assert(!kWg || kRowStep % 8 == 0, "");
#pragma unroll
    for (int i = 0; i < kRows / kRowStep; ++i) {
      cp_async16(dst + i * kRowStep * Tile::WP, src, 16);
      src += static_cast<int64_t>(kRowStep) * src_pitch;
    }
  };
  // Resident W: the whole tile (MMA: BM rows x cin_pad; SIMT: cin_pad rows x BM) into ws(0).
  auto load_w_resident = [&](int m0) {
    const int t = opaque(threadIdx.x);
    constexpr int kElPerVec = 16 / static_cast<int>(sizeof(Tm));
    const int rows = kSimt ? p.cin_pad : BM;
    const int vpr = (kSimt ? BM : p.cin_pad) / kElPerVec;
    const Tm* src = static_cast<const Tm*>(p.wp) +
                    (kSimt ? static_cast<int64_t>(m0) : static_cast<int64_t>(m0) * p.cin_pad);
    const int64_t src_pitch = kSimt ? p.cout_pad : p.cin_pad;
    Tm* dst = ws(0);
    for (int idx = t; idx < rows * vpr; idx += kThreads) {
      const int r = idx / vpr;
      const int v = idx - r * vpr;
      cp_async16(dst + r * wpitch + v * kElPerVec, src + r * src_pitch + v * kElPerVec, 16);
    }
  };
  auto load_x = [&](Cursor c, int stage) {
    const int64_t p0 = item_p0(c);
    Dw::load(p.dw, c.b, c.chunk * BK, p0, Dw::offset(p.dw, c.b, c.chunk * BK, p0), xs(stage),
             dws(stage), tid);
  };
  auto depthwise = [&](Cursor c, int stage) {
    const int64_t p0 = item_p0(c);
    // h feeds only the product (bias folded, nothing past the output end stored): no clip.
    auto run = [&](auto kc) {
      Dw::template compute<decltype(kc)::value, false>(p.dw, xs(stage), dws(stage),
                                                       hs(h_slot(c)),
                                                       Dw::offset(p.dw, c.b, c.chunk * BK, p0),
                                                       c.chunk * BK, BN, tid);
    };
    // Strict fp32 (SIMT) recomputes the depthwise once per Cout tile: the common kernel sizes
    // with the taps unrolled at compile time, as in the warp-specialised producers.
    if constexpr (kSimt && std::is_same_v<Tx, float> && !kXcl) {
      if (p.dw.mode == kModeVec) {
        dispatch_producer_kernel_size(p.dw.K, run);
        return;
      }
    }
    run(std::integral_constant<int, 0>{});
  };

  // ---- GEMM ----------------------------------------------------------------------------------------
  // wgmma: wm = warp in its warpgroup (16 rows of each m64 block), wn = warpgroup.
  constexpr int kWarpsM = kSimt ? 1 : kWg ? 4 : BM / 64;
  constexpr int TM = BM / 16, TN = BN / 16;  // SIMT thread tile
  // Thread -> fragment coordinates. Recomputed inside gemm / store_tile from an opaque thread
  // index, so none of them is kept live across the stream loop.
  struct Frag {
    int lane, wm, wn, g8, tq, tm, tn;
  };
  auto frag = [&]() {
    const int t = opaque(threadIdx.x);
    Frag q;
    q.lane = t & 31;
    const int w = t >> 5;
    q.wm = w % kWarpsM;  // MMA: warp tile row (64 rows each)
    q.wn = w / kWarpsM;  // MMA: warp tile column (WN columns each)
    q.g8 = q.lane >> 2;  // MMA: fragment row group
    q.tq = q.lane & 3;   // MMA: thread in quad
    q.tm = (w >> 1) * 4 + (q.lane >> 3);  // SIMT: 4-row groups at tm * 4 (+ 64)
    q.tn = (w & 1) * 8 + (q.lane & 7);    // SIMT: 4-column groups at tn * 4 (+ 64)
    return q;
  };

  constexpr int kAccRegs = Tile::kAccRegs;
  Tacc acc[kAccRegs];
  // wgmma: the folded bias of this thread's fragment rows, loaded when a pass starts so the
  // epilogue does not wait on it.
  float bias_pre[kWg ? 2 * Tile::kWgMB : 1];
  auto prefetch_bias = [&](int m0) {
    if constexpr (kWg) {
      const int t = threadIdx.x;
      const int wm = (t >> 5) & 3, wn = t >> 7, g8 = (t & 31) >> 2;
      const float* bias = static_cast<const float*>(p.bias) + m0;  // cout_pad entries
#pragma unroll
      for (int i = 0; i < Tile::kWgMB; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          bias_pre[i * 2 + h] = bias[wn * Tile::kWgRows + i * 64 + wm * 16 + g8 + h * 8];
        }
      }
    } else {
      (void)m0;
    }
  };
#pragma unroll
  for (int i = 0; i < kAccRegs; ++i) acc[i] = Tacc(0);

  // W chunk of the step: MMA rows m at wsb[m * wpitch + k]; SIMT rows k at wsb[k * wpitch + m].
  auto w_chunk = [&](Cursor c, int stage) -> const Tm* {  // resident: ppg == 1, one Cout tile
    if (!p.resident) return ws(stage);
    return ws(0) + (kSimt ? c.chunk * BK * wpitch : c.chunk * BK);
  };

  // wgmma: issues the chunk's products asynchronously (one commit group); the caller waits.
  auto gemm = [&](const Tm* wsb, const Tm* hsb) {
    const Frag q = frag();
    const int lane = q.lane, wm = q.wm, wn = q.wn, g8 = q.g8, tq = q.tq, tm = q.tm, tn = q.tn;
    if constexpr (kWg) {
      (void)lane, (void)wm, (void)g8, (void)tq, (void)tm, (void)tn;
      wg_gemm_chunk<Tm, BM, BN, BK>(acc, wsb, hsb, wn);
    } else if constexpr (kGemm == kGemmMma16) {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        uint32_t bf[kNT][2];
#pragma unroll
        for (int jp = 0; jp < kNT / 2; ++jp) {
          uint32_t r[4];
          ldmatrix_x4_trans(r, hsb + (kk + (lane & 15)) * HP + wn * WN + jp * 16 + (lane >> 4) * 8);
          bf[2 * jp][0] = r[0];
          bf[2 * jp][1] = r[1];
          bf[2 * jp + 1][0] = r[2];
          bf[2 * jp + 1][1] = r[3];
        }
        const Tm* arow = wsb + (wm * 64 + (lane & 15)) * wpitch + kk + (lane >> 4) * 8;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          uint32_t a[4];
          ldmatrix_x4(a, arow + i * 16 * wpitch);
#pragma unroll
          for (int jn = 0; jn < kNT; ++jn) {
            float(&d)[4] = *reinterpret_cast<float(*)[4]>(&acc[(i * kNT + jn) * 4]);
            mma_16816<Tm>(d, a, bf[jn]);
          }
        }
      }
    } else if constexpr (kGemm == kGemmTf32) {
      const uint32_t* wsu = reinterpret_cast<const uint32_t*>(wsb);
      const uint32_t* hsu = reinterpret_cast<const uint32_t*>(hsb);
#pragma unroll
      for (int kk = 0; kk < BK; kk += 8) {
        uint32_t bf[kNT][2];
#pragma unroll
        for (int jn = 0; jn < kNT; ++jn) {
          const int col = wn * WN + jn * 8 + g8;
          bf[jn][0] = hsu[(kk + tq) * HP + col];
          bf[jn][1] = hsu[(kk + tq + 4) * HP + col];
        }
        // A fragments one m16 tile at a time (fewer live registers than loading all four).
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t* ar = wsu + (wm * 64 + i * 16 + g8) * wpitch + kk + tq;
          uint32_t a[4];
          a[0] = ar[0];
          a[1] = ar[8 * wpitch];
          a[2] = ar[4];
          a[3] = ar[8 * wpitch + 4];
#pragma unroll
          for (int jn = 0; jn < kNT; ++jn) {
            float(&d)[4] = *reinterpret_cast<float(*)[4]>(&acc[(i * kNT + jn) * 4]);
            mma_1688_tf32(d, a, bf[jn]);
          }
        }
      }
    } else {
      // Unrolled by 8 (was 4): the loop's own instructions per FFMA halve (strict fp32 seed
      // forward 990 -> 974 us); no spills at 128 registers.
#pragma unroll 8
      for (int k = 0; k < BK; ++k) {
        Tacc av[TM], bv[TN];
#pragma unroll
        for (int gi = 0; gi < TM / 4; ++gi) load4(wsb + k * wpitch + gi * 64 + tm * 4, &av[gi * 4]);
#pragma unroll
        for (int gj = 0; gj < TN / 4; ++gj) load4(hsb + k * HP + gj * 64 + tn * 4, &bv[gj * 4]);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);
        }
      }
    }
  };

  // ---- epilogue: acc + bias -> y straight from registers, then acc = 0 -----------------------------
  auto store_tile = [&](const Cursor& c, int m0) {
    if constexpr (kWg) {
      wg_store_tile<Tx, BM, BN>(p, acc, bias_pre, c.b, item_j0(c), m0, threadIdx.x);
      return;
    }
    const Frag q = frag();
    const int wm = q.wm, wn = q.wn, g8 = q.g8, tq = q.tq, tm = q.tm, tn = q.tn;
    const int64_t b = c.b;
    const int64_t j0 = item_j0(c);
    const int mvalid = min(BM, p.cout - m0);
    const int nvalid = static_cast<int>(min64(BN, p.Lout - j0));
    Tx* yb = static_cast<Tx*>(p.y) + b * p.ysb;
    const Tacc* bias = static_cast<const Tacc*>(p.bias) + m0;
    auto put = [&](int m, int n, Tacc v) {  // one element, bounds checked
      if (m < mvalid && n < nvalid) {
        yb[static_cast<int64_t>(m0 + m) * p.ysc + (j0 + n) * p.ysl] = static_cast<Tx>(v + bias[m]);
      }
    };
    if constexpr (kSimt) {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int m = (i / 4) * 64 + tm * 4 + (i % 4);
#pragma unroll
        for (int gj = 0; gj < TN / 4; ++gj) {
          const int n = gj * 64 + tn * 4;
          const Tacc* v = &acc[i * TN + gj * 4];
          if (p.y_vec4 && m < mvalid && n + 3 < nvalid) {
            Tx* dst = yb + static_cast<int64_t>(m0 + m) * p.ysc + (j0 + n);
            const Tacc bm = bias[m];
            if constexpr (sizeof(Tx) == 4) {
              *reinterpret_cast<float4*>(dst) =
                  make_float4(v[0] + bm, v[1] + bm, v[2] + bm, v[3] + bm);
            } else {
              reinterpret_cast<double2*>(dst)[0] = make_double2(v[0] + bm, v[1] + bm);
              reinterpret_cast<double2*>(dst)[1] = make_double2(v[2] + bm, v[3] + bm);
            }
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) put(m, n + e, v[e]);
          }
        }
      }
    } else {
      // A full tile of aligned channel-first y (the common case): unchecked pair stores from
      // one row pointer per fragment row, with the bias read once per row, in straight-line
      // code. Anything else (ragged edges, channel-last or unaligned y) takes the checked loop.
      // Fragment (i, jn, h): rows m(i, h), columns n(jn) and n(jn) + 1, in acc[idx], acc[idx + 1]
      // (i = m16 tile of the warp's 64 rows, jn = n8 tile of its WN columns).
      auto frag_m = [&](int i, int h) { return wm * 64 + i * 16 + g8 + h * 8; };
      const int n_base = wn * WN + 2 * tq;
      auto frag_idx = [&](int i, int jn, int h) { return (i * kNT + jn) * 4 + 2 * h; };
      if (p.y_pair && mvalid == BM && nvalid == BN) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = frag_m(i, h);
            const float bm = static_cast<float>(bias[m]);
            Tx* yrow = yb + static_cast<int64_t>(m0 + m) * p.ysc + j0 + n_base;
#pragma unroll
            for (int jn = 0; jn < kNT; ++jn) {
              const float v0 = acc[frag_idx(i, jn, h)];
              const float v1 = acc[frag_idx(i, jn, h) + 1];
              store_pair(yrow + jn * 8, v0 + bm, v1 + bm);
            }
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = frag_m(i, h);
#pragma unroll
            for (int jn = 0; jn < kNT; ++jn) {
              const int n = n_base + jn * 8;
              const float v0 = acc[frag_idx(i, jn, h)];
              const float v1 = acc[frag_idx(i, jn, h) + 1];
              if (p.y_pair && m < mvalid && n + 1 < nvalid) {
                store_pair(yb + static_cast<int64_t>(m0 + m) * p.ysc + (j0 + n), v0 + bias[m],
                           v1 + bias[m]);
              } else {
                put(m, n, v0);
                put(m, n + 1, v1);
              }
            }
          }
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[i] = Tacc(0);
  };

  // ---- the flat stream -------------------------------------------------------------------------------
  Cursor cur{0, 0, worker, 0, 0, 0};  // step f
  if (cur.item >= p.n_items || passes <= 0) return;
  at_item(cur);
  if (n_chunks == 0) {  // no input channels: y = bias
    for (; cur.item < p.n_items; cur.item += p.n_workers) {
      at_item(cur);
      for (int ps = 0; ps < passes; ++ps) {
        prefetch_bias((mt0 + ps) * BM);
        store_tile(cur, (mt0 + ps) * BM);
      }
    }
    return;
  }
  // x of a step is staged (and its depthwise run) only in the first pass over its item.
  auto needs_x = [&](Cursor c) { return c.item < p.n_items && c.pass == 0; };
  if (p.resident) {
    load_w_resident(m0_of(cur));
  } else {
    load_w_chunk(0, m0_of(cur), 0);
    Cursor cw = cur;  // wgmma: W of steps 1 .. kWLead - 1 as well
    for (int k = 1; k < Tile::kWLead; ++k) {
      cw = next(cw);
      if (cw.item < p.n_items) load_w_chunk(cw.chunk, m0_of(cw), k);
    }
  }
  load_x(cur, 0);
  {
    const Cursor c1 = next(cur);
    if (needs_x(c1)) load_x(c1, 1);
  }
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  depthwise(cur, 0);

  for (int f = 0; cur.item < p.n_items; ++f) {
    const Cursor c1 = next(cur);  // step f + 1
    const Cursor c2 = next(c1);   // step f + 2
    // Step f needs W(f) and, if it runs a depthwise, X(f+1) (issued by step f - 1). wgmma: the W
    // of step f came two steps earlier, so without a depthwise the newest group may still be in
    // flight.
    if (kWg && !needs_x(c1)) {
      cp_async_wait_group<1>();
    } else {
      cp_async_wait_all();
    }
    if constexpr (kWg) fence_proxy_async();  // h(f) and W(f) are read by wgmma (async proxy)
    __syncthreads();
    // mma.sync: W(f+1) -> ws[(f+1)&1] (last read by GEMM(f-1)); X(f+2) -> xs[f&1] (last read
    // by depthwise(f)); both finished before the barrier above.
    if constexpr (kWg) {
      // W(f+2) -> stage (f+2) % 4 = that of GEMM(f-2): every thread waited for it (below, in
      // step f-1) before the barrier above.
      static_assert(Tile::kWStages == 4 && Tile::kWLead == 2, "");
      if (c2.item < p.n_items) load_w_chunk(c2.chunk, m0_of(c2), (f + 2) & 3);
    } else if (!p.resident && c1.item < p.n_items) {
      load_w_chunk(c1.chunk, m0_of(c1), (f + 1) & 1);
    }
    if (needs_x(c2)) load_x(c2, f & 1);
    cp_async_commit();
    const bool dw_next = needs_x(c1);
    if constexpr (kWg) {
      if (cur.chunk == 0) prefetch_bias(m0_of(cur));
      // The tensor cores work through GEMM(f) while the same warps run the next depthwise, and
      // into step f+1 (its loads and barrier): only GEMM(f-1) must be done when step f ends,
      // all of the pass before its tile is stored. W stage and h slot of GEMM(f) are rewritten
      // two steps later at the earliest (4 W stages, loaded 2 ahead; >= 3 h slots).
      gemm(w_chunk(cur, f & 3), hs(h_slot(cur)));
      if (dw_next) depthwise(c1, (f + 1) & 1);
      if (cur.chunk == n_chunks - 1) {
        wg_wait<0>(acc);
      } else {
        wg_wait<1>(acc);
      }
    } else {
      // Warps w and w + 4 share a scheduler (SM sub-partition): they run the two independent
      // phases in opposite orders so one feeds the tensor pipe while the other does the FMAs.
      // One call site per phase (a loop of two, not unrolled) keeps a single copy of each in
      // the instruction cache.
#pragma unroll 1
      for (int ph = 0; ph < 2; ++ph) {
        if ((ph == 0) == (warp < 4)) {
          gemm(w_chunk(cur, f & 1), hs(h_slot(cur)));
        } else if (dw_next) {
          depthwise(c1, (f + 1) & 1);
        }
      }
    }
    if (cur.chunk == n_chunks - 1) store_tile(cur, m0_of(cur));
    cur = c1;
  }
}

// ---- weight preparation ---------------------------------------------------------------------------
// wp:   MMA paths [cout_pad][cin_pad] (Tm, tf32-rounded when kTf32), SIMT [cin_pad][cout_pad];
// dwp:  [cin_pad][tap_pitch] acc type (identity: weight 1 at tap 0); tap_pitch = DwParams::dwpitch;
// bias: [cout_pad] acc type, pw_bias[o] + sum_c pw[o, c] * dw_bias[c] (fixed order: per-lane
//       partial sums over c = lane mod 32, then a fixed butterfly).
// pw element (o, c) is pw[o * pw_so + c * pw_sc].
struct PrepParams {
  const void* pw;
  int64_t pw_so, pw_sc;
  const void* pwb;
  const void* dw;
  const void* dwb;
  void* wp;
  void* dwp;
  void* bias;
  int cout, cin, cout_pad, cin_pad, K, tap_pitch;
  int transpose_w;
  int identity_dw;
  int ws_tiles;  // warp-specialised kernel: W as pre-swizzled tiles of this many columns (ws_w_index)
};

// Where the warp-specialised kernel's W element (o, c) lives: block (o / 64, c / cols) is one
// contiguous run of 64 rows x cols channels (one 128-byte row: 64 16-bit or 32 tf32 values) in the
// 128-byte swizzle (a bulk copy lands it as one consumer warpgroup's wgmma operand), blocks
// ordered by 64-row half of a kWsBM-row Cout tile, then channel chunk: a warpgroup's rows for
// consecutive chunks are one contiguous range (one bulk copy per step of several chunks).
constexpr int kWsBM = 128;
constexpr int kWsRows = kWsBM / 2;  // Cout rows per consumer warpgroup
__device__ __forceinline__ int64_t ws_w_index(int o, int c, int cin_pad, int cols) {
  const int r = o % kWsRows, cc = c % cols, epc = cols / 8;  // elements per 16-byte chunk
  const int64_t block = static_cast<int64_t>(o / kWsRows) * (cin_pad / cols) + c / cols;
  return (block * kWsRows + r) * cols + ((cc / epc) ^ (r & 7)) * epc + cc % epc;
}

template <typename Tw, typename Tm, typename Tacc, bool kTf32>
__global__ void sep_prep_kernel(const PrepParams p) {
  const int64_t n_w = static_cast<int64_t>(p.cout_pad) * p.cin_pad;
  const int64_t n_dw = static_cast<int64_t>(p.cin_pad) * p.tap_pitch;
  const Tw* pw = static_cast<const Tw*>(p.pw);
  const int64_t gstride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n_w + n_dw;
       idx += gstride) {
    if (idx < n_w) {
      int o, c;
      if (p.transpose_w) {
        c = static_cast<int>(idx / p.cout_pad);
        o = static_cast<int>(idx - static_cast<int64_t>(c) * p.cout_pad);
      } else {
        o = static_cast<int>(idx / p.cin_pad);
        c = static_cast<int>(idx - static_cast<int64_t>(o) * p.cin_pad);
      }
      Tacc v = Tacc(0);
      if (o < p.cout && c < p.cin) v = widen<Tacc>(pw[o * p.pw_so + c * p.pw_sc]);
      static_cast<Tm*>(p.wp)[p.ws_tiles ? ws_w_index(o, c, p.cin_pad, p.ws_tiles) : idx] =
          narrow_to<Tm, kTf32>(v);
    } else {
      const int64_t i = idx - n_w;
      const int c = static_cast<int>(i / p.tap_pitch);
      const int k = static_cast<int>(i - static_cast<int64_t>(c) * p.tap_pitch);
      Tacc v = Tacc(0);
      if (c < p.cin && k < p.K) {
        v = p.identity_dw ? Tacc(k == 0 ? 1 : 0)
                          : widen<Tacc>(static_cast<const Tw*>(p.dw)[static_cast<int64_t>(c) * p.K + k]);
      }
      static_cast<Tacc*>(p.dwp)[i] = v;
    }
  }
  // Folded bias, one warp per output channel: lanes take every 32nd input channel, then a fixed
  // butterfly sums the lanes (deterministic). A thread per output walking all Cin serially was
  // latency-bound: 39 us at Cin 256, 150 us at Cin 1024 (more than the fused GEMM's share).
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t n_warps = gstride / 32;
  const Tw* dwb = static_cast<const Tw*>(p.dwb);
  for (int64_t o = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32; o < p.cout_pad;
       o += n_warps) {
    Tacc v = Tacc(0);
    if (o < p.cout && dwb != nullptr) {
      for (int c = lane; c < p.cin; c += 32) {
        v = fma(widen<Tacc>(pw[o * p.pw_so + c * p.pw_sc]), widen<Tacc>(dwb[c]), v);
      }
    }
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (lane == 0) {
      if (o < p.cout && p.pwb != nullptr) v += widen<Tacc>(static_cast<const Tw*>(p.pwb)[o]);
      static_cast<Tacc*>(p.bias)[o] = v;
    }
  }
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
