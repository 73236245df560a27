// Standalone harness for the warp-specialised separable forward (sep_fwd_ws_kernel), without
// torch: one kernel instantiation compiles in seconds, where the wheel takes 15-25 minutes, so a
// kernel experiment (a variant behind a -D flag in the headers) can be built here and timed on the
// GPU machine in one short call. Built and run by scripts/ws_forward_harness.sh; not part of the
// package or of CI.
//
//   ws_forward_harness [B Cin Cout L K [reps]]     (default: the seed shape, 32 256 512 4096 9)
//
// bf16 x and weights, 'same' padding, channel-first; the kernel the library picks for that case
// (x by tensor map; the depthwise on the tensor cores, or with -DHARNESS_FFMA its FFMA form).
// -DHARNESS_FP16: float16 instead of bf16 (the same kernel; h rounded to float16 in the check).
// -DHARNESS_TF32: float32 x and weights on TF32 instead (FFMA depthwise, one chunk per step, as
// the library runs them). -DHARNESS_BN=64 and -DHARNESS_KSC=1|2 pick another tile width and
// chunks per consumer step (the plan refuses shapes that do not take them); -DHARNESS_CM=4 (with
// -DHARNESS_BN=64, and -DHARNESS_KSC=1 for 16-bit) the chunk-major form. It checks 8192 sampled
// outputs of every input set against a float reference (h rounded to bf16 as the kernel's MMA
// operand), then times the main kernel with CUDA events over 3 rotating input sets (192 MiB each
// at the seed in bf16, not cache-resident).
// Where L % 8 != 0 (16-bit rows not 16-byte aligned) it runs the kernel without the x tensor map,
// rows staged in 16-byte units (kLoadRows16), as the library does.
// Environment:
//   WITHPREP=1   with -DHARNESS_FFMA: time the weight preparation kernel with each call (the
//                tensor-core depthwise kernel needs none)
//   ZERO_X=1     x all zeros: the same work on data that does not toggle
//   LONG=1       also 20000 calls back to back (sustained load: the H200 reaches its power cap,
//                csrc/NOTES.md "Twenty-fourth session")
//   YPAD=n       y rows of L + n elements (rows that are not 16-byte aligned take the epilogue's
//                other store paths)
//   NOROWS16=1   rows that are not 16-byte aligned staged in 4-byte pairs instead
//   NORUNS=1     the tensor-core depthwise kernel without the run epilogue (wg_store_runs) where
//                the library would take it (ws_perm_rows_fit)
// Timing experiments that break the results (a phase skipped) must not run on zero or stale data
// without saying so: the GPU's clock depends on the data (see ZERO_X).
#include "cuda/separable_plan.cuh"
#include "cuda/tensor_maps.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace sepconv1d::cuda::sep;
using sepconv1d::ConvGeometry;
#ifdef HARNESS_TF32
// float32 x and weights on TF32 (the library's kernel for them: FFMA depthwise, prepared W).
#define HARNESS_FFMA 1
using T = float;
constexpr bool kTf32 = true;
#ifdef HARNESS_KSC
constexpr int kSC = HARNESS_KSC;
#else
constexpr int kSC = 1;  // one chunk per consumer step (two-chunk steps are for 16-bit x)
#endif
__device__ __host__ inline float to_f(T v) { return v; }
__device__ inline T from_f(float v) { return v; }
// h as the kernel's MMA operand: TF32 (the check's tolerance covers its rounding mode).
__device__ inline float round_h(float v) { return v; }
#else
#ifdef HARNESS_FP16
using T = __half;
#else
using T = __nv_bfloat16;
#endif
constexpr bool kTf32 = false;
#ifdef HARNESS_KSC
constexpr int kSC = HARNESS_KSC;
#else
constexpr int kSC = 2;
#endif
#ifdef HARNESS_FP16
__device__ inline float to_f(T v) { return __half2float(v); }
__device__ inline T from_f(float v) { return __float2half(v); }
__device__ inline float round_h(float v) { return __half2float(__float2half(v)); }
#else
__device__ inline float to_f(T v) { return __bfloat162float(v); }
__device__ inline T from_f(float v) { return __float2bfloat16(v); }
__device__ inline float round_h(float v) { return __bfloat162float(__float2bfloat16(v)); }
#endif
#endif

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// Uniform values in [-scale, scale) from a hash of the index.
__global__ void fill_uniform(T* p, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    p[i] = from_f((static_cast<float>(h & 0xffffff) / 16777216.0f - 0.5f) * 2.0f * scale);
  }
}

// |y - ref| / (|ref| + 0.1) at the sampled flat output indices.
__global__ void check_samples(const T* x, const T* dw, const T* dwb, const T* pw, const T* pwb,
                              const T* y, int B, int Cin, int Cout, int L, int K, int pl,
                              int64_t ypitch, const int64_t* idx, int n, float* err) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int64_t id = idx[t];
  const int j = static_cast<int>(id % L);
  const int o = static_cast<int>((id / L) % Cout);
  const int64_t b = id / (int64_t(L) * Cout);
  float acc = to_f(pwb[o]);
  for (int c = 0; c < Cin; ++c) {
    float h = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int pos = j + k - pl;
      if (pos >= 0 && pos < L) h += to_f(dw[c * K + k]) * to_f(x[(b * Cin + c) * L + pos]);
    }
#ifdef HARNESS_FFMA
    // The FFMA kernel rounds h without the depthwise bias (folded into the output bias).
    h = round_h(h) + to_f(dwb[c]);
#else
    // The tensor-core depthwise adds the depthwise bias before h is rounded.
    h = round_h(h + to_f(dwb[c]));
#endif
    acc += to_f(pw[int64_t(o) * Cin + c]) * h;
  }
  const float got = to_f(y[(b * Cout + o) * ypitch + j]);
  err[t] = got == got ? std::fabs(got - acc) / (std::fabs(acc) + 0.1f) : 1e30f;
}

int main(int argc, char** argv) {
  int B = 32, Cin = 256, Cout = 512, L = 4096, K = 9, reps = 200;
  if (argc >= 6) {
    B = std::atoi(argv[1]);
    Cin = std::atoi(argv[2]);
    Cout = std::atoi(argv[3]);
    L = std::atoi(argv[4]);
    K = std::atoi(argv[5]);
  }
  if (argc >= 7) reps = std::atoi(argv[6]);
  const int pl = (K - 1) / 2, pr = K - 1 - pl;
  const ConvGeometry g{.batch = B, .channels = Cin, .out_channels = Cout, .length = L,
                       .kernel_size = K, .out_length = L, .stride = 1, .pad_left = pl,
                       .pad_right = pr, .dilation = 1};
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int optin = 0, per_sm = 0;
  CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  CK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  const DevCaps caps{optin, per_sm, prop.multiProcessorCount};

  constexpr int NS = 3;  // rotating input sets
  // YPAD: y rows of L + YPAD elements (rows that are not 16-byte aligned: the epilogue's other
  // store paths).
  const int64_t ypitch = L + (std::getenv("YPAD") ? std::atoi(std::getenv("YPAD")) : 0);
  const int64_t nx = int64_t(B) * Cin * L, ny = int64_t(B) * Cout * ypitch;
  std::vector<T*> xs(NS), ys(NS);
  for (int s = 0; s < NS; ++s) {
    CK(cudaMalloc(&xs[s], nx * sizeof(T)));
    CK(cudaMalloc(&ys[s], ny * sizeof(T)));
    if (std::getenv("ZERO_X")) {
      CK(cudaMemset(xs[s], 0, nx * sizeof(T)));
    } else {
      fill_uniform<<<1024, 256>>>(xs[s], nx, 17 + s, 1.0f);
    }
    CK(cudaMemset(ys[s], 0xff, ny * sizeof(T)));  // poison (NaN)
  }
  T *dw, *dwb, *pw, *pwb;
  CK(cudaMalloc(&dw, int64_t(Cin) * K * sizeof(T)));
  CK(cudaMalloc(&dwb, Cin * sizeof(T)));
  CK(cudaMalloc(&pw, int64_t(Cout) * Cin * sizeof(T)));
  CK(cudaMalloc(&pwb, Cout * sizeof(T)));
  fill_uniform<<<64, 256>>>(dw, int64_t(Cin) * K, 5, 1.0f / 3);
  fill_uniform<<<64, 256>>>(dwb, Cin, 6, 0.1f);
  fill_uniform<<<64, 256>>>(pw, int64_t(Cout) * Cin, 7, 1.0f / 16);
  fill_uniform<<<64, 256>>>(pwb, Cout, 8, 0.1f);
  CK(cudaDeviceSynchronize());

#ifdef HARNESS_BN
  constexpr int BN = HARNESS_BN;
#else
  constexpr int BN = 128;
#endif
#ifdef HARNESS_CM
  constexpr int kG = HARNESS_CM;  // chunk-major: kG Cout passes side by side
#else
  constexpr int kG = 0;
#endif
#ifdef HARNESS_FFMA
  // x by tensor map: pass-major only for the FFMA depthwise.
  const auto kernel = sep_fwd_ws_kernel<T, BN, false, kG, kSC, kG == 0, false>;
  constexpr bool words = false, rows16_off = true;
#else
  const auto kernel = sep_fwd_ws_kernel<T, BN, false, kG, kSC, true, true>;
  // The run epilogue's kernel, where the library takes it (ws_perm_rows_fit).
  const auto kernel_runs = sep_fwd_ws_kernel<T, BN, false, kG, kSC, true, true, kG == 0>;
  // Rows that are not 16-byte aligned (L % 8 != 0): the kernel without the x tensor map (rows in
  // 16-byte units or 4-byte pairs, as planned).
  const auto kernel_words = sep_fwd_ws_kernel<T, BN, false, kG, kSC, false, true>;
  const bool words = (int64_t(L) * sizeof(T)) % 16 != 0;
  const bool rows16_off = std::getenv("NOROWS16") != nullptr;
#endif
  // x by tensor map wherever pass-major (the loader warpgroup depends on it for TF32)
  const int threads = ws_threads(ws_has_loader<T, BN>(kG, kG == 0 && !words));
  std::vector<FwdPlan> plans(NS);
  for (int s = 0; s < NS; ++s) {
    FwdPlan& plan = plans[s];
    View3 xv{xs[s], int64_t(Cin) * L, L, 1};
    xv.rows16 = words && !rows16_off;  // as the library: 16-byte units where the plan takes them
    const int64_t ysb = int64_t(Cout) * ypitch;
    const bool planned =
        kG > 0 ? plan_fwd_ws_cm<T, BN, false, kG>(g, xv, ys[s], ysb, ypitch, 1, caps, plan)
               : plan_fwd_ws<T, BN, false, kSC>(g, xv, ys[s], ysb, ypitch, 1, caps, plan);
    if (!planned) {
      std::fprintf(stderr, "this shape does not take the BN %d, %d-chunk-step%s plan\n", BN, kSC,
                   kG > 0 ? " chunk-major" : "");
      return 1;
    }
    if (!words && !ws_x_map_fits<false>(plan.p)) {
      std::fprintf(stderr, "x's window does not fit a tensor-map box\n");
      return 1;
    }
#ifndef HARNESS_FFMA
    if (words ? !mma_dw_words_fit<T, T, BN>(plan.p) : !mma_dw_fits<T, T, BN>(plan.p)) {
      std::fprintf(stderr, "the tensor-core depthwise does not fit this K (build with -DHARNESS_FFMA)\n");
      return 1;
    }
#endif
    unsigned char* ws = nullptr;
    CK(cudaMalloc(&ws, plan.ws_bytes));
    bind_fwd_workspace(plan, ws, pw, Cin, 1, pwb, dw, dwb, false);
    // The library's own encodings (csrc/cuda/tensor_maps.cuh).
    if (!words && !encode_x_map<T>(plan.p, B, WsTile<T, BN>::BK)) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
      return 1;
    }
    sep_prep_kernel<T, T, float, kTf32><<<unsigned(plan.prep_blocks), 256>>>(plan.pp);
    CK(cudaGetLastError());
#ifndef HARNESS_FFMA
    // The tensor-core depthwise kernel reads the weights as they are (no preparation kernel):
    // W through a tensor map over pw.
    if (!encode_w_map<T>(plan.p, pw, Cin, Cout)) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled (W) failed\n");
      return 1;
    }
    bind_fwd_unprepared(plan.p, pw, pwb, dw, dwb);
#endif
  }
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(plans[0].smem)));
#ifndef HARNESS_FFMA
  CK(cudaFuncSetAttribute(kernel_runs, cudaFuncAttributeMaxDynamicSharedMemorySize, int(plans[0].smem)));
  CK(cudaFuncSetAttribute(kernel_words, cudaFuncAttributeMaxDynamicSharedMemorySize, int(plans[0].smem)));
  // NORUNS=1: the kernel without the run epilogue wherever the library would take it.
  const char* noruns = std::getenv("NORUNS");
  const bool runs = !words && kG == 0 && ws_perm_rows_fit(plans[0].p) && (noruns == nullptr || !*noruns);
  std::printf("epilogue: %s%s\n", runs ? "runs (h in perm_h_row's order)" : "traded vectors",
              words ? (rows16_off ? "; x rows in 4-byte pairs" : "; x rows in 16-byte units") : "");
#endif
  std::printf("plan: %lld blocks, %lld B shared, %d W stages, %d h slots, %d items, %d Cout passes per item\n",
              static_cast<long long>(plans[0].blocks), static_cast<long long>(plans[0].smem),
              plans[0].p.w_stages, plans[0].p.h_slots, plans[0].p.n_items, plans[0].p.ppg);
  const bool with_prep = std::getenv("WITHPREP") != nullptr;
  auto launch = [&](int s) {
#ifdef HARNESS_FFMA
    if (with_prep) sep_prep_kernel<T, T, float, kTf32><<<unsigned(plans[s].prep_blocks), 256>>>(plans[s].pp);
#endif
#ifndef HARNESS_FFMA
    if (words) {
      kernel_words<<<unsigned(plans[s].blocks), threads, size_t(plans[s].smem)>>>(plans[s].p);
      return;
    }
    if (runs) {
      kernel_runs<<<unsigned(plans[s].blocks), threads, size_t(plans[s].smem)>>>(plans[s].p);
      return;
    }
#endif
    kernel<<<unsigned(plans[s].blocks), threads, size_t(plans[s].smem)>>>(plans[s].p);
  };

  for (int s = 0; s < NS; ++s) launch(s);
  CK(cudaDeviceSynchronize());
  constexpr int kSamples = 8192;
  std::vector<int64_t> hidx(kSamples);
  std::mt19937_64 rng(123);
  const uint64_t n_out = static_cast<uint64_t>(B) * Cout * L;  // sampled (b, o, j), y's rows padded
  for (int64_t& v : hidx) v = static_cast<int64_t>(rng() % n_out);
  int64_t* didx;
  float* derr;
  CK(cudaMalloc(&didx, kSamples * sizeof(int64_t)));
  CK(cudaMalloc(&derr, kSamples * sizeof(float)));
  CK(cudaMemcpy(didx, hidx.data(), kSamples * sizeof(int64_t), cudaMemcpyHostToDevice));
  double worst = 0;
  for (int s = 0; s < NS; ++s) {
    check_samples<<<(kSamples + 127) / 128, 128>>>(xs[s], dw, dwb, pw, pwb, ys[s], B, Cin, Cout, L,
                                                   K, pl, ypitch, didx, kSamples, derr);
    std::vector<float> herr(kSamples);
    CK(cudaMemcpy(herr.data(), derr, kSamples * sizeof(float), cudaMemcpyDeviceToHost));
    for (float e : herr) worst = std::max(worst, double(e));
  }
  const bool ok = worst < 2e-2;
  std::printf("check: worst error %.3e (%s)\n", worst, ok ? "ok" : "FAILED");

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 10; ++i) launch(i % NS);
  std::vector<float> ts;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    launch(i % NS);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1000);
  }
  CK(cudaGetLastError());
  std::sort(ts.begin(), ts.end());
  std::printf("time (us): min %.1f, median %.1f, p90 %.1f over %d calls\n", ts[0], ts[ts.size() / 2],
              ts[ts.size() * 9 / 10], reps);
  if (std::getenv("LONG")) {
    constexpr int kCalls = 20000;
    CK(cudaEventRecord(e0));
    for (int i = 0; i < kCalls; ++i) launch(i % NS);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("sustained: %.1f us per call over %d calls\n", ms * 1000 / kCalls, kCalls);
  }
  return ok ? 0 : 2;
}
