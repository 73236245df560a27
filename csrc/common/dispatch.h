// The one place where run-time dtypes and kernel sizes become template parameters.
// Both backends call these; a kernel never writes its own switch over dtypes or K.
#pragma once

#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Exception.h>
#include <torch/headeronly/util/Half.h>

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
  switch (kernel_size) {
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 9:
      return f(std::integral_constant<int, 9>{});
    default:
      return f(std::integral_constant<int, 0>{});
  }
}

}  // namespace sepconv1d
