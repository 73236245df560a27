// sm_90a warpgroup MMA (wgmma) wrappers for the separable forward: shared-memory matrix
// descriptors for the 128-byte-swizzled K-major layout, the async-proxy fence,
// wgmma.mma_async m64n128 and m64n64 (bf16 / fp16 k16, tf32 k8; tf32 also m64n32; fp32
// accumulators), and the mbarrier / bulk-copy / named-barrier primitives of the warp-specialised
// kernel.
//
// Operand layout (both A = W [m][k] and B = h^T [n][k]): rows of 64 16-bit elements (128 bytes),
// groups of 8 rows form a 1024-byte atom (1024-byte aligned); the 16-byte chunk j of row r is stored
// at chunk j ^ (r % 8) of that row. A k16 step starts 32 bytes further into the rows.
//
// wgmma exists only on sm_90a: the bodies compile to a trap elsewhere, and the host launches these
// kernels only on compute capability 9.0 when the build had sm_90a (SEPCONV1D_SM90A).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/separable_ptx.cuh"

#ifndef SEP_EMULATE  // separable_emu.cuh provides host versions of everything below

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SEP_WGMMA_OK 1
#else
#define SEP_WGMMA_OK 0
#endif

namespace sepconv1d {
namespace cuda {
namespace sep {

// Descriptor of a K-major, 128-byte-swizzled operand whose first row starts at p (p lies in a
// 1024-byte-aligned atom, plus 32 * k16-step bytes). LBO is unused in this mode; SBO = 1024 bytes
// (next group of 8 rows); swizzle mode 1 = 128 bytes.
__device__ __forceinline__ uint64_t wg_desc(const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((a & 0x3FFFFu) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

// Orders this thread's generic-proxy shared-memory writes (st.shared, cp.async) before later
// async-proxy reads (wgmma operands); needed before the barrier that publishes a tile to wgmma.
__device__ __forceinline__ void fence_proxy_async() {
#if SEP_WGMMA_OK
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Before the first wgmma of a batch: accumulator registers written by ordinary instructions.
__device__ __forceinline__ void wg_fence() {
#if SEP_WGMMA_OK
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if SEP_WGMMA_OK
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most kPending committed wgmma groups of this warpgroup are in flight. With
// kPending 0 the accumulators are readable; acc is then passed through an empty asm so that the
// compiler keeps its registers in place until after the wait (with groups still in flight it must
// not touch them: ptxas would serialise the pipeline, C7514).
template <int kPending, int N>
__device__ __forceinline__ void wg_wait(float (&acc)[N]) {
#if SEP_WGMMA_OK
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
  if constexpr (kPending == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(acc[i])::"memory");
  }
#else
  (void)acc;
  __trap();
#endif
}

// ---- mbarriers, bulk copies and named barriers (the warp-specialised forward) -----------------
// An mbarrier completes a phase when `count` arrivals and all expected transaction bytes have
// arrived; a waiter names the parity of the phase it waits for (0 for the first).
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
#if SEP_WGMMA_OK
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
#endif
}
// Makes barrier initialisation visible to the async proxy (bulk copies) before first use.
__device__ __forceinline__ void mbar_init_fence() {
#if SEP_WGMMA_OK
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if SEP_WGMMA_OK
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(
                   smem_u32(bar))
               : "memory");
#endif
}
// One arrival that also expects `bytes` of bulk-copy transactions in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if SEP_WGMMA_OK
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(
          smem_u32(bar)),
      "r"(bytes)
      : "memory");
#endif
}
// A waiting warp sleeps until the phase completes (or this many ns pass) instead of spinning:
// spinning consumers took issue slots from the depthwise warps on their schedulers.
constexpr uint32_t kMbarSuspendNs = 1000000;
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if SEP_WGMMA_OK
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra WAIT;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity), "n"(kMbarSuspendNs)
      : "memory");
#else
  (void)bar, (void)parity;
  __trap();
#endif
}
// bytes (a multiple of 16; both addresses 16-byte aligned) global -> shared by the copy engine;
// completion is counted as transaction bytes on bar.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes,
                                                    uint64_t* bar) {
#if SEP_WGMMA_OK
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
  __trap();
#endif
}
// The box of a 3-d tiled tensor map (kernel parameter space, __grid_constant__) at coordinates
// (c0, c1, c2) -> shared memory (dense, 128-byte aligned) by the copy engine, counted as
// transaction bytes on bar; elements outside the tensor read as zeros.
__device__ __forceinline__ void bulk_load_tile_3d(void* dst, const void* map, int c0, int c1, int c2,
                                                  uint64_t* bar) {
#if SEP_WGMMA_OK
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4}], [%5];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
      : "memory");
#else
  (void)dst, (void)map, (void)c0, (void)c1, (void)c2, (void)bar;
  __trap();
#endif
}
// Raises (kInc) or lowers this warpgroup's register budget per thread to N (setmaxnreg; every
// warp of the warpgroup executes it).
template <int N, bool kInc>
__device__ __forceinline__ void set_max_regs() {
#if SEP_WGMMA_OK
  if constexpr (kInc) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
  }
#endif
}
// Barrier `id` (1..15) over `count` threads (a multiple of 32) of the block.
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// D[64 x N] += A[64 x k] * B[k x N] for one warpgroup (k = 16 for bf16 / fp16, 8 for tf32; fp32
// accumulators, fragment layout of m64nNk16 / m64nNk8: thread t of the warpgroup holds rows 16 * (t / 32) + (t % 32) / 4 (+ 8), columns
// 8 j + 2 (t % 4) (+ 1) in d[4 j + {0, 1}] (+ 8 rows: d[4 j + {2, 3}])).
template <typename Tm, int N>
struct Wgmma;

#if SEP_WGMMA_OK
// The asm of one m64n128 (k16 or k8) with fp32 accumulators d[0..63]; TY: the PTX input type,
// SHAPE the k extent, IMM the trailing immediates after the scale operands.
#define SEP_WGMMA_M64N128(TY, SHAPE, IMM)                                       \
    asm volatile( \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n128" SHAPE ".f32." TY "." TY " " \
        "{" \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
        "}, %64, %65, p, 1, 1" IMM ";\n}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
        : "l"(da), "l"(db), "r"(1))

// The same for m64n64 (accumulators d[0..31]).
#define SEP_WGMMA_M64N64(TY, SHAPE, IMM)                                         \
    asm volatile( \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n64" SHAPE ".f32." TY "." TY " " \
        "{" \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
        "}, %32, %33, p, 1, 1" IMM ";\n}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
        : "l"(da), "l"(db), "r"(1))

// The same for m64n32 (accumulators d[0..15]).
#define SEP_WGMMA_M64N32(TY, SHAPE, IMM)                                         \
    asm volatile( \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n32" SHAPE ".f32." TY "." TY " " \
        "{" \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
        "}, %16, %17, p, 1, 1" IMM ";\n}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
        : "l"(da), "l"(db), "r"(1))
// 16-bit inputs: k16, with the two transpose immediates (0: both K-major); tf32: k8, K-major
// only (no transpose immediates).
#define SEP_WGMMA_SPEC(T, TY, N, ASM, SHAPE, IMM)                                        \
  template <>                                                                            \
  struct Wgmma<T, N> {                                                                   \
    __device__ __forceinline__ static void mma(float (&d)[N / 2], uint64_t da, uint64_t db) { \
      ASM(TY, SHAPE, IMM);                                                               \
    }                                                                                    \
  };
SEP_WGMMA_SPEC(__nv_bfloat16, "bf16", 128, SEP_WGMMA_M64N128, "k16", ", 0, 0")
SEP_WGMMA_SPEC(__half, "f16", 128, SEP_WGMMA_M64N128, "k16", ", 0, 0")
SEP_WGMMA_SPEC(float, "tf32", 128, SEP_WGMMA_M64N128, "k8", "")
SEP_WGMMA_SPEC(__nv_bfloat16, "bf16", 64, SEP_WGMMA_M64N64, "k16", ", 0, 0")
SEP_WGMMA_SPEC(__half, "f16", 64, SEP_WGMMA_M64N64, "k16", ", 0, 0")
SEP_WGMMA_SPEC(float, "tf32", 64, SEP_WGMMA_M64N64, "k8", "")
SEP_WGMMA_SPEC(float, "tf32", 32, SEP_WGMMA_M64N32, "k8", "")
#undef SEP_WGMMA_SPEC
#undef SEP_WGMMA_M64N128
#undef SEP_WGMMA_M64N64
#undef SEP_WGMMA_M64N32
#else
template <typename Tm, int N>
struct Wgmma {
  __device__ __forceinline__ static void mma(float (&)[N / 2], uint64_t, uint64_t) { __trap(); }
};
#endif

}  // namespace sep
}  // namespace cuda
}  // namespace sepconv1d

#endif  // SEP_EMULATE
