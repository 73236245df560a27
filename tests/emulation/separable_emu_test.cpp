// Host-emulation test of the separable CUDA kernels (forward, dh = pw^T dy through the forward
// kernel, pointwise weight gradient) against a float64 reference: every tile configuration, both
// layouts, resident and streamed weights, aligned and misaligned tensors, odd sizes, strides,
// dilations, paddings, poisoned outputs and workspace. Not part of the build:
//   g++ -std=c++20 -O1 -g -fsanitize=address,undefined -DUSE_CUDA -DSEP_EMULATE -DSEP_EMU_MAIN \
//     -I csrc -I <torch>/include -I <cuda>/include tests/emulation/separable_emu_test.cpp -o sepemu \
//     -pthread
//   ./sepemu [n_random_cases] [seed] [first_case] [end_case]
// SEPEMU_ONLY=<text> runs only the configurations whose name contains the text.
#pragma once

#include "cuda/separable_emu.cuh"
#include "cuda/separable_plan.cuh"

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace septest {

using namespace sepconv1d::cuda::sep;
using sepconv1d::ConvGeometry;
using sepconv1d::conv_out_length;

template <typename T>
double to_d(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return double(__half2float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return double(__bfloat162float(v));
  } else {
    return double(v);
  }
}
template <typename T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(float(v));
  } else {
    return T(v);
  }
}
template <typename T>
const char* tname() {
  if constexpr (std::is_same_v<T, __half>) return "f16";
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bf16";
  if constexpr (std::is_same_v<T, float>) return "f32";
  return "f64";
}
template <typename T>
T poison() {
  if constexpr (std::is_same_v<T, double>) return std::numeric_limits<double>::quiet_NaN();
  return from_d<T>(std::numeric_limits<double>::quiet_NaN());
}

struct Case {
  int64_t B, Cin, Cout, L, K, stride, dil, pl, pr;
  bool cl;        // channel-last activations
  int misalign;   // element offset of x / dy in their buffers, plus padded strides
  bool dwb, pwb;  // biases present
  uint64_t seed;
  int64_t ypad = 0;  // warp-specialised kernel: channel-first y rows padded by ypad elements
  int64_t Lout() const { return conv_out_length(L, K, stride, pl, pr, dil); }
  std::string str() const {
    char b[256];
    std::snprintf(b, sizeof b,
                  "B%" PRId64 " Cin%" PRId64 " Cout%" PRId64 " L%" PRId64 " K%" PRId64 " s%" PRId64
                  " d%" PRId64 " pad(%" PRId64 ",%" PRId64 ") %s mis%d dwb%d pwb%d ypad%" PRId64,
                  B, Cin, Cout, L, K, stride, dil, pl, pr, cl ? "CL" : "CF", misalign, int(dwb),
                  int(pwb), ypad);
    return b;
  }
};

// A (B, C, L) host activation: channel-first (unit stride along L) or channel-last (along C), at
// element offset `off` of its buffer, with the unit-stride dimension padded by `pad`.
template <typename T>
struct Act {
  std::vector<T> buf;
  int64_t B = 0, C = 0, L = 0, sb = 0, sc = 0, sl = 0, off = 0;
  void init(int64_t b, int64_t c, int64_t l, bool cl, int64_t off_, int64_t pad) {
    B = b, C = c, L = l, off = off_;
    if (!cl) {
      sl = 1, sc = L + pad, sb = C * sc;
    } else {
      sc = 1, sl = C + pad, sb = L * sl;
    }
    // Exactly up to the last element, so AddressSanitizer flags any read past the tensor.
    const int64_t extent = (B > 0 && C > 0 && L > 0) ? (B - 1) * sb + (C - 1) * sc + (L - 1) * sl + 1 : 1;
    buf.assign(size_t(off + extent), poison<T>());
  }
  T* ptr() { return buf.data() + off; }
  T& at(int64_t b, int64_t c, int64_t l) { return buf[size_t(off + b * sb + c * sc + l * sl)]; }
  View3 view() { return View3{ptr(), sb, sc, sl}; }
};

// 256-byte aligned, poisoned host buffer standing in for a device workspace.
struct Buf {
  unsigned char* p = nullptr;
  explicit Buf(int64_t bytes) {
    const size_t n = size_t((std::max<int64_t>(bytes, 1) + 255) / 256 * 256);
    p = static_cast<unsigned char*>(std::aligned_alloc(256, n));
    std::memset(p, 0xFF, n);
  }
  ~Buf() { std::free(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

const DevCaps kCaps[] = {
    {232448, 233472, 2},   // H100/H200 shared memory, 2 SMs (persistent blocks walk many items)
    {232448, 233472, 64},  // more SMs than work: resident only when it pays off
    {101376, 102400, 3},   // sm_120-sized shared memory
    {232448, 233472, 5},   // shared h split into several groups of Cout tiles
};

struct Stats {
  int cases = 0, failures = 0;
};
Stats g_stats;

template <typename Tx, typename Tw>
struct Problem {
  Case c;
  Act<Tx> x;
  std::vector<Tw> dw, dwb, pw, pwb;
  std::vector<double> h;  // reference h (with dw bias), [B][Cin][Lout]
  std::mt19937_64 rng;
  explicit Problem(const Case& cs) : c(cs), rng(cs.seed) {
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    x.init(c.B, c.Cin, c.L, c.cl, c.misalign, c.misalign ? 3 : 0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t ch = 0; ch < c.Cin; ++ch)
        for (int64_t l = 0; l < c.L; ++l) x.at(b, ch, l) = from_d<Tx>(U(rng));
    auto fill = [&](std::vector<Tw>& v, int64_t n, double scale) {
      v.resize(size_t(n));
      for (auto& e : v) e = from_d<Tw>(U(rng) * scale);
    };
    fill(dw, c.Cin * c.K, 1.0 / std::sqrt(double(c.K)));
    fill(pw, c.Cout * c.Cin, 1.0 / std::sqrt(double(std::max<int64_t>(c.Cin, 1))));
    if (c.dwb) fill(dwb, c.Cin, 0.5);
    if (c.pwb) fill(pwb, c.Cout, 0.5);
    const int64_t Lo = c.Lout();
    h.assign(size_t(c.B * c.Cin * Lo), 0.0);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t ch = 0; ch < c.Cin; ++ch)
        for (int64_t j = 0; j < Lo; ++j) {
          double s = c.dwb ? to_d(dwb[size_t(ch)]) : 0.0;
          for (int64_t k = 0; k < c.K; ++k) {
            const int64_t pos = j * c.stride - c.pl + k * c.dil;
            if (pos >= 0 && pos < c.L) s += to_d(dw[size_t(ch * c.K + k)]) * to_d(x.at(b, ch, pos));
          }
          h[size_t((b * c.Cin + ch) * Lo + j)] = s;
        }
  }
  ConvGeometry geom() const {
    ConvGeometry g;
    g.batch = c.B;
    g.channels = c.Cin;
    g.out_channels = c.Cout;
    g.length = c.L;
    g.kernel_size = c.K;
    g.out_length = c.Lout();
    g.stride = c.stride;
    g.pad_left = c.pl;
    g.pad_right = c.pr;
    g.dilation = c.dil;
    return g;
  }
};

// Relative error budget (of sum |terms|) for the GEMM operand / output precision.
template <typename Tx, int kGemm>
double tol() {
  if constexpr (std::is_same_v<Tx, double>) return 1e-12;
  if constexpr (std::is_same_v<Tx, __nv_bfloat16>) return 0x1p-6;
  if constexpr (std::is_same_v<Tx, __half>) return 0x1p-9;
  if constexpr (kGemm == kGemmTf32) return 0x1p-9;
  return 1e-5;
}

bool report(bool ok, const std::string& what, double worst, int64_t bad) {
  ++g_stats.cases;
  if (ok && std::getenv("SEPEMU_VERBOSE") != nullptr) std::printf("ok   %s\n", what.c_str());
  if (!ok) {
    ++g_stats.failures;
    std::printf("FAIL %s: %" PRId64 " bad elements, worst excess %.3g\n", what.c_str(), bad, worst);
  }
  return ok;
}

// SEPEMU_ONLY=<text>: run only the configurations whose name contains it (e.g. "wgmma-ws").
bool wanted(const std::string& cfg) {
  const char* only = std::getenv("SEPEMU_ONLY");
  return only == nullptr || cfg.find(only) != std::string::npos;
}

// y of a forward launch against the float64 reference of P.
template <typename Tx, typename Tw, int kGemm>
void check_fwd(Problem<Tx, Tw>& P, Act<Tx>& y, bool cl, const FwdPlan& plan, const DevCaps& caps,
               const std::string& cfg) {
  const Case& c = P.c;
  const int64_t Lo = c.Lout();
  double worst = 0.0;
  int64_t bad = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t o = 0; o < c.Cout; ++o)
      for (int64_t j = 0; j < Lo; ++j) {
        double ref = c.pwb ? to_d(P.pwb[size_t(o)]) : 0.0;
        double mag = std::fabs(ref);
        for (int64_t ch = 0; ch < c.Cin; ++ch) {
          const double pw = to_d(P.pw[size_t(o * c.Cin + ch)]);
          const double h = P.h[size_t((b * c.Cin + ch) * Lo + j)];
          ref += pw * h;
          // The kernel folds the depthwise bias into the output bias and rounds h without it to
          // the operand type: that rounding scales with |h - dw_bias|, not |h|.
          mag += std::fabs(pw) * (std::fabs(h) + (c.dwb ? std::fabs(to_d(P.dwb[size_t(ch)])) : 0.0));
        }
        const double got = to_d(y.at(b, o, j));
        const double allowed = tol<Tx, kGemm>() * (mag + 1e-3);
        const double err = std::fabs(got - ref);
        if (!(err <= allowed)) {
          if (bad < 4 && std::getenv("SEPEMU_DEBUG") != nullptr) {
            std::printf("  bad b%lld o%lld j%lld got %.6g ref %.6g allowed %.3g\n", (long long)b,
                        (long long)o, (long long)j, got, ref, allowed);
          }
          ++bad;
          worst = std::max(worst, std::isfinite(err) ? err / allowed : 1e300);
        }
      }
  // Padded channel-first rows: nothing past a row's last output may be written (the ragged tiles'
  // vector stores end inside the row).
  if (!cl) {
    const Tx p0 = poison<Tx>();
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t o = 0; o < c.Cout; ++o)
        for (int64_t j = Lo; j < y.sc; ++j) {
          const size_t i = size_t(y.off + b * y.sb + o * y.sc + j);
          if (i < y.buf.size() && std::memcmp(&y.buf[i], &p0, sizeof(Tx)) != 0) ++bad;
        }
  }
  report(bad == 0,
         std::string("fwd ") + tname<Tx>() + "/" + tname<Tw>() + " " + cfg + (cl ? " CL" : " CF") +
             (plan.p.resident ? " resident" : " streamed") +
             (plan.p.ppg > 1 ? " shared-h ppg" + std::to_string(plan.p.ppg) + " groups" +
                                   std::to_string(plan.p.n_groups)
                             : "") +
             " sms" + std::to_string(caps.sms) +
             " | " + c.str(),
         worst, bad);
}

// Forward through one tile configuration; returns false when the plan does not apply.
template <typename Tx, typename Tw, typename Tm, int kGemm, int BM, int BN, int BK, int WN, bool kXcl>
void run_fwd(Problem<Tx, Tw>& P, const DevCaps& caps, WPlace place, const char* cfg) {
  if (!wanted(cfg)) return;
  using Tacc = typename AccOf<Tx>::type;
  const Case& c = P.c;
  const ConvGeometry g = P.geom();
  Act<Tx> y;
  y.init(c.B, c.Cout, c.Lout(), kXcl, 0, 0);
  FwdPlan plan;
  if (!plan_fwd<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>(g, P.x.view(), y.ptr(), y.sb, y.sc, y.sl, caps,
                                                       place, plan)) {
    return;
  }
  Buf ws(plan.ws_bytes);
  bind_fwd_workspace(plan, ws.p, P.pw.data(), c.Cin, 1, c.pwb ? P.pwb.data() : nullptr,
                     P.dw.data(), c.dwb ? P.dwb.data() : nullptr, false);
  sepemu::launch(sep_prep_kernel<Tw, Tm, Tacc, FwdTile<Tx, Tm, kGemm, BM, BN, BK, WN>::kTf32>,
                 plan.prep_blocks, 256, 0, plan.pp);
  sepemu::launch(sep_fwd_kernel<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>, plan.blocks, kThreads,
                 size_t(plan.smem), plan.p);
  check_fwd<Tx, Tw, kGemm>(P, y, kXcl, plan, caps, cfg);
}

// Forward through the warp-specialised wgmma kernel (its own roles, barriers and W tiles);
// kG > 0: its chunk-major form; kSC: h chunks per consumer step (pass-major).
template <typename Tx, typename Tw, int BN, bool kXcl, int kG = 0, int kSC = 1>
void run_fwd_ws(Problem<Tx, Tw>& P, const DevCaps& caps) {
  if (!wanted("wgmma-ws")) return;
  const Case& c = P.c;
  const ConvGeometry g = P.geom();
  Act<Tx> y;
  y.init(c.B, c.Cout, c.Lout(), kXcl, 0, kXcl ? 0 : c.ypad);
  // This form's plan for x as xv (as launch_fwd_ws plans).
  auto plan_for = [&](const View3& xv, FwdPlan& out) {
    return kG > 0 ? plan_fwd_ws_cm<Tx, BN, kXcl, kG>(g, xv, y.ptr(), y.sb, y.sc, y.sl, caps, out)
                  : plan_fwd_ws<Tx, BN, kXcl, kSC>(g, xv, y.ptr(), y.sb, y.sc, y.sl, caps, out);
  };
  FwdPlan plan;
  if (!plan_for(P.x.view(), plan)) return;
  // Where x's tensor map fits, the host encodes it and runs a kXTma kernel (launch_fwd_ws: pass-major
  // always, chunk-major only with the tensor-core depthwise); the emulated copy reads x directly
  // with the map's semantics. With depthwise weights of x's 16-bit type the host runs the
  // tensor-core depthwise (mma_dw_fits; kDwMma) where pw's rows are a multiple of 16 bytes
  // (run_fwd_unprepared); the FFMA kernel the host would run otherwise runs here as well.
  const bool map_fits = ws_x_map_fits<kXcl>(plan.p);
  const bool dw_mma = map_fits && mma_dw_fits<Tx, Tw, BN>(plan.p) && (c.Cin * sizeof(Tw)) % 16 == 0;
  const bool x_tma = map_fits && (kG == 0 || dw_mma);
  Buf ws(plan.ws_bytes);
  bind_fwd_workspace(plan, ws.p, P.pw.data(), c.Cin, 1, c.pwb ? P.pwb.data() : nullptr,
                     P.dw.data(), c.dwb ? P.dwb.data() : nullptr, false);
  using Tm = WsOperand<Tx>;
  sepemu::launch(sep_prep_kernel<Tw, Tm, float, sizeof(Tm) == 4>, plan.prep_blocks, 256, 0, plan.pp);
  const std::string name = "wgmma-ws 128x" + std::to_string(BN) +
                           (kG > 0 ? " chunk-major x" + std::to_string(plan.p.ppg) : "") + " sc" +
                           std::to_string(kSC) + (x_tma && kG == 0 ? " xtma" : "") + " stages" +
                           std::to_string(plan.p.w_stages) + " hslots" +
                           std::to_string(plan.p.h_slots);
  constexpr int kCheckGemm = sizeof(Tm) == 4 ? kGemmTf32 : kGemmWg;
  // No preparation: the kernel reads the weights and biases as they are, W through the (emulated)
  // tensor map. The output and the workspace are poisoned to catch a missed store or any read of
  // the workspace.
  auto run_unprepared_plan = [&](auto kernel, const std::string& label, bool xtma_kernel,
                                 const FwdPlan& with) {
    std::fill(y.buf.begin(), y.buf.end(), poison<Tx>());
    std::fill(ws.p, ws.p + plan.ws_bytes, static_cast<unsigned char>(0xff));
    FwdPlan raw = with;
    bind_fwd_unprepared(raw.p, P.pw.data(), c.pwb ? P.pwb.data() : nullptr, P.dw.data(),
                        c.dwb ? P.dwb.data() : nullptr);
    sepemu::launch(kernel, raw.blocks, ws_threads(ws_has_loader<Tx, BN>(kG, xtma_kernel)),
                   size_t(raw.smem), raw.p);
    check_fwd<Tx, Tw, kCheckGemm>(P, y, kXcl, with, caps, label);
  };
  auto run_unprepared = [&](auto kernel, const std::string& label, bool xtma_kernel) {
    run_unprepared_plan(kernel, label, xtma_kernel, plan);
  };
  if constexpr (!kXcl) {
    if (x_tma) {
      if constexpr (kG == 0) {
        sepemu::launch(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true>, plan.blocks,
                       ws_threads(ws_has_loader<Tx, BN>(kG, true)), size_t(plan.smem), plan.p);
      } else {  // chunk-major FFMA producers stage x with cp.async
        sepemu::launch(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC>, plan.blocks,
                       ws_threads(ws_has_loader<Tx, BN>(kG, false)), size_t(plan.smem), plan.p);
      }
    }
    if constexpr (mma_dw_types<Tx, Tw, BN>()) {
      if (dw_mma) {
        check_fwd<Tx, Tw, kCheckGemm>(P, y, kXcl, plan, caps, name);
        run_unprepared(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true, true>,
                       name + (kG > 0 ? " xtma" : "") + " dwmma", true);
        // The kernel the host runs where y rows are 16-byte aligned and one block of taps covers K;
        // run on every plan here, so that its epilogue's other paths (rows of 8-, 4- and 2-byte
        // alignment, channel-last y) are checked as well.
        if constexpr (kG == 0) {
          run_unprepared(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, true, true, true>,
                         name + " dwmma runs", true);
        }
        return;
      }
    }
  }
  if (!x_tma) {
    sepemu::launch(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC>, plan.blocks,
                   ws_threads(ws_has_loader<Tx, BN>(kG, false)), size_t(plan.smem), plan.p);
  }
  check_fwd<Tx, Tw, kCheckGemm>(P, y, kXcl, plan, caps, name);
  // Rows that are not 16-byte aligned: the tensor-core depthwise on rows staged in 4-byte pairs
  // (mma_dw_words_fit), the weights as they are.
  if constexpr (!kXcl && mma_dw_types<Tx, Tw, BN>()) {
    if (!x_tma && mma_dw_words_fit<Tx, Tw, BN>(plan.p) && (c.Cin * sizeof(Tw)) % 16 == 0) {
      run_unprepared(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, false, true>, name + " words dwmma",
                     false);
    }
    // The same rows in 16-byte units, each at its own shift (kLoadRows16), planned again as the
    // host does (launch_fwd_ws).
    if (!x_tma && plan.p.dw.vec_load == kLoadWords && (c.Cin * sizeof(Tw)) % 16 == 0) {
      View3 xv16 = P.x.view();
      xv16.rows16 = true;
      FwdPlan plan16;
      if (plan_for(xv16, plan16) && plan16.p.dw.vec_load == kLoadRows16 &&
          mma_dw_words_fit<Tx, Tw, BN>(plan16.p)) {
        Buf ws16(plan16.ws_bytes);
        bind_fwd_workspace(plan16, ws16.p, P.pw.data(), c.Cin, 1, c.pwb ? P.pwb.data() : nullptr,
                           P.dw.data(), c.dwb ? P.dwb.data() : nullptr, false);
        run_unprepared_plan(sep_fwd_ws_kernel<Tx, BN, kXcl, kG, kSC, false, true>,
                            name + " rows16 dwmma", false, plan16);
      }
    }
  }
}

// dh = pw^T dy through the forward kernel with an identity depthwise.
template <typename Tx, typename Tw, typename Tm, int kGemm, int BM, int BN, int BK, int WN, bool kXcl>
void run_dh(Problem<Tx, Tw>& P, const DevCaps& caps, const char* cfg) {
  if (!wanted(cfg)) return;
  using Tacc = typename AccOf<Tx>::type;
  const Case& c = P.c;
  const int64_t Lo = c.Lout();
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  Act<Tx> dy;
  dy.init(c.B, c.Cout, Lo, kXcl, c.misalign, c.misalign ? 1 : 0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t o = 0; o < c.Cout; ++o)
      for (int64_t j = 0; j < Lo; ++j) dy.at(b, o, j) = from_d<Tx>(U(P.rng));
  Act<Tx> dh;
  dh.init(c.B, c.Cin, Lo, kXcl, 0, 0);
  ConvGeometry g;
  g.batch = c.B;
  g.channels = c.Cout;
  g.out_channels = c.Cin;
  g.length = Lo;
  g.kernel_size = 1;
  g.out_length = Lo;
  FwdPlan plan;
  if (!plan_fwd<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>(g, dy.view(), dh.ptr(), dh.sb, dh.sc, dh.sl,
                                                       caps, WPlace::kAuto, plan)) {
    return;
  }
  Buf ws(plan.ws_bytes);
  bind_fwd_workspace(plan, ws.p, P.pw.data(), 1, c.Cin, nullptr, nullptr, nullptr, true);
  sepemu::launch(sep_prep_kernel<Tw, Tm, Tacc, FwdTile<Tx, Tm, kGemm, BM, BN, BK, WN>::kTf32>,
                 plan.prep_blocks, 256, 0, plan.pp);
  sepemu::launch(sep_fwd_kernel<Tx, Tm, kGemm, BM, BN, BK, WN, kXcl>, plan.blocks, kThreads,
                 size_t(plan.smem), plan.p);
  double worst = 0.0;
  int64_t bad = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t ch = 0; ch < c.Cin; ++ch)
      for (int64_t j = 0; j < Lo; ++j) {
        double ref = 0.0, mag = 0.0;
        for (int64_t o = 0; o < c.Cout; ++o) {
          const double t = to_d(P.pw[size_t(o * c.Cin + ch)]) * to_d(dy.at(b, o, j));
          ref += t;
          mag += std::fabs(t);
        }
        const double err = std::fabs(to_d(dh.at(b, ch, j)) - ref);
        const double allowed = tol<Tx, kGemm>() * (mag + 1e-3);
        if (!(err <= allowed)) {
          ++bad;
          worst = std::max(worst, std::isfinite(err) ? err / allowed : 1e300);
        }
      }
  report(bad == 0,
         std::string("dh  ") + tname<Tx>() + "/" + tname<Tw>() + " " + cfg + (kXcl ? " CL" : " CF") +
             (plan.p.resident ? " resident" : " streamed") + " | " + c.str(),
         worst, bad);
}

// d pw_weight through the split-K weight-gradient kernel and its reduction; run twice to check
// that the result is bit-identical.
template <typename Tx, typename Tw, typename Tm, int kGemm, int BM, int BN, bool kXcl>
void run_dpw(Problem<Tx, Tw>& P, const DevCaps& caps, const char* cfg) {
  if (!wanted(cfg)) return;
  const Case& c = P.c;
  const int64_t Lo = c.Lout();
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  Act<Tx> dy;
  dy.init(c.B, c.Cout, Lo, kXcl, c.misalign, c.misalign ? 1 : 0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t o = 0; o < c.Cout; ++o)
      for (int64_t j = 0; j < Lo; ++j) dy.at(b, o, j) = from_d<Tx>(U(P.rng));
  const ConvGeometry g = P.geom();
  DpwPlan plan;
  if (!plan_dpw<Tx, Tm, kGemm, BM, BN, 32, kXcl>(g, dy.view(), P.x.view(), caps, plan)) return;
  std::vector<Tw> out[2];
  for (int rep = 0; rep < 2; ++rep) {
    Buf ws(plan.ws_bytes);
    bind_dpw_workspace(plan, ws.p);
    sepemu::launch(sep_dw_prep_kernel<Tw>, plan.prep_blocks, 256, 0, (const Tw*)P.dw.data(),
                   (const Tw*)(c.dwb ? P.dwb.data() : nullptr),
                   reinterpret_cast<float*>(ws.p + plan.at_dwp),
                   reinterpret_cast<float*>(ws.p + plan.at_dwb), int(c.Cin), int(plan.cin_pad),
                   int(c.K), int(plan.tap_pitch));
    sepemu::launch(sep_dpw_kernel<Tx, Tm, kGemm, BM, BN, 32, kXcl>, plan.blocks, kThreads,
                   size_t(plan.smem), plan.p);
    out[rep].assign(size_t(c.Cout * c.Cin), poison<Tw>());
    sepemu::launch(sep_dpw_reduce_kernel<Tw>, plan.reduce_blocks, 256, 0,
                   (const float*)plan.p.part, out[rep].data(), (Tw*)nullptr, int64_t(c.Cout),
                   int64_t(c.Cin), int64_t(c.Cin), int(plan.p.splits));
  }
  double worst = 0.0;
  int64_t bad = 0;
  for (int64_t o = 0; o < c.Cout; ++o)
    for (int64_t ch = 0; ch < c.Cin; ++ch) {
      double ref = 0.0, mag = 0.0;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t j = 0; j < Lo; ++j) {
          const double t = to_d(dy.at(b, o, j)) * P.h[size_t((b * c.Cin + ch) * Lo + j)];
          ref += t;
          mag += std::fabs(t);
        }
      const double got = to_d(out[0][size_t(o * c.Cin + ch)]);
      const double err = std::fabs(got - ref);
      const double allowed = tol<Tx, kGemm>() * (mag + 1e-3);
      if (!(err <= allowed)) {
        ++bad;
        worst = std::max(worst, std::isfinite(err) ? err / allowed : 1e300);
      }
    }
  const bool same = std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(Tw)) == 0;
  report(bad == 0 && same,
         std::string("dpw ") + tname<Tx>() + "/" + tname<Tw>() + " " + cfg + (kXcl ? " CL" : " CF") +
             " splits" + std::to_string(plan.p.splits) + (same ? "" : " NOT-DETERMINISTIC") +
             " | " + c.str(),
         worst, bad);
}

// Every forward configuration the extension can pick for this dtype pair, under each placement:
// auto (resident when it pays), streamed W, and shared h (several Cout passes per depthwise).
template <typename Tx, typename Tw, bool kXcl>
void fwd_all(Problem<Tx, Tw>& P, const DevCaps& caps) {
  for (WPlace place : {WPlace::kAuto, WPlace::kStreamedOnly, WPlace::kSharedOnly}) {
    if constexpr (std::is_same_v<Tx, double>) {
      run_fwd<Tx, Tw, double, kGemmSimt, 64, 64, 16, 32, kXcl>(P, caps, place, "simt64x64");
    } else if constexpr (std::is_same_v<Tx, float>) {
      run_fwd<Tx, Tw, float, kGemmSimt, 128, 128, 32, 32, kXcl>(P, caps, place, "simt128x128");
      run_fwd<Tx, Tw, float, kGemmTf32, 64, 256, 16, 32, kXcl>(P, caps, place, "tf32 64x256");
      run_fwd<Tx, Tw, float, kGemmTf32, 128, 128, 16, 32, kXcl>(P, caps, place, "tf32 128x128");
      run_fwd<Tx, Tw, float, kGemmTf32, 256, 64, 16, 32, kXcl>(P, caps, place, "tf32 256x64");
      run_fwd<Tx, Tw, float, kGemmTf32, 128, 256, 16, 64, kXcl>(P, caps, place, "tf32 128x256w64");
      run_fwd<Tx, Tw, float, kGemmTf32, 256, 128, 16, 64, kXcl>(P, caps, place, "tf32 256x128w64");
    } else {
      run_fwd<Tx, Tw, Tx, kGemmMma16, 64, 256, 32, 32, kXcl>(P, caps, place, "mma 64x256");
      run_fwd<Tx, Tw, Tx, kGemmMma16, 128, 128, 32, 32, kXcl>(P, caps, place, "mma 128x128");
      run_fwd<Tx, Tw, Tx, kGemmMma16, 256, 64, 32, 32, kXcl>(P, caps, place, "mma 256x64");
      run_fwd<Tx, Tw, Tx, kGemmMma16, 128, 256, 32, 64, kXcl>(P, caps, place, "mma 128x256w64");
      run_fwd<Tx, Tw, Tx, kGemmMma16, 256, 128, 32, 64, kXcl>(P, caps, place, "mma 256x128w64");
      run_fwd<Tx, Tw, Tx, kGemmWg, 128, 128, 64, 64, kXcl>(P, caps, place, "wgmma 128x128");
      run_fwd<Tx, Tw, Tx, kGemmWg, 128, 64, 64, 64, kXcl>(P, caps, place, "wgmma 128x64");
    }
  }
  if constexpr (sizeof(Tx) <= 4) {  // 16-bit, or float32 on TF32
    // Two-chunk steps on the tiles the library takes them on (BN 64 / 32).
    run_fwd_ws<Tx, Tw, 128, kXcl>(P, caps);
    run_fwd_ws<Tx, Tw, 64, kXcl>(P, caps);
    run_fwd_ws<Tx, Tw, 64, kXcl, 0, 2>(P, caps);
    if constexpr (sizeof(Tx) == 2 && !kXcl) run_fwd_ws<Tx, Tw, 128, kXcl, 0, 2>(P, caps);
    if constexpr (sizeof(Tx) == 4) {
      run_fwd_ws<Tx, Tw, 32, kXcl>(P, caps);
      run_fwd_ws<Tx, Tw, 32, kXcl, 0, 2>(P, caps);
    }
    run_fwd_ws<Tx, Tw, 64, kXcl, 4>(P, caps);
  }
}

template <typename Tx, typename Tw, bool kXcl>
void bwd_all(Problem<Tx, Tw>& P, const DevCaps& caps) {
  if constexpr (std::is_same_v<Tx, float>) {
    run_dh<Tx, Tw, float, kGemmTf32, 128, 256, 16, 64, kXcl>(P, caps, "tf32 128x256w64");
    run_dh<Tx, Tw, float, kGemmSimt, 128, 128, 16, 32, kXcl>(P, caps, "simt128x128");
    run_dpw<Tx, Tw, float, kGemmTf32, 64, 256, kXcl>(P, caps, "tf32 64x256");
    run_dpw<Tx, Tw, float, kGemmTf32, 256, 64, kXcl>(P, caps, "tf32 256x64");
  } else if constexpr (!std::is_same_v<Tx, double>) {
    run_dh<Tx, Tw, Tx, kGemmMma16, 128, 256, 32, 64, kXcl>(P, caps, "mma 128x256w64");
    run_dh<Tx, Tw, Tx, kGemmMma16, 256, 64, 32, 32, kXcl>(P, caps, "mma 256x64");
    run_dh<Tx, Tw, Tx, kGemmWg, 128, 128, 64, 64, kXcl>(P, caps, "wgmma 128x128");
    run_dpw<Tx, Tw, Tx, kGemmMma16, 64, 256, kXcl>(P, caps, "mma 64x256");
    run_dpw<Tx, Tw, Tx, kGemmMma16, 128, 128, kXcl>(P, caps, "mma 128x128");
    run_dpw<Tx, Tw, Tx, kGemmMma16, 256, 64, kXcl>(P, caps, "mma 256x64");
  } else {
    run_dh<Tx, Tw, double, kGemmSimt, 64, 64, 16, 32, kXcl>(P, caps, "simt64x64");
  }
}

template <typename Tx, typename Tw>
void run_case(const Case& c, int caps_index, bool backward) {
  Problem<Tx, Tw> P(c);
  const DevCaps& caps = kCaps[caps_index];
  if (c.cl) {
    fwd_all<Tx, Tw, true>(P, caps);
    if (backward) bwd_all<Tx, Tw, true>(P, caps);
  } else {
    fwd_all<Tx, Tw, false>(P, caps);
    if (backward) bwd_all<Tx, Tw, false>(P, caps);
  }
}

// dtype pair by index: 0 bf16/bf16, 1 bf16/f32, 2 f16/f16, 3 f16/f32, 4 f32, 5 f64.
inline void run_dtype(int dt, const Case& c, int caps_index, bool backward) {
  switch (dt) {
    case 0: return run_case<__nv_bfloat16, __nv_bfloat16>(c, caps_index, backward);
    case 1: return run_case<__nv_bfloat16, float>(c, caps_index, backward);
    case 2: return run_case<__half, __half>(c, caps_index, backward);
    case 3: return run_case<__half, float>(c, caps_index, backward);
    case 4: return run_case<float, float>(c, caps_index, backward);
    default: return run_case<double, double>(c, caps_index, backward);
  }
}

}  // namespace septest

#ifdef SEP_EMU_MAIN
int main(int argc, char** argv) {
  using namespace septest;
  const int n_random = argc > 1 ? std::atoi(argv[1]) : 6;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const int first = argc > 3 ? std::atoi(argv[3]) : 0;  // run cases [first, last)
  const int last = argc > 4 ? std::atoi(argv[4]) : INT_MAX;
  // Fixed cases: the tile edges and every depthwise mode.
  std::vector<std::pair<int, Case>> cases = {
      {0, {2, 40, 70, 150, 9, 1, 1, 4, 4, false, 0, true, true, 11}},    // vec mode, ragged tiles
      {1, {1, 64, 257, 130, 5, 1, 1, 2, 2, true, 0, true, false, 12}},   // CL, Cout not tile multiple
      {2, {2, 3, 5, 77, 3, 1, 1, 1, 1, false, 1, false, true, 13}},      // tiny, misaligned
      {3, {1, 33, 96, 140, 7, 1, 9, 27, 27, false, 0, true, true, 14}},  // dilation 9
      {4, {2, 20, 48, 101, 33, 2, 1, 16, 16, false, 1, true, true, 15}}, // stride 2, misaligned
      {0, {1, 100, 130, 90, 12, 3, 2, 0, 5, true, 1, true, true, 16}},   // stride 3 dil 2, CL mis
      {5, {1, 17, 19, 45, 4, 1, 3, 5, 4, false, 0, true, true, 17}},     // f64
      {4, {2, 48, 64, 97, 1, 1, 1, 0, 0, true, 0, false, false, 18}},    // K = 1
      {0, {2, 130, 300, 290, 9, 1, 1, 4, 4, false, 0, true, true, 19}},  // shared h, 5 chunks
      {2, {1, 70, 520, 200, 31, 1, 1, 15, 15, true, 1, false, true, 20}}, // shared h, CL, 3 passes
      {4, {2, 40, 270, 150, 5, 1, 1, 0, 4, false, 0, true, false, 21}},  // shared h, TF32 / SIMT
      {0, {3, 64, 600, 100, 7, 1, 1, 3, 3, false, 0, true, true, 22}},   // shared h, uneven groups
      // Rows long enough for interior tiles (unchecked x staging) next to both row edges.
      {0, {1, 40, 70, 1000, 9, 1, 1, 4, 4, false, 0, true, true, 23}},
      {4, {1, 32, 260, 700, 5, 1, 1, 2, 2, false, 0, true, true, 24}},
      {2, {2, 48, 300, 600, 3, 1, 1, 0, 2, false, 0, true, true, 25}},
      {0, {2, 64, 256, 512, 9, 1, 1, 4, 4, false, 0, true, true, 26}},   // full tiles: unchecked pair stores
      // The warp-specialised kernel on TF32 (2 and 5 SMs: shared-h plans), word-staged 16-bit rows.
      {4, {2, 70, 260, 300, 9, 1, 1, 4, 4, false, 0, true, true, 27}},   // TF32, CF
      {0, {2, 96, 260, 301, 9, 1, 1, 4, 4, false, 1, true, true, 28}},  // odd L, misaligned: pairs
      {2, {2, 45, 130, 250, 5, 2, 1, 2, 2, true, 0, true, true, 29}},    // fp16 CL stride 2
      {4, {2, 33, 260, 250, 5, 1, 2, 4, 4, true, 1, true, true, 30}},    // TF32, CL, dilation 2
      // TF32 producers with compile-time taps (K = 7, 3 on aligned channel-first rows: cases 20
      // and 23, which get shared-h plans), and float32 weights under 16-bit x.
      {4, {2, 64, 300, 260, 7, 1, 1, 3, 3, false, 0, true, true, 31}},
      {3, {2, 72, 200, 270, 5, 1, 1, 2, 2, false, 0, true, true, 32}},
      {1, {1, 64, 300, 190, 3, 1, 1, 1, 1, true, 0, true, false, 33}},
      {4, {1, 40, 260, 333, 3, 1, 1, 1, 1, false, 0, false, true, 34}},
      // Large Cin (more input chunks than the shared h ring of the wgmma kernels holds).
      {4, {1, 1100, 260, 70, 5, 1, 1, 2, 2, false, 0, true, true, 35}},
      {0, {1, 1500, 200, 90, 3, 1, 1, 1, 1, true, 0, true, false, 36}},
      // TF32 warp-specialised BN 32 (the only h ring that fits): Cin 1024 (Citrinet), and Cin 512
      // with a long dilated window (QuartzNet's last block), both layouts, ragged L.
      {4, {1, 1024, 260, 75, 11, 1, 1, 5, 5, false, 0, true, true, 37}},
      {4, {1, 520, 200, 83, 87, 1, 2, 86, 86, false, 1, true, true, 38}},
      {4, {1, 1000, 140, 45, 11, 1, 1, 5, 5, true, 0, false, true, 39}},
      // Strided and dilated windows on 16-byte-aligned channel-first rows (staged in 4-byte pieces
      // at an odd word pitch, not by 16-byte copies).
      {4, {2, 40, 260, 400, 9, 2, 1, 4, 4, false, 0, true, true, 40}},
      {0, {2, 70, 300, 512, 5, 1, 3, 6, 6, false, 0, true, true, 41}},
      // Two-chunk steps on BN 128 with the W loader (16-bit channel-first, an even chunk count):
      // 2 and 4 chunks, a ragged position tile and Cout tile.
      {0, {2, 100, 260, 300, 9, 1, 1, 4, 4, false, 0, true, true, 42}},
      {2, {1, 200, 300, 520, 5, 1, 1, 2, 2, false, 0, true, true, 43}},
      // The producers' tensor-core depthwise (16-byte-aligned channel-first rows, 16-bit weights):
      // K 8 at an odd window offset (K + 1 = 9 columns, the most one product holds), K 1, K 6 at
      // an odd offset with a ragged tail, K 9 causal (offset 0), padded channels (Cin 72, 100).
      {0, {2, 72, 200, 264, 8, 1, 1, 3, 4, false, 0, true, true, 44}},
      {2, {2, 130, 260, 200, 1, 1, 1, 0, 0, false, 0, false, true, 45}},
      {0, {1, 64, 300, 1000, 6, 1, 1, 5, 0, false, 0, true, false, 46}},
      {2, {2, 100, 257, 136, 9, 1, 1, 8, 0, false, 0, true, true, 47}},
      // ... without a preparation kernel (rows of pw a multiple of 16 bytes): W's tensor map past
      // Cin (136: a 64-channel box half outside) and Cout (200, 130), no depthwise bias.
      {2, {2, 136, 200, 304, 7, 1, 1, 3, 3, false, 0, true, true, 48}},
      {0, {1, 192, 130, 264, 9, 1, 1, 4, 4, false, 0, false, true, 49}},
      // ... past 9 taps, in blocks of 16 (mma_dw_blocks): K 17 at offset 0 (2 blocks), K 31 at an
      // odd offset with padded channels (3), K 63 at offset 2 (5), K 11 at an odd offset (2).
      {0, {2, 72, 200, 264, 17, 1, 1, 8, 8, false, 0, true, true, 50}},
      {2, {1, 100, 260, 300, 31, 1, 1, 15, 15, false, 0, true, true, 51}},
      {0, {1, 64, 200, 200, 63, 1, 1, 30, 32, false, 0, true, false, 52}},
      {2, {2, 136, 200, 304, 11, 1, 1, 5, 5, false, 0, true, true, 53}},
      // ... on rows staged in 4-byte pairs (L % 8 != 0: no tensor map), each row at its own
      // element parity: odd L (rows alternate) K 31; even L from an odd base (every row odd) K 11;
      // odd L, K 63, padded channels (Cin 136).
      {0, {2, 72, 200, 301, 31, 1, 1, 15, 15, false, 0, true, true, 54}},
      {2, {2, 64, 260, 250, 11, 1, 1, 5, 5, false, 1, true, true, 55}},
      {0, {1, 136, 300, 835, 63, 1, 1, 31, 31, false, 0, true, true, 56}},
      // Full tiles of channel-first y rows that are not 16-byte aligned: TF32 at L % 4 == 2
      // (pair stores; cases 27 and 31 have 16-byte rows: lane pairs in 16 bytes), 16-bit at
      // L % 8 == 4 (lane pairs in 8 bytes) and L % 4 == 2 (pair stores).
      {4, {2, 64, 260, 258, 5, 1, 1, 2, 2, false, 0, true, true, 57}},
      {0, {2, 64, 260, 260, 5, 1, 1, 2, 2, false, 0, true, true, 58}},
      {2, {2, 72, 300, 258, 9, 1, 1, 4, 4, false, 0, true, true, 59}},
      // ... and of odd pitch (pairs shifted by one element on rows that start at an odd one;
      // case 28 in bf16, and 55 with every row odd from a misaligned base), TF32.
      {4, {2, 64, 260, 301, 7, 1, 1, 3, 3, false, 0, true, true, 60}},
      // Ragged position tiles (and Cout 200: ragged Cout tiles) of padded channel-first y rows, so
      // that the last tile of 16-bit y ends inside a vector: rows of 1008 (16-byte vectors) and
      // 1004 (8-byte) elements for 1001 outputs; rows of 302 (pairs; the first only chunk-major,
      // on these caps) for 301; bf16 rows of 301 + 2 (odd pitch). TF32 rows of 304 for 301: the
      // per-pair ragged form (float32 y takes no ragged vectors), which must not write the
      // padding either.
      {0, {1, 64, 300, 1001, 5, 1, 1, 2, 2, false, 0, true, true, 61, 7}},
      {2, {1, 64, 200, 1001, 9, 1, 1, 4, 4, false, 0, true, true, 62, 3}},
      {4, {2, 64, 260, 301, 5, 1, 1, 2, 2, false, 0, true, true, 63, 3}},
      {3, {2, 72, 260, 301, 7, 1, 1, 3, 3, false, 0, true, true, 64, 1}},
      {0, {2, 64, 200, 301, 3, 1, 1, 1, 1, false, 0, true, true, 65, 2}},
      {2, {2, 72, 260, 301, 7, 1, 1, 3, 3, false, 0, true, true, 66, 1}},
      // Rows that are not 16-byte aligned in 16-byte units (kLoadRows16), each from its own
      // shift: L 210 causal (every window across a row end, shifts 0, 2, 4, 6), L 500 K 31 (the
      // heads of a 15-position padding), odd L from a misaligned base (all eight shifts, odd ones
      // with two tap blocks), a padded second chunk (Cin 72).
      {0, {2, 128, 200, 210, 9, 1, 1, 8, 0, false, 0, true, true, 67}},
      {2, {1, 72, 260, 500, 31, 1, 1, 15, 15, false, 0, true, true, 68}},
      {0, {2, 64, 200, 1023, 7, 1, 1, 3, 3, false, 1, true, true, 69}},
      // 16-bit y rows of 2- or 4-byte alignment in 16-byte units (store_row_units), padded so that
      // nothing may be written past a row's end: a last tile of 3 columns (fewer than the first
      // unit holds on most rows; rows of 261, every offset), and one of 122 (the tile's last
      // partial unit on rows at offset 7; rows of 251).
      {0, {2, 64, 200, 259, 5, 1, 1, 2, 2, false, 0, true, true, 70, 2}},
      {2, {1, 72, 260, 250, 9, 1, 1, 4, 4, false, 0, true, true, 71, 1}},
      // float32 rows 8- but not 16-byte aligned in 8-byte pairs (kLoadPairs): L 250 K 11 at an
      // odd window offset (padding 5, Citrinet's shape), L 1002 at offset 0 with interior tiles.
      {4, {2, 64, 260, 250, 11, 1, 1, 5, 5, false, 0, true, true, 72}},
      {4, {1, 40, 130, 1002, 9, 1, 1, 4, 4, false, 0, true, true, 73}},
  };
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  for (int i = 0; i < n_random; ++i) {
    Case c{};
    c.B = pick({1, 2});
    c.Cin = pick({1, 7, 32, 45, 64, 96});
    c.Cout = pick({1, 9, 64, 100, 130, 260});
    c.K = pick({1, 2, 3, 5, 8, 9, 11, 17});
    c.stride = pick({1, 1, 1, 2, 3});
    c.dil = pick({1, 1, 2, 5});
    c.L = pick({16, 63, 128, 200, 250, 301});  // 250: float32 rows in 8-byte pairs
    const int64_t span = c.dil * (c.K - 1);
    c.pl = std::uniform_int_distribution<int64_t>(0, span + 2)(rng);
    c.pr = std::uniform_int_distribution<int64_t>(0, span + 2)(rng);
    if (c.L + c.pl + c.pr < span + 1) c.pr += span + 1 - (c.L + c.pl + c.pr);
    c.cl = rng() & 1;
    c.misalign = int(rng() % 3 == 0);
    c.dwb = rng() & 1;
    c.pwb = rng() & 1;
    c.seed = rng();
    cases.push_back({int(rng() % 6), c});
  }
  int idx = 0;
  for (auto& [dt, c] : cases) {
    if (idx < first || idx >= last) {
      ++idx;
      continue;
    }
    const int caps_index = idx % 4;
    std::printf("case %d: dtype %d caps %d %s\n", idx, dt, caps_index, c.str().c_str());
    std::fflush(stdout);
    run_dtype(dt, c, caps_index, /*backward=*/true);
    ++idx;
  }
  std::printf("%d checks, %d failures\n", g_stats.cases, g_stats.failures);
  return g_stats.failures == 0 ? 0 : 1;
}
#endif
