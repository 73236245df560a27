// The warp-specialised forward's tensor maps (FwdParams::x_map, FwdParams::w_map), encoded on the
// host. Torch-free, so that the standalone harness (scripts/ws_forward_harness.cu) encodes exactly
// what the library does. cuTensorMapEncodeTiled is looked up once through the runtime's driver
// entry point: the extension does not link libcuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/separable_fwd.cuh"

namespace sepconv1d {
namespace cuda {
namespace sep {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// nullptr where the driver does not provide it.
inline EncodeTiledFn tensor_map_encoder() {
  static const EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return EncodeTiledFn{nullptr};
    }
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

// The tensor-map element type of Tx.
template <typename Tx>
constexpr CUtensorMapDataType tensor_map_type() {
  return sizeof(Tx) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
         : std::is_same_v<Tx, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                      : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

// p.x_map over p.dw's channel-first x as (L, Cin, batch) elements: box xpitch x box_ch x 1, no
// swizzle, zeros outside. False when the driver refuses it (or has no encoder).
template <typename Tx>
bool encode_x_map(FwdParams& p, int64_t batch, int box_ch) {
  const EncodeTiledFn encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  constexpr int64_t es = sizeof(Tx);
  const DwParams& d = p.dw;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d.L), static_cast<cuuint64_t>(d.cin),
                              static_cast<cuuint64_t>(batch)};
  // A batch stride is required even for one batch; any multiple of 16 bytes does.
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(d.xsc * es),
                                 static_cast<cuuint64_t>(batch > 1 ? d.xsb * es
                                                                   : d.xsc * es * d.cin)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(d.xpitch), static_cast<cuuint32_t>(box_ch), 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  return encode(&p.x_map, tensor_map_type<Tx>(), 3, const_cast<void*>(d.x), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// p.w_map over the pointwise weight pw (cout rows of cin contiguous elements; cin * sizeof(Tx) a
// multiple of 16 bytes) as (Cin, Cout, 1): box 64 x 64 x 1 in the 128-byte swizzle (the layout
// ws_w_index builds), zeros past Cin and Cout. False when the driver refuses it.
template <typename Tx>
bool encode_w_map(FwdParams& p, const void* pw, int64_t cin, int64_t cout) {
  const EncodeTiledFn encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  constexpr int64_t es = sizeof(Tx);
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cin), static_cast<cuuint64_t>(cout), 1};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(cin * es),
                                 static_cast<cuuint64_t>(cin * es * cout)};
  const cuuint32_t box[3] = {64, 64, 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  return encode(&p.w_map, tensor_map_type<Tx>(), 3, const_cast<void*>(pw), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d
