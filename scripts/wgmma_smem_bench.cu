// Microbenchmark: wgmma bf16 throughput of the fused forward's product shapes on one SM, alone and
// with other warps streaming shared memory at the same time (what the depthwise producers and the
// copy engine do in sep_fwd_ws_kernel). Counts SM cycles (clock64), so the result does not depend
// on the clock the card runs at. Not part of the package or of CI.
//
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I csrc \
//     scripts/wgmma_smem_bench.cu -o wgmma_smem_bench
//   ./wgmma_smem_bench MODE [TRAFFIC [ITERS]]
//
// MODE: 0 = m64n128k16, A and B in shared memory (the landed kernel's products); 1 = m64n256k16,
// both in shared memory; 2 = m64n128k16, A in registers. TRAFFIC (mode 0 only: the others need
// more registers than 512 threads leave): two more warpgroups stream a 64 KB region meanwhile,
// 0 = none, 1 = dependent 16-byte loads, 2 = dependent stores and loads, 3 / 4 / 5 = 8 independent
// 16-byte loads / stores / both per thread and loop. Results: csrc/NOTES.md, twenty-sixth session.
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#include "cuda/separable_wgmma.cuh"

using namespace sepconv1d::cuda::sep;

// The 64 accumulator operands d[o .. o + 63] of a wgmma asm statement.
#define ACC64(d, o) \
  "+f"(d[(o) + 0]), "+f"(d[(o) + 1]), "+f"(d[(o) + 2]), "+f"(d[(o) + 3]), "+f"(d[(o) + 4]), \
  "+f"(d[(o) + 5]), "+f"(d[(o) + 6]), "+f"(d[(o) + 7]), "+f"(d[(o) + 8]), "+f"(d[(o) + 9]), \
  "+f"(d[(o) + 10]), "+f"(d[(o) + 11]), "+f"(d[(o) + 12]), "+f"(d[(o) + 13]), \
  "+f"(d[(o) + 14]), "+f"(d[(o) + 15]), "+f"(d[(o) + 16]), "+f"(d[(o) + 17]), \
  "+f"(d[(o) + 18]), "+f"(d[(o) + 19]), "+f"(d[(o) + 20]), "+f"(d[(o) + 21]), \
  "+f"(d[(o) + 22]), "+f"(d[(o) + 23]), "+f"(d[(o) + 24]), "+f"(d[(o) + 25]), \
  "+f"(d[(o) + 26]), "+f"(d[(o) + 27]), "+f"(d[(o) + 28]), "+f"(d[(o) + 29]), \
  "+f"(d[(o) + 30]), "+f"(d[(o) + 31]), "+f"(d[(o) + 32]), "+f"(d[(o) + 33]), \
  "+f"(d[(o) + 34]), "+f"(d[(o) + 35]), "+f"(d[(o) + 36]), "+f"(d[(o) + 37]), \
  "+f"(d[(o) + 38]), "+f"(d[(o) + 39]), "+f"(d[(o) + 40]), "+f"(d[(o) + 41]), \
  "+f"(d[(o) + 42]), "+f"(d[(o) + 43]), "+f"(d[(o) + 44]), "+f"(d[(o) + 45]), \
  "+f"(d[(o) + 46]), "+f"(d[(o) + 47]), "+f"(d[(o) + 48]), "+f"(d[(o) + 49]), \
  "+f"(d[(o) + 50]), "+f"(d[(o) + 51]), "+f"(d[(o) + 52]), "+f"(d[(o) + 53]), \
  "+f"(d[(o) + 54]), "+f"(d[(o) + 55]), "+f"(d[(o) + 56]), "+f"(d[(o) + 57]), \
  "+f"(d[(o) + 58]), "+f"(d[(o) + 59]), "+f"(d[(o) + 60]), "+f"(d[(o) + 61]), \
  "+f"(d[(o) + 62]), "+f"(d[(o) + 63])

__device__ __forceinline__ void mma_ss_128(float (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, "
      "%5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "
      "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 0;\n}\n"
    : ACC64(d, 0) : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_ss_256(float (&d)[128], uint64_t da, uint64_t db) {
  asm volatile(
      "{\nwgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, "
      "%5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "
      "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
      "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
      "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, "
      "%101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, "
      "%114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127}, %128, %129, 1, 1, 1, 0, 0;\n}\n"
    : ACC64(d, 0), ACC64(d, 64) : "l"(da), "l"(db));
}
__device__ __forceinline__ void mma_rs_128(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, "
      "%5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "
      "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, "
      "1, 1, 1, 0;\n}\n"
    : ACC64(d, 0) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wait_n() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

constexpr int kSmem = 200 * 1024;

template <int MODE, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) bench(int iters, int traffic, unsigned long long* out,
                                                 float* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  // [A: 2 x 8 KB][B: 32 KB][traffic: 64 KB][flag]
  unsigned char* A = smem;
  unsigned char* B = smem + 16384;
  uint4* T = reinterpret_cast<uint4*>(smem + 16384 + 32768);
  volatile int* flag = reinterpret_cast<volatile int*>(smem + 16384 + 32768 + 65536);
  const int tid = threadIdx.x;
  for (int i = tid; i < (16384 + 32768) / 4; i += blockDim.x) {
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u * (i & 1);  // finite operands
  }
  if (tid == 0) *flag = 0;
  __syncthreads();
  if (tid < 256) {
        const int wn = tid >> 7;
    constexpr int N = MODE == 1 ? 256 : 128;
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
    const uint64_t da = wg_desc(A + wn * 8192), db = wg_desc(B);
    uint32_t a[4] = {0x3c003c00u, 0x3c003c00u, 0u, 0u};
    asm volatile("bar.sync 1, 256;" ::: "memory");
    const unsigned long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
      fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        auto& d = *reinterpret_cast<float(*)[N / 2]>(acc);
        if constexpr (MODE == 0) mma_ss_128(d, da + 2 * kk, db + 2 * kk);
        if constexpr (MODE == 1) mma_ss_256(d, da + 2 * kk, db + 2 * kk);
        if constexpr (MODE == 2) mma_rs_128(d, a, db + 2 * kk);
      }
      commit();
      wait_n<1>();
    }
    wait_n<0>();
#pragma unroll
    for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(acc[i])::"memory");
    const unsigned long long t1 = clock64();
    asm volatile("bar.sync 1, 256;" ::: "memory");
    if (tid == 0) *flag = 1;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) s += acc[i];
    if (s == 1234.5f) sink[tid] = s;
    if ((tid & 127) == 0) out[(blockIdx.x * 4 + wn) ] = t1 - t0;
  } else {
        // traffic warpgroups: stream the 64 KB region until the consumers are done
    const int t = tid - 256;
    unsigned long long bytes = 0;
    uint4 v = make_uint4(t, 1, 2, 3);
    const unsigned long long t0 = clock64();
    if (traffic >= 3) {
      // 8 independent 16-byte accesses per thread and loop: as much shared-memory traffic as the
      // warps can issue (3: loads, 4: stores, 5: both)
      uint4 w[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) w[j] = v;
      while (*flag == 0) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const int idx = (t + (r * 8 + j) * 256) & 4095;
            if (traffic != 4) { const uint4 u = T[idx]; w[j].x ^= u.x; w[j].y ^= u.w; }
            if (traffic != 3) T[(idx + 2048) & 4095] = w[j];
          }
          bytes += traffic == 5 ? 256 : 128;
        }
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) v.x ^= w[j].x ^ w[j].y;
    } else if (traffic) {
      while (*flag == 0) {
#pragma unroll 4
        for (int r = 0; r < 16; ++r) {
          const int idx = (t + r * 256) & 4095;
          if (traffic == 2) T[idx] = v;
          uint4 w = T[(idx + 37) & 4095];
          v.x ^= w.y;
          bytes += traffic == 2 ? 32 : 16;
        }
      }
    }
    const unsigned long long t1 = clock64();
    if (v.x == 12345) sink[tid] = 1.f;
    if (t == 0) { out[blockIdx.x * 4 + 2] = bytes * 256; out[blockIdx.x * 4 + 3] = t1 - t0; }
  }
}

int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  const int traffic = argc > 2 ? atoi(argv[2]) : 0;
  const int iters = argc > 3 ? atoi(argv[3]) : 20000;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* out;
  float* sink;
  cudaMalloc(&out, sms * 4 * sizeof(unsigned long long));
  cudaMalloc(&sink, 512 * sizeof(float));
  const int threads = traffic ? 512 : 256;
  if (traffic && mode != 0) {
    printf("traffic runs with mode 0 only\n");
    return 1;
  }
  auto k = traffic ? bench<0, 512>
                   : (mode == 0 ? bench<0, 256> : mode == 1 ? bench<1, 256> : bench<2, 256>);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  cudaMemset(out, 0, sms * 4 * 8);
  for (int rep = 0; rep < 2; ++rep) k<<<sms, threads, kSmem>>>(iters, traffic, out, sink);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
  std::vector<unsigned long long> h(sms * 4);
  cudaMemcpy(h.data(), out, h.size() * 8, cudaMemcpyDeviceToHost);
  std::vector<double> cyc;
  double tb = 0, tc = 0;
  for (int s = 0; s < sms; ++s) {
    cyc.push_back(double(std::max(h[s * 4], h[s * 4 + 1])));  // the slower warpgroup
    tb += h[s * 4 + 2];
    tc += h[s * 4 + 3];
  }
  std::sort(cyc.begin(), cyc.end());
  const int N = mode == 1 ? 256 : 128;
  const double flop = 2.0 * 2 * 64.0 * N * 16 * 4 * iters;  // both warpgroups
  const double c = cyc[cyc.size() / 2];
  printf("mode %d (%s) traffic %d: %.0f cycles, %.0f FLOP/cycle/SM (%.0f%% of 4096), "
         "traffic %.1f B/cycle\n",
         mode, mode == 0 ? "m64n128 SS" : mode == 1 ? "m64n256 SS" : "m64n128 RS", traffic, c,
         flop / c,
         100.0 * flop / c / 4096, tc > 0 ? tb / tc : 0.0);
  return 0;
}
