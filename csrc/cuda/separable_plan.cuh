// Host-side planning of the separable kernels: tile choice inputs, shared-memory layout, grid and
// workspace carve. Free of torch::stable so that the host emulation test
// (tests/emulation/separable_emu_test.cpp) runs exactly the plans the extension launches.
#pragma once

#include "common/conv_params.h"
#include "cuda/separable_dpw.cuh"
#include "cuda/separable_fwd.cuh"
#include "cuda/separable_fwd_ws.cuh"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace sepconv1d {
namespace cuda {
namespace sep {

// What the plans need to know about the device.
struct DevCaps {
  int64_t smem_optin;   // max dynamic shared memory per block
  int64_t smem_per_sm;  // shared memory per SM
  int64_t sms;          // SM count
};

// A (B, C, L) activation in device memory: data pointer and element strides.
struct View3 {
  const void* ptr;
  int64_t sb, sc, sl;
  // Channel-first 16-bit x whose rows are not 16-byte aligned, stride 1, dilation 1: plan them
  // in 16-byte units (kLoadRows16) instead of 4-byte pairs. Only for the warp-specialised kernels
  // with the tensor-core depthwise on such rows (mma_dw_words_fit): no other reads that layout.
  bool rows16 = false;
};

inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}
inline int64_t align_bytes(int64_t v) { return round_up(v, 128); }

// Byte offsets of the carves of one workspace buffer.
struct Carve {
  int64_t total = 0;
  int64_t take(int64_t bytes) {
    const int64_t at = total;
    total += round_up(bytes, 256);
    return at;
  }
};

// The x-window offset of the tensor-core depthwise (16-bit x, stride 1): the window's first element
// within its 16-byte vector, the same for every item (BN is a multiple of 8).
inline int64_t mma_dw_offset(int64_t pad_left) { return (-pad_left) & 7; }

// Where the depthwise part of a kernel reads x and how much shared memory its staging needs, for
// chunks of CH channels x NPOS outputs. False when the window does not fit 32-bit indexing.
template <typename Tx, int CH, int NPOS, bool kXcl, int TT = kT>
bool plan_dw(const ConvGeometry& g, const View3& x, DwParams& d, int64_t& xs_bytes,
             int64_t& dws_bytes) {
  using Tacc = typename AccOf<Tx>::type;
  constexpr int kV = 16 / static_cast<int>(sizeof(Tx));
  const int64_t s = g.stride, dl = g.dilation, K = g.kernel_size;
  const int64_t kp = round_up(K, kU);
  const int64_t es = sizeof(Tx);
  int vec_load;
  if (!kXcl) {
    vec_load = (aligned_to(x.ptr, 16) && (g.batch == 1 || x.sb % kV == 0) && x.sc % kV == 0 &&
                x.sl == 1)
                   ? kLoadVec16
               : (es == 2 && x.sl == 1) ? kLoadWords
               : (es == 4 && x.sl == 1 && s == 1 && dl == 1 && aligned_to(x.ptr, 8) &&
                  (g.batch == 1 || x.sb % 2 == 0) && x.sc % 2 == 0)
                   ? kLoadPairs
                   : kLoadElems;
  } else {
    vec_load = (aligned_to(x.ptr, 16) && (g.batch == 1 || x.sb % kV == 0) && x.sl % kV == 0 &&
                x.sc == 1)
                   ? kLoadVec16
                   : kLoadElems;
  }
  const bool rows16 = !kXcl && x.rows16 && vec_load == kLoadWords && s == 1 && dl == 1 &&
                      es == 2 && CH == 64 && (NPOS == 128 || NPOS == 64);
  int mode;
  int64_t je;  // outputs covered by the items (>= NPOS)
  if (s == 1) {
    // The vector depthwise needs the same in-row offset for every row (16-byte-aligned rows,
    // float32 pairs, or element-wise staging at offset 0); word-staged rows differ by one element.
    mode = (!kXcl && dl == 1 && vec_load != kLoadWords) ? kModeVec : kModeWin;
    je = ceil_div(NPOS, TT * dl) * TT * dl;
  } else {
    mode = kModeGen;
    je = NPOS;
  }
  // Channel-first rows read one element at a time (strided and dilated windows: lanes are 32
  // channels at the same offset) go to 32 banks only with an odd number of 4-byte words per row.
  // Rows staged in 4-byte pieces anyway (not 16-byte aligned: float32 elements, 16-bit pairs) get
  // that pitch; 16-byte-staged rows keep whole 16-byte units (lanes on 8 banks): staging those in
  // 4-byte pieces instead measured slower (SNAC, dilation 9: 357 -> 415 us).
  const bool odd_words = !kXcl && mode != kModeVec && vec_load != kLoadVec16 && es <= 4;
  d.x = x.ptr;
  d.xsb = x.sb;
  d.xsc = x.sc;
  d.xsl = x.sl;
  d.L = g.length;
  d.cin = static_cast<int>(g.channels);
  d.K = static_cast<int>(K);
  d.kp = static_cast<int>(kp);
  d.stride = static_cast<int>(s);
  d.dil = static_cast<int>(dl);
  d.pad_left = static_cast<int>(g.pad_left);
  d.mode = mode;
  d.ng = static_cast<int>(je / TT);
  // kp (a multiple of 8) plus one 16-byte unit: rows an odd number of 16-byte units apart, so the
  // producers' 16-byte tap loads (lanes on consecutive channels) are conflict-free.
  d.dwpitch = static_cast<int>(kp + (sizeof(Tacc) == 4 ? 4 : 2));
  d.vec_load = vec_load;
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  int64_t need;  // channel-first: elements per row; channel-last: positions
  if (!kXcl) {
    if (mode == kModeVec) {
      // dw_item_vec reads at most row[NPOS - 8 + kp - 8 + 23], dw_item_vec_k (K <= 16 at compile
      // time, TT = 16) row[NPOS - 16 + 7 + 16 + K + 5], 16-bit tiles of 64 channels may take the
      // tensor-core depthwise (mma_dw_reach).
      need = std::max<int64_t>(NPOS + kp + 8, NPOS + K + 13);
      if (es == 2 && CH == 64 && (NPOS == 128 || NPOS == 64)) {
        need = std::max<int64_t>(need, mma_dw_reach(K, mma_dw_offset(g.pad_left), NPOS));
      }
    } else if (mode == kModeWin) {
      need = kV + je - 1 + (K - 1) * dl;  // off < kV, window (je - 1) + (K - 1) * dl
      if (es == 2 && CH == 64 && (NPOS == 128 || NPOS == 64) && vec_load == kLoadWords && dl == 1) {
        // Rows in 4-byte pairs may take the tensor-core depthwise at either parity.
        need = std::max<int64_t>(need, mma_dw_reach(K, 1, NPOS));
      }
      if (rows16) {
        // Rows in 16-byte units: each from its own shift of 0-7, odd ones only where the element
        // parity of x's address, the channel stride or the batch stride is odd.
        const bool odd = ((reinterpret_cast<uintptr_t>(x.ptr) / es + g.pad_left) & 1) ||
                         (x.sc & 1) || (g.batch > 1 && (x.sb & 1));
        need = std::max<int64_t>(need, mma_dw_reach(K, odd ? 7 : 6, NPOS));
      }
    } else {
      need = kV + (NPOS - 1) * s + (K - 1) * dl;
    }
    if (need > kIntMax / (2 * CH)) return false;
    int64_t bytes;
    if (odd_words && !rows16) {
      bytes = round_up(need * es, 4);
      if ((bytes / 4) % 2 == 0) bytes += 4;  // odd number of words: conflict-free element reads
    } else {
      bytes = round_up(need * es, 16);
      if ((bytes / 16) % 2 == 0) bytes += 16;  // odd multiple of 16 B: conflict-free 16-byte rows
    }
    d.xpitch = static_cast<int>(bytes / es);
    d.npos = 0;
    if (rows16) d.vec_load = kLoadRows16;
    xs_bytes = static_cast<int64_t>(CH) * bytes;
  } else {
    need = (mode == kModeWin) ? je + (K - 1) * dl : (NPOS - 1) * s + (K - 1) * dl + 1;
    if (need > kIntMax / (2 * (CH + kV))) return false;
    d.npos = static_cast<int>(need);
    d.xpitch = CH + kV;
    xs_bytes = need * (CH + kV) * es;
  }
  dws_bytes = static_cast<int64_t>(CH) * d.dwpitch * static_cast<int64_t>(sizeof(Tacc));
  return true;
}

// ---- forward -----------------------------------------------------------------------------------

// A forward launch: kernel parameters (workspace pointers filled by bind_fwd_workspace), prep
// parameters, shared memory, grid and workspace layout.
struct FwdPlan {
  FwdParams p{};
  PrepParams pp{};
  int64_t smem = 0;
  int64_t blocks = 0;
  int64_t blocks_per_sm = 1;  // blocks of this plan that fit on one SM (shared memory, launch bounds)
  int64_t prep_blocks = 0;
  int64_t ws_bytes = 0, at_wp = 0, at_dwp = 0, at_bias = 0;
  int64_t xs_bytes = 0, dws_bytes = 0;  // one x / depthwise-weight staging buffer (plan_dw)
};

// How the pointwise weights may be placed and the Cout tiles split among blocks:
//  kAuto: resident W when it fits and pays off, else streamed; one Cout tile per block.
//  kResidentOnly: resident W, one Cout tile per block, or fail.
//  kStreamedOnly: streamed W, one Cout tile per block (tests).
//  kSharedOnly: streamed W, blocks make several Cout passes per item over one depthwise (h kept
//               in shared memory), in as few groups of Cout tiles as fill the GPU; fails when
//               there is one Cout tile or the h ring does not fit.
enum class WPlace { kAuto, kResidentOnly, kStreamedOnly, kSharedOnly };

// w_stages: streamed W stages the fit is checked with (0: the tile's kWStages; the
// warp-specialised plan passes its fewest, 2, and places its own stages).
template <typename Tx, typename Tm, int kGemm, int BM, int BN, int BK, int WN, bool kXcl>
bool plan_fwd(const ConvGeometry& g, const View3& x, void* y, int64_t ysb, int64_t ysc,
              int64_t ysl, const DevCaps& caps, WPlace place_w, FwdPlan& out,
              int w_stages = 0) {
  using Tile = FwdTile<Tx, Tm, kGemm, BM, BN, BK, WN>;
  using Tacc = typename Tile::Tacc;
  FwdParams& p = out.p;
  p = FwdParams{};
  int64_t xs_bytes = 0, dws_bytes = 0;
  if (!plan_dw<Tx, BK, BN, kXcl, Tile::kItemT>(g, x, p.dw, xs_bytes, dws_bytes)) return false;
  out.xs_bytes = xs_bytes;
  out.dws_bytes = dws_bytes;
  const int64_t cin = g.channels, cout = g.out_channels;
  const int64_t cin_pad = round_up(cin, BK), cout_pad = round_up(cout, BM);
  // The prepared taps' rows are dwpitch apart, the pitch the producers read them at in shared
  // memory, so that a chunk's taps are one span (the x loader's single copy).
  const int64_t tap_pitch = p.dw.dwpitch;
  const int64_t n_mt = cout_pad / BM;
  const int64_t n_lt = ceil_div(g.out_length, BN);
  const int64_t n_items = g.batch * n_lt;
  if (n_items > (int64_t{1} << 30)) return false;

  // Shared memory: [W][xs x2][dws x2][hs x h_slots]; W is kWStages streamed chunks (2; wgmma 4)
  // or the resident tile; h_slots is kMinHSlots (2; wgmma 3), or max(n_chunks, kMinHSlots) when
  // blocks make several Cout passes (shared h).
  // wgmma: every buffer 1024-byte aligned (swizzle atoms), plus 1024 bytes to align the base; W
  // is never resident (its swizzled chunks are streamed).
  auto al = [](int64_t bytes) { return Tile::kWg ? round_up(bytes, 1024) : align_bytes(bytes); };
  const int64_t limit = caps.smem_optin - (Tile::kWg ? 1024 : 0);
  const int64_t n_chunks = cin_pad / BK;
  const int64_t h_bytes = al(static_cast<int64_t>(Tile::H_ELEMS) * sizeof(Tm));
  constexpr int64_t kMinH = Tile::kMinHSlots;
  const int64_t rest = 2 * al(xs_bytes) + 2 * al(dws_bytes) + kMinH * h_bytes;
  const int64_t w_chunk = al(static_cast<int64_t>(Tile::W_ELEMS) * sizeof(Tm));
  const int64_t w_ring = (w_stages > 0 ? w_stages : Tile::kWStages) * w_chunk;  // streamed W
  const int64_t w_res =
      cin_pad <= (int64_t{1} << 20)
          ? align_bytes(Tile::resident_elems(static_cast<int>(cin_pad)) * static_cast<int64_t>(sizeof(Tm)))
          : std::numeric_limits<int64_t>::max() / 4;
  const int64_t max_bps = (sizeof(Tx) == 8 || WN == 64) ? 1 : 2;  // = __launch_bounds__
  auto blocks_per_sm = [&](int64_t bytes) {
    return std::max<int64_t>(1, std::min<int64_t>(max_bps, caps.smem_per_sm / (bytes + 1024)));
  };
  // Shared h: the depthwise of an item is computed once per block and reused by ppg Cout
  // passes. The fewest groups (blocks per item) that give about one block per SM slot.
  int64_t n_groups = n_mt, ppg = 1, h_slots = kMinH;
  int64_t n_workers = n_items;
  const int64_t shared_bytes = w_ring + rest + (std::max<int64_t>(n_chunks, kMinH) - kMinH) * h_bytes;
  if (place_w == WPlace::kSharedOnly && n_mt > 1 && shared_bytes <= limit) {
    const int64_t slots = caps.sms * blocks_per_sm(shared_bytes);
    const int64_t groups = std::min<int64_t>(n_mt, ceil_div(3 * slots, 4 * n_items));
    ppg = ceil_div(n_mt, groups);
    if (ppg > 1) {
      n_groups = ceil_div(n_mt, ppg);
      h_slots = std::max<int64_t>(n_chunks, kMinH);
      n_workers = std::min<int64_t>(n_items, std::max<int64_t>(1, slots / n_groups));
    } else {
      ppg = 1;
    }
  }
  if (place_w == WPlace::kSharedOnly && ppg == 1) return false;

  // Resident: one W load per block, amortised over >= 2 items per block. In kAuto mode only if
  // it costs no occupancy (WN = 32 and SIMT tiles run two blocks per SM when streamed).
  bool resident = false;
  const bool res_ok =
      ppg == 1 && !Tile::kWg &&
      (place_w == WPlace::kResidentOnly ||
       (place_w == WPlace::kAuto && (w_ring + rest > limit ||
                                     blocks_per_sm(w_res + rest) >= blocks_per_sm(w_ring + rest))));
  if (res_ok && w_res + rest <= limit) {
    const int64_t slots = caps.sms * blocks_per_sm(w_res + rest);
    const int64_t workers = std::max<int64_t>(1, slots / n_mt);
    if (n_items >= 2 * workers) {
      resident = true;
      n_workers = workers;
    }
  }
  if (!resident && (place_w == WPlace::kResidentOnly || w_ring + rest > limit)) return false;
  int64_t off = 0;
  auto place = [&](int64_t bytes) {
    const int64_t at = off;
    off += al(bytes);
    return static_cast<int>(at);
  };
  p.sm_w[0] = place(resident ? w_res : w_ring);
  p.sm_w[1] = resident ? p.sm_w[0] : p.sm_w[0] + static_cast<int>(w_chunk);
  p.w_bytes = static_cast<int>(w_chunk);
  for (int s = 0; s < 2; ++s) p.sm_x[s] = place(xs_bytes);
  for (int s = 0; s < 2; ++s) p.sm_dw[s] = place(dws_bytes);
  p.sm_h = place(h_slots * h_bytes);
  p.h_slots = static_cast<int>(h_slots);
  p.h_bytes = static_cast<int>(h_bytes);
  if (off > limit) return false;
  out.smem = off + (Tile::kWg ? 1024 : 0);
  out.blocks_per_sm = blocks_per_sm(out.smem);

  // Workspace: prepared pw weights, depthwise weights (>= 1 row: also the dummy source of
  // zero-byte copies), folded bias.
  Carve cv;
  out.at_wp = cv.take(cout_pad * cin_pad * static_cast<int64_t>(sizeof(Tm)));
  out.at_dwp = cv.take(std::max<int64_t>(cin_pad, 1) * tap_pitch * static_cast<int64_t>(sizeof(Tacc)));
  out.at_bias = cv.take(cout_pad * static_cast<int64_t>(sizeof(Tacc)));
  out.ws_bytes = cv.total;

  PrepParams& pp = out.pp;
  pp = PrepParams{};
  pp.cout = static_cast<int>(cout);
  pp.cin = static_cast<int>(cin);
  pp.cout_pad = static_cast<int>(cout_pad);
  pp.cin_pad = static_cast<int>(cin_pad);
  pp.K = static_cast<int>(g.kernel_size);
  pp.tap_pitch = static_cast<int>(tap_pitch);
  pp.transpose_w = Tile::kWTransposed ? 1 : 0;
  // Elementwise weight conversion, then one warp per output channel for the folded bias.
  out.prep_blocks = std::min<int64_t>(
      std::max(ceil_div(cout_pad * cin_pad + cin_pad * tap_pitch, 256), ceil_div(cout_pad, kThreads / 32)),
      4096);

  p.dw.dwb = nullptr;  // folded into the bias
  p.y = y;
  p.ysb = ysb;
  p.ysc = ysc;
  p.ysl = ysl;
  p.Lout = g.out_length;
  p.cout = static_cast<int>(cout);
  p.cin_pad = static_cast<int>(cin_pad);
  p.cout_pad = static_cast<int>(cout_pad);
  p.n_mt = static_cast<int>(n_mt);
  p.n_lt = static_cast<int>(n_lt);
  p.n_items = static_cast<int>(n_items);
  p.n_groups = static_cast<int>(n_groups);
  p.ppg = static_cast<int>(ppg);
  p.n_workers = static_cast<int>(n_workers);
  p.resident = resident ? 1 : 0;
  p.wpitch = resident ? Tile::resident_pitch(static_cast<int>(cin_pad)) : Tile::WP;
  const int64_t es = sizeof(Tx);
  auto y_aligned = [&](int64_t n) {  // channel-first rows, n-element groups aligned
    return ysl == 1 && aligned_to(y, n * es) && (g.batch == 1 || ysb % n == 0) &&
           (cout == 1 || ysc % n == 0);
  };
  p.y_pair = y_aligned(2) ? 1 : 0;
  p.y_vec4 = y_aligned(4) ? 1 : 0;
  p.y_vec8 = y_aligned(8) ? 1 : 0;
  out.blocks = n_groups * n_workers;
  return out.blocks <= std::numeric_limits<int32_t>::max();
}

// The warp-specialised kernel's shared memory: [W ring of `stages` tiles][xs x2][dws x2][h ring of
// `slots`][mbarriers], every buffer 1024-byte aligned (plus 1024 bytes to align the base). False
// when it exceeds `limit`.
inline bool place_ws_smem(FwdPlan& out, int64_t stages, int64_t slots, int64_t w_tile,
                          int64_t h_bytes, int64_t limit) {
  FwdParams& p = out.p;
  int64_t off = 0;
  auto place = [&](int64_t bytes) {
    const int64_t at = off;
    off += round_up(bytes, 1024);
    return static_cast<int>(at);
  };
  p.w_stages = static_cast<int>(stages);
  p.w_bytes = static_cast<int>(w_tile);
  p.sm_w[0] = place(stages * w_tile);
  p.sm_w[1] = p.sm_w[0] + static_cast<int>(w_tile);
  for (int st = 0; st < 2; ++st) p.sm_x[st] = place(out.xs_bytes);
  for (int st = 0; st < 2; ++st) p.sm_dw[st] = place(out.dws_bytes);
  p.h_slots = static_cast<int>(slots);
  p.h_bytes = static_cast<int>(h_bytes);
  p.sm_h = place(slots * h_bytes);
  p.sm_bar = place(8 * (kWsWBarriers * stages + 2 * slots + kWsXBarriers));
  if (off > limit) return false;
  out.smem = off + 1024;
  out.blocks_per_sm = 1;  // the warp-specialised kernel's launch bounds
  return true;
}

// The warp-specialised forward (sep_fwd_ws_kernel on sm_90a: 16-bit x, or float32 x on TF32): the item split, Cout
// groups, x staging and workspace of the uniform wgmma kernel's shared-h plan, with its own
// shared memory: [W ring of w_stages pre-swizzled tiles of kSC chunks][xs x2][dws x2][h ring]
// [mbarriers]. As many h slots as fit up to 2 n_chunks (spare slots are the producer's lead into
// the next item; at least n_chunks) next to, for kSC 1, 4 W stages if that still leaves 2 n_chunks
// slots, else 3 (a slot bought more than a fourth stage), else 2; for kSC 2 (an even chunk count)
// 2 stages. False when it does not fit or the uniform plan fails (Cout <= 128: no shared h).
template <typename Tx, int BN, bool kXcl, int kSC = 1>
bool plan_fwd_ws(const ConvGeometry& g, const View3& x, void* y, int64_t ysb, int64_t ysc,
                 int64_t ysl, const DevCaps& caps, FwdPlan& out) {
  using Tile = WsTile<Tx, BN>;
  using Tm = WsOperand<Tx>;
  if (!plan_fwd<Tx, Tm, kGemmWg, Tile::BM, BN, Tile::BK, Tile::WN, kXcl>(
          g, x, y, ysb, ysc, ysl, caps, WPlace::kSharedOnly, out, /*w_stages=*/2)) {
    return false;
  }
  const int64_t xs_bytes = out.xs_bytes, dws_bytes = out.dws_bytes;  // plan_fwd's staging
  auto al = [](int64_t bytes) { return round_up(bytes, 1024); };
  FwdParams& p = out.p;
  const int64_t n_chunks = p.cin_pad / Tile::BK;
  if (n_chunks % kSC != 0) return false;
  const int64_t h_bytes = al(static_cast<int64_t>(Tile::H_ELEMS) * sizeof(Tm));
  const int64_t w_tile = kSC * static_cast<int64_t>(Tile::BM) * Tile::BK * sizeof(Tm);
  const int64_t limit = caps.smem_optin - 1024;  // 1024 bytes to align the base
  const int64_t fixed = 2 * al(xs_bytes) + 2 * al(dws_bytes);
  auto slots_for = [&](int64_t s) {  // most h slots (<= 2 n_chunks) next to s W stages, or 0
    const int64_t room = limit - fixed - s * w_tile;
    for (int64_t h = std::min<int64_t>(2 * n_chunks, room / h_bytes); h >= n_chunks; --h) {
      if (s * w_tile + fixed + h * h_bytes + al(8 * (kWsWBarriers * s + 2 * h + kWsXBarriers)) <=
          limit) {
        return h;
      }
    }
    return int64_t{0};
  };
  // One chunk per step: 4 W stages if they still leave 2 n_chunks slots, else 3, else 2. Two
  // chunks per step: 2 stages (4 chunks of W in flight, the most h slots).
  int64_t stages = kSC == 2 ? 2 : 4, slots = slots_for(stages);
  if (kSC == 1 && slots != 2 * n_chunks) {
    stages = 3;
    slots = slots_for(3);
  }
  if (kSC == 1 && slots == 0) {
    stages = 2;
    slots = slots_for(2);
  }
  if (slots == 0 || !place_ws_smem(out, stages, slots, w_tile, h_bytes, limit)) return false;
  out.pp.ws_tiles = Tile::BK;
  return true;
}

// Whether the warp-specialised producers may stage x through a tensor map (the kXTma kernels; the
// host then encodes FwdParams::x_map): channel-first rows 16-byte aligned (the layout of the
// 16-byte staging, which the box reproduces), a window of at most 256 positions (a box
// dimension's limit). Chunk-major kernels take it only with the tensor-core depthwise.
template <bool kXcl>
bool ws_x_map_fits(const FwdParams& p) {
  return !kXcl && p.dw.vec_load == kLoadVec16 && p.dw.xpitch <= 256;
}

// Whether a kXTma kernel's producers may run the depthwise on the tensor cores
// (sep_fwd_ws_kernel<..., kDwMma>, DwStage::compute_mma): 16-bit x with depthwise weights of the
// same type (exact as MMA operands; float32 weights keep the FFMA depthwise), 64- or 128-position
// tiles, stride 1 and dilation 1 (kModeVec), and x rows that hold every window element the
// products read (mma_dw_reach of K at mma_dw_offset).
// mma_dw_types: the compile-time part (which kernels are instantiated with kDwMma at all).
template <typename Tx, typename Tw, int BN>
constexpr bool mma_dw_types() {
  return sizeof(Tx) == 2 && std::is_same_v<Tx, Tw> && (BN == 128 || BN == 64);
}
template <typename Tx, typename Tw, int BN>
bool mma_dw_fits(const FwdParams& p) {
  if constexpr (!mma_dw_types<Tx, Tw, BN>()) {
    return false;
  } else {
    return p.dw.mode == kModeVec && p.dw.K >= 1 &&
           mma_dw_reach(p.dw.K, mma_dw_offset(p.dw.pad_left), BN) <= p.dw.xpitch;
  }
}
// Whether a pass-major kXTma kDwMma kernel takes h in perm_h_row's order and the run epilogue
// (sep_fwd_ws_kernel<..., kPermRows>, wg_store_runs): channel-first y rows 16-byte aligned, where
// each lane's 8 consecutive outputs go in one 16-byte store (on 8-, 4- and 2-byte-aligned rows the
// runs' stores write twice the partial sectors of wg_store_tile's traded vectors: seed bf16 with
// 8-byte rows 104 -> 130 us), and one block of taps (at K 31 the shorter epilogue left the
// producers' three products per channel behind: 118.5-120.7 -> 122-125 us). csrc/NOTES.md
// "Thirty-first session".
inline bool ws_perm_rows_fit(const FwdParams& p) {
  return p.y_vec8 && p.ysl == 1 && mma_dw_blocks(p.dw.K, mma_dw_offset(p.dw.pad_left)) == 1;
}
// The same for channel-first rows that are not 16-byte aligned (no tensor map): staged in 4-byte
// pairs by cp.async (kLoadWords), each row at its own element parity (DwStage::row_off), which
// compute_mma<true> takes per channel; stride 1 and dilation 1.
template <typename Tx, typename Tw, int BN>
bool mma_dw_words_fit(const FwdParams& p) {
  if constexpr (!mma_dw_types<Tx, Tw, BN>()) {
    return false;
  } else {
    // kLoadRows16: plan_dw sized the rows for every shift they take.
    return p.dw.mode == kModeWin && p.dw.stride == 1 && p.dw.dil == 1 && p.dw.K >= 1 &&
           ((p.dw.vec_load == kLoadWords && mma_dw_reach(p.dw.K, 1, BN) <= p.dw.xpitch) ||
            p.dw.vec_load == kLoadRows16);
  }
}

// The warp-specialised forward, chunk-major (sep_fwd_ws_kernel<..., kG>): for shapes whose h ring
// does not fit at BN 128 (Cin 1024 in TF32, Cin 512 with a long window). Blocks take (item, group
// of kG Cout tiles); h streams through kCmHSlots slots and the rest of the shared memory holds W
// stages (short steps need many in flight: the bulk copies' L2 latency against 16 KB per step).
// Shared memory: [W ring][xs x2][dws x2][h ring][mbarriers]. False when it does not fit.
constexpr int kCmHSlots = 4;
constexpr int kCmMaxWStages = 8;
template <typename Tx, int BN, bool kXcl, int kG>
bool plan_fwd_ws_cm(const ConvGeometry& g, const View3& x, void* y, int64_t ysb, int64_t ysc,
                    int64_t ysl, const DevCaps& caps, FwdPlan& out) {
  using Tile = WsTile<Tx, BN>;
  using Tm = WsOperand<Tx>;
  if (!plan_fwd<Tx, Tm, kGemmWg, Tile::BM, BN, Tile::BK, Tile::WN, kXcl>(
          g, x, y, ysb, ysc, ysl, caps, WPlace::kStreamedOnly, out, /*w_stages=*/2)) {
    return false;
  }
  FwdPlan& o = out;
  FwdParams& p = o.p;
  if (p.n_mt < 2) return false;
  const int64_t h_bytes = round_up(static_cast<int64_t>(Tile::H_ELEMS) * sizeof(Tm), 1024);
  const int64_t w_tile = static_cast<int64_t>(Tile::BM) * Tile::BK * sizeof(Tm);
  const int64_t limit = caps.smem_optin - 1024;  // 1024 bytes to align the base
  // As many W stages as fit (kCmMaxWStages down to 3).
  int64_t stages = kCmMaxWStages;
  while (!place_ws_smem(o, stages, kCmHSlots, w_tile, h_bytes, limit)) {
    if (--stages < 3) return false;
  }
  const int64_t ppg = std::min<int64_t>(kG, p.n_mt);
  const int64_t n_groups = ceil_div(p.n_mt, ppg);
  const int64_t n_workers = std::max<int64_t>(1, std::min<int64_t>(p.n_items, caps.sms / n_groups));
  p.ppg = static_cast<int>(ppg);
  p.n_groups = static_cast<int>(n_groups);
  p.n_workers = static_cast<int>(n_workers);
  o.blocks = n_groups * n_workers;
  o.pp.ws_tiles = Tile::BK;
  return true;
}

// Points the plan at its workspace and at the weights. pw element (o, c) at pw[o * so + c * sc];
// dw == nullptr with dw_identity (the depthwise part is x itself: K = 1, weight 1).
inline void bind_fwd_workspace(FwdPlan& plan, unsigned char* ws, const void* pw, int64_t so,
                               int64_t sc, const void* pwb, const void* dw, const void* dwb,
                               bool dw_identity) {
  PrepParams& pp = plan.pp;
  pp.pw = pw;
  pp.pw_so = so;
  pp.pw_sc = sc;
  pp.pwb = pwb;
  pp.dw = dw;
  pp.dwb = dwb;
  pp.identity_dw = dw_identity ? 1 : 0;
  pp.wp = ws + plan.at_wp;
  pp.dwp = ws + plan.at_dwp;
  pp.bias = ws + plan.at_bias;
  plan.p.wp = pp.wp;
  plan.p.dw.dwp = pp.dwp;
  plan.p.bias = pp.bias;
}

// Points a kDwMma launch at the weights as they are, without the workspace or the preparation
// kernel (FwdParams::w_map must be encoded over pw): pw (Cout, Cin) rows, dw (Cin, K) rows and the
// biases, all in x's 16-bit type; pwb and dwb may be nullptr.
inline void bind_fwd_unprepared(FwdParams& p, const void* pw, const void* pwb, const void* dw,
                                const void* dwb) {
  p.wp = nullptr;
  p.bias = nullptr;
  p.pw_raw = pw;
  p.pwb_raw = pwb;
  p.dw.dwp = dw;
  p.dw.dwb = dwb;
}

// ---- pointwise weight gradient ------------------------------------------------------------------

struct DpwPlan {
  DpwParams p{};
  int64_t smem = 0;
  int64_t blocks = 0;
  int64_t prep_blocks = 0, reduce_blocks = 0;
  int64_t cin_pad = 0, tap_pitch = 0;
  int64_t ws_bytes = 0, at_dwp = 0, at_dwb = 0, at_part = 0;
};

template <typename Tx, typename Tm, int kGemm, int BM, int BN, int BJ, bool kXcl>
bool plan_dpw(const ConvGeometry& g, const View3& dy, const View3& x, const DevCaps& caps,
              DpwPlan& out) {
  using Tile = DpwTile<Tx, Tm, kGemm, BM, BN, BJ>;
  constexpr int kV = Tile::kV;
  DpwParams& p = out.p;
  p = DpwParams{};
  int64_t xs_bytes = 0, dws_bytes = 0;
  if (!plan_dw<Tx, BN, BJ, kXcl>(g, x, p.dw, xs_bytes, dws_bytes)) return false;
  const int64_t a_bytes =
      static_cast<int64_t>(kXcl ? Tile::A_ELEMS_CL : Tile::A_ELEMS_CF) * sizeof(Tx);
  const int64_t h_bytes = static_cast<int64_t>(Tile::H_ELEMS) * sizeof(Tm);
  int64_t off = 0;
  auto place = [&](int64_t bytes) {
    const int64_t at = off;
    off += align_bytes(bytes);
    return static_cast<int>(at);
  };
  if (2 * (align_bytes(a_bytes) + align_bytes(xs_bytes) + align_bytes(dws_bytes) +
           align_bytes(h_bytes)) > caps.smem_optin) {
    return false;
  }
  for (int s = 0; s < 2; ++s) p.sm_a[s] = place(a_bytes);
  for (int s = 0; s < 2; ++s) p.sm_x[s] = place(xs_bytes);
  for (int s = 0; s < 2; ++s) p.sm_dw[s] = place(dws_bytes);
  for (int s = 0; s < 2; ++s) p.sm_h[s] = place(h_bytes);
  out.smem = off;

  const int64_t cin = g.channels, cout = g.out_channels;
  const int64_t cin_pad = round_up(cin, BN);
  const int64_t tap_pitch = p.dw.dwpitch;  // the prepared taps' row pitch, as in plan_fwd
  const int64_t n_mt = ceil_div(cout, BM), n_nt = cin_pad / BN;
  const int64_t n_jt = ceil_div(g.out_length, BJ);
  const int64_t n_chunks = g.batch * n_jt;
  const int64_t tiles = n_mt * n_nt;
  // Split the (b, j) reduction so that about two waves of blocks run; >= 4 chunks per split.
  const int64_t splits = std::max<int64_t>(
      1, std::min<int64_t>((2 * caps.sms) / std::max<int64_t>(tiles, 1),
                           std::max<int64_t>(1, n_chunks / 4)));
  if (tiles * splits > std::numeric_limits<int32_t>::max() || g.batch > (int64_t{1} << 30)) {
    return false;
  }
  Carve cv;
  out.at_dwp = cv.take(cin_pad * tap_pitch * 4);
  out.at_dwb = cv.take(cin_pad * 4);
  out.at_part = cv.take(splits * cout * cin * 4);
  out.ws_bytes = cv.total;
  out.cin_pad = cin_pad;
  out.tap_pitch = tap_pitch;
  out.prep_blocks = std::min<int64_t>(ceil_div(cin_pad * tap_pitch + cin_pad, 256), 1024);
  out.reduce_blocks = std::min<int64_t>(ceil_div(cout * cin, 256), 4096);

  p.dy = dy.ptr;
  p.dsb = dy.sb;
  p.dsc = dy.sc;
  p.dsl = dy.sl;
  p.Lout = g.out_length;
  p.n_chunks = n_chunks;
  p.cout = static_cast<int>(cout);
  p.cin = static_cast<int>(cin);
  p.n_mt = static_cast<int>(n_mt);
  p.n_nt = static_cast<int>(n_nt);
  p.n_jt = static_cast<int>(n_jt);
  p.splits = static_cast<int>(splits);
  p.dy_vec = aligned_to(p.dy, 16) && (g.batch == 1 || p.dsb % kV == 0) &&
             (kXcl ? (p.dsc == 1 && p.dsl % kV == 0) : (p.dsl == 1 && p.dsc % kV == 0));
  out.blocks = tiles * splits;
  return true;
}

inline void bind_dpw_workspace(DpwPlan& plan, unsigned char* ws) {
  plan.p.dw.dwp = ws + plan.at_dwp;
  plan.p.dw.dwb = ws + plan.at_dwb;
  plan.p.part = reinterpret_cast<float*>(ws + plan.at_part);
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
