// CUDA plumbing shared by the CUDA kernels: current stream, device guard, launch checks and
// conversions between torch's header-only Half/BFloat16 and CUDA's native types.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Exception.h>
#include <torch/headeronly/util/Half.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>

namespace sepconv1d {
namespace cuda {

// The stream PyTorch considers current on a device: kernels run there, never on stream 0.
inline cudaStream_t current_stream(int device) {
  void* stream = nullptr;
  STD_TORCH_CHECK(aoti_torch_get_current_cuda_stream(device, &stream) == 0,
                  "sepconv1d: could not get the current CUDA stream");
  return static_cast<cudaStream_t>(stream);
}
inline cudaStream_t current_stream(const torch::stable::Tensor& x) {
  return current_stream(x.get_device_index());
}

// Throws with the CUDA error string if the last launch failed to start.
inline void check_launch(const char* kernel_name) {
  const cudaError_t err = cudaGetLastError();
  STD_TORCH_CHECK(err == cudaSuccess, "sepconv1d: CUDA launch of ", kernel_name,
                  " failed: ", cudaGetErrorString(err));
}

inline void check_cuda(cudaError_t err, const char* what) {
  STD_TORCH_CHECK(err == cudaSuccess, "sepconv1d: ", what, " failed: ", cudaGetErrorString(err));
}

// torch's handle of CUDA device `index`.
inline torch::stable::Device cuda_device(int index) {
  return torch::stable::Device(torch::headeronly::DeviceType::CUDA,
                               static_cast<torch::stable::DeviceIndex>(index));
}

// An uninitialised byte buffer of `bytes` on CUDA device `device` (kernel workspaces; the caching
// allocator keeps it stream-ordered once released).
inline torch::stable::Tensor device_bytes(int device, int64_t bytes) {
  return torch::stable::empty({bytes}, torch::headeronly::ScalarType::Byte, std::nullopt,
                              cuda_device(device));
}

// Number of SMs of the current device, cached per device (grid sizing only).
inline int sm_count(int device) {
  static int counts[64] = {0};
  if (device < 0 || device >= 64) device = 0;
  if (counts[device] == 0) {
    int n = 0;
    check_cuda(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device),
               "cudaDeviceGetAttribute");
    counts[device] = n;
  }
  return counts[device];
}

// Native CUDA type for a storage type: Half -> __half, BFloat16 -> __nv_bfloat16, else itself.
template <typename T>
struct Native {
  using type = T;
};
template <>
struct Native<torch::headeronly::Half> {
  using type = __half;
};
template <>
struct Native<torch::headeronly::BFloat16> {
  using type = __nv_bfloat16;
};
template <typename T>
using native_t = typename Native<T>::type;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ double to_float(double v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_acc(float v);
template <>
__device__ __forceinline__ float from_acc<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <typename T>
__device__ __forceinline__ T from_acc(double v) { return static_cast<T>(v); }

}  // namespace cuda
}  // namespace sepconv1d
