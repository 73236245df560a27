// Warp-specialised fused separable forward for sm_90a (wgmma: bf16 / fp16 x, or float32 x on TF32). The uniform wgmma kernel
// (separable_fwd.cuh) runs staging, depthwise, GEMM issue and epilogue in the same 8 warps, one
// block per SM: its issue slots were 29% busy and the tensor pipe 15% active, the warps mostly
// waiting on one phase or another. Here the depthwise has its own warps, handing h chunks to the
// GEMM warps through mbarriers, so the depthwise of the next chunks runs under the products:
//
//  - warps 0-7, two consumer warpgroups: per step (item, Cout pass, Cin chunk) wait for the h chunk
//    and their half of the W stage, issue m64nBNk16 wgmmas on both from shared memory (rows
//    [64 wn, 64 wn + 64) of the 128-row Cout tile), and once the previous step's products are
//    done release its h slot (after the last Cout pass over it) and its W stage (TF32 with the
//    loader: once this step's own products are done, ws_release_at_once). W is the
//    pre-swizzled weight (ws_w_index; 8 KB per warpgroup and chunk, kSC chunks per step), one bulk
//    copy per warpgroup part of a stage, w_stages steps ahead. With a loader (ws_has_loader:
//    16-bit, or TF32 with x by tensor map; pass-major), one thread per consumer warpgroup in the
//    W loader warpgroup (warps 16-19; the rest of it exits) issues them: it waits for its
//    warpgroup's release of a stage part (w_empty) and refills it (w_full), so the consumers only
//    arrive (a copy's issue cost ~150-220 cycles, which the warpgroup's next products used to
//    wait for). Without, thread 0 of each warpgroup refills its own part of the stage it
//    releases (its own w_full barrier).
//    The tile (+ folded bias) is stored from the accumulators at the end of a pass;
//  - warps 8-15, two depthwise producer warpgroups: per (item, chunk), stage x and the depthwise
//    weights with cp.async (one chunk ahead, two buffers; a named barrier among the producers; with
//    kXTma x instead by one tensor-map copy per chunk, completing an x_full mbarrier),
//    compute the depthwise chunk into a free h slot (h^T in the 128-byte swizzle; K = 3, 5, 7, 9
//    with the taps unrolled at compile time), publish it (fence.proxy.async, one arrival per warp).
//    With kPermRows h's rows are in perm_h_row's order (for the run epilogue, wg_store_runs).
//    With the x loader (ws_has_x_loader) the producers only compute: lane 0 of loader warp 18
//    stages every chunk's x window and taps, and the producers hand each buffer back through an
//    x_empty mbarrier instead of the named barrier;
// setmaxnreg moves registers between the warpgroups through a per-CTA pool that holds only what
// the CTA got at launch (ws_consumer_regs / ws_producer_regs): without a loader 168 per consumer
// thread and 88 per producer thread (512 threads x 128 at launch = 128 x (2 x 168 + 2 x 88)), with
// one 152, 72 and 32 for the loader warpgroup (640 x 96 = 128 x (2 x 152 + 2 x 72 + 32); 144 and
// 80 with the x loader). Waits sleep on the mbarrier (suspend-time hint) rather than spin, leaving
// issue slots to the producers.
//
// Pass-major (kG = 0): h slots form a ring of h_slots >= n_chunks (all chunks of an item stay while
// its Cout passes read them; the spare slots let the producer run into the next item). Chunk-major
// (kG > 0, where an item's h does not fit): up to kG Cout passes accumulate side by side, so each
// chunk is released after one visit and a ring of a few slots suffices (see the kernel). Each
// barrier's phase parity is tracked by ring position (a use count per wrap), so nothing divides in
// the loops.
#pragma once

#include "common/dispatch.h"
#include "cuda/separable_fwd.cuh"
#include "cuda/separable_wgmma.cuh"

#ifdef SEP_EMULATE
#include <vector>
#endif

namespace sepconv1d {
namespace cuda {
namespace sep {

constexpr int kWsConsumers = 256;  // two warpgroups (warps 0-7)
constexpr int kWsProducers = 256;  // two depthwise warpgroups (warps 8-15)
constexpr int kWsLoader = 128;     // the W loader warpgroup (warps 16-19, two threads), if any
// W barriers per stage: full and empty, per consumer warpgroup (empty used with the loader).
constexpr int kWsWBarriers = 4;
// Whether sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, kXTma> has the loader warpgroup: 16-bit
// pass-major kernels, where the W loader measured faster (seed bf16 123.8 -> 113.4 us with
// one-chunk steps, 109.0 with two; Vocos bf16 74.3 -> 68.1), and float32 (TF32) pass-major kernels
// with x by tensor map, where it also stages x and the taps (ws_has_x_loader). The other TF32
// kernels lost 1.5-6% with the W loader alone (csrc/NOTES.md "Nineteenth session").
template <typename Tx, int BN>
constexpr bool ws_has_loader(int kG, bool kXTma) {
  return kG == 0 && (sizeof(Tx) == 2 || kXTma);
}
// Whether the loader warpgroup also stages the producers' x windows and taps (warp 18, lane 0):
// the loader kernels with x by tensor map and either the tensor-core depthwise (16-bit: the raw
// taps) or TF32 (the prepared taps, one span whose rows are at the staged pitch dwpitch), where
// the producers need nothing else staged. The producers then release a buffer through x_empty (an
// arrival per thread) instead of meeting at a named barrier every chunk and having thread 0 issue
// the next copy (seed bf16 harness 87.7 -> 84.1 us; K 31 120.1 -> 117.4; seed TF32 193 -> 182).
template <typename Tx, int BN>
constexpr bool ws_has_x_loader(int kG, bool kXTma, bool kDwMma) {
  return ws_has_loader<Tx, BN>(kG, kXTma) && kXTma && (kDwMma || sizeof(Tx) == 4);
}
constexpr int ws_threads(bool loader) { return kWsConsumers + kWsProducers + (loader ? kWsLoader : 0); }
// Registers per thread after the roles split (setmaxnreg). setmaxnreg.inc takes registers from a
// per-CTA pool filled only by setmaxnreg.dec, so the roles must share what the CTA got at launch:
// 512 threads x 128 = 128 x (2 x 168 + 2 x 88); with the loader 640 threads x 96 (20 warps: 5 per
// 16 K sub-partition) = 128 x (2 x 152 + 2 x 72 + 32). With the x loader the consumers use only
// R0-R111 and the producers lose their staging, so 8 registers move to the producers: 144 / 80
// (seed bf16 -1%). The word-row loader kernels stay at 152 / 72: at 144 / 80 they took an 8-byte
// stack frame (Conformer +1.5%, QuartzNet-first fp16 +3.6%; csrc/NOTES.md "Thirty-second session").
constexpr int ws_consumer_regs(bool loader, bool x_loader) { return x_loader ? 144 : loader ? 152 : 168; }
constexpr int ws_producer_regs(bool loader, bool x_loader) { return x_loader ? 80 : loader ? 72 : 88; }
constexpr int kWsLoaderRegs = 32;
// Whether the pass-major consumers wait for each step's products right after issuing them and
// release its W stage and h slot at once, rather than waiting only for the step before (one step
// in flight per warpgroup instead of two; the other warpgroup's products keep the tensor pipe
// busy). Each W stage goes back to the loader a step earlier, which is worth more to the TF32
// loader kernels, whose W refills are the longer wait (3 stages of one chunk), than the second
// step in flight: seed TF32 harness 180.5-181.9 -> 177.4-179.1 us, K 3 174.2-176.5 -> 170.9-173.0;
// Vocos TF32 (BN 64, two-chunk steps, only 2 stages) 0.174 -> 0.134 ms in the benchmark.
// The 16-bit kernels lost 2% with it (82.8-83.4 -> 84.3-85.2) and keep two steps in flight.
template <typename Tx>
constexpr bool ws_release_at_once(bool loader) {
  return loader && sizeof(Tx) == 4;
}
constexpr bool ws_regs_fit(bool loader, bool x_loader) {
  return ws_threads(loader) * (loader ? 96 : 128) ==
         128 * (2 * ws_consumer_regs(loader, x_loader) + 2 * ws_producer_regs(loader, x_loader) +
                (loader ? kWsLoaderRegs : 0));
}
static_assert(ws_regs_fit(true, true) && ws_regs_fit(true, false) && ws_regs_fit(false, false),
              "the register split must spend exactly what the CTA got at launch");

// x staging barriers: x_full per buffer (the kXTma kernels), then x_empty per buffer (the x
// loader's kernels, ws_has_x_loader).
constexpr int kWsXBarriers = 4;

// The producers' x window of one chunk: channels [c0, c0 + CH) x positions [pos0, pos0 + xpitch)
// of batch b, row c at dst + c * xpitch, zeros outside x; by the copy engine through p.x_map,
// completing bar's transaction bytes (the caller expects them).
template <typename Tx, int CH>
__device__ __forceinline__ void load_x_box(const FwdParams& p, Tx* dst, int64_t pos0, int c0,
                                           int64_t b, uint64_t* bar) {
#ifdef SEP_EMULATE
  // The tensor map's semantics, built on the host and handed over as one bulk copy.
  const int w = p.dw.xpitch;
  std::vector<Tx> box(static_cast<size_t>(CH) * w, Tx(0.0f));
  const Tx* x = static_cast<const Tx*>(p.dw.x) + b * p.dw.xsb;
  for (int c = 0; c < CH && c0 + c < p.dw.cin; ++c) {
    for (int i = 0; i < w; ++i) {
      const int64_t pos = pos0 + i;
      if (pos >= 0 && pos < p.dw.L) box[static_cast<size_t>(c) * w + i] = x[(c0 + c) * p.dw.xsc + pos];
    }
  }
  bulk_copy_to_shared(dst, box.data(), static_cast<uint32_t>(box.size() * sizeof(Tx)), bar);
#else
  bulk_load_tile_3d(dst, &p.x_map, static_cast<int>(pos0), c0, static_cast<int>(b), bar);
#endif
}

// kDwMma kernels: W rows [row0, row0 + 64) x channels [c0, c0 + 64) of pw_raw through p.w_map, in
// the 128-byte swizzle (ws_w_index's layout), zeros outside pw, completing bar's transaction bytes.
template <typename Tx>
__device__ __forceinline__ void load_w_box(const FwdParams& p, Tx* dst, int c0, int row0,
                                           uint64_t* bar) {
#ifdef SEP_EMULATE
  // The tensor map's semantics, built on the host and handed over as one bulk copy: the box is
  // one 64-row block of ws_w_index's layout.
  constexpr int kRows = kWsRows, kCols = 64;
  std::vector<Tx> box(static_cast<size_t>(kRows) * kCols, Tx(0.0f));
  const Tx* w = static_cast<const Tx*>(p.pw_raw);
  for (int r = 0; r < kRows && row0 + r < p.cout; ++r) {
    for (int cc = 0; cc < kCols && c0 + cc < p.dw.cin; ++cc) {
      box[ws_w_index(r, cc, kCols, kCols)] = w[static_cast<int64_t>(row0 + r) * p.dw.cin + c0 + cc];
    }
  }
  bulk_copy_to_shared(dst, box.data(), static_cast<uint32_t>(box.size() * sizeof(Tx)), bar);
#else
  bulk_load_tile_3d(dst, &p.w_map, c0, row0, 0, bar);
#endif
}

// GEMM operand type: x's own 16-bit type, or float (tf32-rounded) for float32 x with TF32 allowed.
// BK is one 128-byte row: 64 16-bit or 32 tf32 channels.
template <typename Tx>
using WsOperand = std::conditional_t<sizeof(Tx) == 2, Tx, float>;
template <typename Tx, int BN>
using WsTile =
    FwdTile<Tx, WsOperand<Tx>, kGemmWg, kWsBM, BN, 128 / static_cast<int>(sizeof(WsOperand<Tx>)), 64>;

// kG = 0: pass-major (all chunks of an item stay in the h ring while each Cout pass reads them).
// kG > 0: chunk-major, for h rings that cannot hold an item (Cin 1024 in TF32, long windows): the
// block's ppg <= kG Cout passes accumulate side by side (kG x the accumulators), each h chunk is
// read by all of them and released at once, so any ring of >= 3 slots works and the shared memory
// goes to W stages; the depthwise is recomputed once per group of kG Cout tiles.
// kSC (pass-major only): h chunks per consumer step. Each step waits once for its W stage (kSC
// chunks of the warpgroup's rows, one bulk copy), issues kSC x BK / k16 wgmmas and releases the step
// before: at kSC 2 the per-step waits, release and copy issue are spread over twice the products.
// kXTma (channel-first; pass-major, or chunk-major with kDwMma; the host checks ws_x_map_fits and
// encodes p.x_map): x by the copy engine through the tensor map (seed bf16 109 -> 99 us). A
// template parameter, not a run-time flag: with the flag the other kernels lost 2-11% (a TF32
// producer spilled).
// kDwMma (16-bit channel-first x with weights of x's type; the host checks mma_dw_fits for kXTma
// kernels, mma_dw_words_fit for rows staged in 4-byte pairs without it): the producers run the
// depthwise on the tensor cores (DwStage::compute_mma) instead of FFMAs, and W
// comes as boxes of the raw weights through p.w_map (by the loader, or in chunk-major kernels by
// the consumers' refill), so no preparation kernel runs.
// kPermRows (pass-major kXTma kDwMma kernels; the host checks ws_perm_rows_fit): the producers
// store h rows in perm_h_row's order and the epilogue stores runs (wg_store_runs), without the
// quad transposes.
template <typename Tx, int BN, bool kXcl, int kG = 0, int kSC = 1, bool kXTma = false,
          bool kDwMma = false, bool kPermRows = false>
__global__ void __launch_bounds__(ws_threads(ws_has_loader<Tx, BN>(kG, kXTma)), 1)
    sep_fwd_ws_kernel(const __grid_constant__ FwdParams p) {
  static_assert(kSC == 1 || (kSC == 2 && kG == 0), "multi-chunk steps are pass-major only");
  static_assert(!kXTma || (!kXcl && (kG == 0 || kDwMma)),
                "x by tensor map: channel-first, pass-major or with the tensor-core depthwise");
  using Tile = WsTile<Tx, BN>;
  using Tm = WsOperand<Tx>;
  constexpr int BM = Tile::BM, BK = Tile::BK;
  using Dw = DwStage<Tx, Tm, Tile::kTf32, BK, BN, Tile::HP, kXcl, Tile::kItemT, true, kWsProducers>;
  static_assert(!kDwMma || Dw::kMmaOk, "tensor-core depthwise: 16-bit channel-first kernels");
  static_assert(!kDwMma || kSC == 1 || ws_has_loader<Tx, BN>(kG, kXTma),
                "kDwMma: W through w_map, one chunk per box");
  static_assert(!kPermRows || (kDwMma && kXTma && kG == 0), "runs: pass-major kXTma kDwMma");

  SEP_DYNAMIC_SMEM(smem_raw);
  // wgmma's swizzle atoms need 1024-byte-aligned buffers: the plan adds 1024 bytes of slack.
  unsigned char* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x;
  const int S = p.w_stages, H = p.h_slots;
  // W refilled by the loader (else by the consumers)
  constexpr bool kLoader = ws_has_loader<Tx, BN>(kG, kXTma);
  // W barriers per consumer warpgroup and stage (kWsWBarriers x S): w_full[wn][stage] (the
  // expect_tx arrival + bytes), then, used with the loader, w_empty[wn][stage] (the warpgroup's
  // release).
  uint64_t* w_full = reinterpret_cast<uint64_t*>(smem + p.sm_bar);
  uint64_t* w_empty = w_full + 2 * S;
  uint64_t* h_full = w_full + kWsWBarriers * S;
  uint64_t* h_empty = h_full + H;
  uint64_t* x_full = h_empty + H;  // [2]: x staging buffer st loaded (kXTma)
  uint64_t* x_empty = x_full + 2;  // [2]: x staging buffer st released (the x loader)
  constexpr bool kXLoader = ws_has_x_loader<Tx, BN>(kG, kXTma, kDwMma);
  if (tid == 0) {
    for (int s = 0; s < kWsWBarriers * S; ++s) mbar_init(w_full + s, 1);
    for (int s = 0; s < H; ++s) {
      mbar_init(h_full + s, kWsProducers / 32);   // one arrival per producer warp
      mbar_init(h_empty + s, kWsConsumers / 32);  // one arrival per consumer warp
    }
    for (int st = 0; st < 2; ++st) mbar_init(x_full + st, 1);
    if constexpr (kXLoader) {
      for (int st = 0; st < 2; ++st) mbar_init(x_empty + st, kWsProducers);  // every producer thread
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the roles below never meet again

  const int group = static_cast<int>(blockIdx.x % p.n_groups);
  const int worker = static_cast<int>(blockIdx.x / p.n_groups);
  const int mt0 = group * p.ppg;
  const int passes = min(p.ppg, p.n_mt - mt0);
  const int n_chunks = p.cin_pad / BK;
  if (worker >= p.n_items || passes <= 0 || n_chunks == 0) return;
  auto h_slot_ptr = [&](int s) {
    return reinterpret_cast<Tm*>(smem + opaque(p.sm_h + s * p.h_bytes));
  };

  static_assert(BM == 2 * kWsRows, "");
  constexpr int kChunkElems = kWsRows * BK;  // one chunk of a warpgroup's W rows
  constexpr uint32_t kPartBytes = kSC * kChunkElems * sizeof(Tm);
  // Warpgroup wn's W rows for chunks [k, k + kSC) of Cout tile mt: contiguous in ws_w_index's
  // order (blocks of 64 rows ordered by (Cout tile, warpgroup half, chunk)).
  auto w_src = [&](int mt, int half, int k) {
    return static_cast<const Tm*>(p.wp) +
           (static_cast<int64_t>(2 * mt + half) * n_chunks + k) * kChunkElems;
  };

  // The producers' x staging buffers and chunk taps, and each item's geometry (batch, input
  // position of window element 0), computed once per item rather than twice per chunk (two
  // divisions by n_lt each time).
  using Tacc = typename Tile::Tacc;
  auto xs = [&](int st) { return reinterpret_cast<Tx*>(smem + opaque(p.sm_x[st])); };
  auto dws = [&](int st) { return reinterpret_cast<Tacc*>(smem + opaque(p.sm_dw[st])); };
  struct ItemPos {
    int b;
    int64_t p0;
  };
  auto pos_of = [&](int item) {
    const int b = item / p.n_lt;
    return ItemPos{b, static_cast<int64_t>(item - b * p.n_lt) * BN * p.dw.stride - p.dw.pad_left};
  };

  // ---- W loader ----------------------------------------------------------------------
  if constexpr (kLoader) {
    if (tid >= kWsConsumers + kWsProducers) {
      set_max_regs<kWsLoaderRegs, false>();
      // Lane 0 of warps 16 and 17 each refill one consumer warpgroup's part of the stages, so a
      // warpgroup's next W never waits for the other warpgroup's release (with one thread
      // refilling whole stages after both releases, Vocos TF32 took 224 us instead of 191).
      const int lt = tid - kWsConsumers - kWsProducers;
      if (lt == 0 || lt == 32) {
        const int half = lt >> 5;
        uint64_t* wf = w_full + half * S;
        uint64_t* we = w_empty + half * S;
        // Steps in the consumers' order (item, pass, chunk step); a part is refilled once its
        // warpgroup has released the part's previous step.
        int s = 0;
        uint32_t round = 0;
        for (int item = worker; item < p.n_items; item += p.n_workers) {
          for (int ps = 0; ps < passes; ++ps) {
            for (int k = 0; k < n_chunks; k += kSC) {
              if (round > 0) mbar_wait(we + s, (round - 1) & 1);
              mbar_arrive_expect_tx(wf + s, kPartBytes);
              unsigned char* dst = smem + p.sm_w[0] + s * p.w_bytes + half * kPartBytes;
              if constexpr (kDwMma) {
#pragma unroll
                for (int i = 0; i < kSC; ++i) {
                  load_w_box<Tx>(p, reinterpret_cast<Tx*>(dst + i * kChunkElems * sizeof(Tm)),
                                 (k + i) * BK, (2 * (mt0 + ps) + half) * kWsRows, wf + s);
                }
              } else {
                bulk_copy_to_shared(dst, w_src(mt0 + ps, half, k), kPartBytes, wf + s);
              }
              if (++s == S) {
                s = 0;
                ++round;
              }
            }
          }
        }
      } else if (kXLoader && lt == 64) {
        // Lane 0 of warp 18: every chunk's x window and taps, in the producers' order (item,
        // chunk), into buffer st once the producers have released its previous chunk. Every item
        // starts at a multiple of 8 positions, so each window is at the offset of the first.
        // Within 32 registers: 32-bit positions (the tensor map's coordinates are 32-bit anyway),
        // and the W loop's branch above not on this one's path (after it, `worker` had to live
        // through the W loop, and ptxas kept every role's item counter in local memory).
        const int off = Dw::offset(p.dw, 0, 0, pos_of(worker).p0);
        const int item_step = BN * p.dw.stride;
        int st = 0;
        uint32_t uses = 0;  // chunks staged (buffer st = uses % 2, its use uses / 2)
#pragma unroll 1
        for (int item = worker; item < p.n_items; item += p.n_workers) {
          const int b = item / p.n_lt;
          const int pos0 = (item - b * p.n_lt) * item_step - p.dw.pad_left - off;
#pragma unroll 1
          for (int k = 0; k < n_chunks; ++k) {
            const int c0 = k * BK;
            if (uses >= 2) mbar_wait(x_empty + st, ((uses >> 1) - 1) & 1);
            // The taps: kDwMma the raw ones; TF32 the prepared ones of the chunk's BK channels
            // (rows of dwpitch, zero padded), one span at the pitch the producers read (an odd
            // number of 16-byte units per row: their 16-byte tap loads are conflict-free).
            const uint32_t tap_bytes =
                kDwMma ? Dw::raw_taps_bytes(p.dw, c0)
                       : static_cast<uint32_t>(BK * p.dw.dwpitch * sizeof(Tacc));
            mbar_arrive_expect_tx(x_full + st, static_cast<uint32_t>(BK * p.dw.xpitch * sizeof(Tx)) +
                                                   tap_bytes);
            load_x_box<Tx, BK>(p, xs(st), pos0, c0, b, x_full + st);
            if constexpr (kDwMma) {
              Dw::load_raw_taps(p.dw, c0, dws(st), x_full + st);
            } else {
              bulk_copy_to_shared(dws(st),
                                  static_cast<const Tacc*>(p.dw.dwp) + static_cast<int64_t>(c0) * p.dw.dwpitch,
                                  tap_bytes, x_full + st);
            }
            ++uses;
            st ^= 1;
          }
        }
      }
      return;
    }
  }

  // ---- depthwise producer -----------------------------------------------------------------------
  if (tid >= kWsConsumers) {
    set_max_regs<ws_producer_regs(kLoader, kXLoader), false>();
    const int pt = tid - kWsConsumers;
    // kXTma: the window is one tensor-map copy issued by thread 0 (the per-thread cp.async loop
    // and its address maths took ~20% of these warps' time at the seed); the weights stay
    // cp.async. Same layout either way: row c at xs + c * xpitch from position p0 - off.
    // kDwMma: the weights as they are, the chunk's taps and depthwise biases by bulk copy with its
    // x window onto the same barrier (no preparation kernel).
    auto load_x = [&](const ItemPos& ip, int k, int st, int off) {
      if constexpr (kXTma) {
        uint32_t tap_bytes = 0;
        if constexpr (kDwMma) {
          tap_bytes = Dw::raw_taps_bytes(p.dw, k * BK);
        } else {
          Dw::load_weights(p.dw, k * BK, dws(st), pt);
        }
        if (pt == 0) {
          mbar_arrive_expect_tx(x_full + st, static_cast<uint32_t>(BK * p.dw.xpitch * sizeof(Tx)) +
                                                 tap_bytes);
          load_x_box<Tx, BK>(p, xs(st), ip.p0 - off, k * BK, ip.b, x_full + st);
          if constexpr (kDwMma) Dw::load_raw_taps(p.dw, k * BK, dws(st), x_full + st);
        }
      } else if constexpr (kDwMma) {
        // Rows in 4-byte pairs by cp.async (kLoadWords), the raw taps by bulk copy onto x_full.
        Dw::template load<false>(p.dw, ip.b, k * BK, ip.p0, off, xs(st), dws(st), pt);
        if (pt == 0) {
          mbar_arrive_expect_tx(x_full + st, Dw::raw_taps_bytes(p.dw, k * BK));
          Dw::load_raw_taps(p.dw, k * BK, dws(st), x_full + st);
        }
      } else {
        Dw::load(p.dw, ip.b, k * BK, ip.p0, off, xs(st), dws(st), pt);
      }
    };
    int mma_off = 0;  // kDwMma: the window offset of every item
    // The chunk loop. KC > 0 (kXTma kernels only): kernel size KC and window offset OFF fixed for
    // the whole loop, so no chunk dispatches them again (the per-chunk kernel-size and offset
    // dispatch took ~12% of these warps' samples at the seed); KC == 0: both read per chunk;
    // KC < 0 (kDwMma): the tensor-core depthwise, at the window offset mma_off of every item
    // (kXTma) or at each chunk's row parities (rows staged in 4-byte pairs).
    // Inlined by force: left to itself nvcc called the KC == 0 loop as a function, and the call
    // cost every warpgroup of the kernel ~380 B of stack and spills.
    auto chunk_loop = [&](auto kc, auto offc) __attribute__((always_inline)) {
      constexpr int KC = decltype(kc)::value, OFF = decltype(offc)::value;
      auto off_of = [&](const ItemPos& ip, int k) {
        if constexpr (KC > 0) {
          return OFF;
        } else if constexpr (KC < 0 && kXTma) {
          return mma_off;
        } else {  // also word-staged rows (kDwMma without kXTma): this chunk's parity bits
          return Dw::offset(p.dw, ip.b, k * BK, ip.p0);
        }
      };
      int item = worker, k = 0, st = 0;
      ItemPos cur = pos_of(item);
      int s = 0;
      uint32_t round = 0;
      uint32_t x_uses = 0;  // kXTma: chunks staged (buffer st = x_uses % 2, its use x_uses / 2)
      if constexpr (!kXLoader) {
        load_x(cur, k, st, off_of(cur, k));
        cp_async_commit();
      }
      while (true) {
        if constexpr (!kXLoader) {
          cp_async_wait_all();
          // Rows in 16-byte units (kLoadRows16): this thread's copies across a row's start have
          // landed; clear what they brought from before it.
          if constexpr (kDwMma && !kXTma) Dw::clear_heads(p.dw, cur.p0, off_of(cur, k), xs(st), pt);
          // Every producer's part of X(item, k) has landed, and all finished the previous chunk
          // (so the other x buffer is free).
          named_bar_sync(1, kWsProducers);
        }
        int item2 = item, k2 = k + 1;
        ItemPos nxt = cur;
        if (k2 == n_chunks) {
          k2 = 0;
          item2 += p.n_workers;
          if (item2 < p.n_items) nxt = pos_of(item2);
        }
        if constexpr (!kXLoader) {
          if (item2 < p.n_items) load_x(nxt, k2, st ^ 1, off_of(nxt, k2));
          cp_async_commit();
        }
        if constexpr (kXTma || kDwMma) {
          mbar_wait(x_full + st, (x_uses >> 1) & 1);
          ++x_uses;
        }
        if (round > 0) mbar_wait(h_empty + s, (round - 1) & 1);
        if constexpr (KC > 0) {
          Dw::template compute_fixed<KC, OFF>(p.dw, xs(st), dws(st), h_slot_ptr(s), pt);
        } else if constexpr (KC < 0) {
          Dw::template compute_mma<!kXTma, kPermRows>(p.dw, xs(st), dws(st), h_slot_ptr(s),
                                                      off_of(cur, k), k * BK, pt);
        } else {
          const int off = off_of(cur, k);
          auto depthwise = [&](auto kc2) {
            Dw::template compute<decltype(kc2)::value, false>(p.dw, xs(st), dws(st), h_slot_ptr(s),
                                                              off, k * BK, BN, pt);
          };
          // The common kernel sizes with the taps unrolled at compile time (the depthwise bounds
          // this kernel: these warps must keep up with the tensor cores).
          if constexpr (!kXcl) {
            if (p.dw.mode == kModeVec) {
              dispatch_producer_kernel_size(p.dw.K, depthwise);
            } else {
              depthwise(std::integral_constant<int, 0>{});
            }
          } else {
            depthwise(std::integral_constant<int, 0>{});
          }
        }
        // h stores (generic proxy) before the wgmma reads (async proxy); the warp's stores are
        // ordered before its arrival by the warp barrier.
        fence_proxy_async();
        // With the x loader, this thread's reads of x buffer st are done: it goes back to the
        // loader once every producer thread has arrived. One arrival per thread, not per warp:
        // racecheck orders a later bulk-copy write after the reads only of the threads that
        // arrived themselves (a warp's arrival after __syncwarp, or one after a named barrier,
        // is reported as a race: scripts/racecheck_release_probe.cu), and the seed measured the
        // same either way (harness 84.2 / 84.0 us per warp, 84.4 / 84.2 per thread).
        if constexpr (kXLoader) mbar_arrive(x_empty + st);
        __syncwarp();
        if ((pt & 31) == 0) mbar_arrive(h_full + s);
        if (++s == H) {
          s = 0;
          ++round;
        }
        item = item2;
        cur = nxt;
        k = k2;
        st ^= 1;
        if (item >= p.n_items) break;
      }
    };
    if constexpr (kDwMma) {
      // Every item starts at a multiple of 8 positions (BN x stride), so the offset is that of
      // the first (the host checked mma_dw_fits with it).
      mma_off = Dw::offset(p.dw, 0, 0, pos_of(worker).p0);
      chunk_loop(std::integral_constant<int, -1>{}, std::integral_constant<int, 0>{});
      return;
    } else if constexpr (kXTma && Dw::kFixedOk) {
      // 16-byte rows: the offset p0 mod kV is that of every item (p0 = item position x BN x stride
      // - pad_left, and BN x stride is a multiple of kV), so K and it are dispatched once.
      static_assert(BN % Dw::kV == 0, "items start at a multiple of the staging vector");
      const int K = p.dw.K;
      if (p.dw.mode == kModeVec && (K == 3 || K == 5 || K == 7 || K == 9)) {
        const int off0 = Dw::offset(p.dw, 0, 0, pos_of(worker).p0);
        auto with_k = [&](auto kc) {
          if constexpr (decltype(kc)::value > 0) {  // always: K is one of the four
            auto with_off = [&](auto offc) { chunk_loop(kc, offc); };
            static_switch<0, Dw::kV>(off0, with_off);
          }
        };
        dispatch_producer_kernel_size(K, with_k);
        return;
      }
    }
    chunk_loop(std::integral_constant<int, 0>{}, std::integral_constant<int, 0>{});
    return;
  }

  // ---- consumers: wgmma and epilogue ------------------------------------------------------------
  set_max_regs<ws_consumer_regs(kLoader, kXLoader), true>();
  constexpr int kAccRegs = Tile::kAccRegs;
  constexpr int kMB = Tile::kWgMB;
  constexpr int kPasses = kG > 0 ? kG : 1;  // Cout passes accumulated side by side
  float acc[kPasses * kAccRegs];
#pragma unroll
  for (int i = 0; i < kPasses * kAccRegs; ++i) acc[i] = 0.0f;
  // The bias of each accumulator row, loaded at a pass's start for its epilogue. kDwMma: the
  // pointwise bias itself (the producers add the depthwise one), kept as x's raw 16 bits until
  // the epilogue widens it (bias_of). Widened at the load, ptxas waited for the load right there,
  // before the pass's first product (seed bf16 ~93.5 -> ~89 us without that wait: csrc/NOTES.md
  // "Thirtieth session"). Otherwise the folded bias (cout_pad float entries), first read by the
  // epilogue.
  using BiasWord = std::conditional_t<kDwMma, uint16_t, float>;
  BiasWord bias_pre[kPasses * 2 * kMB];
  const int wn = tid >> 7;  // warpgroup: Cout rows [64 wn, 64 wn + 64) of the tile (kMB = 1)
  auto prefetch_bias = [&](int m0, BiasWord* dst) {
    const int t = threadIdx.x;
    const int wm = (t >> 5) & 3, g8 = (t & 31) >> 2;
#pragma unroll
    for (int i = 0; i < kMB; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wn * Tile::kWgRows + i * 64 + wm * 16 + g8 + h * 8;
        if constexpr (kDwMma) {
          const uint16_t* pwb = static_cast<const uint16_t*>(p.pwb_raw);
          dst[i * 2 + h] = pwb != nullptr && m < p.cout ? pwb[m] : uint16_t{0};
        } else {
          dst[i * 2 + h] = static_cast<const float*>(p.bias)[m];
        }
      }
    }
  };
  auto bias_of = [&](const BiasWord* src, float* dst) {
#pragma unroll
    for (int i = 0; i < 2 * kMB; ++i) {
      if constexpr (kDwMma) {
        const uint32_t w = src[i];
        dst[i] = raw_elem<Tx>(&w, 0);
      } else {
        dst[i] = src[i];
      }
    }
  };
  // W: this warpgroup's rows [64 wn, 64 wn + 64) of the Cout tile for the kSC chunks of each step,
  // w_stages steps ahead, in part wn of the stage. Without the loader, load_w(stage) loads the
  // next step not yet loaded into `stage` (this warpgroup's barrier w_full_wg[stage]).
  uint64_t* w_full_wg = w_full + wn * S;
  const bool w_issuer = (tid & 127) == 0;
  // wg_gemm_chunk offsets W by a warpgroup's rows within a [BM][BK] tile; each stage part holds
  // this warpgroup's rows only, so it is given wn = 0. Fence and commit once per step.
  auto gemm = [&](float* a, const Tm* w_rows, const Tm* hsb) {
    wg_gemm_chunk<Tm, BM, BN, BK, false>(a, w_rows, hsb, 0);
  };
  auto w_part = [&](int stage) {
    return reinterpret_cast<const Tm*>(smem + opaque(p.sm_w[0] + stage * p.w_bytes + wn * kPartBytes));
  };
  int ld_item = worker, ld_ps = 0, ld_k = 0;  // the next step to load (without the loader)
  // Step order: pass-major (item, pass, chunk step); chunk-major (item, chunk, pass).
  auto load_w = [&](int stage) {
    if (ld_item >= p.n_items) return;
    if (w_issuer) {
      mbar_arrive_expect_tx(w_full_wg + stage, kPartBytes);
      unsigned char* dst = smem + p.sm_w[0] + stage * p.w_bytes + wn * kPartBytes;
      if constexpr (kDwMma) {  // kSC == 1: one box of the raw weights (no preparation kernel)
        load_w_box<Tx>(p, reinterpret_cast<Tx*>(dst), ld_k * BK, (2 * (mt0 + ld_ps) + wn) * kWsRows,
                       w_full_wg + stage);
      } else {
        bulk_copy_to_shared(dst, w_src(mt0 + ld_ps, wn, ld_k), kPartBytes, w_full_wg + stage);
      }
    }
    if constexpr (kG > 0) {
      if (++ld_ps == passes) {
        ld_ps = 0;
        if (++ld_k == n_chunks) {
          ld_k = 0;
          ld_item += p.n_workers;
        }
      }
    } else {
      if ((ld_k += kSC) == n_chunks) {
        ld_k = 0;
        if (++ld_ps == passes) {
          ld_ps = 0;
          ld_item += p.n_workers;
        }
      }
    }
  };
  if constexpr (!kLoader) {
    for (int st = 0; st < S; ++st) load_w(st);
  }
  // A step's buffers go back once its products are done: its W stage is released (to the loader)
  // or refilled, its h slot released after the last Cout pass over it (one arrival per consumer
  // warp). wgmma is a warpgroup operation: once any warp's wait_group returns, the warpgroup's
  // products are done.
  const bool arriver = (tid & 31) == 0;
  auto next_slot = [&](int h) { return h + 1 == H ? 0 : h + 1; };
  auto release = [&](int w_stage, int h_slot, bool last_pass) {
    if constexpr (kLoader) {
      if (w_issuer) mbar_arrive(w_empty + wn * S + w_stage);
    } else {
      load_w(w_stage);
    }
    if (arriver && last_pass) {
      mbar_arrive(h_empty + h_slot);
      if constexpr (kSC == 2) mbar_arrive(h_empty + next_slot(h_slot));
    }
  };
  int ws = 0, hs0 = 0;              // W stage of the step; h slot of the item's chunk 0
  uint32_t w_round = 0, h_round0 = 0;
  int prev_w = -1, prev_h = 0;      // the step whose products may still run (prev_w >= 0)
  bool prev_last = false;
  if constexpr (kG > 0) {
    // Chunk-major: h slots in ring order across items (each released after its last pass).
    for (int item = worker; item < p.n_items; item += p.n_workers) {
      const int64_t b = item / p.n_lt;
      const int64_t j0 = static_cast<int64_t>(item - b * p.n_lt) * BN;
#pragma unroll
      for (int ps = 0; ps < kG; ++ps) {
        if (ps < passes) prefetch_bias((mt0 + ps) * BM, bias_pre + ps * 2 * kMB);
      }
      for (int k = 0; k < n_chunks; ++k) {
        mbar_wait(h_full + hs0, h_round0 & 1);
#pragma unroll
        for (int ps = 0; ps < kG; ++ps) {
          if (ps < passes) {
            mbar_wait(w_full_wg + ws, w_round & 1);
            wg_fence();
            gemm(acc + ps * kAccRegs, w_part(ws), h_slot_ptr(hs0));
            wg_commit();
            wg_wait<1>(acc);  // the products of the previous step are done
            if (prev_w >= 0) release(prev_w, prev_h, prev_last);
            prev_w = ws;
            prev_h = hs0;
            prev_last = ps == passes - 1;
            if (++ws == S) {
              ws = 0;
              ++w_round;
            }
          }
        }
        if (++hs0 == H) {
          hs0 = 0;
          ++h_round0;
        }
      }
      wg_wait<0>(acc);
      release(prev_w, prev_h, prev_last);
      prev_w = -1;
#pragma unroll
      for (int ps = 0; ps < kG; ++ps) {
        if (ps < passes) {
          float bias[2 * kMB];
          bias_of(bias_pre + ps * 2 * kMB, bias);
          wg_store_tile<Tx, BM, BN, false>(p, acc + ps * kAccRegs, bias, b, j0, (mt0 + ps) * BM,
                                           tid);
        }
      }
    }
    return;
  }
  for (int item = worker; item < p.n_items; item += p.n_workers) {
    const int64_t b = item / p.n_lt;
    const int64_t j0 = static_cast<int64_t>(item - b * p.n_lt) * BN;
    for (int ps = 0; ps < passes; ++ps) {
      const int m0 = (mt0 + ps) * BM;
      const bool last_pass = ps == passes - 1;
      prefetch_bias(m0, bias_pre);
      int hs = hs0;
      uint32_t h_round = h_round0;
      for (int k = 0; k < n_chunks; k += kSC) {
        // An item's h chunks stay until its last pass releases them: only its first pass waits.
        const int hs1 = next_slot(hs);
        if (ps == 0) {
          mbar_wait(h_full + hs, h_round & 1);
          if constexpr (kSC == 2) mbar_wait(h_full + hs1, (h_round + (hs1 == 0)) & 1);
        }
        mbar_wait(w_full_wg + ws, w_round & 1);
        const Tm* w_rows = w_part(ws);
        wg_fence();
        gemm(acc, w_rows, h_slot_ptr(hs));
        if constexpr (kSC == 2) gemm(acc, w_rows + kChunkElems, h_slot_ptr(hs1));
        wg_commit();
        if constexpr (ws_release_at_once<Tx>(kLoader)) {
          wg_wait<0>(acc);  // this step's products are done
          release(ws, hs, last_pass);
        } else {
          wg_wait<1>(acc);  // the products of the previous step are done
          if (prev_w >= 0) release(prev_w, prev_h, prev_last);
          prev_w = ws;
          prev_h = hs;
          prev_last = last_pass;
        }
        if (++ws == S) {
          ws = 0;
          ++w_round;
        }
        if constexpr (kSC == 2) {
          if (hs1 == 0) ++h_round;
          hs = next_slot(hs1);
        } else {
          hs = hs1;
        }
        if (hs == 0) ++h_round;
      }
      wg_wait<0>(acc);
      if (prev_w >= 0) release(prev_w, prev_h, prev_last);
      prev_w = -1;
      // 16-bit and kXTma: the epilogue's per-thread index maths from an opaque tid, so that ptxas
      // does not hoist it out of the item loop and hold it in registers through the products
      // (seed bf16 123.3 -> 117.5 us; the other TF32 kernels lost 2-5% with it: csrc/NOTES.md
      // "Nineteenth session"; the TF32 kXTma kernel spilled 48 B without it).
      const int et = (sizeof(Tx) == 2 || kXTma) ? opaque(tid) : tid;
      float bias[2 * kMB];
      bias_of(bias_pre, bias);
      if constexpr (kPermRows) {
        wg_store_runs<Tx, BM, BN>(p, acc, bias, b, j0, m0, et);
      } else {
        wg_store_tile<Tx, BM, BN>(p, acc, bias, b, j0, m0, et);
      }
    }
    hs0 += n_chunks;  // n_chunks <= H
    if (hs0 >= H) {
      hs0 -= H;
      ++h_round0;
    }
  }
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
