// Run-time integers to template parameters, for host and device code alike (no torch headers:
// the torch-free kernel headers take it too). dispatch.h builds the dtype and kernel-size
// dispatch on it.
#pragma once

#include <cstdint>
#include <type_traits>

// Host and device: kernels pick their compiled variants on the device (the separable producers'
// kernel sizes, the short-row forward's window offsets).
#if defined(__CUDACC__)
#define SEPCONV1D_HOST_DEVICE __host__ __device__
#else
#define SEPCONV1D_HOST_DEVICE
#endif

namespace sepconv1d {

// Calls f(std::integral_constant<int, K>{}) for the K in Ks equal to `value`, else with K = 0
// ("read K at run time").
template <int... Ks, typename F>
SEPCONV1D_HOST_DEVICE void dispatch_int(int64_t value, F&& f) {
  const bool hit = ((value == Ks ? (f(std::integral_constant<int, Ks>{}), true) : false) || ...);
  if (!hit) f(std::integral_constant<int, 0>{});
}

}  // namespace sepconv1d
