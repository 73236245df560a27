// Dynamic shared-memory opt-in of a kernel, made once (torch-free: the depthwise launch planning
// includes it too).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace sepconv1d {
namespace cuda {

// Opts kernel `kern` in to `smem` bytes of dynamic shared memory on `device` (needed above 48 KiB)
// and, with max_carveout, to the largest shared-memory carveout (a hint: its failure is ignored).
// One driver call per kernel, device and new maximum: cudaFuncSetAttribute on every launch cost
// ~5 us of host time per separable forward on the H200 host. Returns the opt-in's error.
inline cudaError_t opt_in_smem(const void* kern, int64_t smem, int device, bool max_carveout) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int64_t> allowed;  // bytes each kernel may use
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(kern, device);
  auto it = allowed.find(key);
  if (it == allowed.end()) {
    if (max_carveout && cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             int(cudaSharedmemCarveoutMaxShared)) != cudaSuccess) {
      (void)cudaGetLastError();  // a hint only: clear this call's error, never fail because of it
    }
    it = allowed.emplace(key, int64_t(48 * 1024)).first;
  }
  if (smem <= it->second) return cudaSuccess;
  const cudaError_t err =
      cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (err == cudaSuccess) it->second = smem;
  return err;
}

}  // namespace cuda
}  // namespace sepconv1d
