// Matrix products of the separable backward through cuBLAS, called directly: float32 on TF32
// tensor cores when PyTorch's convolution TF32 setting is on (torch's matmul follows the matmul
// TF32 flag, off by default, not the convolution one this operator obeys), and bf16 / fp16 with
// float32 accumulation, written into caller-provided outputs (batch slices of one buffer) without
// the dispatcher's per-call cost.
#pragma once

#include "cuda/strided_view.h"

#include <torch/csrc/stable/tensor.h>

namespace sepconv1d {
namespace cuda {

// Whether cuBLAS could be reached in this process (the library PyTorch loaded). Cached.
bool cublas_available();

// out = a @ b, batched over dimension 0: a (S, m, k), b (S, k, n), out (S, m, n) (a batch stride
// of 0 is allowed for a and b; 2-d tensors are a batch of one), on the current stream of a's
// device.
//  - a, b float32: TF32 products, float32 accumulation; out float32.
//  - a, b both bfloat16 or both float16: float32 accumulation; out float32 or a's dtype.
// a and b need a unit stride in one of their last two dimensions (otherwise they are copied
// first); out a unit stride in its last. Deterministic run to run. Requires cublas_available().
void cublas_matmul_into(const StridedView& a, const StridedView& b, const StridedView& out);

}  // namespace cuda
}  // namespace sepconv1d
