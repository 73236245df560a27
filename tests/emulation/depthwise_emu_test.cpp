// Host-emulation test of the depthwise CUDA kernels (index maths, padding, strides, layouts,
// alignment fallbacks, splits, determinism) against a float64 reference. Not part of the build:
//   g++ -std=c++20 -O1 -g -fsanitize=address,undefined -x c++ -DDW_EMULATE -DDW_EMU_MAIN \
//     -I csrc -I <torch>/include -I <cuda>/include tests/emulation/depthwise_emu_test.cpp -o dwemu -pthread
//   ./dwemu [n_random_cases] [seed]
#pragma once

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

static std::string g_last_kernels;
#define DW_HOST_CHECK(cond, msg)                                  \
  do {                                                            \
    if (!(cond)) {                                                \
      std::fprintf(stderr, "host check failed: %s\n", msg);       \
      std::abort();                                               \
    }                                                             \
  } while (0)
// Staged-y launches of the run-time-K forward ("/ystage") are counted, and named as the launch
// they replace (the cases' expected kernels then hold either way).
static int g_ystage_launches = 0;
static std::map<std::string, int> g_ystage_by_kernel;
static std::string dw_launch_name(const char* name) {
  std::string s(name);
  const size_t at = s.find("/ystage");
  if (at != std::string::npos) {
    s.erase(at, 7);
    ++g_ystage_launches;
    ++g_ystage_by_kernel[s];
  }
  return s;
}
#define DW_CHECK_LAUNCH(name) (g_last_kernels += dw_launch_name(name) + " ")

#include "cuda/depthwise_launch.cuh"

namespace dwtest {

using namespace sepconv1d::cuda::dwk;

template <typename T>
double to_d(T v) {
  return double(in_cvt(v));
}
template <typename T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return out_cvt<T>(float(v));
  }
}
template <typename T>
double out_eps() {
  if constexpr (std::is_same_v<T, double>) return 0x1p-52;
  if constexpr (std::is_same_v<T, float>) return 0x1p-23;
  if constexpr (std::is_same_v<T, __half>) return 0x1p-10;
  return 0x1p-7;
}
// absolute rounding error of subnormal outputs
template <typename T>
double out_abs() {
  if constexpr (std::is_same_v<T, __half>) return 0x1p-24;
  return 1e-300;
}
template <typename T>
T poison() {
  T v;
  std::memset(&v, 0xFF, sizeof(T));  // NaN for every float format
  return v;
}
template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// cfal: channel-first rows whose stride is rounded up to 8 elements, plus 8 (16-byte-aligned rows
// of any length, with a poisoned gap after each row). clal: the same for channel-last positions
// (16-byte-aligned positions of any channel count).
enum LayoutKind { L_CF, L_CFPAD, L_CL, L_CLPAD, L_STRIDED, L_CFAL, L_CLAL, L_NKINDS };
const char* kind_name(int k) {
  static const char* n[] = {"cf", "cfpad", "cl", "clpad", "strided", "cfal", "clal"};
  return n[k];
}

// A (B, C, n) tensor with the given layout, `offset` elements into its storage.
template <typename T>
struct Buf {
  std::vector<T> store;
  int64_t offset = 0;
  Desc3 d{};
  int64_t B = 0, C = 0, n = 0;
  T* ptr() { return store.data() + offset; }
  int64_t idx(int64_t b, int64_t c, int64_t l) const { return offset + b * d.sb + c * d.sc + l * d.sl; }
  T& at(int64_t b, int64_t c, int64_t l) { return store[size_t(idx(b, c, l))]; }
  void init(int kind, int64_t B_, int64_t C_, int64_t n_, int64_t off) {
    B = B_;
    C = C_;
    n = n_;
    offset = off;
    switch (kind) {
      case L_CF: d = {C * n, n, 1}; break;
      case L_CFPAD: d = {C * (n + 3) + 5, n + 3, 1}; break;
      case L_CL: d = {n * C, 1, C}; break;
      case L_CLPAD: d = {n * (C + 3) + 7, 1, C + 3}; break;
      case L_CFAL: d = {C * ((n + 7) / 8 * 8 + 8), (n + 7) / 8 * 8 + 8, 1}; break;
      case L_CLAL: d = {n * ((C + 7) / 8 * 8 + 8), 1, (C + 7) / 8 * 8 + 8}; break;
      default: d = {C * n * 2 + 1, n * 2, 2}; break;
    }
    int64_t maxi = 0;
    if (B > 0 && C > 0 && n > 0) maxi = (B - 1) * d.sb + (C - 1) * d.sc + (n - 1) * d.sl;
    store.assign(size_t(offset + maxi + 1), poison<T>());
  }
};

struct Case {
  int64_t B, C, L, K, s, d, pl, pr;
  bool bias;
  int xkind, ykind;  // ykind: layout of y / dy / dx
  int xoff, yoff;
  Tuning tune;
  int grads = -1;  // wanted gradients, bits x 1, w 2, b 4 (0 means all); -1: derived from the case
  const char* expect_fwd = nullptr;  // forward kernel the case must take (nullptr: any)
  const char* expect_bwd = nullptr;  // backward kernel the case must take (nullptr: any)
};

std::string describe(const Case& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "B%lld C%lld L%lld K%lld s%lld d%lld pad(%lld,%lld) bias%d x:%s+%d y:%s+%d "
                "spec%d reg%d/%d direct%d smem%lld grid%lld split%lld",
                (long long)c.B, (long long)c.C, (long long)c.L, (long long)c.K, (long long)c.s,
                (long long)c.d, (long long)c.pl, (long long)c.pr, int(c.bias), kind_name(c.xkind),
                c.xoff, kind_name(c.ykind), c.yoff, int(c.tune.allow_specialized),
                int(c.tune.allow_reg_fwd), int(c.tune.allow_reg_bwd), int(c.tune.force_direct), (long long)c.tune.smem_limit,
                (long long)c.tune.max_grid, (long long)c.tune.force_split);
  return buf;
}

int g_failures = 0;
std::map<std::string, int> g_kernel_counts;

void note_kernels() {
  size_t pos = 0;
  while (pos < g_last_kernels.size()) {
    size_t e = g_last_kernels.find(' ', pos);
    if (e == std::string::npos) e = g_last_kernels.size();
    if (e > pos) g_kernel_counts[g_last_kernels.substr(pos, e - pos)]++;
    pos = e + 1;
  }
  g_last_kernels.clear();
}

template <typename T, typename W>
bool run_case(const Case& cs_in, std::mt19937_64& rng, bool verbose) {
  using A = acc_of<T>;
  // A case that expects another kernel tests that kernel: the short-row kernels stand aside.
  Case cs = cs_in;
  const auto expects_other = [](const char* k) {
    return k != nullptr && std::string(k).find("_rows_") == std::string::npos;
  };
  if (expects_other(cs.expect_fwd) || expects_other(cs.expect_bwd)) cs.tune.rows = 0;
  const int64_t Lo = (cs.L + cs.pl + cs.pr - cs.d * (cs.K - 1) - 1) / cs.s + 1;
  if (cs.L + cs.pl + cs.pr < cs.d * (cs.K - 1) + 1) return true;  // rejected by the op checks
  Problem pr{cs.B, cs.C, cs.L, Lo, cs.K, cs.s, cs.d, cs.pl};
  std::uniform_real_distribution<double> U(-1.0, 1.0);

  Buf<T> x, y, dy, dx, y2, dx2;
  x.init(cs.xkind, cs.B, cs.C, cs.L, cs.xoff);
  for (int64_t b = 0; b < cs.B; ++b)
    for (int64_t c = 0; c < cs.C; ++c)
      for (int64_t l = 0; l < cs.L; ++l) x.at(b, c, l) = from_d<T>(U(rng));
  std::vector<W> w(size_t(cs.C * cs.K)), bias(size_t(cs.C));
  for (auto& v : w) v = from_d<W>(U(rng));
  for (auto& v : bias) v = from_d<W>(U(rng));
  const W* bias_p = cs.bias ? bias.data() : nullptr;

  DevInfo dev;
  dev.sms = 4;
  dev.smem_optin = 227 * 1024;
  bool ok = true;
  auto fail = [&](const char* what, int64_t b, int64_t c, int64_t l, double got, double want) {
    if (ok) {
      std::printf("FAIL %s [%s] at (%lld,%lld,%lld): got %.9g want %.9g  kernels: %s\n", what,
                  describe(cs).c_str(), (long long)b, (long long)c, (long long)l, got, want,
                  g_last_kernels.c_str());
    }
    ok = false;
  };

  // The tensor-core kernels carry fp32 weights of half x as hi + lo halves: each weight within
  // u^2 |w| (unit roundoff u = out_eps / 2: 2^-8 bf16, 2^-11 fp16), plus half a subnormal step of
  // fp16's lo per tap: more than the fp32 accumulation term at small K where the sum cancels.
  auto split_err = [&](const std::string& kernels, double mag) {
    if constexpr (sizeof(T) == 2 && std::is_same_v<W, float>) {
      if (kernels.find("_cf_tc_kernel") != std::string::npos) {
        return out_eps<T>() * out_eps<T>() / 4 * mag + double(cs.K) * out_abs<T>() / 2;
      }
    }
    return 0.0;
  };

  // ---------------- forward ----------------
  y.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
  y2.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
  g_last_kernels.clear();
  const int ystage_before = g_ystage_launches;
  forward<T, W>(pr, x.ptr(), x.d, w.data(), bias_p, y.ptr(), y.d, nullptr, dev, cs.tune);
  const std::string fwd_kernels = g_last_kernels;
  const bool used_ystage = g_ystage_launches > ystage_before;
  forward<T, W>(pr, x.ptr(), x.d, w.data(), bias_p, y2.ptr(), y2.d, nullptr, dev, cs.tune);
  if (cs.expect_fwd != nullptr && fwd_kernels.find(cs.expect_fwd) == std::string::npos) {
    fail("fwd-path", -1, -1, -1, 0, 0);
  }
  // The register-direct forwards round exactly like the tile kernels: compare bits with them.
  const bool used_reg = fwd_kernels.find("dw_fwd_cf_reg_kernel") != std::string::npos ||
                        fwd_kernels.find("dw_fwd_cl_reg_kernel") != std::string::npos;
  Buf<T> y3;
  if (used_reg) {
    Tuning tile_tune = cs.tune;
    tile_tune.allow_reg_fwd = false;
    tile_tune.allow_tc = false;  // half types would take the tensor-core kernel instead
    y3.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
    forward<T, W>(pr, x.ptr(), x.d, w.data(), bias_p, y3.ptr(), y3.d, nullptr, dev, tile_tune);
  }
  // The run-time-K tile forward sums like the direct kernel (bias, then taps k = 0..K-1, one FMA
  // each; the direct kernel skips the zero-padded taps, which can only turn a -0 into +0): compare
  // bits with it, so that an indexing slip cannot hide inside the rounding tolerance.
  const bool used_rt = fwd_kernels.find("dw_fwd_cf_rt_kernel") != std::string::npos;
  Buf<T> y4;
  if (used_rt) {
    Tuning direct_tune = cs.tune;
    direct_tune.force_direct = true;
    y4.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
    forward<T, W>(pr, x.ptr(), x.d, w.data(), bias_p, y4.ptr(), y4.d, nullptr, dev, direct_tune);
  }
  // The staged y stores change where outputs go, not their values: compare bits with the direct
  // stores.
  Buf<T> y5;
  if (used_ystage) {
    Tuning direct_y = cs.tune;
    direct_y.allow_ystage = false;
    y5.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
    const int before = g_ystage_launches;
    forward<T, W>(pr, x.ptr(), x.d, w.data(), bias_p, y5.ptr(), y5.d, nullptr, dev, direct_y);
    if (g_ystage_launches != before) fail("ystage-off", -1, -1, -1, 0, 0);
  }
  for (int64_t b = 0; b < cs.B; ++b)
    for (int64_t c = 0; c < cs.C; ++c)
      for (int64_t j = 0; j < Lo; ++j) {
        double ref = cs.bias ? to_d(bias[size_t(c)]) : 0.0;
        double mag = std::fabs(ref);
        for (int64_t k = 0; k < cs.K; ++k) {
          const int64_t pos = j * cs.s - cs.pl + k * cs.d;
          if (pos >= 0 && pos < cs.L) {
            const double t = to_d(w[size_t(c * cs.K + k)]) * to_d(x.at(b, c, pos));
            ref += t;
            mag += std::fabs(t);
          }
        }
        const double got = to_d(y.at(b, c, j));
        const double tol = 4.0 * (cs.K + 2) * std::numeric_limits<A>::epsilon() * mag +
                           out_eps<T>() * std::fabs(ref) + out_abs<T>() +
                           split_err(fwd_kernels, mag);
        if (!(std::fabs(got - ref) <= tol)) fail("fwd", b, c, j, got, ref);
        if (!same_bits(y.at(b, c, j), y2.at(b, c, j))) fail("fwd-determinism", b, c, j, got, ref);
        if (used_reg && !same_bits(y.at(b, c, j), y3.at(b, c, j))) {
          fail("fwd-reg-vs-tile", b, c, j, got, to_d(y3.at(b, c, j)));
        }
        if (used_ystage && !same_bits(y.at(b, c, j), y5.at(b, c, j))) {
          fail("fwd-ystage-vs-direct", b, c, j, got, to_d(y5.at(b, c, j)));
        }
        if (used_rt && !same_bits(y.at(b, c, j), y4.at(b, c, j)) &&
            !(got == 0 && to_d(y4.at(b, c, j)) == 0)) {
          fail("fwd-rt-vs-direct", b, c, j, got, to_d(y4.at(b, c, j)));
        }
      }
  // Elements of y's storage outside the tensor stay untouched.
  {
    std::vector<char> mark(y.store.size(), 0);
    for (int64_t b = 0; b < cs.B; ++b)
      for (int64_t c = 0; c < cs.C; ++c)
        for (int64_t j = 0; j < Lo; ++j) mark[size_t(y.idx(b, c, j))] = 1;
    for (size_t i = 0; i < mark.size(); ++i)
      if (!mark[i] && !same_bits(y.store[i], poison<T>())) fail("fwd-outside-write", -1, -1, int64_t(i), 0, 0);
  }
  g_last_kernels = fwd_kernels;
  note_kernels();

  // ---------------- backward ----------------
  dy.init(cs.ykind, cs.B, cs.C, Lo, cs.yoff);
  for (int64_t b = 0; b < cs.B; ++b)
    for (int64_t c = 0; c < cs.C; ++c)
      for (int64_t j = 0; j < Lo; ++j) dy.at(b, c, j) = from_d<T>(U(rng));
  // dx in x's layout kind (like new_activation), but its own offset
  const int dxkind = cs.xkind == L_STRIDED ? L_CF : cs.xkind;
  dx.init(dxkind, cs.B, cs.C, cs.L, cs.yoff);
  dx2.init(dxkind, cs.B, cs.C, cs.L, cs.yoff);
  // which gradients: all, or a subset chosen from the case
  const int mask = cs.grads >= 0 ? cs.grads : int((cs.B * 7 + cs.C * 3 + cs.K + cs.L) % 8);
  const bool want_x = (mask & 1) || mask == 0;
  const bool want_w = (mask & 2) || mask == 0;
  const bool want_b = (mask & 4) || mask == 0;
  std::vector<W> dw(size_t(cs.C * cs.K), poison<W>()), db(size_t(cs.C), poison<W>());
  std::vector<W> dw2 = dw, db2 = db;
  std::vector<std::vector<unsigned char>> workspaces;
  auto alloc = [&](size_t bytes) -> void* {
    workspaces.emplace_back(bytes + 16);
    void* p = workspaces.back().data();
    std::memset(p, 0xFF, bytes);
    return p;
  };
  // The flipped kernel, as the extension passes it (dx as a forward of dy, dx_by_forward).
  std::vector<W> wflip(w.size());
  for (int64_t c = 0; c < cs.C; ++c)
    for (int64_t k = 0; k < cs.K; ++k) wflip[size_t(c * cs.K + k)] = w[size_t(c * cs.K + cs.K - 1 - k)];
  g_last_kernels.clear();
  backward<T, W>(pr, dy.ptr(), dy.d, x.ptr(), x.d, w.data(), want_x ? dx.ptr() : nullptr, dx.d,
                 want_w ? dw.data() : nullptr, want_b ? db.data() : nullptr, alloc, nullptr, dev,
                 cs.tune, nullptr, wflip.data());
  const std::string bwd_kernels = g_last_kernels;
  backward<T, W>(pr, dy.ptr(), dy.d, x.ptr(), x.d, w.data(), want_x ? dx2.ptr() : nullptr, dx2.d,
                 want_w ? dw2.data() : nullptr, want_b ? db2.data() : nullptr, alloc, nullptr, dev,
                 cs.tune, nullptr, wflip.data());
  g_last_kernels = bwd_kernels;
  if (cs.expect_bwd != nullptr && bwd_kernels.find(cs.expect_bwd) == std::string::npos) {
    fail("bwd-path", -1, -1, -1, 0, 0);
  }
  if (want_x) {
    for (int64_t b = 0; b < cs.B; ++b)
      for (int64_t c = 0; c < cs.C; ++c)
        for (int64_t i = 0; i < cs.L; ++i) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < cs.K; ++k) {
            const int64_t num = i + cs.pl - k * cs.d;
            if (num < 0 || num % cs.s != 0) continue;
            const int64_t j = num / cs.s;
            if (j >= Lo) continue;
            const double t = to_d(w[size_t(c * cs.K + k)]) * to_d(dy.at(b, c, j));
            ref += t;
            mag += std::fabs(t);
          }
          const double got = to_d(dx.at(b, c, i));
          const double tol = 4.0 * (cs.K + 2) * std::numeric_limits<A>::epsilon() * mag +
                             out_eps<T>() * std::fabs(ref) + out_abs<T>() +
                             split_err(bwd_kernels, mag);
          if (!(std::fabs(got - ref) <= tol)) fail("dx", b, c, i, got, ref);
          if (!same_bits(dx.at(b, c, i), dx2.at(b, c, i))) fail("dx-determinism", b, c, i, got, ref);
        }
    std::vector<char> mark(dx.store.size(), 0);
    for (int64_t b = 0; b < cs.B; ++b)
      for (int64_t c = 0; c < cs.C; ++c)
        for (int64_t i = 0; i < cs.L; ++i) mark[size_t(dx.idx(b, c, i))] = 1;
    for (size_t i = 0; i < mark.size(); ++i)
      if (!mark[i] && !same_bits(dx.store[i], poison<T>())) fail("dx-outside-write", -1, -1, int64_t(i), 0, 0);
  }
  const double n_terms = double(cs.B * Lo + 64);
  if (want_w) {
    for (int64_t c = 0; c < cs.C; ++c)
      for (int64_t k = 0; k < cs.K; ++k) {
        double ref = 0, mag = 0;
        for (int64_t b = 0; b < cs.B; ++b)
          for (int64_t j = 0; j < Lo; ++j) {
            const int64_t pos = j * cs.s - cs.pl + k * cs.d;
            if (pos < 0 || pos >= cs.L) continue;
            const double t = to_d(dy.at(b, c, j)) * to_d(x.at(b, c, pos));
            ref += t;
            mag += std::fabs(t);
          }
        const double got = to_d(dw[size_t(c * cs.K + k)]);
        const double tol = 2.0 * n_terms * std::numeric_limits<A>::epsilon() * mag +
                           out_eps<W>() * std::fabs(ref) + out_abs<W>();
        if (!(std::fabs(got - ref) <= tol)) fail("dw", 0, c, k, got, ref);
        if (!same_bits(dw[size_t(c * cs.K + k)], dw2[size_t(c * cs.K + k)])) fail("dw-determinism", 0, c, k, got, ref);
      }
  }
  if (want_b) {
    for (int64_t c = 0; c < cs.C; ++c) {
      double ref = 0, mag = 0;
      for (int64_t b = 0; b < cs.B; ++b)
        for (int64_t j = 0; j < Lo; ++j) {
          const double t = to_d(dy.at(b, c, j));
          ref += t;
          mag += std::fabs(t);
        }
      const double got = to_d(db[size_t(c)]);
      const double tol = 2.0 * n_terms * std::numeric_limits<A>::epsilon() * mag +
                         out_eps<W>() * std::fabs(ref) + out_abs<W>();
      if (!(std::fabs(got - ref) <= tol)) fail("db", 0, c, 0, got, ref);
      if (!same_bits(db[size_t(c)], db2[size_t(c)])) fail("db-determinism", 0, c, 0, got, ref);
    }
  }
  note_kernels();
  if (verbose || !ok) {
    std::printf("%s %s [x%d w%d b%d] fwd: %s bwd: %s\n", ok ? "ok  " : "FAIL", describe(cs).c_str(),
                int(want_x), int(want_w), int(want_b), fwd_kernels.c_str(), bwd_kernels.c_str());
  }
  if (!ok) ++g_failures;
  return ok;
}

template <typename F>
void for_types(int which, F&& f) {
  switch (which % 6) {
    case 0: f(float{}, float{}); break;
    case 1: f(__nv_bfloat16{}, float{}); break;
    case 2: f(__half{}, __half{}); break;
    case 3: f(double{}, double{}); break;
    case 4: f(__nv_bfloat16{}, __nv_bfloat16{}); break;
    default: f(__half{}, float{}); break;
  }
}

// Whether for_types(which) runs a half-precision x (bf16 or fp16, with either weight type).
bool is_half(int which) {
  const int t = which % 6;
  return t == 1 || t == 2 || t == 4 || t == 5;
}

int main_impl(int argc, char** argv) {
  const int n_random = argc > 1 ? std::atoi(argv[1]) : 200;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1234;
  const bool verbose = argc > 3;
  std::mt19937_64 rng(seed);
  int n = 0;

  auto run = [&](const Case& cs, int types) {
    for_types(types, [&](auto t, auto w) {
      using T = decltype(t);
      using W = decltype(w);
      run_case<T, W>(cs, rng, verbose);
    });
    ++n;
  };

  // Fixed cases: every K specialisation and the generic path, both layouts, every dtype pair.
  for (int types = 0; types < 6; ++types) {
    for (int64_t K : {1, 3, 4, 5, 9, 31}) {
      for (int xkind : {L_CF, L_CL}) {
        Case cs{2, 5, 300, K, 1, 1, (K - 1) / 2, K / 2, true, xkind, xkind, 0, 0, Tuning{}};
        run(cs, types);
        cs.pl = K - 1;  // causal
        cs.pr = 0;
        cs.bias = false;
        run(cs, types);
      }
    }
  }
  // Multi-tile rows (fp32 CF tile = 2048, CL tile = 32 positions), 130 channels (2 CL groups).
  {
    Case cs{2, 3, 4500, 5, 1, 1, 2, 2, true, L_CF, L_CF, 0, 0, Tuning{}};
    run(cs, 0);
    run(cs, 1);
    cs.C = 130;
    cs.L = 100;
    cs.xkind = cs.ykind = L_CL;
    run(cs, 0);
    run(cs, 2);
  }

  // CF half types (16-byte fetch groups of 8 elements, 4096-output backward tiles): every offset
  // off = (-pl) mod 8 for every K path, rows of three tiles (edge, interior, edge), all access
  // levels (L % 8 == 0: aligned groups; L % 8 == 4: single vectors only; L % 8 == 2 or odd: per
  // element; base offsets of x and of dy / dx lower the level too), symmetric / causal / other pads.
  {
    struct KS {
      int64_t K;
      bool spec;
    };
    const KS ks[] = {{3, true}, {5, true}, {9, true}, {9, false}, {4, true}, {13, true}};
    const int half_types[] = {1, 2, 4, 5};
    const int64_t lens[] = {8704, 8708, 8707, 8706};
    const int xoffs[] = {0, 0, 4, 1};
    const int yoffs[] = {0, 4, 0, 2};
    int idx = 0;
    for (const KS& k : ks) {
      for (int64_t pl = 0; pl < 8; ++pl, ++idx) {
        const int64_t pr = (k.K - 1 + idx) % (k.K + 2);  // includes pl + pr != K - 1
        Case cs{1, 2, lens[idx % 4], k.K, 1, 1, pl, pr, idx % 3 == 0, L_CF, L_CF,
                xoffs[(idx / 4) % 4], yoffs[(idx / 3) % 4], Tuning{}};
        cs.tune.allow_specialized = k.spec;
        cs.grads = idx % 5 == 4 ? (idx % 2 ? 1 : 6) : 7;  // mostly all; dx only; dw and db only
        run(cs, half_types[(idx + idx / 4) % 4]);  // every (type, length) pair per 16 cases
      }
    }
  }

  // Real-model-like shapes, scaled down (types: 0 fp32, 1 bf16/fp32 w, 2 fp16, 3 fp64).
  {
    struct M {
      int64_t C, L, K, s, d, pl, pr;
      int kind, types;
    };
    const M models[] = {
        {6, 700, 63, 1, 1, 31, 31, L_CF, 0},   // QuartzNet block
        {6, 700, 63, 1, 1, 31, 31, L_CL, 1},
        {5, 835, 87, 1, 2, 86, 86, L_CF, 2},   // QuartzNet last (dilation 2)
        {5, 1670, 33, 2, 1, 16, 16, L_CF, 0},  // QuartzNet first (stride 2)
        {5, 1670, 33, 2, 1, 16, 16, L_CL, 1},
        {4, 900, 7, 1, 9, 27, 27, L_CF, 0},    // SNAC (dilation 9)
        {4, 500, 31, 1, 1, 15, 15, L_CL, 2},   // Conformer
        {130, 60, 4, 1, 1, 3, 0, L_CL, 1},     // Mamba causal K=4, channel-last
        {9, 1100, 4, 1, 1, 3, 0, L_CF, 1},     // Mamba causal K=4, channel-first
        {7, 210, 9, 1, 1, 8, 0, L_CF, 1},      // FastConformer causal
        {7, 250, 11, 1, 1, 5, 5, L_CL, 0},     // Citrinet
    };
    for (const M& m : models) {
      Case cs{2, m.C, m.L, m.K, m.s, m.d, m.pl, m.pr, true, m.kind, m.kind, 0, 0, Tuning{}};
      run(cs, m.types);
    }
  }

  // Register-direct CF forward (dw_fwd_cf_reg_kernel): every compiled (K, pad_left) pair -- valid,
  // 'same' (both roundings for even K), causal -- on 16-byte-aligned rows (cfal) around the vector
  // (8 half / 4 float elements) and the warp item (1024 / 512 elements), right pads that end the
  // row early, on time or late (outputs of padding only), odd B and C, every dtype pair but
  // float64 (types: 0 fp32, 1 bf16 x fp32 w, 2 fp16, 4 bf16, 5 fp16 x fp32 w), bias or not.
  {
    const int reg_types[] = {0, 1, 2, 4, 5};
    const int64_t lens[] = {1, 2, 7, 8, 9, 15, 16, 17, 64, 2051};
    int idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      const int64_t pads[] = {0, (K - 1) / 2, K / 2, K - 1};
      for (int pi = 0; pi < 4; ++pi) {
        const int64_t pl = pads[pi];
        if (pi > 0 && pl == pads[pi - 1]) continue;
        for (int64_t L : lens) {
          int64_t pr = K - 1 - pl;
          if (idx % 3 == 1) pr += 5;
          if (idx % 3 == 2) pr = std::max<int64_t>(0, pr - 2);
          pr = std::max(pr, K - L - pl);  // at least one output
          Case cs{1 + 2 * (idx % 2), 3 + 2 * (idx / 2 % 2), L, K, 1, 1, pl, pr, idx % 2 == 0,
                  L_CFAL, L_CFAL, 0, 0, Tuning{}};
          cs.expect_fwd = "dw_fwd_cf_reg_kernel";
          run(cs, reg_types[(idx + idx / 10) % 5]);
          ++idx;
        }
      }
    }
    // Rows of several warp items (interior items take the unchecked loads), the grid-stride loop
    // (grid capped at 2 blocks), contiguous rows whose length is a multiple of the vector.
    idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      for (int64_t pl : {(K - 1) / 2, K - 1}) {
        Case cs{1, 2, idx % 2 ? 4099 : 4096, K, 1, 1, pl, K - 1 - pl, idx % 3 != 0,
                idx % 2 ? L_CFAL : L_CF, idx % 2 ? L_CFAL : L_CF, 0, 0, Tuning{}};
        if (idx % 4 == 2) cs.tune.max_grid = 2;
        cs.expect_fwd = "dw_fwd_cf_reg_kernel";
        run(cs, reg_types[idx % 5]);
        ++idx;
      }
    }
    // Fallbacks to the tile kernel: unaligned x / y pointer, 8-byte-aligned half rows, row
    // strides off the 16-byte grid, pad_left not compiled (K = 9: 3; K = 5: 1), pad_left beyond
    // the kernel span (here also beyond one vector), the knob off.
    struct FB {
      int64_t L, K, pl, pr;
      int xkind, ykind, xoff, yoff, types;
      bool reg;
    };
    const FB fbs[] = {
        {300, 3, 1, 1, L_CFAL, L_CFAL, 1, 0, 0, true},   // x 4-byte aligned
        {300, 4, 3, 0, L_CFAL, L_CFAL, 0, 2, 1, true},   // y 4-byte aligned
        {296, 5, 2, 2, L_CF, L_CF, 4, 0, 4, true},       // x 8-byte aligned (half)
        {296, 9, 4, 4, L_CF, L_CF, 0, 4, 2, true},       // y 8-byte aligned (half)
        {300, 3, 1, 1, L_CFPAD, L_CF, 0, 0, 0, true},    // x row stride 303
        {300, 9, 3, 5, L_CFAL, L_CFAL, 0, 0, 1, true},   // pad_left not compiled
        {300, 5, 1, 3, L_CFAL, L_CFAL, 0, 0, 5, true},   // pad_left not compiled
        {300, 3, 5, 0, L_CFAL, L_CFAL, 0, 0, 0, true},   // pad_left > span, > one fp32 vector
        {300, 4, 9, 1, L_CFAL, L_CFAL, 0, 0, 4, true},   // pad_left > span, > one half vector
        {300, 4, 3, 0, L_CFAL, L_CFAL, 0, 0, 1, false},  // knob off
    };
    for (const FB& f : fbs) {
      Case cs{3, 3, f.L, f.K, 1, 1, f.pl, f.pr, true, f.xkind, f.ykind, f.xoff, f.yoff, Tuning{}};
      cs.tune.allow_reg_fwd = f.reg;
      cs.tune.reg_realign = false;  // x and y apart: the realigning forward (tested below) stands aside
      // Half types take the tensor-core kernel there; the tile kernel with it switched off.
      cs.expect_fwd = is_half(f.types) ? "dw_fwd_cf_tc_kernel" : "dw_fwd_cf_kernel";
      run(cs, f.types);
      if (is_half(f.types)) {
        cs.tune.allow_tc = false;
        cs.expect_fwd = "dw_fwd_cf_kernel";
        run(cs, f.types);
      }
    }
    // The tile forward with y staged through the warps' areas (y rows without V-element
    // alignment; run_case compares the bits with the direct stores): every compiled K, rows of one
    // element to several tiles (odd lengths: warps partly past the row), y one to three elements
    // into its storage, padded row pitches, capped grids, float32, float64 (run-time K) and half
    // types without the tensor-core kernel.
    const int64_t slens[] = {1, 17, 301, 4099, 2051};
    const int stypes[] = {0, 3, 1};
    int si = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      for (int rep = 0; rep < 3; ++rep, ++si) {
        const int64_t L = slens[si % 5];
        const int64_t pl = si % 2 ? K - 1 : (K - 1) / 2;
        const int64_t pr = std::max<int64_t>(K - 1 - pl + si % 3, K - L - pl);
        Case cs{1 + si % 2, 3, L, K, 1, 1, pl, pr, si % 3 != 1, L_CF, si % 2 ? L_CFPAD : L_CF, 0,
                1 + si % 3, Tuning{}};
        cs.tune.allow_tc = false;
        cs.tune.reg_realign = false;  // else the register-direct forward realigns x to y's grid
        if (si % 4 == 3) cs.tune.max_grid = 2;
        // float64 has no compiled K: the run-time-K forward, its quarter warps' areas.
        cs.expect_fwd = stypes[si % 3] == 3 ? "dw_fwd_cf_rt_kernel" : "dw_fwd_cf_kernel";
        run(cs, stypes[si % 3]);
      }
    }
  }

  // Register-direct CF backward (dw_bwd_cf_reg_kernel): every compiled K with each compiled
  // pad_left and right pads that end the rows early, on time or late (Lo < L, = L, > L), L around
  // the vector and the warp item (1024 / 512 positions) and rows of several items, every subset of
  // the gradients, forced splits (blocks walking many items, more blocks than items), odd B and C,
  // every dtype pair but float64. x need not be aligned when dw is not wanted.
  {
    const int reg_types[] = {0, 1, 2, 4, 5};
    const int64_t lens[] = {1, 3, 8, 9, 17, 515, 1024, 1031, 2600};
    int idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      const int64_t pads[] = {0, (K - 1) / 2, K / 2, K - 1};
      for (int pi = 0; pi < 4; ++pi) {
        const int64_t pl = pads[pi];
        if (pi > 0 && pl == pads[pi - 1]) continue;
        for (int64_t L : lens) {
          int64_t pr = K - 1 - pl;
          if (idx % 3 == 1) pr += 6;
          if (idx % 3 == 2) pr = std::max<int64_t>(0, pr - 3);
          pr = std::max(pr, K - L - pl);  // at least one output
          const int64_t Lo = L + pl + pr - K + 1;
          const int kind = (L % 8 == 0 && Lo % 8 == 0 && idx % 4 == 0) ? L_CF : L_CFAL;
          Case cs{1 + 2 * (idx % 2), 1 + 2 * (idx / 3 % 3), L, K, 1, 1, pl, pr, idx % 2 == 0,
                  kind, kind, 0, 0, Tuning{}};
          cs.grads = (idx / 2) % 8;  // 0: all
          if (idx % 7 == 3) cs.tune.force_split = 1 + idx % 5;
          if (cs.grads != 0 && !(cs.grads & 2)) cs.xoff = 1;  // x not read: any alignment
          cs.expect_bwd = "dw_bwd_cf_reg_kernel";
          run(cs, reg_types[(idx + idx / 9) % 5]);
          ++idx;
        }
      }
    }
    // Rows off the 16-byte grid at the same shift in every tensor (kShift): contiguous rows of
    // lengths around the vector and the warp item, x, y (dy, dx) 0-3 elements into their storage
    // alike (so even lengths give shifted rows too), 'same' and causal pads, forward and every
    // subset of the gradients, forced splits and a capped grid now and then. Then the knob off
    // (the tile / tensor-core kernels) and x at another shift (not co-aligned: same).
    const long long shifted0 = g_emu_reg_shifted_items;
    const int64_t slens[] = {1, 5, 13, 17, 514, 1023, 1031, 2049};
    idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      for (int64_t pl : {(K - 1) / 2, K - 1}) {
        for (int64_t L : slens) {
          const int off = 1 + idx % 3;
          Case cs{1 + idx % 2, 2 + idx % 3, L, K, 1, 1, pl, K - 1 - pl, idx % 2 == 0, L_CF, L_CF,
                  off, off, Tuning{}};
          cs.grads = idx % 8;  // 0: all
          if (idx % 7 == 3) cs.tune.force_split = 1 + idx % 4;
          if (idx % 9 == 4) cs.tune.max_grid = 2;
          cs.tune.rows = 0;  // short rows too
          cs.expect_fwd = "dw_fwd_cf_reg_kernel";
          cs.expect_bwd = "dw_bwd_cf_reg_kernel";
          run(cs, reg_types[(idx + idx / 8) % 5]);
          ++idx;
        }
      }
    }
    if (g_emu_reg_shifted_items == shifted0) {
      std::printf("FAIL register-direct kernels: no item of a shifted row ran\n");
      ++g_failures;
    }
    for (int off : {0, 1}) {
      Case cs{2, 3, 1031, 9, 1, 1, 4, 4, true, L_CF, L_CF, 1 + off, 1, Tuning{}};
      cs.tune.rows = 0;
      cs.tune.reg_shifted = off != 0;  // off: the knob; on: x one element further than y / dy / dx
      cs.tune.reg_realign = false;     // the forward on x at another shift: below
      cs.expect_fwd = "dw_fwd_cf_kernel";
      cs.expect_bwd = "dw_bwd_cf_kernel";
      run(cs, 0);
    }
    // The forward on x and y rows at different shifts (kRealign): x 0-3 elements into its
    // storage and y at another offset, or 'valid' / asymmetric pads (rows of L and Lo elements),
    // lengths around the vector and the warp item, every compiled K and pad, forced capped grids
    // now and then. At least half the half-type cases must take the realigning forward (float32
    // never: the tile kernel, reg_realign_fwd_pays), and where dy and dx share their shift (Lo = L)
    // with dw wanted, the backward realigns x too (kRealignX) in float32 and half types to K 5,
    // never in half types at K 9 (reg_realign_bwd_pays); the knob off takes the tile /
    // tensor-core kernels.
    idx = 0;
    int realigned = 0, half_cases = 0;
    const int bwd_realigned0 = g_kernel_counts["dw_bwd_cf_reg_kernel/realign"];
    for (int64_t K : {3, 4, 5, 9}) {
      for (int64_t pl : {int64_t(0), (K - 1) / 2, K / 2, K - 1}) {
        for (int64_t L : slens) {
          const int64_t pr = pl == 0 ? idx % 3 : K - 1 - pl;  // 'valid' and short right pads too
          const int xoff = idx % 4, yoff = (idx / 4 + 1) % 5;
          Case cs{1 + idx % 2, 2 + idx % 3, L, K, 1, 1, pl, pr, idx % 3 != 1, idx % 5 == 2 ? L_CFPAD : L_CF,
                  L_CF, xoff, yoff, Tuning{}};
          cs.grads = 1 + idx % 7;
          if (idx % 9 == 4) cs.tune.max_grid = 2;
          cs.tune.rows = 0;
          const int types = reg_types[(idx + idx / 8) % 5];
          const bool half = is_half(types);
          cs.expect_fwd = half ? "dw_fwd_cf_reg_kernel" : nullptr;  // float32: reg or tile kernel
          const int before = g_kernel_counts["dw_fwd_cf_reg_kernel/realign"];
          const int bwd_before = g_kernel_counts["dw_bwd_cf_reg_kernel/realign"];
          run(cs, types);
          const bool fwd_realigned = g_kernel_counts["dw_fwd_cf_reg_kernel/realign"] > before;
          realigned += half && fwd_realigned;
          half_cases += half;
          if (!half && fwd_realigned) {
            std::printf("FAIL realigning forward taken by float32 (case %d)\n", idx);
            ++g_failures;
          }
          if (half && K == 9 && g_kernel_counts["dw_bwd_cf_reg_kernel/realign"] > bwd_before) {
            std::printf("FAIL realigning backward taken by a half type at K 9 (case %d)\n", idx);
            ++g_failures;
          }
          ++idx;
        }
      }
    }
    if (realigned < half_cases / 2) {
      std::printf("FAIL register-direct forward: only %d of %d half-type cases realigned\n", realigned,
                  half_cases);
      ++g_failures;
    }
    if (g_kernel_counts["dw_bwd_cf_reg_kernel/realign"] < bwd_realigned0 + 8) {
      std::printf("FAIL register-direct backward: x realigned in fewer than 8 launches\n");
      ++g_failures;
    }
    {
      Case cs{2, 3, 1031, 9, 1, 1, 4, 4, true, L_CF, L_CF, 2, 1, Tuning{}};
      cs.tune.rows = 0;
      cs.tune.reg_realign = false;
      cs.expect_fwd = "dw_fwd_cf_kernel";
      run(cs, 0);
    }
    // Fallbacks to the tile kernel: dy / dx 4-byte aligned, x 8-byte aligned with dw wanted,
    // pad_left not compiled, stride 2, the knob off.
    struct FB {
      int64_t L, K, s, pl, pr;
      int xoff, yoff, types, grads;
      bool reg;
    };
    const FB fbs[] = {
        {300, 3, 1, 1, 1, 0, 1, 0, 0, true},   // dy and dx 4-byte aligned
        {300, 9, 1, 4, 4, 4, 0, 2, 2, true},   // x 8-byte aligned (half), dw wanted
        {300, 9, 1, 3, 5, 0, 0, 1, 0, true},   // pad_left not compiled
        {300, 5, 2, 2, 2, 0, 0, 4, 0, true},   // stride 2
        {300, 4, 1, 3, 0, 0, 0, 1, 0, false},  // knob off
    };
    for (const FB& f : fbs) {
      Case cs{3, 3, f.L, f.K, f.s, 1, f.pl, f.pr, true, L_CFAL, L_CFAL, f.xoff, f.yoff, Tuning{}};
      cs.tune.allow_reg_bwd = f.reg;
      cs.tune.reg_realign = false;  // x apart from dy and dx: the realigning backward stands aside
      cs.grads = f.grads;
      // Half types with stride 1 take the tensor-core kernel there; the tile kernel with it off.
      const bool tc = is_half(f.types) && f.s == 1;
      cs.expect_bwd = tc ? "dw_bwd_cf_tc_kernel" : "dw_bwd_cf_kernel";
      run(cs, f.types);
      if (tc) {
        cs.tune.allow_tc = false;
        cs.expect_bwd = "dw_bwd_cf_kernel";
        run(cs, f.types);
      }
    }
  }

  // Tensor-core CF forward and backward (dw_fwd_cf_tc_kernel, dw_bwd_cf_tc_kernel): half types
  // (1 bf16 x fp32 w, 2 fp16, 4 bf16, 5 fp16 x fp32 w), run-time K from 1 to the longest
  // supported, 'same' / causal / valid / asymmetric pads and pads beyond the kernel span (every
  // offset -pad_left mod 8, both signs of the flipped kernel's pad), L around the m16 block (128),
  // the block pass (512) and the largest tiles (2048 / 4096), odd B and C, every subset of the
  // gradients, a capped grid (forward blocks walking runs of tiles across channels) and forced
  // splits (backward blocks walking many tiles).
  {
    const int tc_types[] = {1, 2, 4, 5};
    struct TC {
      int64_t L, K, pl, pr;
    };
    const TC tcs[] = {{300, 31, 15, 15},  {300, 31, 30, 0},   {129, 63, 31, 31}, {4100, 11, 5, 5},
                      {4097, 33, 16, 16}, {700, 87, 43, 43},  {513, 114, 57, 56}, {5, 7, 3, 3},
                      {1, 13, 6, 6},      {40, 2, 1, 0},      {600, 6, 0, 0},     {257, 1, 0, 0},
                      {1000, 17, 21, 3},  {777, 10, 2, 9},    {128, 15, 7, 7},    {640, 12, 4, 7},
                      {9000, 63, 62, 0},  {100, 31, 40, 40}};
    int idx = 0;
    for (const TC& t : tcs) {
      Case cs{1 + 2 * (idx % 2), 1 + idx % 3, t.L, t.K, 1, 1, t.pl, t.pr, idx % 3 != 1, L_CFAL,
              L_CFAL, 0, 0, Tuning{}};
      if (t.L > 3000) cs.C = 1;
      if (idx % 5 == 2) cs.tune.max_grid = 2;
      if (idx % 4 == 3) cs.tune.force_split = 1 + idx % 3;
      cs.grads = idx % 8;  // 0: all
      cs.expect_fwd = "dw_fwd_cf_tc_kernel";
      cs.expect_bwd = "dw_bwd_cf_tc_kernel";
      run(cs, tc_types[idx % 4]);
      ++idx;
    }
    // Fallbacks: float, K beyond the shift limit, the knob off, compiled K, a pad so far beyond
    // the span that the staged dy would not fit. (Unaligned rows take the tensor-core kernels:
    // the next block.)
    struct FB {
      int64_t L, K, pl, pr;
      int xoff, types, grads;
      bool tc;
      const char* fwd;
      const char* bwd;
    };
    const FB fbs[] = {
        {300, 31, 15, 15, 0, 0, 0, true, "dw_fwd_cf_rt_kernel", "dw_bwd_cf_kernel"},
        {300, 115, 57, 57, 0, 4, 0, true, "dw_fwd_cf_rt_kernel", "dw_bwd_cf_kernel"},
        {300, 31, 15, 15, 0, 2, 0, false, "dw_fwd_cf_rt_kernel", "dw_bwd_cf_kernel"},
        {300, 9, 4, 4, 0, 4, 0, true, "dw_fwd_cf_reg_kernel", "dw_bwd_cf_reg_kernel"},
        {2000, 31, 1500, 0, 0, 4, 1, true, "dw_fwd_cf_tc_kernel", "dw_bwd_cf_kernel"}};
    for (const FB& f : fbs) {
      Case cs{2, 3, f.L, f.K, 1, 1, f.pl, f.pr, true, L_CFAL, L_CFAL, f.xoff, 0, Tuning{}};
      cs.tune.allow_tc = f.tc;
      cs.grads = f.grads;
      cs.expect_fwd = f.fwd;
      cs.expect_bwd = f.bwd;
      run(cs, f.types);
    }
  }

  // The tensor-core kernels on rows that are not 16-byte aligned: contiguous rows of real-model
  // lengths (L = 500: 8-byte rows, 250 / 1670 / 210: 4-byte, 835 / 1 / 7 / 13: 2-byte), base
  // pointers 1 to 4 elements into the storage (x and y / dy / dx apart), padded row strides
  // (cfpad: L + 3) and aligned strides with a shifted base (cfal), so x, dy (8- / 4-byte copies or
  // element by element) and y / dx (pairs or single elements) each meet every alignment. Half
  // types incl. fp32 weights, K = 31 / 7 / 33 / 63 with 'same', causal, asymmetric pads and pads
  // beyond the span, every subset of the gradients; a capped grid and forced splits now and then.
  // The copies of each size and both store forms must have run, and the backward's rows of every
  // alignment both in 16-byte units (tc_stage_units; by default 2-byte rows, every third case 4-
  // and 8-byte rows too) and without (every third case, tc_units 0).
  {
    const long long staged0[3] = {g_tc_emu_staged[8], g_tc_emu_staged[4], g_tc_emu_staged[2]};
    const long long stored0 = g_tc_emu_stored[2];
    const long long realigned0 = g_tc_emu_realigned;
    const int tc_types[] = {1, 2, 4, 5};
    const int64_t lens[] = {500, 250, 835, 1670, 210, 1, 7, 13};
    const int64_t ks[] = {31, 7, 33, 63};
    const int kinds[] = {L_CF, L_CF, L_CFPAD, L_CF, L_CFAL};
    const int grads[] = {7, 1, 2, 4, 3, 5, 6};
    int idx = 0;
    for (int64_t L : lens) {
      for (int64_t K : ks) {
        int64_t pl = 0, pr = 0;
        switch (idx % 4) {
          case 0: pl = (K - 1) / 2; pr = K / 2; break;  // same
          case 1: pl = K - 1; break;                     // causal
          case 2: pl = 2 + idx % 5; pr = K + 3; break;   // asymmetric
          default: pl = K + 1 + idx % 6; pr = 1; break;  // pad beyond the span
        }
        pr = std::max(pr, K - L - pl);  // at least one output
        const int kind = kinds[idx % 5];
        Case cs{1 + idx % 2, L > 1000 ? 2 : 1 + idx % 3, L, K, 1, 1, pl, pr, idx % 3 != 1, kind,
                kind, 1 + idx % 4, (idx + 1) % 5, Tuning{}};
        if (idx % 6 == 5) cs.tune.max_grid = 2;
        if (idx % 7 == 3) cs.tune.force_split = 1 + idx % 3;
        cs.tune.tc_units = idx % 3 == 0 ? 0 : idx % 3 == 1 ? 2 : 8;
        cs.grads = grads[idx % 7];
        cs.expect_fwd = "dw_fwd_cf_tc_kernel";
        cs.expect_bwd = "dw_bwd_cf_tc_kernel";
        run(cs, tc_types[(idx + idx / 4) % 4]);
        ++idx;
      }
    }
    // x one element in (as a slice x[..., 1:]) with 8-byte rows of y / dy / dx, and the reverse.
    for (int rev = 0; rev < 2; ++rev) {
      Case cs{2, 3, 500, 31, 1, 1, 15, 15, true, L_CF, L_CF, rev ? 0 : 1, rev ? 1 : 0, Tuning{}};
      cs.grads = 0;
      cs.expect_fwd = "dw_fwd_cf_tc_kernel";
      cs.expect_bwd = "dw_bwd_cf_tc_kernel";
      run(cs, rev ? 2 : 5);
    }
    const bool all_paths = g_tc_emu_staged[8] > staged0[0] && g_tc_emu_staged[4] > staged0[1] &&
                           g_tc_emu_staged[2] > staged0[2] && g_tc_emu_stored[2] > stored0 &&
                           g_tc_emu_realigned > realigned0;
    if (!all_paths) {
      std::printf("FAIL tensor-core unaligned rows: a copy size or store form never ran\n");
      ++g_failures;
    }
  }

  // Run-time-K CF forward (dw_fwd_cf_rt_kernel). Padded form: items of 4 vectors, a gap slot
  // after every 4 tile vectors, ring of 8 window vectors, trips of 8 chunks of V taps whose last
  // chunk may be partial, then up to 7 checked chunks. Dense form (float32 / float64 on aligned
  // rows, K >= 40; switched off now and then to run the padded form on long kernels too): items
  // of 5 vectors, no gaps, tiles copied by cp.async, rows split evenly into tiles with a partial
  // last item, the first chunk of an item peeled (bias as the first tap's addend), ring of 7 or 8
  // vectors by window offset (trips of 28 / 32 float taps, 14 float64 taps; an odd ring passes the
  // weights between trips). K around the trips and their chunks (K = 24, 25, 28, 29, 31, 32, 33,
  // 56, 57, 60, 61, 63, 64, 65, 127, 1, 2, 6, 7, 13), every window offset (-pad_left) mod 8 (the
  // half types' windows start one vector into the tile for offsets 4..7) and pads beyond the span,
  // L < K, L = 1, odd L, rows of 1 to 4 tiles (the middle tiles of an aligned row take the
  // unchecked loads), every access level (aligned, contiguous rows of any length, padded row
  // strides, shifted base pointers), capped grids (blocks walking tiles and rows), bias or not;
  // float32, float64, and the half types where the tensor-core kernel does not run (switched off,
  // K > 114). Most cases want dx only: the backward is not under test here.
  {
    const int64_t fks[] = {28, 29, 31, 32, 33, 60, 61, 63, 64, 65, 127, 1, 2, 6, 7, 13, 24, 25, 56, 57};
    const int64_t lens[] = {301, 1, 40, 12300, 2049, 5, 4097, 9001, 63, 2};
    const int kinds[] = {L_CFAL, L_CF, L_CFPAD, L_CFAL, L_CF};
    int idx = 0;
    for (int64_t K : fks) {
      for (int rep = 0; rep < 3; ++rep, ++idx) {
        const int64_t L = lens[idx % 10];
        int64_t pl = 0, pr = 0;
        switch (idx % 6) {
          case 0: pl = (K - 1) / 2; pr = K / 2; break;  // same
          case 1: pl = K - 1; break;                     // causal
          case 2: pl = idx % 8; pr = idx % 5; break;     // every offset
          case 3: pl = K + 2 + idx % 7; pr = 1; break;   // pad beyond the span
          case 4: pr = K + 3; break;                     // outputs of padding only at the end
          default: pl = (K + idx) % 8; pr = (K - 1) / 2; break;
        }
        pr = std::max(pr, K - L - pl);  // at least one output
        Case cs{1 + idx % 2, L > 4000 ? 1 : 1 + idx % 3, L, K, 1, 1, pl, pr, idx % 3 != 2,
                kinds[idx % 5], kinds[idx % 5], idx % 7 == 3 ? 1 : 0, idx % 5 == 4 ? 2 : 0,
                Tuning{}};
        if (idx % 4 == 1) cs.tune.max_grid = 2;
        if (idx % 7 == 5) cs.tune.allow_rt_dense = false;
        cs.grads = idx % 9 == 0 ? 0 : 1;
        cs.expect_fwd = "dw_fwd_cf_rt_kernel";
        run(cs, idx % 4 == 3 ? 3 : 0);  // float64 every fourth case
      }
    }
    // Row groups of the run-time-K CF forward (rows of at most 64 items, several rows per block,
    // each group a multiple of 8 threads with its own tile and weights): row counts that leave the
    // last block's groups partly empty, capped grids (blocks walking row blocks), rows of 1 item
    // to 64 (group of 8 to 64 threads), every access level, both forms (dense on aligned rows from
    // K 40), float64 and the half types without tensor cores; groups wherever they fit
    // (rt_rows = 1), then one row per block (rt_rows = 0), which must take the other form, then
    // the default rule (either).
    {
      const int64_t gks[] = {10, 17, 33, 40, 44, 63, 64, 87, 129};
      const int64_t glens[] = {835, 418, 8, 100, 1023, 257, 1281, 33, 640, 1029};
      const int gkinds[] = {L_CF, L_CFAL, L_CFPAD, L_CFAL, L_CF};
      const int gtypes[] = {0, 0, 3, 1, 5};  // float32, float64, bf16 / fp16 with float32 weights
      int gi = 0;
      for (int64_t K : gks) {
        for (int rep = 0; rep < 4; ++rep, ++gi) {
          const int64_t L = glens[gi % 10];
          int64_t pl = 0, pr = 0;
          switch (gi % 4) {
            case 0: pl = (K - 1) / 2; pr = K / 2; break;
            case 1: pl = K - 1; break;
            case 2: pl = gi % 8; pr = gi % 5; break;
            default: pl = K + 1 + gi % 3; pr = 2; break;
          }
          pr = std::max(pr, K - L - pl);
          Case cs{1 + gi % 3, 3 + 2 * (gi % 7), L, K, 1, 1, pl, pr, gi % 3 != 1, gkinds[gi % 5],
                  gkinds[(gi + 1) % 5], gi % 4 == 2 ? 1 : 0, 0, Tuning{}};
          cs.tune.allow_tc = false;
          cs.tune.rt_rows = 1;
          if (gi % 3 == 2) cs.tune.max_grid = 2;
          cs.grads = 1;
          const int64_t Lo = L + pl + pr - K + 1;
          // Items are 4 vectors (padded form: 16 outputs, float64 8) or 5 (dense: 20, float64
          // 10); the row groups take rows of at most 64 items.
          const int ty = gtypes[gi % 5];
          const int64_t vo = ty == 3 ? 2 : 4;
          cs.expect_fwd = Lo <= 64 * 4 * vo   ? "dw_fwd_cf_rt_kernel/rows"
                          : Lo > 64 * 5 * vo ? "dw_fwd_cf_rt_kernel "
                                             : "dw_fwd_cf_rt_kernel";
          run(cs, ty);
          Case one = cs;
          one.tune.rt_rows = 0;
          one.expect_fwd = "dw_fwd_cf_rt_kernel ";
          run(one, ty);
          Case rule = cs;
          rule.tune.rt_rows = -1;
          rule.expect_fwd = "dw_fwd_cf_rt_kernel";
          run(rule, ty);
        }
      }
      // Groups whose tiles and weights do not fit the shared memory (16 groups of ~1.5 KB at K 87
      // over 16 KB) fall back to one row per block (~11 KB), not to another kernel.
      for (int64_t K : {87, 129}) {
        Case cs{2, 9, 100, K, 1, 1, (K - 1) / 2, K / 2, true, L_CF, L_CF, 0, 0, Tuning{}};
        cs.tune.rt_rows = 1;
        cs.tune.smem_limit = 16 * 1024;
        cs.grads = 1;
        cs.expect_fwd = "dw_fwd_cf_rt_kernel ";
        run(cs, 0);
      }
    }
    // The run-time-K CF tile backward with its dw partials in registers (float accumulation,
    // tiers of 16, 32, 64 and 128 padded taps) against the per-chunk form: K around the tiers' ends,
    // every window offset, pads beyond the span, rows of one to several tiles, capped grids
    // (blocks walking tiles and rows, partials carried across them), dw alone, dx alone, all.
    {
      const int64_t rks[] = {1, 2, 6, 13, 16, 17, 29, 32, 33, 47, 61, 64, 65, 87, 128, 129};
      const int64_t rlens[] = {300, 2049, 4500, 37, 1031};
      const int rkinds[] = {L_CFAL, L_CF, L_CFPAD};
      const int rtypes[] = {0, 1, 5};  // float32; bf16 and fp16 with float32 weights, tensor cores off
      int ri = 0;
      for (int64_t K : rks) {
        for (int rep = 0; rep < 2; ++rep, ++ri) {
          const int64_t L = rlens[ri % 5];
          int64_t pl = 0, pr = 0;
          switch (ri % 4) {
            case 0: pl = (K - 1) / 2; pr = K / 2; break;
            case 1: pl = K - 1; break;
            case 2: pl = ri % 8; pr = K + 2; break;
            default: pl = K + 1 + ri % 3; pr = 1; break;
          }
          pr = std::max(pr, K - L - pl);
          Case cs{1 + ri % 2, 2, L, K, 1, 1, pl, pr, ri % 3 != 1, rkinds[ri % 3], rkinds[ri % 3],
                  ri % 5 == 2 ? 1 : 0, 0, Tuning{}};
          cs.tune.allow_tc = false;
          cs.tune.allow_reg_bwd = false;
          cs.tune.allow_specialized = false;
          cs.tune.allow_rt_regs = rep == 0;
          cs.tune.allow_dx_forward = (ri / 2) % 2 == 0;  // dx as a forward of dy (float32, K > 32)
          if (ri % 3 == 0) cs.tune.max_grid = 2;
          cs.grads = ri % 4 == 1 ? 6 : (ri % 4 == 3 ? 1 : 0);
          cs.tune.rows = 0;
          // dx alone as a forward launches no backward kernel.
          cs.expect_bwd = cs.grads == 1 && cs.tune.allow_dx_forward ? nullptr : "dw_bwd_cf_kernel";
          run(cs, rtypes[ri % 3]);
        }
      }
    }
    // float32 dx as the forward of dy with the flipped kernel (dx_by_forward): K from 10 with dx
    // alone, 33 to 128 beside dw / db; pads 'same', causal, anti-causal, full and uneven; rows
    // shorter than the kernel; views one element in and padded rows; dx alone, dx and db, all.
    {
      const int64_t fks[] = {10, 17, 33, 40, 63, 64, 65, 70, 87, 128, 129};
      const int64_t flens[] = {2100, 3001, 300, 61, 4500};
      const int fkinds[] = {L_CF, L_CFAL, L_CFPAD};
      int fi = 0;
      for (int64_t K : fks) {
        for (int rep = 0; rep < 3; ++rep, ++fi) {
          const int64_t L = flens[fi % 5];
          int64_t pl = 0;
          int64_t pr = 0;
          switch (fi % 5) {
            case 0: pl = (K - 1) / 2; pr = K / 2; break;
            case 1: pl = K - 1; break;
            case 2: pr = K - 1; break;
            case 3: pl = K - 1; pr = K - 1; break;
            default: pl = fi % 7; pr = K - 1 - fi % 4; break;
          }
          pr = std::max(pr, K - L - pl);
          Case cs{1 + fi % 2, 3, L, K, 1, 1, pl, pr, fi % 2 == 0, fkinds[fi % 3], fkinds[(fi + 1) % 3],
                  fi % 4 == 1 ? 1 : 0, fi % 4 == 2 ? 1 : 0, Tuning{}};
          cs.tune.rows = 0;
          cs.grads = rep == 0 ? 1 : (rep == 1 ? 5 : 0);
          if (fi % 5 == 3) cs.tune.max_grid = 3;
          run(cs, 0);
        }
      }
    }
    // Compiled K with the compiled kernels switched off, and float64's compiled K.
    for (int64_t K : {3, 9}) {
      Case cs{2, 3, 300, K, 1, 1, K / 2, K / 2, true, L_CFAL, L_CFAL, 0, 0, Tuning{}};
      cs.tune.allow_specialized = false;
      cs.tune.allow_tc = false;
      cs.expect_fwd = "dw_fwd_cf_rt_kernel";
      run(cs, K == 3 ? 0 : 5);
      cs.tune.allow_specialized = true;
      run(cs, 3);
    }
    // A second tile of right padding only (its x tile starts past the row), aligned and not.
    for (int kind : {L_CFAL, L_CF}) {
      Case cs{1, 2, 301, 31, 1, 1, 15, 4500, true, kind, kind, 0, 0, Tuning{}};
      cs.grads = 1;
      cs.expect_fwd = "dw_fwd_cf_rt_kernel";
      run(cs, kind == L_CF ? 3 : 0);
    }
    // float64 around its 16-tap trip (padded form) and the dense form's 14-tap trip.
    for (int64_t K : {15, 16, 17, 41, 42, 43, 55, 56, 57}) {
      Case cs{1, 2, 700, K, 1, 1, K - 1 - K / 3, 2, K % 2 == 1, L_CF, L_CF, 0, 0, Tuning{}};
      cs.grads = 1;
      cs.expect_fwd = "dw_fwd_cf_rt_kernel";
      run(cs, 3);
    }
    // Half types: the tensor-core kernel off (every offset mod 8; unaligned rows too), K beyond it.
    const int half_types[] = {1, 2, 4, 5};
    idx = 0;
    for (int64_t pl = 0; pl < 8; ++pl, ++idx) {
      const int64_t K = idx % 2 ? 63 : 33;
      Case cs{1, 2, idx % 3 ? 703 : 8300, K, 1, 1, pl, K - 1 - pl + idx % 3, idx % 2 == 0, L_CFAL,
              L_CFAL, 0, 0, Tuning{}};
      if (cs.L > 4000) cs.C = 1;
      cs.tune.allow_tc = false;
      cs.grads = 1;
      cs.expect_fwd = "dw_fwd_cf_rt_kernel";
      run(cs, half_types[idx % 4]);
    }
    {
      Case cs{2, 2, 500, 127, 1, 1, 63, 63, true, L_CFAL, L_CFAL, 0, 0, Tuning{}};
      cs.grads = 1;
      cs.expect_fwd = "dw_fwd_cf_rt_kernel";
      run(cs, 1);
      cs.xkind = cs.ykind = L_CF;
      cs.L = 301;
      cs.K = 31;
      cs.pl = 5;
      cs.pr = 9;
      cs.xoff = 1;
      cs.tune.allow_tc = false;
      run(cs, 4);
    }
  }

  // Register-direct CL forward (dw_fwd_cl_reg_kernel): every compiled K with 'same' (both
  // roundings for even K), causal, valid and asymmetric pads (pad_left beyond the kernel span
  // too), L around the position chunk (8 / 16) and long rows, 16-byte-aligned positions (clal:
  // any C, position stride rounded up to 8 plus 8, poisoned gap; cl: contiguous, C % 8 == 0), C a
  // multiple of the thread's channel vector (1-4 channels) or not (ragged last vector), odd B,
  // every dtype pair but float64 (0 fp32, 1 bf16 x fp32 w, 2 fp16, 4 bf16, 5 fp16 x fp32 w), bias
  // or not, a few forced splits (grid-stride loop).
  {
    const int reg_types[] = {0, 1, 2, 4, 5};
    const int64_t lens[] = {1, 2, 7, 8, 9, 17, 64, 2051};
    const int64_t chans[] = {8, 3, 16, 5, 24, 130, 1, 40};
    int idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      const int64_t pads[][2] = {{(K - 1) / 2, K / 2}, {K / 2, (K - 1) / 2}, {K - 1, 0},
                                 {0, 0},           {1, K + 2},         {K + 1, 1}};
      for (int pi = 0; pi < 6; ++pi) {
        if (pi == 1 && K % 2 == 1) continue;
        for (int64_t L : lens) {
          const int64_t pl = pads[pi][0];
          int64_t pr = pads[pi][1];
          pr = std::max(pr, K - L - pl);  // at least one output
          int64_t C = chans[(idx + idx / 8) % 8];
          if (L == 2051) C = std::min<int64_t>(C, 8);
          const int kind = (C % 8 == 0 && idx % 3 == 0) ? L_CL : L_CLAL;
          Case cs{1 + 2 * (idx % 2), C, L, K, 1, 1, pl, pr, idx % 2 == 0, kind, kind, 0, 0,
                  Tuning{}};
          if (idx % 11 == 5) cs.tune.force_split = 1 + idx % 3;
          // L = 1: both views are also channel-first (one position), which wins.
          cs.expect_fwd = L > 1 ? "dw_fwd_cl_reg_kernel" : nullptr;
          run(cs, reg_types[(idx + idx / 5) % 5]);
          ++idx;
        }
      }
    }
    // Mamba-like: causal K = 4, bf16 x with fp32 weights, 2 chunks of 8 channel vectors.
    {
      Case cs{2, 64, 40, 4, 1, 1, 3, 0, false, L_CL, L_CL, 0, 0, Tuning{}};
      cs.expect_fwd = "dw_fwd_cl_reg_kernel";
      run(cs, 1);
      cs.C = 520;
      cs.L = 9;
      cs.bias = true;
      run(cs, 1);
    }
    // Fallbacks to the tile kernel: unaligned x / y pointer, position strides off the 16-byte
    // grid (padded, or contiguous with C % 8 != 0 for half / C % 4 != 0 for float), stride 2,
    // K not compiled, compiled K switched off, the knob off.
    struct FB {
      int64_t C, L, K, s, pl, pr;
      int xkind, ykind, xoff, yoff, types;
      bool reg, spec;
    };
    const FB fbs[] = {
        {16, 40, 3, 1, 1, 1, L_CL, L_CL, 1, 0, 0, true, true},      // x 4-byte aligned
        {16, 40, 4, 1, 3, 0, L_CL, L_CL, 0, 2, 1, true, true},      // y 4-byte aligned
        {16, 40, 5, 1, 2, 2, L_CLPAD, L_CL, 0, 0, 4, true, true},   // x position stride 19
        {12, 40, 9, 1, 4, 4, L_CL, L_CL, 0, 0, 2, true, true},      // half, position stride 12
        {6, 40, 3, 1, 1, 1, L_CL, L_CL, 0, 0, 0, true, true},       // float, position stride 6
        {16, 40, 3, 2, 1, 1, L_CLAL, L_CLAL, 0, 0, 5, true, true},  // stride 2
        {16, 40, 7, 1, 3, 3, L_CLAL, L_CLAL, 0, 0, 1, true, true},  // K not compiled
        {16, 40, 3, 1, 1, 1, L_CLAL, L_CLAL, 0, 0, 4, true, false}, // compiled K off
        {16, 40, 4, 1, 3, 0, L_CLAL, L_CLAL, 0, 0, 1, false, true}, // knob off
    };
    for (const FB& f : fbs) {
      Case cs{3, f.C, f.L, f.K, f.s, 1, f.pl, f.pr, true, f.xkind, f.ykind, f.xoff, f.yoff,
              Tuning{}};
      cs.tune.allow_reg_fwd = f.reg;
      cs.tune.allow_specialized = f.spec;
      cs.expect_fwd = "dw_fwd_cl_kernel";
      run(cs, f.types);
    }
    // float64 keeps the tile kernel.
    Case cs{1, 8, 40, 3, 1, 1, 1, 1, true, L_CLAL, L_CLAL, 0, 0, Tuning{}};
    cs.expect_fwd = "dw_fwd_cl_kernel";
    run(cs, 3);
  }

  // Register-direct CL backward (dw_bwd_cl_reg_kernel): every compiled K with 'same' (both
  // roundings for even K), causal, valid and asymmetric pads, pad_left beyond the kernel span
  // (the items shift left) and far beyond it, L around the item (8, 12 or 16 positions) and
  // longer rows, 16-byte-aligned positions (clal any C, cl C % 8 == 0), C a multiple of the
  // channel vector (1 float / 2 half channels) or not (ragged), blocks of several position slots
  // or of one (C >= 128 channel vectors: partials straight from registers), odd B, every dtype
  // pair but float64, bias or not, forced splits (grid-stride loop), every gradient subset.
  {
    const int reg_types[] = {0, 1, 2, 4, 5};
    const int64_t lens[] = {1, 2, 7, 8, 12, 15, 16, 17, 40, 301};
    const int64_t chans[] = {8, 3, 16, 5, 24, 130, 1, 40, 301};
    const int grads[] = {7, 1, 2, 4, 3, 5, 6, 7, 7};
    int idx = 0;
    for (int64_t K : {3, 4, 5, 9}) {
      const int64_t pads[][2] = {{(K - 1) / 2, K / 2}, {K / 2, (K - 1) / 2}, {K - 1, 0}, {0, 0},
                                 {1, K + 2}, {K + 1, 1}, {2 * K + 20, 3}};
      for (int pi = 0; pi < 7; ++pi) {
        if (pi == 1 && K % 2 == 1) continue;
        for (int64_t L : lens) {
          const int64_t pl = pads[pi][0];
          int64_t pr = pads[pi][1];
          pr = std::max(pr, K - L - pl);  // at least one output
          const int64_t Lo = L + pl + pr - K + 1;
          int64_t C = chans[(idx + idx / 9) % 9];
          if (L == 301) C = std::min<int64_t>(C, 24);
          const int kind = (C % 8 == 0 && idx % 3 == 0) ? L_CL : L_CLAL;
          Case cs{1 + 2 * (idx % 2), C, L, K, 1, 1, pl, pr, idx % 2 == 0, kind, kind, 0, 0,
                  Tuning{}};
          if (idx % 7 == 3) cs.tune.force_split = 1 + idx % 4;
          cs.grads = grads[idx % 9];
          // One position in x and dy, or one unit-stride channel: the channel-first path wins.
          const bool cf_too = (L == 1 && Lo == 1) || (kind == L_CL && C == 1);
          cs.expect_bwd = cf_too ? nullptr : "dw_bwd_cl_reg_kernel";
          run(cs, reg_types[(idx + idx / 5) % 5]);
          ++idx;
        }
      }
    }
    // Longer rows and the shapes of interest, scaled down: Mamba (causal K = 4, bf16 x with fp32
    // weights), 'same' K = 3 / 5 / 9 in fp32 and bf16; one position slot (half C >= 256, float
    // C >= 128) with a ragged last vector and idle vectors in the last group.
    {
      struct S {
        int64_t B, C, L, K, pl, pr;
        int types, grads;
        int64_t split;
      };
      const S ss[] = {
          {2, 520, 40, 4, 3, 0, 1, 7, 0},     {3, 64, 100, 4, 3, 0, 1, 7, 0},
          {1, 16, 2051, 3, 1, 1, 0, 7, 0},    {1, 8, 2051, 9, 4, 4, 4, 7, 2},
          {2, 258, 33, 5, 2, 2, 0, 7, 0},     {2, 301, 37, 9, 4, 4, 1, 3, 0},
          {1, 129, 20, 3, 1, 1, 0, 6, 1},     {1, 257, 19, 9, 8, 0, 2, 5, 3},
          {3, 130, 64, 4, 1, 2, 5, 7, 0},     {1, 40, 1000, 5, 2, 2, 2, 1, 1},
      };
      for (const S& t : ss) {
        Case cs{t.B, t.C, t.L, t.K, 1, 1, t.pl, t.pr, t.B % 2 == 1, L_CLAL, L_CLAL, 0, 0,
                Tuning{}};
        if (t.C % 8 == 0) cs.xkind = cs.ykind = L_CL;
        cs.grads = t.grads;
        cs.tune.force_split = t.split;
        cs.expect_bwd = "dw_bwd_cl_reg_kernel";
        run(cs, t.types);
      }
    }
    // x need not be aligned when dw is not wanted (only dy and dx are read / written).
    {
      Case cs{3, 16, 40, 3, 1, 1, 1, 1, true, L_CL, L_CL, 1, 0, Tuning{}};
      cs.grads = 5;
      cs.expect_bwd = "dw_bwd_cl_reg_kernel";
      run(cs, 0);
      cs.grads = 4;
      run(cs, 2);
    }
    // Fallbacks to the tile kernel: unaligned x (dw wanted) / dy and dx, position strides off the
    // 16-byte grid, stride 2, K not compiled, compiled K switched off, the knob off, float64.
    struct FB {
      int64_t C, L, K, s, pl, pr;
      int xkind, ykind, xoff, yoff, types, grads;
      bool reg, spec;
    };
    const FB fbs[] = {
        {16, 40, 3, 1, 1, 1, L_CL, L_CL, 1, 0, 0, 7, true, true},      // x 4-byte aligned
        {16, 40, 4, 1, 3, 0, L_CL, L_CL, 2, 0, 1, 2, true, true},      // x 4-byte aligned
        {16, 40, 4, 1, 3, 0, L_CL, L_CL, 0, 2, 1, 7, true, true},      // dy, dx 4-byte aligned
        {16, 40, 5, 1, 2, 2, L_CL, L_CL, 0, 4, 4, 4, true, true},      // dy 8-byte aligned
        {16, 40, 5, 1, 2, 2, L_CLPAD, L_CLPAD, 0, 0, 4, 7, true, true}, // position stride 19
        {12, 40, 9, 1, 4, 4, L_CL, L_CL, 0, 0, 2, 7, true, true},      // half, position stride 12
        {6, 40, 3, 1, 1, 1, L_CL, L_CL, 0, 0, 0, 7, true, true},       // float, position stride 6
        {16, 40, 3, 2, 1, 1, L_CLAL, L_CLAL, 0, 0, 5, 7, true, true},  // stride 2
        {16, 40, 7, 1, 3, 3, L_CLAL, L_CLAL, 0, 0, 1, 7, true, true},  // K not compiled
        {16, 40, 3, 1, 1, 1, L_CLAL, L_CLAL, 0, 0, 4, 7, true, false}, // compiled K off
        {16, 40, 4, 1, 3, 0, L_CLAL, L_CLAL, 0, 0, 1, 7, false, true}, // knob off
        {8, 40, 3, 1, 1, 1, L_CLAL, L_CLAL, 0, 0, 3, 7, true, true},   // float64
    };
    for (const FB& f : fbs) {
      Case cs{3, f.C, f.L, f.K, f.s, 1, f.pl, f.pr, true, f.xkind, f.ykind, f.xoff, f.yoff,
              Tuning{}};
      cs.tune.allow_reg_bwd = f.reg;
      cs.tune.allow_specialized = f.spec;
      cs.grads = f.grads;
      cs.expect_bwd = "dw_bwd_cl_kernel";
      run(cs, f.types);
    }
  }

  // Short-row kernels (dw_fwd_cf_rows_kernel, dw_bwd_cf_rows_kernel), forced on: the exact sizes
  // (3, 5, 7, 9, 11, 31) and every padded tap count (4, 8, 12, 16, 24, 32) at its edges, pad_left 0 / middle / K - 1 with right pads that
  // end the rows early, on time or late, rows shorter than a vector, than a window and than a warp's
  // lanes, rows of several warp passes (B not a multiple of the rows per pass), unaligned rows and
  // row strides, every subset of the gradients, forced splits and a capped grid (grid-stride
  // blocks), every dtype pair but float64 (which takes the other kernels).
  {
    const int rows_types[] = {0, 1, 2, 4, 5};
    const int64_t Ks[] = {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16, 17, 24, 25, 31, 32};
    const int64_t lens[] = {1, 5, 8, 13, 40, 210, 257};
    int idx = 0;
    for (int64_t K : Ks) {
      for (int pi = 0; pi < 3; ++pi) {
        const int64_t pl = pi == 0 ? 0 : pi == 1 ? (K - 1) / 2 : K - 1;
        const int64_t L = lens[(idx + pi) % 7];
        int64_t pr = K - 1 - pl;
        if (idx % 3 == 1) pr += 3;
        if (idx % 3 == 2) pr = std::max<int64_t>(0, pr - 2);
        pr = std::max(pr, K - L - pl);  // at least one output
        Case cs{1 + (idx % 4) * 4, 1 + idx % 3, L, K, 1, 1, pl, pr, idx % 2 == 0,
                idx % 5 == 3 ? L_CFPAD : L_CF, idx % 5 == 3 ? L_CFPAD : L_CF, int(idx % 3),
                int(idx / 3 % 3), Tuning{}};
        cs.tune.rows = 1;
        cs.grads = (idx % 7) + 1;  // every non-empty subset of dx, dw, db
        if (idx % 6 == 1) cs.tune.force_split = 1 + idx % 4;
        if (idx % 6 == 4) cs.tune.max_grid = 2;
        cs.expect_fwd = "dw_fwd_cf_rows_kernel";
        cs.expect_bwd = "dw_bwd_cf_rows_kernel";
        cs.tune.rows_words = 0;
        cs.tune.rows_words_bwd = 0;
        cs.tune.rows_db = 0;  // single-buffered forward (SEPCONV1D_DW_ROWS_DB=0), half types'
        cs.tune.rows_mma = 1;  // arithmetic on the tensor cores from K 11 at every length (the
        cs.tune.rows_mma_dw = idx % 2 == 0 ? -1 : 0;  // backward's from K 12, dw / db on either kind)
        run(cs, rows_types[(idx + pi) % 5]);
        cs.tune.rows_db = 1;  // the double-buffered forward (SEPCONV1D_DW_ROWS_DB=1), by default
        cs.tune.rows_mma = -1;  // (the tensor cores on rows longer than 256)
        run(cs, rows_types[(idx + pi + 1) % 5]);
        // The words forward and backward (SEPCONV1D_DW_ROWS_WORDS=1) where the rows are
        // word-aligned: float32 always, half types where the lengths and the offsets are even.
        // Half types with the arithmetic on the tensor cores from K 11 (by default).
        cs.tune.rows_words = 1;
        cs.tune.rows_words_bwd = 1;
        cs.tune.rows_mma_dw = idx % 2 == 0 ? 0 : -1;  // the half types' dw / db beside the
        run(cs, rows_types[(idx + pi + 2) % 5]);      // tensor-core dx on either kind of core
        // ... and the words forward by 4-byte words only (SEPCONV1D_DW_ROWS_WORDS16=0), on the
        // CUDA cores (SEPCONV1D_DW_ROWS_MMA=0).
        cs.tune.rows_words16 = 0;
        cs.tune.rows_mma = 0;
        run(cs, rows_types[(idx + pi + 3) % 5]);
        ++idx;
      }
    }
    // Default routing: short unaligned rows (FastConformer-like, causal K 9) take them; long
    // aligned rows keep the register-direct kernels; float64 and K 33 never take them.
    Case fc{5, 3, 210, 9, 1, 1, 8, 0, true, L_CF, L_CF, 1, 0, Tuning{}};
    fc.expect_fwd = "dw_fwd_cf_rows_kernel";
    fc.expect_bwd = "dw_bwd_cf_rows_kernel";
    run(fc, 1);
    run(fc, 0);
    // The words forward and backward by default on word-aligned rows: FastConformer's (pl 8: the
    // backward's dy one element into its vectors), Citrinet's (odd pl 5: the forward's windows one
    // element in, the backward's x windows), rows of an odd length in float32, and each gradient
    // alone (dx only: dy's rows cut to what dx reads, with a long right pad).
    Case fw{5, 3, 210, 9, 1, 1, 8, 0, true, L_CF, L_CF, 0, 0, Tuning{}};
    fw.expect_fwd = "dw_fwd_cf_rows_kernel/words";
    fw.expect_bwd = "dw_bwd_cf_rows_kernel/words";
    run(fw, 1);
    run(fw, 0);
    Case cw{3, 4, 250, 11, 1, 1, 5, 5, true, L_CF, L_CF, 2, 2, Tuning{}};
    cw.expect_fwd = "dw_fwd_cf_rows_kernel/words";
    cw.expect_bwd = "dw_bwd_cf_rows_kernel/words";
    run(cw, 2);
    Case ow{6, 2, 77, 7, 1, 1, 3, 3, false, L_CF, L_CF, 1, 0, Tuning{}};
    ow.expect_fwd = "dw_fwd_cf_rows_kernel/words";
    ow.expect_bwd = "dw_bwd_cf_rows_kernel/words";
    run(ow, 0);
    for (int grads : {1, 2, 4}) {
      Case gw{7, 3, 96, 5, 1, 1, 2, 20, true, L_CF, L_CF, 0, 0, Tuning{}};
      gw.grads = grads;
      gw.expect_bwd = "dw_bwd_cf_rows_kernel/words";
      run(gw, grads == 2 ? 1 : 0);
    }
    // The words forward's 16-byte copies and stores: channel counts that make the batch stride a
    // whole number of 16-byte chunks, so that each channel's rows share their offset within a
    // chunk (every offset across the channels and the base offsets), windows starting 0-7
    // elements into their vectors (pl and the offsets), rows shorter than a chunk, rows whose head
    // or tail is the whole row, a batch of one row, float32 rows of odd lengths.
    {
      struct W16 {
        int64_t B, C, L, K, pl, pr;
        int xoff, yoff, types;
      };
      const W16 w16[] = {
          {6, 8, 210, 9, 8, 0, 0, 0, 1},   {6, 8, 210, 9, 8, 0, 2, 6, 0},
          {3, 16, 250, 11, 5, 5, 0, 4, 1}, {3, 16, 250, 11, 5, 5, 6, 2, 2},
          {5, 8, 64, 3, 1, 1, 4, 0, 0},    {4, 8, 6, 5, 2, 2, 2, 2, 1},
          {2, 8, 2, 3, 1, 1, 0, 2, 0},     {1, 3, 90, 7, 3, 3, 2, 4, 4},
          {4, 4, 77, 7, 3, 3, 1, 3, 0},    {4, 4, 77, 7, 6, 0, 3, 1, 0},
          {9, 8, 500, 31, 15, 15, 2, 0, 0}, {9, 8, 500, 31, 15, 15, 2, 0, 4},
          {9, 4, 13, 4, 0, 3, 1, 2, 0},
          {3, 8, 500, 31, 15, 15, 6, 2, 2}, {2, 8, 130, 12, 3, 8, 4, 4, 5},
          {3, 8, 98, 16, 15, 0, 2, 0, 1},   {2, 8, 260, 24, 12, 11, 0, 6, 4},
          {1, 8, 1024, 32, 31, 0, 0, 0, 2},
      };
      for (const W16& w : w16) {
        Case c{w.B, w.C, w.L, w.K, 1, 1, w.pl, w.pr, true, L_CF, L_CF, w.xoff, w.yoff, Tuning{}};
        c.tune.rows = 1;
        c.tune.rows_words16 = 1;  // at every K (by default from K 9)
        c.expect_fwd = "dw_fwd_cf_rows_kernel/words";
        run(c, w.types);
        // Half types on word-aligned rows: every window offset on the tensor cores where K >= 11
        // (by default) and on the CUDA cores (SEPCONV1D_DW_ROWS_MMA=0), both weight types.
        if (w.L % 2 == 0 && w.xoff % 2 == 0 && w.yoff % 2 == 0) {
          run(c, is_half(w.types) ? w.types : 4);
          c.tune.rows_mma = 0;
          run(c, is_half(w.types) ? 5 : 2);
        }
      }
    }
    Case k33{2, 2, 100, 33, 1, 1, 16, 16, true, L_CF, L_CF, 0, 0, Tuning{}};
    k33.tune.rows = 1;
    run(k33, 2);
    run(k33, 3);
  }

  // Random cases.
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  auto choice = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + pick(rng) % v.size());
  };
  for (int r = 0; r < n_random; ++r) {
    Case cs{};
    cs.B = choice({1, 1, 2, 3});
    cs.C = choice({1, 2, 3, 5, 8, 33, 130});
    cs.K = choice({1, 2, 3, 3, 4, 5, 5, 7, 9, 9, 13, 31});
    cs.s = choice({1, 1, 1, 2, 3});
    cs.d = choice({1, 1, 1, 2, 3});
    cs.L = choice({1, 2, 3, 7, 37, 64, 130, 257, 600, 1100, 2100, 9000});
    // A quarter of the cases within reach of the register-direct forward (compiled K, stride and
    // dilation 1, 16-byte-aligned rows); the padding decides whether it is taken.
    const bool reg_reach = pick(rng) % 4 == 0;
    if (reg_reach) {
      cs.K = choice({3, 4, 5, 9});
      cs.s = 1;
      cs.d = 1;
    }
    // A fifth of the others within reach of the tensor-core kernels (run-time K, stride and
    // dilation 1, half types below; rows of any alignment).
    const bool tc_reach = !reg_reach && pick(rng) % 5 == 0;
    if (tc_reach) {
      cs.K = choice({7, 13, 31, 33, 63});
      cs.s = 1;
      cs.d = 1;
    }
    const int64_t span = cs.d * (cs.K - 1);
    switch (pick(rng) % 6) {
      case 0: cs.pl = span / 2; cs.pr = span - span / 2; break;       // same
      case 1: cs.pl = span; cs.pr = 0; break;                         // causal
      case 2: cs.pl = 0; cs.pr = 0; break;                            // valid
      case 3: cs.pl = choice({0, 1, 2, 5}); cs.pr = choice({0, 3, 6}); break;
      case 4: cs.pl = span + choice({1, 3, 9}); cs.pr = choice({0, 2}); break;  // pad > span
      default: cs.pl = span / 2 + 1; cs.pr = span; break;
    }
    if (cs.L + cs.pl + cs.pr < span + 1) cs.pr += span + 1 - (cs.L + cs.pl + cs.pr);
    cs.bias = pick(rng) % 2;
    cs.xkind = int(pick(rng) % L_NKINDS);
    // y follows x (new_activation), sometimes another layout (direct path in backward)
    cs.ykind = (pick(rng) % 5 == 0) ? int(pick(rng) % L_NKINDS)
               : (cs.xkind == L_CL || cs.xkind == L_CLPAD) ? L_CL
               : cs.xkind == L_CLAL ? L_CLAL
               : (cs.xkind == L_CFAL ? L_CFAL : L_CF);
    cs.xoff = choice({0, 0, 0, 1, 2, 3});
    cs.yoff = choice({0, 0, 0, 1, 2});
    if (reg_reach) {
      cs.xkind = cs.ykind = pick(rng) % 2 ? L_CFAL : L_CLAL;
      cs.xoff = cs.yoff = 0;
    }
    if (tc_reach) {
      cs.xkind = cs.ykind = int(choice({L_CF, L_CF, L_CFPAD, L_CFAL}));
      cs.xoff = int(choice({0, 1, 2, 3, 4}));
      cs.yoff = int(choice({0, 1, 2, 3, 4}));
    }
    const int t = pick(rng) % 10;
    if (t == 0) cs.tune.allow_specialized = false;
    if (t == 1) cs.tune.force_direct = true;
    if (t == 2) cs.tune.max_grid = 3;
    if (t == 3) cs.tune.force_split = choice({1, 2, 3, 7});
    if (t == 4) cs.tune.smem_limit = 4096;  // forces the direct kernels for larger tiles
    if (t == 5) cs.tune.allow_reg_fwd = false;
    if (t == 6) cs.tune.allow_reg_bwd = false;
    if (t == 7) cs.tune.allow_tc = false;
    if (t == 8) cs.tune.rows = 1;  // wherever the short-row kernels apply
    if (t == 9) {  // the tensor-core backward's 4- and 8-byte rows in 16-byte units, and the
                   // register-direct kernels on aligned rows only
      cs.tune.tc_units = 8;
      cs.tune.reg_shifted = false;
    }
    // keep the emulation time sane
    if (cs.B * cs.C * cs.L > 40000) cs.L = std::max<int64_t>(1, 40000 / (cs.B * cs.C));
    if (cs.L + cs.pl + cs.pr < span + 1) cs.pr += span + 1 - (cs.L + cs.pl + cs.pr);
    run(cs, tc_reach ? int(choice({1, 2, 4, 5})) : int(pick(rng) % 6));
  }
  std::printf("%d cases, %d failures\n", n, g_failures);
  for (auto& kv : g_kernel_counts) std::printf("  %-28s %d\n", kv.first.c_str(), kv.second);
  std::printf("  cp.async copies: 16 B %lld, 8 B %lld, 4 B %lld; tensor-core rows element-wise %lld, "
              "realigned from 16-byte units %lld; outputs stored as pairs %lld, singly %lld\n",
              (long long)g_tc_emu_staged[16], (long long)g_tc_emu_staged[8],
              (long long)g_tc_emu_staged[4], (long long)g_tc_emu_staged[2],
              (long long)g_tc_emu_realigned,
              (long long)g_tc_emu_stored[4], (long long)g_tc_emu_stored[2]);
  for (auto& kv : g_ystage_by_kernel) std::printf("  y staged: %-28s %d\n", kv.first.c_str(), kv.second);
  for (const char* k : {"dw_fwd_cf_rt_kernel", "dw_fwd_cf_rt_kernel/rows", "dw_fwd_cf_kernel"}) {
    if (g_ystage_by_kernel[k] == 0) {
      std::printf("FAIL no %s launch staged y\n", k);
      return 1;
    }
  }
  return g_failures == 0 ? 0 : 1;
}

}  // namespace dwtest

#ifdef DW_EMU_MAIN
int main(int argc, char** argv) { return dwtest::main_impl(argc, argv); }
#endif
