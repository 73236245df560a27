// The one place where run-time dtypes and kernel sizes become template parameters.
// Both backends call these; a kernel never writes its own switch over dtypes or K.
#pragma once

#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Exception.h>
#include <torch/headeronly/util/Half.h>

#include "common/dispatch_int.h"

#include <cstdint>
#include <type_traits>

namespace sepconv1d {

template <typename T>
struct TypeTag {
  using type = T;
};

// Accumulation type: float for every input precision except double.
template <typename T>
struct AccType {
  using type = float;
};
template <>
struct AccType<double> {
  using type = double;
};
template <typename T>
using acc_t = typename AccType<T>::type;

// Calls f(TypeTag<scalar_t>{}, TypeTag<weight_t>{}) for the (x dtype, weight dtype) pairs the ops
// accept: matching dtypes, or float32 weights under float16/bfloat16 activations.
template <typename F>
void dispatch_dtypes(torch::headeronly::ScalarType x_dtype, torch::headeronly::ScalarType w_dtype,
                     const char* op_name, F&& f) {
  using torch::headeronly::BFloat16;
  using torch::headeronly::Half;
  using torch::headeronly::ScalarType;
  const bool w_float = w_dtype == ScalarType::Float;
  switch (x_dtype) {
    case ScalarType::Float:
      if (w_float) return f(TypeTag<float>{}, TypeTag<float>{});
      break;
    case ScalarType::Double:
      if (w_dtype == ScalarType::Double) return f(TypeTag<double>{}, TypeTag<double>{});
      break;
    case ScalarType::Half:
      if (w_float) return f(TypeTag<Half>{}, TypeTag<float>{});
      if (w_dtype == ScalarType::Half) return f(TypeTag<Half>{}, TypeTag<Half>{});
      break;
    case ScalarType::BFloat16:
      if (w_float) return f(TypeTag<BFloat16>{}, TypeTag<float>{});
      if (w_dtype == ScalarType::BFloat16) return f(TypeTag<BFloat16>{}, TypeTag<BFloat16>{});
      break;
    default:
      break;
  }
  STD_TORCH_CHECK(false, "sepconv1d::", op_name, ": unsupported dtype combination (x ",
                  torch::headeronly::toString(x_dtype), ", weight ",
                  torch::headeronly::toString(w_dtype), ")");
}

// Kernel sizes compiled as constants: 3, 5 and 9 (speech and vocoder models, Hyena) and 4 (Mamba's
// causal conv, where the run-time tap loop made the short-row kernel instruction-bound).
// Everything else takes the generic path, K = 0 here meaning "read K at run time".
template <typename F>
void dispatch_kernel_size(int64_t kernel_size, F&& f) {
  dispatch_int<3, 4, 5, 9>(kernel_size, f);
}

// The short-row depthwise kernels (depthwise_rows.cuh): with `compiled`, the compiled sizes 3, 5
// and 9 and the other models' odd sizes 7 (Vocos, SNAC), 11 (Citrinet) and 31 (Conformer) exactly;
// other taps padded to the nearest of 4, 8, 12, 16, 24 or 32 (the padded taps are skipped, not
// multiplied by zero; an exact size has no skip tests and, at K 9, a window one vector shorter at
// some offsets). Calls f(integral_constant<int, KP>) and returns true, or returns false for K
// outside [1, 32].
template <typename F>
bool dispatch_padded_taps(int64_t kernel_size, bool compiled, F&& f) {
  if (kernel_size < 1 || kernel_size > 32) return false;
  const bool exact = compiled && (kernel_size == 3 || kernel_size == 5 || kernel_size == 7 ||
                                  kernel_size == 9 || kernel_size == 11 || kernel_size == 31);
  const int64_t kp = exact                ? kernel_size
                     : kernel_size <= 16 ? (kernel_size + 3) / 4 * 4
                                         : (kernel_size + 7) / 8 * 8;
  dispatch_int<3, 4, 5, 7, 8, 9, 11, 12, 16, 24, 31, 32>(kp, f);
  return true;
}

// The fused separable forward's depthwise producers (warp-specialised kernel, channel-first rows):
// the common odd sizes of depthwise-separable models, 3, 5, 7 (Vocos) and 9.
template <typename F>
SEPCONV1D_HOST_DEVICE void dispatch_producer_kernel_size(int64_t kernel_size, F&& f) {
  dispatch_int<3, 5, 7, 9>(kernel_size, f);
}

}  // namespace sepconv1d
