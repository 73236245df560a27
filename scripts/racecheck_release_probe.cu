// Which release of a shared buffer compute-sanitizer's racecheck accepts before a bulk copy
// (cp.async.bulk) refills it. Not part of the package or of CI: a probe for the pattern of the
// warp-specialised forward's x buffers (csrc/cuda/separable_fwd_ws.cuh, the x loader).
//
// 8 reader warps read a buffer filled by a bulk copy (completing mbarrier `full`), then release it
// through mbarrier `empty`, which one loader thread waits on before refilling it:
//   MODE 0: lane 0 of each warp arrives after __syncwarp (empty counts 8 arrivals)
//   MODE 1: every reader thread arrives (256)
//   MODE 2: the readers meet at a named barrier, then thread 0 arrives (1)
// All three order the reads before the refill under the PTX memory model (bar.warp.sync and
// bar.sync order the other threads' reads before the arriving thread's release). racecheck
// (CUDA 13.0, on the H200) reported 14 hazards for MODE 0 and for MODE 2, none for MODE 1: it
// takes an mbarrier release as ordering only the arriving thread's own accesses.
//
//   nvcc -arch=sm_90a -O2 -lineinfo -DMODE=0 scripts/racecheck_release_probe.cu -o probe0
//   compute-sanitizer --tool racecheck ./probe0
#include <cstdint>
#include <cstdio>

#ifndef MODE
#define MODE 0
#endif

namespace {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint64_t* b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint64_t* b) {
  asm volatile("{.reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0];}" ::"r"(smem_addr(b))
               : "memory");
}
__device__ __forceinline__ void bar_arrive_tx(uint64_t* b, uint32_t bytes) {
  asm volatile("{.reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;}" ::"r"(
                   smem_addr(b)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* b, uint32_t parity) {
  asm volatile(
      "{.reg .pred d; WAIT: mbarrier.try_wait.parity.shared::cta.b64 d, [%0], %1; @!d bra WAIT;}" ::
          "r"(smem_addr(b)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(b))
      : "memory");
}

constexpr int kReaders = 256, kFloats = kReaders, kBytes = kFloats * 4, kChunks = 16;
constexpr int kEmptyCount = MODE == 0 ? kReaders / 32 : MODE == 1 ? kReaders : 1;

__global__ void probe(const float* src, float* out) {
  __shared__ alignas(128) float buf[2][kFloats];
  __shared__ uint64_t full[2], empty[2];
  const int t = threadIdx.x;
  if (t == 0) {
    for (int i = 0; i < 2; ++i) {
      bar_init(full + i, 1);
      bar_init(empty + i, kEmptyCount);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t >= kReaders) {  // the loader: chunk i into buffer i % 2 once its previous use is released
    if (t == kReaders) {
      for (int i = 0; i < kChunks; ++i) {
        const int st = i & 1;
        if (i >= 2) bar_wait(empty + st, ((i >> 1) - 1) & 1);
        bar_arrive_tx(full + st, kBytes);
        bulk_copy(buf[st], src + i * kFloats, kBytes, full + st);
      }
    }
    return;
  }
  float acc = 0.0f;
  for (int i = 0; i < kChunks; ++i) {
    const int st = i & 1;
    bar_wait(full + st, (i >> 1) & 1);
    acc += buf[st][t];
#if MODE == 0
    __syncwarp();
    if ((t & 31) == 0) bar_arrive(empty + st);
#elif MODE == 1
    bar_arrive(empty + st);
#else
    asm volatile("bar.sync 1, %0;" ::"n"(kReaders) : "memory");
    if (t == 0) bar_arrive(empty + st);
#endif
  }
  out[t] = acc;
}

}  // namespace

int main() {
  float *src = nullptr, *out = nullptr;
  cudaMalloc(&src, kChunks * kBytes);
  cudaMalloc(&out, kReaders * sizeof(float));
  cudaMemset(src, 0, kChunks * kBytes);
  probe<<<1, kReaders + 32>>>(src, out);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("MODE %d: %s\n", MODE, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
