// CUDA fused depthwise-separable Conv1d: forward and backward, registered for
// torch.ops.sepconv1d.separable_conv1d{,_backward}. Kernels: separable_fwd.cuh (fused forward, also
// used for dh = pw^T dy), separable_dpw.cuh (pointwise weight gradient with h recomputed on chip).
// Design notes: csrc/NOTES.md, "Separable CUDA v1".
#include "common/conv_params.h"
#include "common/dispatch.h"
#include "cuda/cublas_gemm.h"
#include "cuda/cuda_utils.cuh"
#include "cuda/depthwise_cuda.h"
#include "cuda/depthwise_phases.cuh"
#include "cuda/separable_plan.cuh"
#include "cuda/smem_opt_in.cuh"
#include "cuda/strided_rows.cuh"
#include "cuda/tensor_maps.cuh"

#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <type_traits>
#include <vector>

namespace sepconv1d {
namespace cuda {
namespace {

using namespace sep;

// ---- small host helpers ---------------------------------------------------------------------------

int max_smem_optin(int device) {
  static int cached[64] = {0};
  const int slot = (device >= 0 && device < 64) ? device : 0;
  if (cached[slot] == 0) {
    int v = 0;
    check_cuda(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    cached[slot] = v;
  }
  return cached[slot];
}

// Opts a kernel into `bytes` of dynamic shared memory on the current device where it needs more
// than the default 48 KB: a host-side attribute write (no stream work, allowed during graph
// capture), made once per kernel (its address, not its function-pointer type, which all
// instantiations share), device and new maximum (opt_in_smem).
template <typename Kernel>
void ensure_smem(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");  // the op's device guard set it
  check_cuda(opt_in_smem(reinterpret_cast<const void*>(kernel), static_cast<int64_t>(bytes), device,
                         /*max_carveout=*/false),
             "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
}

int max_smem_per_sm(int device) {
  static int cached[64] = {0};
  const int slot = (device >= 0 && device < 64) ? device : 0;
  if (cached[slot] == 0) {
    int v = 0;
    check_cuda(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerMultiprocessor)");
    cached[slot] = v;
  }
  return cached[slot];
}

// The device as the plans see it.
DevCaps dev_caps(int device) {
  return DevCaps{max_smem_optin(device), max_smem_per_sm(device), sm_count(device)};
}

View3 view_of(const Tensor& t) { return View3{t.const_data_ptr(), t.stride(0), t.stride(1), t.stride(2)}; }

// Whether the warp-specialised kernels may stage x through a tensor map (tensor_maps.cuh):
// SEPCONV1D_WS_XTMA=0 (read per call: comparisons, tests) keeps the cp.async staging.
bool x_map_allowed() {
  const char* env = std::getenv("SEPCONV1D_WS_XTMA");
  return env == nullptr || std::atoi(env) != 0;
}

// Whether 16-bit rows that are not 16-byte aligned are staged in 16-byte units (kLoadRows16) rather
// than 4-byte pairs for the tensor-core depthwise: SEPCONV1D_WS_ROWS16=0 (read per call:
// comparisons, tests) keeps the pairs.
bool rows16_allowed() {
  const char* env = std::getenv("SEPCONV1D_WS_ROWS16");
  return env == nullptr || std::atoi(env) != 0;
}

// Whether the warp-specialised producers run the depthwise on the tensor cores where mma_dw_fits.
// Its cost grows with K by one MMA per 16 taps, the FFMA loop's by K FMAs per output: K 3 and 5
// have compiled FFMA loops that are cheaper (seed bf16, device time: K 3 92.0 us FFMA / 94.4
// tensor cores, K 5 95.3 / 96.0), K 7 and 9 do not (97.9 / 95.8, 97.6 / 94.3), and other K take
// the FFMA loop with run-time taps (K 4 100.0 / 95.1; csrc/NOTES.md, twenty-third session; harness,
// twenty-seventh: K 17 140.2 / 107.3, K 31 170.8 / 119.6, K 63 264.0 / 149.2).
// SEPCONV1D_WS_DWMMA (read per call: comparisons, tests): "0" never, "1" wherever it fits.
bool dw_mma_chosen(int64_t kernel_size) {
  const char* env = std::getenv("SEPCONV1D_WS_DWMMA");
  if (env != nullptr && *env != '\0') return std::atoi(env) != 0;
  return kernel_size != 3 && kernel_size != 5;
}

// ---- forward -----------------------------------------------------------------------------------

// Source of the pointwise weights / biases of one fused GEMM launch. pw element (o, c) at
// pw[o * so + c * sc]; dw_identity: the depthwise part is x itself (K = 1, weight 1).
struct PwSource {
  const Tensor* pw;
  int64_t so, sc;
  const std::optional<Tensor>* pw_bias;
  const Tensor* dw;                      // nullptr with dw_identity
  const std::optional<Tensor>* dw_bias;  // folded into the output bias
  bool dw_identity;
};

// Workspace, weight preparation and the main launch of a forward plan.
template <typename Tw, typename Tm, typename Tacc, bool kTf32, typename Kernel>
void run_fwd_plan(FwdPlan& plan, const Tensor& x, const PwSource& src, Kernel kernel, int threads,
                  const char* name) {
  Tensor ws = torch::stable::empty({plan.ws_bytes}, ScalarType::Byte, std::nullopt, x.device());
  bind_fwd_workspace(
      plan, static_cast<unsigned char*>(ws.data_ptr()), src.pw->const_data_ptr(), src.so, src.sc,
      (src.pw_bias && src.pw_bias->has_value()) ? (*src.pw_bias)->const_data_ptr() : nullptr,
      src.dw ? src.dw->const_data_ptr() : nullptr,
      (src.dw_bias && src.dw_bias->has_value()) ? (*src.dw_bias)->const_data_ptr() : nullptr,
      src.dw_identity);
  cudaStream_t stream = current_stream(x);
  sep_prep_kernel<Tw, Tm, Tacc, kTf32>
      <<<static_cast<unsigned>(plan.prep_blocks), 256, 0, stream>>>(plan.pp);
  check_launch("sep_prep_kernel");
  ensure_smem(kernel, static_cast<size_t>(plan.smem));
  kernel<<<static_cast<unsigned>(plan.blocks), threads, static_cast<size_t>(plan.smem), stream>>>(
      plan.p);
  check_launch(name);
}

// The kDwMma kernels' launch, without a workspace or a preparation kernel: W through
// FwdParams::w_map (pw as (Cin, Cout, 1), box 64 x 64 x 1, the 128-byte swizzle, zeros outside),
// the weights and biases as they are (FwdParams). False, launching nothing, where pw's rows are
// not contiguous or not a multiple of 16 bytes, a weight or bias is not 16-byte aligned, or the
// driver refuses the map.
template <typename Tx, typename Kernel>
bool run_fwd_unprepared(FwdPlan& plan, const PwSource& src, const ConvGeometry& g, cudaStream_t stream,
                        Kernel kernel, int threads, const char* name) {
  constexpr int64_t es = sizeof(Tx);
  if (src.dw_identity || src.dw == nullptr || src.sc != 1 || src.so != g.channels ||
      (g.channels * es) % 16 != 0) {
    return false;
  }
  auto ptr = [](const std::optional<Tensor>* t) -> const void* {
    return t != nullptr && t->has_value() ? (*t)->const_data_ptr() : nullptr;
  };
  // The producers bulk-copy spans of the depthwise weights and bias: 16-byte aligned tensors (the
  // spans then are too, with channels % 8 == 0).
  const void* pw = src.pw->const_data_ptr();
  const void* dwp = src.dw->const_data_ptr();
  const void* dwb = ptr(src.dw_bias);
  FwdParams& p = plan.p;
  if (!aligned_to(pw, 16) || !aligned_to(dwp, 16) || (dwb != nullptr && !aligned_to(dwb, 16)) ||
      !encode_w_map<Tx>(p, pw, g.channels, g.out_channels)) {
    return false;
  }
  bind_fwd_unprepared(p, pw, ptr(src.pw_bias), dwp, dwb);
  ensure_smem(kernel, static_cast<size_t>(plan.smem));
  kernel<<<static_cast<unsigned>(plan.blocks), threads, static_cast<size_t>(plan.smem), stream>>>(p);
  check_launch(name);
  return true;
}

template <typename Tx, typename Tw, typename Tm, int kGemm, int BM, int BN, int BK, int WN,
          bool kXcl>
bool launch_fwd(const Tensor& x, Tensor& y, const ConvGeometry& g, const PwSource& src,
                WPlace place, int min_blocks_per_sm = 1) {
  using Tile = FwdTile<Tx, Tm, kGemm, BM, BN, BK, WN>;
  FwdPlan plan;
  if (!plan_fwd<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>(g, view_of(x), y.data_ptr(), y.stride(0),
                                                       y.stride(1), y.stride(2),
                                                       dev_caps(x.get_device_index()), place,
                                                       plan)) {
    return false;
  }
  // Fewer blocks per SM than the caller asked for: it has a smaller tile to fall back on.
  if (plan.blocks_per_sm < min_blocks_per_sm) return false;
  run_fwd_plan<Tw, Tm, typename Tile::Tacc, Tile::kTf32>(
      plan, x, src, sep_fwd_kernel<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>, kThreads,
      "sep_fwd_kernel");
  return true;
}

// The warp-specialised wgmma forward (sm_90a; 16-bit x, or float32 x on TF32): pass-major, or with
// kG > 0 chunk-major (kG Cout passes side by side, h streamed).
template <typename Tx, typename Tw, int BN, bool kXcl, int kG = 0, int kSC = 1>
bool launch_fwd_ws(const Tensor& x, Tensor& y, const ConvGeometry& g, const PwSource& src) {
  const DevCaps caps = dev_caps(x.get_device_index());
  // This form's plan for x as `xv` (pass-major or chunk-major).
  auto plan_for = [&](const View3& xv, FwdPlan& out) {
    if constexpr (kG > 0) {
      return plan_fwd_ws_cm<Tx, BN, kXcl, kG>(g, xv, y.data_ptr(), y.stride(0), y.stride(1),
                                              y.stride(2), caps, out);
    } else {
      return plan_fwd_ws<Tx, BN, kXcl, kSC>(g, xv, y.data_ptr(), y.stride(0), y.stride(1),
                                            y.stride(2), caps, out);
    }
  };
  FwdPlan plan;
  if (!plan_for(view_of(x), plan)) return false;
  using Tm = WsOperand<Tx>;
  // Threads of the kernels with x by tensor map (xtma) and of those without: the loader warpgroup
  // depends on it for TF32 (ws_has_loader).
  const int threads_xtma = ws_threads(ws_has_loader<Tx, BN>(kG, true));
  const int threads = ws_threads(ws_has_loader<Tx, BN>(kG, false));
  // Channel-first x by tensor map where it fits; then the tensor-core depthwise where it fits and
  // is chosen. Chunk-major kernels take the map only with that depthwise (their FFMA producers keep
  // cp.async staging: x is not what bounds them).
  if constexpr (!kXcl) {
    const bool dw_mma = mma_dw_fits<Tx, Tw, BN>(plan.p) && dw_mma_chosen(g.kernel_size);
    if (x_map_allowed() && ws_x_map_fits<kXcl>(plan.p) && (kG == 0 || dw_mma) &&
        encode_x_map<Tx>(plan.p, g.batch, WsTile<Tx, BN>::BK)) {
      if constexpr (mma_dw_types<Tx, Tw, BN>()) {
        if constexpr (kG == 0) {
          if (dw_mma && ws_perm_rows_fit(plan.p) &&
              run_fwd_unprepared<Tx>(plan, src, g, current_stream(x),
                                     sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true, true, true>,
                                     threads_xtma, "sep_fwd_ws_kernel")) {
            return true;
          }
        }
        if (dw_mma &&
            run_fwd_unprepared<Tx>(plan, src, g, current_stream(x),
                                   sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true, true>,
                                   threads_xtma, "sep_fwd_ws_kernel")) {
          return true;
        }
      }
      if constexpr (kG == 0) {
        run_fwd_plan<Tw, Tm, float, sizeof(Tm) == 4>(plan, x, src,
                                                     sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true>,
                                                     threads_xtma, "sep_fwd_ws_kernel");
        return true;
      }
    }
    // Rows that are not 16-byte aligned (L % 8 != 0 in 16-bit: Conformer L 500, QuartzNet 835):
    // the tensor-core depthwise on rows staged in 16-byte units from each row's unit at or below
    // its window (planned again for that: the rows take up to 7 more elements), else in 4-byte
    // pairs.
    if constexpr (mma_dw_types<Tx, Tw, BN>()) {
      if (plan.p.dw.vec_load == kLoadWords && dw_mma_chosen(g.kernel_size) && rows16_allowed()) {
        FwdPlan plan16;
        View3 xv16 = view_of(x);
        xv16.rows16 = true;
        if (plan_for(xv16, plan16) && plan16.p.dw.vec_load == kLoadRows16 &&
            mma_dw_words_fit<Tx, Tw, BN>(plan16.p) &&
            run_fwd_unprepared<Tx>(plan16, src, g, current_stream(x),
                                   sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, false, true>, threads,
                                   "sep_fwd_ws_kernel")) {
          return true;
        }
      }
      if (mma_dw_words_fit<Tx, Tw, BN>(plan.p) && dw_mma_chosen(g.kernel_size) &&
          run_fwd_unprepared<Tx>(plan, src, g, current_stream(x),
                                 sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, false, true>, threads,
                                 "sep_fwd_ws_kernel")) {
        return true;
      }
    }
  }
  run_fwd_plan<Tw, Tm, float, sizeof(Tm) == 4>(plan, x, src,
                                               sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC>, threads,
                                               "sep_fwd_ws_kernel");
  return true;
}

// Picks the tile for Cout and the x layout (8 warps of 64 x WN; BN = 8 * 64 * WN / BM):
//  - Cout <= 64: BM 64 x BN 256.
//  - Cout <= 128: BM 128 with resident W and 64-wide warp tiles (BN 256) when W fits and there is
//    enough work, else BM 128 x BN 128.
//  - Cout <= 256: resident BM 256 x BN 128 (WN 64); for short kernels (K <= 16, cheap depthwise
//    recompute) resident BM 128 x BN 256; else streamed BM 256 x BN 64.
//  - larger: shared h (one depthwise per item for several BM 256 Cout passes, W streamed), BN 128
//    when its h ring fits in shared memory, else BN 64; else as for Cout <= 256.
template <typename Tx, typename Tw, typename Tm, int kGemm, int BK>
bool launch_fwd_mma(const Tensor& x, Tensor& y, const ConvGeometry& g, const PwSource& src,
                    bool xcl) {
  const int64_t cout = g.out_channels;
  auto go = [&](auto bm_c, auto wn_c, WPlace mode) {
    constexpr int BM = decltype(bm_c)::value;
    constexpr int WN = decltype(wn_c)::value;
    constexpr int BN = 8 * 64 * WN / BM;
    return xcl ? launch_fwd<Tx, Tw, Tm, kGemm, BM, BN, BK, WN, true>(x, y, g, src, mode)
               : launch_fwd<Tx, Tw, Tm, kGemm, BM, BN, BK, WN, false>(x, y, g, src, mode);
  };
  using I64 = std::integral_constant<int, 64>;
  using I128 = std::integral_constant<int, 128>;
  using I256 = std::integral_constant<int, 256>;
  using W32 = std::integral_constant<int, 32>;
  using W64 = std::integral_constant<int, 64>;
  if (cout <= 64) return go(I64{}, W32{}, WPlace::kAuto);
  if (cout <= 128) {
    if (go(I128{}, W64{}, WPlace::kResidentOnly)) return true;
    return go(I128{}, W32{}, WPlace::kAuto);
  }
  if (cout > 256) {
    if (go(I256{}, W64{}, WPlace::kSharedOnly)) return true;
    if (go(I256{}, W32{}, WPlace::kSharedOnly)) return true;
  }
  if (go(I256{}, W64{}, WPlace::kResidentOnly)) return true;
  if (g.kernel_size <= 16 && go(I128{}, W64{}, WPlace::kResidentOnly)) return true;
  return go(I256{}, W32{}, WPlace::kAuto);
}

// Which tensor-core forward kernels may run. wgmma tiles run on compute capability 9.0 when the
// build has sm_90a code (SEPCONV1D_SM90A, set by setup.py). SEPCONV1D_WGMMA in the environment
// (read per call, for comparisons): "0" selects the mma.sync kernels, "uniform" the uniform wgmma
// kernel (16-bit x; TF32 then takes mma.sync) instead of the warp-specialised one.
enum class WgMode { kOff, kUniform, kWarpSpecialised };
WgMode wgmma_mode(int device) {
#ifdef SEPCONV1D_SM90A
  static int cc[64] = {0};
  const int slot = (device >= 0 && device < 64) ? device : 0;
  if (cc[slot] == 0) {
    int major = 0, minor = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
               "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
               "cudaDeviceGetAttribute(ComputeCapabilityMinor)");
    cc[slot] = 10 * major + minor;
  }
  if (cc[slot] != 90) return WgMode::kOff;
  const char* env = std::getenv("SEPCONV1D_WGMMA");
  if (env != nullptr && env[0] == '0') return WgMode::kOff;
  if (env != nullptr && std::string_view(env) == "uniform") return WgMode::kUniform;
  return WgMode::kWarpSpecialised;
#else
  (void)device;
  return WgMode::kOff;
#endif
}

// wgmma tiles (16-bit x, or float32 x on TF32): BM 128, two warpgroups of 64 x BN (BN / 2
// accumulators per thread), one depthwise per item shared by all Cout passes (so Cout > 128).
//  - Warp-specialised kernel: pass-major BN 128 where an item's h ring fits, else its chunk-major
//    form (BN 64, 4 Cout passes side by side, h streamed) or pass-major BN 64 (order below), else
//    for TF32 pass-major BN 32.
//  - Uniform kernel (SEPCONV1D_WGMMA=uniform), where it measured faster than the mma.sync kernel
//    in the same process (csrc/NOTES.md "Separable CUDA v3"): stride 1, BN 128, or BN 64 for
//    Cin >= 1024 (Citrinet 1.34x); not stride 2 (0.92x) nor BN 64 at Cin 512 (0.93-0.98x).
template <typename Tx, typename Tw>
bool launch_fwd_wg(const Tensor& x, Tensor& y, const ConvGeometry& g, const PwSource& src,
                   bool xcl, WgMode mode) {
  if (mode == WgMode::kOff || g.out_channels <= 128) return false;
  if (mode == WgMode::kWarpSpecialised) {
    // Pass-major: two h chunks per consumer step where the chunk count is even and that plan fits
    // (2 W stages; a step of one chunk is only 128 / 64 cycles of products per warpgroup on BN 64 /
    // 32 tiles, too short for its waits and W copy), else one. On BN 128 tiles only for 16-bit
    // channel-first x, whose kernel has the W loader: seed bf16 113.4 -> 109.0 us, while TF32 and
    // channel-last lost (csrc/NOTES.md "Seventeenth session", "Nineteenth session").
    // SEPCONV1D_WS_SC=1, read per call: always one (comparisons, tests).
    const char* env_sc = std::getenv("SEPCONV1D_WS_SC");
    const bool two_chunk_steps = env_sc == nullptr || std::atoi(env_sc) != 1;
    auto ws = [&](auto bn_c) {
      constexpr int BN = decltype(bn_c)::value;
      if constexpr (BN <= 64) {
        if (two_chunk_steps && (xcl ? launch_fwd_ws<Tx, Tw, BN, true, 0, 2>(x, y, g, src)
                                    : launch_fwd_ws<Tx, Tw, BN, false, 0, 2>(x, y, g, src))) {
          return true;
        }
      } else if constexpr (sizeof(Tx) == 2) {
        if (two_chunk_steps && !xcl && launch_fwd_ws<Tx, Tw, BN, false, 0, 2>(x, y, g, src)) {
          return true;
        }
      }
      return xcl ? launch_fwd_ws<Tx, Tw, BN, true>(x, y, g, src)
                 : launch_fwd_ws<Tx, Tw, BN, false>(x, y, g, src);
    };
    // Chunk-major: BN 64 x 4 Cout passes side by side (128 accumulators per consumer thread).
    auto cm = [&]() {
      return xcl ? launch_fwd_ws<Tx, Tw, 64, true, 4>(x, y, g, src)
                 : launch_fwd_ws<Tx, Tw, 64, false, 4>(x, y, g, src);
    };
    // For comparisons, read per call: SEPCONV1D_WS_BN, the widest pass-major BN tried (128, 64 or
    // 32); SEPCONV1D_WS_CM, "0" never chunk-major, "1" chunk-major first.
    const char* env_bn = std::getenv("SEPCONV1D_WS_BN");
    const char* env_cm = std::getenv("SEPCONV1D_WS_CM");
    const int max_bn = env_bn != nullptr ? std::atoi(env_bn) : 128;
    const int cm_mode = env_cm != nullptr ? std::atoi(env_cm) : -1;
    if (cm_mode == 1 && cm()) return true;
    if (max_bn >= 128 && ws(std::integral_constant<int, 128>{})) return true;
    // Where an item's h does not fit at BN 128: chunk-major when its 4 passes cover Cout (no
    // depthwise recompute: QuartzNet's K 63 / 87 blocks), else pass-major BN 64 (one depthwise
    // for all Cout passes: Vocos' 12), else chunk-major (Citrinet TF32), else BN 32.
    // csrc/NOTES.md "Eleventh session" has the measurements behind this order.
    if (cm_mode < 0 && ceil_div(g.out_channels, int64_t{kWsBM}) <= 4 && cm()) return true;
    if (max_bn >= 64 && ws(std::integral_constant<int, 64>{})) return true;
    if (cm_mode < 0 && cm()) return true;
    if constexpr (sizeof(Tx) == 4) return ws(std::integral_constant<int, 32>{});
    return false;
  }
  if constexpr (sizeof(Tx) == 2) {
    if (g.stride != 1) return false;
    auto go = [&](auto bn_c) {
      constexpr int BN = decltype(bn_c)::value;
      return xcl ? launch_fwd<Tx, Tw, Tx, kGemmWg, 128, BN, 64, 64, true>(x, y, g, src, WPlace::kSharedOnly)
                 : launch_fwd<Tx, Tw, Tx, kGemmWg, 128, BN, 64, 64, false>(x, y, g, src, WPlace::kSharedOnly);
    };
    if (go(std::integral_constant<int, 128>{})) return true;
    return g.channels >= 1024 && go(std::integral_constant<int, 64>{});
  } else {
    return false;  // the uniform kernel has no TF32 form
  }
}

// Runs one fused launch (prep + main) for x in kernel layout; false when the x window of this
// geometry does not fit in shared memory (the caller then materialises h first).
bool run_fused(const Tensor& x, Tensor& y, const ConvGeometry& g, const PwSource& src,
               bool allow_tf32) {
  const bool xcl = x.stride(2) != 1;  // as_kernel_layout: else stride(1) == 1
  bool ok = false;
  dispatch_dtypes(x.scalar_type(), src.pw->scalar_type(), "separable_conv1d",
                  [&](auto xt, auto wt) {
                    using Tx = native_t<typename decltype(xt)::type>;
                    using Tw = native_t<typename decltype(wt)::type>;
                    if constexpr (std::is_same_v<Tx, double>) {
                      ok = xcl ? launch_fwd<Tx, Tw, double, kGemmSimt, 64, 64, 16, 32, true>(x, y, g, src, WPlace::kAuto)
                               : launch_fwd<Tx, Tw, double, kGemmSimt, 64, 64, 16, 32, false>(x, y, g, src, WPlace::kAuto);
                    } else if constexpr (std::is_same_v<Tx, float>) {
                      if (allow_tf32) {
                        ok = launch_fwd_wg<Tx, Tw>(x, y, g, src, xcl,
                                                   wgmma_mode(x.get_device_index())) ||
                             launch_fwd_mma<Tx, Tw, float, kGemmTf32, 16>(x, y, g, src, xcl);
                      } else {
                        // BK 32 where two blocks still fit per SM (short, unstrided windows):
                        // half the chunks of BK 16, so half the per-chunk staging, index maths
                        // and barriers against the same FMAs; else BK 16 (csrc/NOTES.md
                        // "Sixteenth session").
                        ok = xcl ? launch_fwd<Tx, Tw, float, kGemmSimt, 128, 128, 32, 32, true>(x, y, g, src, WPlace::kAuto, 2) ||
                                       launch_fwd<Tx, Tw, float, kGemmSimt, 128, 128, 16, 32, true>(x, y, g, src, WPlace::kAuto)
                                 : launch_fwd<Tx, Tw, float, kGemmSimt, 128, 128, 32, 32, false>(x, y, g, src, WPlace::kAuto, 2) ||
                                       launch_fwd<Tx, Tw, float, kGemmSimt, 128, 128, 16, 32, false>(x, y, g, src, WPlace::kAuto);
                      }
                    } else {
                      ok = launch_fwd_wg<Tx, Tw>(x, y, g, src, xcl,
                                                 wgmma_mode(x.get_device_index())) ||
                           launch_fwd_mma<Tx, Tw, Tx, kGemmMma16, 32>(x, y, g, src, xcl);
                    }
                  });
  return ok;
}

// Geometry of "pointwise only": the fused kernel with an identity depthwise (K = 1).
ConvGeometry pointwise_geometry(int64_t batch, int64_t cin, int64_t cout, int64_t length) {
  ConvGeometry g;
  g.batch = batch;
  g.channels = cin;
  g.out_channels = cout;
  g.length = length;
  g.kernel_size = 1;
  g.out_length = length;
  g.stride = 1;
  g.pad_left = 0;
  g.pad_right = 0;
  g.dilation = 1;
  return g;
}

// y = pw(dw(x)) into y (allocated by the caller in x's layout).
void separable_forward_into(const Tensor& xk, const Tensor& dw, const std::optional<Tensor>& dw_bias,
                            const Tensor& pw, const std::optional<Tensor>& pw_bias,
                            const ConvGeometry& g, bool allow_tf32, Tensor& y) {
  PwSource src{&pw, pw.stride(0), pw.stride(1), &pw_bias, &dw, &dw_bias, false};
  if (run_fused(xk, y, g, src, allow_tf32)) return;
  // The dilated window does not fit on chip: h = dw(x) through device memory (x dtype, exactly
  // what the fused path rounds h to), then the fused kernel as a pure pointwise GEMM.
  Tensor h = new_activation(xk, g.channels, g.out_length, xk.scalar_type());
  ConvGeometry gd = g;
  gd.out_channels = g.channels;
  depthwise_forward_into(xk, dw, std::nullopt, gd, h);
  const ConvGeometry gp = pointwise_geometry(g.batch, g.channels, g.out_channels, g.out_length);
  PwSource srcp{&pw, pw.stride(0), pw.stride(1), &pw_bias, nullptr, &dw_bias, true};
  STD_TORCH_CHECK(run_fused(h, y, gp, srcp, allow_tf32),
                  "sepconv1d: separable_conv1d pointwise launch does not fit in shared memory");
}

// Whether the fused forward of a dilated, stride-1 problem runs over the phase rows of x (as the
// depthwise kernels do, depthwise_phases.cuh): x gathered into (d*B, Cin, ceil((L + r) / d)) rows
// of 16-byte pitch, the fused kernel at dilation 1, its (d*B, Cout, ceil(Lo / d)) output scattered
// into y. The copies cost the same at any K; the dilated kernel's depthwise part grows with K
// (H200, device time, phases / dilated kernel: B32 512 -> 512 L835 K87 d2 TF32 386 / 451 us,
// fp16 228 / 343, bf16 229 / 341; K31 d2 TF32 292 / 282, bf16 167 / 198; K9 d2 bf16 152 / 138,
// TF32 261 / 219; SNAC's K7 d9 TF32 501 / 340; csrc/NOTES.md, thirty-eighth session). So: half
// types from K 24, float32 on TF32 from K 48; channel-first only; strict float32 and float64 (not
// measured) keep the dilated kernel. SEPCONV1D_SEP_PHASES (read per call: comparisons, tests):
// "0" never, "1" wherever it applies.
bool forward_as_phases(const ConvGeometry& g, const Tensor& xk, const Tensor& y, bool allow_tf32) {
  if (!phase_split_applies(g) || xk.stride(2) != 1 || y.stride(2) != 1) return false;
  const char* env = std::getenv("SEPCONV1D_SEP_PHASES");
  if (env != nullptr && *env != '\0') return std::atoi(env) != 0;
  const ScalarType xt = xk.scalar_type();
  if (is_half_type(xt)) return g.kernel_size >= 24;
  return xt == ScalarType::Float && allow_tf32 && g.kernel_size >= 48;
}

void separable_forward_phases(const Tensor& xk, const Tensor& dw, const std::optional<Tensor>& dw_bias,
                              const Tensor& pw, const std::optional<Tensor>& pw_bias,
                              const ConvGeometry& g, bool allow_tf32, Tensor& y) {
  const PhaseSplit ps = phase_split(g);
  const int64_t pitch = phase_row_pitch(ps.inner.length, static_cast<int64_t>(xk.element_size()));
  Tensor xbuf =
      torch::stable::empty({ps.inner.batch, g.channels, pitch}, xk.scalar_type(), std::nullopt, xk.device());
  const Tensor xp = torch::stable::narrow(xbuf, 2, 0, ps.inner.length);
  Tensor yp = torch::stable::empty({ps.inner.batch, g.out_channels, ps.inner.out_length}, y.scalar_type(),
                                   std::nullopt, xk.device());
  const cudaStream_t stream = current_stream(xk);
  phase_copy(true, StridedView::of(xk), StridedView::of(xp), ps.phases, ps.shift, stream);
  separable_forward_into(xp, dw, dw_bias, pw, pw_bias, ps.inner, allow_tf32, yp);
  phase_copy(false, StridedView::of(y), StridedView::of(yp), ps.phases, 0, stream);
}

// Every size the kernels hold in 32-bit integers (positions inside a tile, channel indices, the
// window arithmetic) stays far from overflow; element offsets into tensors are 64-bit.
void check_sizes(const ConvGeometry& g) {
  constexpr int64_t kMax = int64_t{1} << 30;
  STD_TORCH_CHECK(g.length < kMax && g.out_length < kMax && g.channels < kMax &&
                      g.out_channels < kMax && g.kernel_size < kMax && g.stride < kMax &&
                      g.dilation < kMax && g.pad_left < kMax && g.pad_right < kMax,
                  "sepconv1d: separable_conv1d sizes must be below 2^30 (length, channels, "
                  "kernel size, stride, dilation, padding)");
}

std::optional<Tensor> contiguous_opt(const std::optional<Tensor>& t) {
  if (!t.has_value()) return std::nullopt;
  return contiguous_if_needed(*t);
}

Tensor separable_conv1d_cuda(const Tensor& x, const Tensor& dw_weight,
                             const std::optional<Tensor>& dw_bias, const Tensor& pw_weight,
                             const std::optional<Tensor>& pw_bias, int64_t stride,
                             int64_t pad_left, int64_t pad_right, int64_t dilation,
                             bool allow_tf32) {
  const ConvGeometry g =
      check_separable(x, dw_weight, dw_bias, pw_weight, pw_bias, stride, pad_left, pad_right,
                      dilation);
  STD_TORCH_CHECK(x.is_cuda(), "sepconv1d: x must be a CUDA tensor");
  torch::stable::accelerator::DeviceGuard guard(x.get_device_index());
  const Tensor xk = as_kernel_layout(x);
  Tensor y = new_activation(xk, g.out_channels, g.out_length, x.scalar_type());
  if (y.numel() == 0) return y;
  check_sizes(g);
  const Tensor dw = contiguous_if_needed(flat_depthwise_weight(dw_weight));
  const Tensor pw = contiguous_if_needed(flat_pointwise_weight(pw_weight));
  const std::optional<Tensor> dwb = contiguous_opt(dw_bias);
  const std::optional<Tensor> pwb = contiguous_opt(pw_bias);
  if (forward_as_phases(g, xk, y, allow_tf32)) {
    separable_forward_phases(xk, dw, dwb, pw, pwb, g, allow_tf32, y);
  } else {
    separable_forward_into(xk, dw, dwb, pw, pwb, g, allow_tf32, y);
  }
  return y;
}

// ---- backward ----------------------------------------------------------------------------------

template <typename Tx, typename Tw, typename Tm, int kGemm, int BM, int BN, int BJ, bool kXcl>
bool launch_dpw(const Tensor& dy, const Tensor& xk, const Tensor& dw,
                const std::optional<Tensor>& dwb, const ConvGeometry& g, Tensor& out) {
  const int device = xk.get_device_index();
  DpwPlan plan;
  if (!plan_dpw<Tx, Tm, kGemm, BM, BN, BJ, kXcl>(g, view_of(dy), view_of(xk), dev_caps(device),
                                                  plan)) {
    return false;
  }
  Tensor ws = torch::stable::empty({plan.ws_bytes}, ScalarType::Byte, std::nullopt, xk.device());
  unsigned char* wsp = static_cast<unsigned char*>(ws.data_ptr());
  bind_dpw_workspace(plan, wsp);
  cudaStream_t stream = current_stream(xk);
  sep_dw_prep_kernel<Tw><<<static_cast<unsigned>(plan.prep_blocks), 256, 0, stream>>>(
      static_cast<const Tw*>(dw.const_data_ptr()),
      dwb.has_value() ? static_cast<const Tw*>(dwb->const_data_ptr()) : nullptr,
      reinterpret_cast<float*>(wsp + plan.at_dwp), reinterpret_cast<float*>(wsp + plan.at_dwb),
      static_cast<int>(g.channels), static_cast<int>(plan.cin_pad),
      static_cast<int>(g.kernel_size), static_cast<int>(plan.tap_pitch));
  check_launch("sep_dw_prep_kernel");
  auto kernel = sep_dpw_kernel<Tx, Tm, kGemm, BM, BN, BJ, kXcl>;
  ensure_smem(kernel, static_cast<size_t>(plan.smem));
  kernel<<<static_cast<unsigned>(plan.blocks), kThreads, static_cast<size_t>(plan.smem), stream>>>(
      plan.p);
  check_launch("sep_dpw_kernel");
  sep_dpw_reduce_kernel<Tw><<<static_cast<unsigned>(plan.reduce_blocks), 256, 0, stream>>>(
      plan.p.part, static_cast<Tw*>(out.data_ptr()), nullptr, g.out_channels, g.channels,
      g.channels, plan.p.splits);
  check_launch("sep_dpw_reduce_kernel");
  return true;
}

template <typename Tx, typename Tw, typename Tm, int kGemm>
bool launch_dpw_mma(const Tensor& dy, const Tensor& xk, const Tensor& dw,
                    const std::optional<Tensor>& dwb, const ConvGeometry& g, Tensor& out) {
  const bool xcl = xk.stride(2) != 1;
  auto go = [&](auto bm_c) {
    constexpr int BM = decltype(bm_c)::value;
    constexpr int BN = 256 * 64 / BM;
    return xcl ? launch_dpw<Tx, Tw, Tm, kGemm, BM, BN, 32, true>(dy, xk, dw, dwb, g, out)
               : launch_dpw<Tx, Tw, Tm, kGemm, BM, BN, 32, false>(dy, xk, dw, dwb, g, out);
  };
  if (g.out_channels <= 64) return go(std::integral_constant<int, 64>{});
  if (g.out_channels <= 128) return go(std::integral_constant<int, 128>{});
  return go(std::integral_constant<int, 256>{});
}

// d pw_weight (Cout, Cin) in the weight dtype where the backward is not on cuBLAS (strict float32,
// float64, TF32 without cuBLAS). TF32: fused h recompute + split-K MMA. float64, strict float32,
// or a window too large for shared memory: h through device memory and a batched matmul (fp32
// accumulate inside each batch, then a float sum over the batch).
Tensor pointwise_weight_grad(const Tensor& dy, const Tensor& xk, const Tensor& dw,
                             const std::optional<Tensor>& dwb, const ConvGeometry& g,
                             bool allow_tf32, ScalarType wt) {
  Tensor out = torch::stable::empty({g.out_channels, g.channels}, wt, std::nullopt, xk.device());
  bool done = false;
  dispatch_dtypes(xk.scalar_type(), wt, "separable_conv1d_backward", [&](auto xt, auto wtag) {
    using Tx = native_t<typename decltype(xt)::type>;
    using Tw = native_t<typename decltype(wtag)::type>;
    if constexpr (std::is_same_v<Tx, float>) {
      if (allow_tf32) done = launch_dpw_mma<Tx, Tw, float, kGemmTf32>(dy, xk, dw, dwb, g, out);
    } else if constexpr (!std::is_same_v<Tx, double>) {
      done = launch_dpw_mma<Tx, Tw, Tx, kGemmMma16>(dy, xk, dw, dwb, g, out);
    }
  });
  if (done) return out;
  ConvGeometry gd = g;
  gd.out_channels = g.channels;
  Tensor h = new_activation(xk, g.channels, g.out_length, xk.scalar_type());
  depthwise_forward_into(xk, dw, dwb, gd, h);
  Tensor prod = torch::stable::matmul(dy, torch::stable::transpose(h, 1, 2));  // (B, Cout, Cin)
  const ScalarType acc = wt == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
  std::vector<int64_t> dims = {0};
  Tensor s = torch::stable::sum(prod, dims, false, acc);
  return acc == wt ? s : torch::stable::to(s, std::optional<ScalarType>(wt));
}


// ---- backward GEMMs through cuBLAS: half precision, and float32 on TF32 ----------------------------
// bf16/fp16, and float32 with the convolution TF32 setting on: the two GEMMs of the backward
// (dh = pw^T dy and d pw = sum dy h^T) run on cuBLAS, with h recomputed into a transient buffer by
// the depthwise kernel. Neither GEMM gains from fusion here: dh has to reach device memory for the
// depthwise backward anyway, and the reduction of d pw over (batch, length) is a long-K GEMM that
// cuBLAS runs near the tensor-core rate, where the fused kernels (one short step per 32 positions,
// h recomputed per Cout tile) reached about a quarter of it. cuBLAS is called directly
// (cublas_gemm.h): float32 needs TF32 compute, which torch's matmul ties to the matmul TF32 flag,
// not the convolution one; half types skip the dispatcher and write into slices. Without cuBLAS in
// the process, half types take torch's matmul and float32 the fused kernels. Strict float32 and
// float64 always keep the fused kernels.
//
// Memory: the transient B x Cin x L buffers (h, dh) are made in batch chunks when large, so that a
// training step's peak holds a slice of them, not a second intermediate: h in two halves through
// one reused buffer, dh chunk by chunk into the part of dx not yet written (halving chunks: each
// chunk's dh fits in the rows of dx that later chunks fill), the last chunk in a small buffer of
// its own. The autograd graph holds no B x Cin x L tensor either: h lives only inside this call.
// Measurements: csrc/NOTES.md, "Separable backward v2" and "Ninth session".

// The backward's GEMMs take cuBLAS (or, for half types without it, torch's matmul).
bool backward_on_cublas(ScalarType xt, bool allow_tf32) {
  return is_half_type(xt) || (xt == ScalarType::Float && allow_tf32 && cublas_available());
}

// out = a @ b, batched over dimension 0, into out (float32, or a's dtype).
void gemm_into(const StridedView& a, const StridedView& b, const StridedView& out) {
  if (cublas_available()) {
    cublas_matmul_into(a, b, out);
    return;
  }
  // torch's matmul: half types only (float32 takes this path only when cuBLAS is there).
  const bool f32_out = out.dtype == ScalarType::Float && a.dtype != ScalarType::Float;
  const Tensor ta = tensor_of(a), tb = tensor_of(b);
  Tensor r;
  if (f32_out) {
    std::array<StableIValue, 3> stack{torch::stable::detail::from(ta), torch::stable::detail::from(tb),
                                      torch::stable::detail::from(ScalarType::Float)};
    STABLE_TORCH_ERROR_CODE_CHECK(
        torch_call_dispatcher("aten::bmm", "dtype", stack.data(), TORCH_ABI_VERSION));
    r = torch::stable::detail::to<Tensor>(stack[0]);
  } else {
    std::array<StableIValue, 2> stack{torch::stable::detail::from(ta), torch::stable::detail::from(tb)};
    STABLE_TORCH_ERROR_CODE_CHECK(
        torch_call_dispatcher("aten::bmm", "", stack.data(), TORCH_ABI_VERSION));
    r = torch::stable::detail::to<Tensor>(stack[0]);
  }
  Tensor to = tensor_of(out);
  torch::stable::copy_(to, r);
}

Tensor to_dtype(const Tensor& t, ScalarType dt) {
  return t.scalar_type() == dt ? t : torch::stable::to(t, std::optional<ScalarType>(dt));
}

// Transient buffers of at least this size are made in batch chunks (see above). Chunks cost GPU
// time (bf16 seed backward 244 -> 283 us: smaller GEMMs, more launches, float32 weight-gradient
// parts) and host time (a dh chunk is one cuBLAS call and one depthwise launch, ~18 us on the
// H200 host; ~45 us before the chunks' views became plain pointers), so only transients of 64 MiB
// and more, where the saving is worth it, are chunked. SEPCONV1D_BWD_CHUNK_MIB (A/B runs and tests)
// overrides the threshold; 0 turns chunking off.
int64_t chunk_min_bytes() {
  const char* env = std::getenv("SEPCONV1D_BWD_CHUNK_MIB");
  if (env == nullptr || *env == '\0') return int64_t(64) << 20;
  const long long mib = std::atoll(env);
  return mib <= 0 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(mib) << 20;
}

// Whether the B x Cin x Lo transients (h, dh; elt bytes per element) are made in batch chunks.
bool chunk_transients(const ConvGeometry& g, int64_t elt) {
  return g.batch >= 2 && g.batch * g.channels * g.out_length * elt >= chunk_min_bytes();
}

// Batches per chunk of the h recompute for d pw: half the batch when chunked (the d pw phase
// also holds the float32 per-batch products; half of h keeps it below the dh phase's peak).
int64_t h_chunk_batches(const ConvGeometry& g, int64_t elt) {
  return chunk_transients(g, elt) ? ceil_div(g.batch, 2) : g.batch;
}

// One chunk of the dh / depthwise-backward loop: batches [b0, b0 + n); in_dx: its dh lives in the
// rows of dx from b0 + n on (written by later chunks), else in a buffer of its own.
struct DhChunk {
  int64_t b0, n;
  bool in_dx;
};

std::vector<DhChunk> dh_chunks(const ConvGeometry& g, int64_t elt, bool have_dx) {
  const int64_t B = g.batch;
  if (!chunk_transients(g, elt)) return {{0, B, false}};
  std::vector<DhChunk> out;
  if (have_dx && g.out_length <= g.length) {
    // Halving: a chunk of n = rest / 2 batches fits in the rest - n >= n later rows of dx (each
    // Cin x L >= Cin x Lo). The last eighth of the batch takes its own buffer.
    const int64_t last = ceil_div(B, 8);
    int64_t b0 = 0;
    while (B - b0 > last) {
      const int64_t n = (B - b0) / 2;
      out.push_back({b0, n, true});
      b0 += n;
    }
    out.push_back({b0, B - b0, false});
    return out;
  }
  const int64_t n = ceil_div(B, 4);
  for (int64_t b0 = 0; b0 < B; b0 += n) out.push_back({b0, std::min(n, B - b0), false});
  return out;
}

ConvGeometry with_batch(ConvGeometry g, int64_t batch) {
  g.batch = batch;
  return g;
}

// Sums the first `splits` float32 parts of parts (>= splits, rows, pitch) in split order into out
// (rows, cols, weight dtype wt) and, with bias_out, column `cols` of the parts into bias_out (rows):
// sep_dpw_reduce_kernel, the deterministic end of every split weight-gradient reduction of the
// backward.
void sum_parts_in_order(const Tensor& parts, int64_t splits, Tensor& out, Tensor* bias_out,
                        int64_t rows, int64_t cols, int64_t pitch, ScalarType xt, ScalarType wt) {
  const int64_t n = rows * (cols + (bias_out != nullptr ? 1 : 0));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(n, 256), 4096));
  dispatch_dtypes(xt, wt, "separable_conv1d_backward", [&](auto, auto wtag) {
    using Tw = native_t<typename decltype(wtag)::type>;
    sep_dpw_reduce_kernel<Tw><<<blocks, 256, 0, current_stream(parts)>>>(
        static_cast<const float*>(parts.const_data_ptr()), static_cast<Tw*>(out.data_ptr()),
        bias_out != nullptr ? static_cast<Tw*>(bias_out->data_ptr()) : nullptr, rows, cols, pitch,
        static_cast<int>(splits));
    check_launch("sep_dpw_reduce_kernel");
  });
}

// The d pw products reduce over every (batch, position): a long shared dimension Kd against a
// small (Cout, Ce) output. Where that output is only a few cuBLAS tiles (SNAC's 96 x 104: one per
// batch), the GEMMs run on a handful of SMs for the whole reduction (SNAC TF32: 4 batches x 88200
// positions, 2 x 340 us on 8 blocks). So where all the products together are fewer tiles than an
// eighth of the SMs, the shared dimension is cut into slices, each a partial product of its own,
// until they give about two blocks per SM, each slice at least kMinSliceK deep;
// sep_dpw_reduce_kernel adds the partials in order as before (deterministic). SNAC TF32 training
// step 1776 -> 1244 us. With more tiles cuBLAS fills the GPU itself (split-K where it needs it):
// slicing Conformer's 20 tiles or Citrinet's 72 cost 1.5-2% (csrc/NOTES.md, thirty-seventh session).
constexpr int64_t kMinSliceK = 2048;
constexpr int64_t kMaxSlicePartBytes = int64_t(64) << 20;

// Slices (>= 1) of the shared dimension Kd for `gemms` products of an M x N output each.
// SEPCONV1D_DPW_SLICES=0 (read per call: A/B runs) never slices.
int64_t dpw_k_slices(int64_t M, int64_t N, int64_t Kd, int64_t gemms, int64_t sms) {
  const char* env = std::getenv("SEPCONV1D_DPW_SLICES");
  if (env != nullptr && std::atoi(env) == 0) return 1;
  const int64_t tiles = ceil_div(M, int64_t{128}) * ceil_div(N, int64_t{128}) * gemms;
  if (tiles >= sms / 8) return 1;
  int64_t s = std::min(ceil_div(2 * sms, tiles), Kd / kMinSliceK);
  // The partials stay small: slicing is for outputs of a few tiles.
  s = std::min(s, kMaxSlicePartBytes / std::max<int64_t>(1, gemms * M * N * 4));
  return std::max<int64_t>(s, 1);
}

// Partial products of a (1, M, Kd) @ b (1, Kd, N) over `slices` slices of the shared dimension
// into parts [0, n) (float32 (n, M, N)); returns n (slices, or one more for a shorter last slice).
// Slices are whole multiples of 8 positions, so each slice's operands keep the base's alignment.
int64_t gemm_k_sliced(const StridedView& a, const StridedView& b, const StridedView& parts,
                      int64_t slices) {
  const int64_t Kd = a.size[2];
  if (slices <= 1) {
    gemm_into(a, b, parts.batch(0, 1));
    return 1;
  }
  const int64_t ls = round_up(ceil_div(Kd, slices), int64_t{8});
  const int64_t full = Kd / ls, rest = Kd - full * ls;
  const StridedView as = a.reshaped(0, {full, a.size[1], ls}, {ls * a.stride[2], a.stride[1], a.stride[2]});
  const StridedView bs = b.reshaped(0, {full, ls, b.size[2]}, {ls * b.stride[1], b.stride[1], b.stride[2]});
  gemm_into(as, bs, parts.batch(0, full));
  if (rest == 0) return full;
  gemm_into(a.narrow(2, full * ls, rest), b.narrow(1, full * ls, rest), parts.batch(full, 1));
  return full + 1;
}

// d pw (Cout, Cin) in dtype wt for half x, or float32 x on TF32: h = depthwise(x) + dw_bias in x's
// dtype (half: what the forward's MMA rounds h to; float32: cuBLAS rounds it to TF32 as the
// forward's MMA does), then float32-output GEMMs over all (b, j). With want_bias, h gets 8 extra
// channels of ones, so the same GEMM also yields d pw_bias = sum_{b,j} dy (column Cin; 8 keeps the
// leading dimensions multiples of 8): a strided torch sum over dims (0, 2) of dy took 113 us at
// the seed shape, as long as the GEMM.
//  - channel-last: dy and h are (B*L, C) row-major matrices: d pw = dy^T h per batch chunk.
//  - channel-first: either per-batch products (B, Cout, Ce), or h written as (Ce, B*L) and a
//    (Cout, B*L) copy of dy in one GEMM, whichever moves fewer extra bytes.
// The float32 partial products (S, Cout, Ce) are summed in order by sep_dpw_reduce_kernel.
std::pair<Tensor, std::optional<Tensor>> pointwise_weight_grad_gemm(
    const Tensor& dy, const Tensor& xk, const Tensor& dw, const std::optional<Tensor>& dwb,
    const ConvGeometry& g, ScalarType wt, bool want_bias) {
  const ScalarType xt = xk.scalar_type();
  const int64_t B = g.batch, Cin = g.channels, Cout = g.out_channels, Lo = g.out_length;
  const int64_t Ce = Cin + (want_bias ? 8 : 0);  // h channels: Cin, then ones
  const int64_t elt = static_cast<int64_t>(xk.element_size());
  ConvGeometry gd = g;
  gd.out_channels = Cin;
  const cudaStream_t stream = current_stream(xk);
  // hbuf holds h with the channel dimension at `cdim` (ones written once: the depthwise writes
  // only channels [0, Cin) of each chunk).
  auto ones_channels = [&](const Tensor& hbuf, int cdim) {
    if (want_bias) fill_ones(StridedView::of(hbuf).narrow(cdim, Cin, Ce - Cin), stream);
  };
  const int64_t nb = h_chunk_batches(g, elt);
  const int64_t sms = dev_caps(xk.get_device_index()).sms;
  const StridedView xv = StridedView::of(xk), dyv = StridedView::of(dy);
  Tensor prod;  // float32 (S, Cout, Ce) partial products, of which the first `parts` are written
  int64_t parts = 0;
  if (is_channels_last(xk)) {
    const int64_t S = ceil_div(B, nb);
    // Slices of each chunk's n*Lo positions (the last chunk may be shorter: at most one more part).
    const int64_t slices = dpw_k_slices(Cout, Ce, nb * Lo, S, sms);
    const int64_t per_chunk = slices > 1 ? slices + 1 : 1;
    prod = torch::stable::empty({S * per_chunk, Cout, Ce}, ScalarType::Float, std::nullopt, xk.device());
    Tensor hbuf = torch::stable::empty({nb, Lo, Ce}, xt, std::nullopt, xk.device());
    ones_channels(hbuf, 2);
    const StridedView hv = StridedView::of(hbuf), pv = StridedView::of(prod);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t b0 = s * nb, n = std::min(nb, B - b0);
      const StridedView hb = hv.batch(0, n);  // (n, Lo, Ce)
      depthwise_forward_view(xv.batch(b0, n), dw, dwb, with_batch(gd, n),
                             hb.narrow(2, 0, Cin).transposed());
      // (Cout, n*Lo) @ (n*Lo, Ce): dy's rows of Cout over the chunk's n*Lo positions (the caller
      // made dy dense over batch and length).
      const StridedView d2 = dyv.reshaped(b0 * dyv.stride[0], {1, Cout, n * Lo}, {0, 1, dyv.stride[2]});
      const StridedView h2 = hv.reshaped(0, {1, n * Lo, Ce}, {0, Ce, 1});
      parts += gemm_k_sliced(d2, h2, pv.batch(parts, per_chunk), slices);
    }
  } else {
    const int64_t partial_bytes = 2 * B * Cout * Ce * 4;
    const int64_t copy_bytes = 2 * B * Cout * Lo * static_cast<int64_t>(dy.element_size());
    if (B == 1 || partial_bytes <= 2 * copy_bytes) {  // the strided copy runs at ~1.5 TB/s
      // Slices of each batch's Lo positions where the per-batch products are too few tiles.
      const int64_t slices = dpw_k_slices(Cout, Ce, Lo, B, sms);
      const int64_t per_batch = slices > 1 ? slices + 1 : 1;
      prod = torch::stable::empty({B * per_batch, Cout, Ce}, ScalarType::Float, std::nullopt, xk.device());
      Tensor hbuf = torch::stable::empty({nb, Ce, Lo}, xt, std::nullopt, xk.device());
      ones_channels(hbuf, 1);
      const StridedView hv = StridedView::of(hbuf), pv = StridedView::of(prod);
      for (int64_t b0 = 0; b0 < B; b0 += nb) {
        const int64_t n = std::min(nb, B - b0);
        const StridedView hb = hv.batch(0, n);  // (n, Ce, Lo)
        depthwise_forward_view(xv.batch(b0, n), dw, dwb, with_batch(gd, n), hb.narrow(1, 0, Cin));
        if (slices == 1) {
          gemm_into(dyv.batch(b0, n), hb.transposed(), pv.batch(b0, n));
          parts += n;
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          parts += gemm_k_sliced(dyv.batch(b0 + i, 1), hb.batch(i, 1).transposed(),
                                 pv.batch(parts, per_batch), slices);
        }
      }
    } else {
      // h as (Ce, B, L): the depthwise kernel takes any batch/channel strides with unit L stride.
      // Not chunked: this branch serves short rows, where the per-batch products would outweigh
      // h and the copy of dy.
      Tensor hbuf = torch::stable::empty({Ce, B, Lo}, xt, std::nullopt, xk.device());
      const StridedView hv = StridedView::of(hbuf);  // (Ce, B, Lo)
      depthwise_forward_view(xv, dw, dwb, gd,
                             hv.reshaped(0, {B, Cin, Lo}, {Lo, B * Lo, 1}));
      ones_channels(hbuf, 0);
      // dy as (Cout, B, Lo): one row copy by our kernel (torch's transpose + contiguous cost
      // three dispatcher calls of host time). The caller brought dy to x's layout: unit-stride
      // rows (or rows of one element).
      STD_TORCH_CHECK(Lo == 1 || dyv.stride[2] == 1, "sepconv1d: internal: dy rows not contiguous");
      const Tensor d2 = torch::stable::empty({Cout, B, Lo}, dy.scalar_type(), std::nullopt, xk.device());
      copy_rows(StridedView::of(d2), dyv.reshaped(0, {Cout, B, Lo}, {dyv.stride[1], dyv.stride[0], 1}),
                stream);
      const int64_t slices = dpw_k_slices(Cout, Ce, B * Lo, 1, sms);
      prod = torch::stable::empty({slices > 1 ? slices + 1 : 1, Cout, Ce}, ScalarType::Float,
                                  std::nullopt, xk.device());
      const StridedView a = StridedView::of(d2).reshaped(0, {1, Cout, B * Lo}, {0, B * Lo, 1});
      const StridedView b = hv.reshaped(0, {1, B * Lo, Ce}, {0, 1, B * Lo});
      parts = gemm_k_sliced(a, b, StridedView::of(prod), slices);
    }
  }
  // One kernel sums the partial products in order and writes d pw (and d pw_bias) in the
  // weight dtype.
  Tensor gw = torch::stable::empty({Cout, Cin}, wt, std::nullopt, xk.device());
  std::optional<Tensor> gb;
  if (want_bias) gb = torch::stable::empty({Cout}, wt, std::nullopt, xk.device());
  sum_parts_in_order(prod, parts, gw, gb ? &*gb : nullptr, Cout, Cin, Ce, xt, wt);
  return {gw, gb};
}

// dh = pw^T dy into dh (n, Cin, Lo) in x's dtype and layout, for half x (pw rounded to x's dtype
// by the caller, as the forward's MMA operand; fp32 accumulation) or float32 x on TF32.
// dy: (n, Cout, Lo) in the same layout (channel-last: dense over batch and length); w: (Cout, Cin)
// contiguous.
void pointwise_input_grad_into(const StridedView& dy, const Tensor& w, const StridedView& dh,
                               bool channels_last) {
  const int64_t n = dy.size[0], Cout = dy.size[1], Lo = dy.size[2], Cin = dh.size[1];
  const StridedView wv = StridedView::of(w);  // (1, Cout, Cin)
  if (channels_last) {  // (n*L, Cout) @ (Cout, Cin) -> (n*L, Cin): one GEMM
    STD_TORCH_CHECK(n == 1 || (dy.stride[0] == Lo * dy.stride[2] && dh.stride[0] == Lo * dh.stride[2]),
                    "sepconv1d: internal: channel-last dh product needs batch-dense views");
    const StridedView d2 = dy.reshaped(0, {1, n * Lo, Cout}, {0, dy.stride[2], 1});
    const StridedView r = dh.reshaped(0, {1, n * Lo, Cin}, {0, dh.stride[2], 1});
    gemm_into(d2, wv, r);
    return;
  }
  // Batched GEMM with pw^T shared by every batch (zero batch stride: no copy of pw per batch).
  gemm_into(wv.reshaped(0, {n, Cin, Cout}, {0, 1, Cin}), dy, dh);
}

// dx, d dw_weight, d dw_bias for the cuBLAS path: dh = pw^T dy, then the depthwise backward, in
// the batch chunks of dh_chunks. The depthwise weight-gradient partial sums of all chunks go to
// one workspace and are summed in chunk order by one launch at the end: deterministic.
std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>>
depthwise_grads_gemm(const Tensor& dy, const Tensor& xk, const Tensor& dw, const Tensor& pw,
                     const ConvGeometry& g, ScalarType wt, bool need_x, bool need_w, bool need_b) {
  const ScalarType xt = xk.scalar_type();
  const int64_t Cin = g.channels, Lo = g.out_length;
  const bool cl = is_channels_last(xk);
  const int64_t elt = static_cast<int64_t>(xk.element_size());
  ConvGeometry gd = g;
  gd.out_channels = Cin;
  const Tensor w = contiguous_if_needed(to_dtype(pw, xt));  // (Cout, Cin)
  std::optional<Tensor> gx, gdw, gdb;
  if (need_x) gx = new_activation(xk, Cin, g.length, xt);
  if (need_w) gdw = new_param_grad(dw, wt);
  if (need_b) gdb = torch::stable::empty({Cin}, wt, std::nullopt, xk.device());
  const std::vector<DhChunk> chunks = dh_chunks(g, elt, need_x);
  STD_TORCH_CHECK(chunks.size() <= static_cast<size_t>(DepthwisePartials::kMaxCalls),
                  "sepconv1d: internal: too many backward chunks");
  // A dh buffer for the chunks that do not live in dx: the largest of them.
  int64_t own = 0;
  for (const DhChunk& c : chunks) own = c.in_dx ? own : std::max(own, c.n);
  std::optional<Tensor> own_buf;
  if (own > 0) own_buf = new_activation(xk, own, Cin, Lo, xt);
  const StridedView xv = StridedView::of(xk), dyv = StridedView::of(dy);
  std::optional<StridedView> gxv, ownv;
  if (gx) gxv = StridedView::of(*gx);
  if (own_buf) ownv = StridedView::of(*own_buf);
  DepthwisePartials partials(static_cast<int>(chunks.size()));
  for (const DhChunk& c : chunks) {
    StridedView dh;
    if (c.in_dx) {
      // dh (n, Cin, Lo) in x's layout, packed at the start of dx's rows b0 + n ...
      const int64_t at = (c.b0 + c.n) * gxv->stride[0];
      dh = cl ? gxv->reshaped(at, {c.n, Cin, Lo}, {Lo * Cin, 1, Cin})
              : gxv->reshaped(at, {c.n, Cin, Lo}, {Cin * Lo, Lo, 1});
    } else {
      dh = ownv->batch(0, c.n);
    }
    pointwise_input_grad_into(dyv.batch(c.b0, c.n), w, dh, cl);
    std::optional<StridedView> dxs;
    if (need_x) dxs = gxv->batch(c.b0, c.n);
    depthwise_backward_view(dh, xv.batch(c.b0, c.n), dw, with_batch(gd, c.n),
                            dxs ? &*dxs : nullptr, gdw ? &*gdw : nullptr, gdb ? &*gdb : nullptr,
                            partials);
  }
  depthwise_reduce_partials(partials, xt, gd, gdw ? &*gdw : nullptr, gdb ? &*gdb : nullptr);
  return {gx, gdw, gdb};
}

// Fills `out` (weight dtype) with zeros.
Tensor zeros_like_param(const Tensor& like) {
  Tensor t = new_param_grad(like, like.scalar_type());
  torch::stable::zero_(t);
  return t;
}

std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>,
           std::optional<Tensor>, std::optional<Tensor>>
separable_conv1d_backward_cuda(const Tensor& grad_out, const Tensor& x, const Tensor& dw_weight,
                               const std::optional<Tensor>& dw_bias, const Tensor& pw_weight,
                               int64_t stride, int64_t pad_left, int64_t pad_right,
                               int64_t dilation, bool allow_tf32, bool need_grad_x,
                               bool need_grad_dw_weight, bool need_grad_dw_bias,
                               bool need_grad_pw_weight, bool need_grad_pw_bias) {
  const ConvGeometry g = check_separable(x, dw_weight, dw_bias, pw_weight, std::nullopt, stride,
                                         pad_left, pad_right, dilation);
  check_grad_out(grad_out, x, g);
  STD_TORCH_CHECK(x.is_cuda(), "sepconv1d: x must be a CUDA tensor");
  torch::stable::accelerator::DeviceGuard guard(x.get_device_index());
  check_sizes(g);

  const Tensor xk = as_kernel_layout(x);
  const bool cl = is_channels_last(xk);
  const Tensor dw = contiguous_if_needed(flat_depthwise_weight(dw_weight));
  const Tensor pw = contiguous_if_needed(flat_pointwise_weight(pw_weight));
  const std::optional<Tensor> dwb = contiguous_opt(dw_bias);
  const ScalarType wt = pw_weight.scalar_type();

  std::optional<Tensor> gx, gdw, gdb, gpw, gpb;
  const bool empty_dy = grad_out.numel() == 0;

  const bool gemm_path = backward_on_cublas(x.scalar_type(), allow_tf32);
  // The cuBLAS path computes d pw_bias along with d pw_weight.
  const bool pwb_by_gemm = gemm_path && need_grad_pw_weight && !empty_dy && g.channels > 0;
  if (need_grad_pw_bias && !pwb_by_gemm) {
    if (empty_dy) {
      gpb = torch::stable::new_zeros(pw, {g.out_channels}, wt);
    } else {
      // Deterministic reduction over (batch, length), accumulated in float (double for fp64).
      const ScalarType acc = wt == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
      std::vector<int64_t> dims = {0, 2};
      Tensor s = torch::stable::sum(grad_out, dims, false, acc);
      gpb = (acc == wt) ? s : torch::stable::to(s, std::optional<ScalarType>(wt));
    }
  }

  Tensor dy = empty_dy ? grad_out : to_layout(grad_out, cl);
  if (gemm_path && cl && !empty_dy && g.batch > 1 && dy.stride(0) != g.out_length * dy.stride(2)) {
    // The channel-last GEMMs read dy as one (B*Lo, Cout) matrix.
    dy = channels_last_copy(dy);
  }

  if (need_grad_pw_weight) {
    if (empty_dy || g.channels == 0) {
      gpw = zeros_like_param(pw);
    } else if (gemm_path) {
      auto res = pointwise_weight_grad_gemm(dy, xk, dw, dwb, g, wt, need_grad_pw_bias);
      gpw = res.first;
      if (need_grad_pw_bias) gpb = res.second;
    } else {
      gpw = pointwise_weight_grad(dy, xk, dw, dwb, g, allow_tf32, wt);
    }
  }

  if (need_grad_x || need_grad_dw_weight || need_grad_dw_bias) {
    ConvGeometry gd = g;
    gd.out_channels = g.channels;
    if (empty_dy || g.channels == 0) {
      if (need_grad_x) {
        Tensor t = new_activation(xk, g.channels, g.length, x.scalar_type());
        torch::stable::zero_(t);
        gx = t;
      }
      if (need_grad_dw_weight) gdw = zeros_like_param(dw);
      if (need_grad_dw_bias) gdb = torch::stable::new_zeros(dw, {g.channels}, wt);
    } else {
      if (gemm_path) {
        std::tie(gx, gdw, gdb) = depthwise_grads_gemm(dy, xk, dw, pw, g, wt, need_grad_x,
                                                      need_grad_dw_weight, need_grad_dw_bias);
      } else {
        Tensor dh;
        // dh = pw^T dy: the fused kernel with an identity depthwise over Cout "input" channels.
        dh = new_activation(xk, g.channels, g.out_length, x.scalar_type());
        const ConvGeometry gp = pointwise_geometry(g.batch, g.out_channels, g.channels, g.out_length);
        const std::optional<Tensor> none;
        PwSource src{&pw, /*so=*/1, /*sc=*/pw.stride(0), &none, nullptr, &none, true};
        STD_TORCH_CHECK(run_fused(dy, dh, gp, src, allow_tf32),
                        "sepconv1d: separable_conv1d_backward dh launch does not fit");
        std::tie(gx, gdw, gdb) = depthwise_backward(dh, xk, dw, gd, need_grad_x,
                                                    need_grad_dw_weight, need_grad_dw_bias);
      }
    }
  }
  return {gx, shaped_like(gdw, dw_weight, 1), gdb, shaped_like(gpw, pw_weight, 2), gpb};
}

}  // namespace
}  // namespace cuda
}  // namespace sepconv1d

STABLE_TORCH_LIBRARY_IMPL(sepconv1d, CUDA, m) {
  m.impl("separable_conv1d", TORCH_BOX(&sepconv1d::cuda::separable_conv1d_cuda));
  m.impl("separable_conv1d_backward", TORCH_BOX(&sepconv1d::cuda::separable_conv1d_backward_cuda));
}
