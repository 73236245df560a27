// Matrix products through cuBLAS, called directly (see cublas_gemm.h for why not torch's matmul).
//
// cuBLAS is reached at run time with dlopen / dlsym, not linked: PyTorch's CUDA build has already
// loaded libcublas (its libtorch_cuda needs it), so the extension takes that same library and no
// cuBLAS headers or link-time library are needed to build it. Where it cannot be found the
// callers keep torch's matmul (half types) or their own kernels (TF32): cublas_available() is false.
//
// Handles: one per (thread, device), created on first use and kept for the life of the thread (as
// PyTorch does: destroying them at exit can run after the CUDA context is gone). Each call binds
// the handle to the current stream and to that stream's workspace, allocated once from PyTorch's
// caching allocator and kept (as PyTorch keeps its cuBLAS workspaces): cuBLAS never allocates on
// its own, the products can be captured in CUDA graphs, and a training step's peak memory does
// not grow by a workspace per call.
#include "cuda/cublas_gemm.h"

#include "cuda/cuda_utils.cuh"

#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace sepconv1d {
namespace cuda {
namespace {

using torch::stable::Tensor;
using torch::headeronly::ScalarType;

// The few parts of the cuBLAS C API used here (cublas_api.h / library_types.h of CUDA 12 and 13;
// the values are part of cuBLAS's stable ABI).
using cublasHandle = void*;
using cublasStatus = int;
constexpr cublasStatus kCublasSuccess = 0;
constexpr int kOpN = 0, kOpT = 1;           // cublasOperation_t
constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;  // cudaDataType
constexpr int kCompute32F = 68;             // cublasComputeType_t CUBLAS_COMPUTE_32F
constexpr int kComputeFastTf32 = 77;        // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kGemmDefault = -1;            // cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT

using CreateFn = cublasStatus (*)(cublasHandle*);
using SetStreamFn = cublasStatus (*)(cublasHandle, cudaStream_t);
using SetWorkspaceFn = cublasStatus (*)(cublasHandle, void*, size_t);
using GemmStridedBatchedFn = cublasStatus (*)(
    cublasHandle, int transa, int transb, int64_t m, int64_t n, int64_t k, const void* alpha,
    const void* A, int Atype, int64_t lda, long long strideA, const void* B, int Btype,
    int64_t ldb, long long strideB, const void* beta, void* C, int Ctype, int64_t ldc,
    long long strideC, int64_t batch, int compute, int algo);
using StatusStringFn = const char* (*)(cublasStatus);

struct Cublas {
  CreateFn create = nullptr;
  SetStreamFn set_stream = nullptr;
  SetWorkspaceFn set_workspace = nullptr;
  GemmStridedBatchedFn gemm = nullptr;
  StatusStringFn status_string = nullptr;
  bool ok = false;
};

const Cublas& cublas() {
  static Cublas lib;
  static std::once_flag once;
  std::call_once(once, [] {
    // The library PyTorch already loaded (RTLD_NOLOAD), else the loader's search path.
    void* h = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12"}) {
      h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
      if (h) break;
    }
    for (const char* name : {"libcublas.so.13", "libcublas.so.12"}) {
      if (h) break;
      h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) return;
    lib.create = reinterpret_cast<CreateFn>(dlsym(h, "cublasCreate_v2"));
    lib.set_stream = reinterpret_cast<SetStreamFn>(dlsym(h, "cublasSetStream_v2"));
    lib.set_workspace = reinterpret_cast<SetWorkspaceFn>(dlsym(h, "cublasSetWorkspace_v2"));
    lib.gemm = reinterpret_cast<GemmStridedBatchedFn>(dlsym(h, "cublasGemmStridedBatchedEx_64"));
    lib.status_string = reinterpret_cast<StatusStringFn>(dlsym(h, "cublasGetStatusString"));
    lib.ok = lib.create && lib.set_stream && lib.set_workspace && lib.gemm;
  });
  return lib;
}

void check_cublas(cublasStatus s, const char* what) {
  if (s == kCublasSuccess) return;
  const Cublas& lib = cublas();
  STD_TORCH_CHECK(false, "sepconv1d: ", what, " failed: ",
                  lib.status_string ? lib.status_string(s) : "cuBLAS error ", s);
}

// The calling thread's handle for `device` (the current device).
cublasHandle handle_for(int device) {
  constexpr int kMaxDevices = 64;
  thread_local std::array<cublasHandle, kMaxDevices> handles{};
  STD_TORCH_CHECK(device >= 0 && device < kMaxDevices, "sepconv1d: device index ", device,
                  " out of range for the cuBLAS handle table");
  if (!handles[device]) {
    // Creation allocates cuBLAS's default workspace with cudaMalloc; relaxed capture mode keeps that
    // legal if the first use happens while another thread (or this one) captures a graph.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode");
    cublasHandle h = nullptr;
    const cublasStatus s = cublas().create(&h);
    check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode");
    check_cublas(s, "cublasCreate");
    handles[device] = h;
  }
  return handles[device];
}

// What PyTorch gives cuBLAS on Hopper (32 MiB): room for its split-K and stream-K kernels.
constexpr int64_t kWorkspaceBytes = int64_t(32) << 20;

// The workspace of (device, stream), allocated on first use and kept for the process (never
// freed: the map is leaked so that no tensor outlives the CUDA context at exit). Products on one
// stream are ordered, so one workspace per stream is never used by two products at once.
void* workspace_for(int device, cudaStream_t stream) {
  static std::mutex mu;
  static auto* spaces = new std::map<std::pair<int, cudaStream_t>, Tensor>();
  const std::pair<int, cudaStream_t> key{device, stream};
  std::lock_guard<std::mutex> lock(mu);
  auto it = spaces->find(key);
  if (it == spaces->end()) {
    it = spaces->emplace(key, device_bytes(device, kWorkspaceBytes)).first;
  }
  return it->second.data_ptr();
}

int cuda_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return kCudaR32F;
    case ScalarType::Half: return kCudaR16F;
    case ScalarType::BFloat16: return kCudaR16BF;
    default: STD_TORCH_CHECK(false, "sepconv1d: cuBLAS products take float32, float16 or bfloat16");
  }
  return -1;
}

// One operand in cuBLAS's column-major terms. A row-major view r (rows x cols, strides (s0, s1))
// is, column-major, either r^T with leading dimension s0 (s1 == 1) or r itself with leading
// dimension s1 (s0 == 1, then the product needs op T).
struct Operand {
  const void* ptr;
  int op;       // applied to the column-major matrix so that it reads as r^T
  int64_t ld;
  long long batch_stride;
};

// r: the row-major (rows, cols) matrices of a view (batch dim first). Returns false when r needs a
// copy (neither dimension has a unit stride).
bool as_operand(const StridedView& r, Operand& o) {
  const int64_t rows = r.size[1], cols = r.size[2];
  const int64_t s0 = r.stride[1], s1 = r.stride[2];
  o.ptr = r.ptr;
  o.batch_stride = r.size[0] > 1 ? r.stride[0] : 0;
  // r^T column-major is cols x rows: needs ld >= cols unless there is only one row.
  if (s1 == 1 || cols == 1) {
    if (rows == 1 || s0 >= std::max<int64_t>(cols, 1)) {
      o.op = kOpN;
      o.ld = rows == 1 ? std::max<int64_t>(cols, 1) : s0;
      return true;
    }
  }
  // r column-major is rows x cols: needs ld >= rows unless there is only one column.
  if (s0 == 1 || rows == 1) {
    if (cols == 1 || s1 >= std::max<int64_t>(rows, 1)) {
      o.op = kOpT;
      o.ld = cols == 1 ? std::max<int64_t>(rows, 1) : s1;
      return true;
    }
  }
  return false;
}

// A contiguous copy of a view that cuBLAS cannot read in place (rare: neither matrix dimension
// has a unit stride); the tensor keeps the copy alive for the product.
StridedView packed_copy(const StridedView& v, Tensor& keep) {
  keep = torch::stable::contiguous(tensor_of(v));
  return StridedView::of(keep);
}

}  // namespace

bool cublas_available() { return cublas().ok; }

void cublas_matmul_into(const StridedView& a_in, const StridedView& b_in, const StridedView& out) {
  const Cublas& lib = cublas();
  STD_TORCH_CHECK(lib.ok, "sepconv1d: cuBLAS is not available");
  const ScalarType in_t = a_in.dtype, out_t = out.dtype;
  STD_TORCH_CHECK(b_in.dtype == in_t && (out_t == ScalarType::Float || out_t == in_t),
                  "sepconv1d: cuBLAS product dtypes");
  const int64_t S = out.size[0];
  const int64_t m = a_in.size[1], k = a_in.size[2], n = b_in.size[2];
  STD_TORCH_CHECK(b_in.size[1] == k && out.size[1] == m && out.size[2] == n &&
                      a_in.size[0] == S && b_in.size[0] == S,
                  "sepconv1d: cuBLAS product shape mismatch");
  if (out.numel() == 0) return;
  STD_TORCH_CHECK(k > 0, "sepconv1d: cuBLAS product over an empty dimension");
  const int64_t ldc = out.stride[2] == 1 && (m == 1 || out.stride[1] >= n)
                          ? (m == 1 ? n : out.stride[1]) : -1;
  STD_TORCH_CHECK(ldc >= 1, "sepconv1d: cuBLAS product output needs rows of unit stride");
  Tensor keep_a, keep_b;
  Operand oa{}, ob{};
  if (!as_operand(a_in, oa)) as_operand(packed_copy(a_in, keep_a), oa);
  if (!as_operand(b_in, ob)) as_operand(packed_copy(b_in, keep_b), ob);
  // Row-major out = a b is column-major out^T = b^T a^T: cuBLAS's (n x m) = op(B) (n x k) op(A)
  // (k x m) with B the column-major b^T (op N on a row-major b) and A likewise a^T.
  const cudaStream_t stream = current_stream(a_in.device);
  void* ws = workspace_for(a_in.device, stream);
  const cublasHandle h = handle_for(a_in.device);
  check_cublas(lib.set_stream(h, stream), "cublasSetStream");
  check_cublas(lib.set_workspace(h, ws, static_cast<size_t>(kWorkspaceBytes)), "cublasSetWorkspace");
  const float alpha = 1.0f, beta = 0.0f;
  const int compute = in_t == ScalarType::Float ? kComputeFastTf32 : kCompute32F;
  check_cublas(lib.gemm(h, ob.op, oa.op, n, m, k, &alpha, ob.ptr, cuda_dtype(in_t), ob.ld,
                        ob.batch_stride, oa.ptr, cuda_dtype(in_t), oa.ld, oa.batch_stride, &beta,
                        out.ptr, cuda_dtype(out_t), ldc, S > 1 ? out.stride[0] : 0, S, compute,
                        kGemmDefault),
               "cublasGemmStridedBatchedEx");
}

}  // namespace cuda
}  // namespace sepconv1d
