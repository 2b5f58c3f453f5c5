// Hopper warpgroup MMA (wgmma) primitives for the FP8 prefill GEMM: shared-memory matrix
// descriptors for the 128-byte-swizzled K-major tiles of the FP8 image, the fence / commit /
// wait instructions, the s8 MMA of path fp8 (e4m3 until session 16; the e4m3 MMA now lives in
// tools/dev/probes/wgmma_latency.cu) and the register-A bf16 MMAs of path splitk.
// Source: PTX ISA 8.x, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions" (matrix descriptor format,
// wgmma.mma_async, wgmma.fence, wgmma.commit_group, wgmma.wait_group).
#pragma once

#include <cstdint>

#include "cuda/bulk_copy.cuh"

namespace mxfp4::cuda {

#if defined(__CUDACC__)

/// Descriptor of a K-major operand tile in shared memory with the 128-byte swizzle: rows of
/// 128 bytes (one 128-K slice of 8-bit codes), 8-row core groups 1024 bytes apart (stride byte
/// offset), tile base 1024-byte aligned (base offset 0). Fields: start address >> 4 in bits
/// 0-13, leading byte offset >> 4 in bits 16-29 (unused for swizzled K-major, 1), stride byte
/// offset >> 4 in bits 32-45, swizzle mode in bits 62-63 (1 = 128-byte).
__device__ __forceinline__ uint64_t smem_desc_sw128(const void* tile) {
  const uint64_t addr = smem_addr(tile);
  return ((addr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

/// Orders this thread's register accesses before the next wgmma (PTX "wgmma.fence").
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
/// Closes the group of wgmma issued so far (PTX "wgmma.commit_group").
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
/// Waits until at most N committed wgmma groups are pending (PTX "wgmma.wait_group").
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/// Raises (INC) or lowers this warpgroup's per-thread register limit to N (PTX "setmaxnreg";
/// every thread of the warpgroup executes it): the producer gives registers back so that the
/// consumers can hold their accumulators and scale products.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

/// Keeps the compiler from moving accesses of `r` across a wgmma issue or wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

/// D (+)= A * B, m64n64k32, s8 x s8 -> s32 (exact integer sums), A and B from shared memory
/// descriptors of 8-bit elements (128-byte swizzled, K-major); scale_d = 0 overwrites D (PTX ISA
/// "wgmma.mma_async", integer types). D: 32 registers per thread, the m64nN accumulator fragment order.
__device__ __forceinline__ void wgmma_m64n64k32_s8(uint32_t (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/// D (+)= A * B, m64n128k32, s8 x s8 -> s32, as wgmma_m64n64k32_s8 with B's 128 rows from one
/// descriptor (two consecutive 64-row swizzled atoms: the 8-row groups go on at the same
/// 1024-byte stride). The 64 accumulator registers per thread are d0 (columns 0-63) then d1
/// (columns 64-127): in the m64nN fragment order the first 32 registers of an n128 fragment
/// are those of an n64 one.
__device__ __forceinline__ void wgmma_m64n128k32_s8(uint32_t (&d0)[32], uint32_t (&d1)[32], uint64_t desc_a,
                                                    uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "
      "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p;\n}\n"
      : "+r"(d0[0]), "+r"(d0[1]), "+r"(d0[2]), "+r"(d0[3]), "+r"(d0[4]), "+r"(d0[5]), "+r"(d0[6]), "+r"(d0[7]),
        "+r"(d0[8]), "+r"(d0[9]), "+r"(d0[10]), "+r"(d0[11]), "+r"(d0[12]), "+r"(d0[13]), "+r"(d0[14]), "+r"(d0[15]),
        "+r"(d0[16]), "+r"(d0[17]), "+r"(d0[18]), "+r"(d0[19]), "+r"(d0[20]), "+r"(d0[21]), "+r"(d0[22]), "+r"(d0[23]),
        "+r"(d0[24]), "+r"(d0[25]), "+r"(d0[26]), "+r"(d0[27]), "+r"(d0[28]), "+r"(d0[29]), "+r"(d0[30]), "+r"(d0[31]),
        "+r"(d1[0]), "+r"(d1[1]), "+r"(d1[2]), "+r"(d1[3]), "+r"(d1[4]), "+r"(d1[5]), "+r"(d1[6]), "+r"(d1[7]),
        "+r"(d1[8]), "+r"(d1[9]), "+r"(d1[10]), "+r"(d1[11]), "+r"(d1[12]), "+r"(d1[13]), "+r"(d1[14]), "+r"(d1[15]),
        "+r"(d1[16]), "+r"(d1[17]), "+r"(d1[18]), "+r"(d1[19]), "+r"(d1[20]), "+r"(d1[21]), "+r"(d1[22]), "+r"(d1[23]),
        "+r"(d1[24]), "+r"(d1[25]), "+r"(d1[26]), "+r"(d1[27]), "+r"(d1[28]), "+r"(d1[29]), "+r"(d1[30]), "+r"(d1[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/// Descriptor of a K-major operand in shared memory without swizzle: 8 x 16-byte core
/// matrices (8 rows of 8 bf16 along K), `lbo` bytes between the two core matrices of a K16
/// step (leading dimension, along K) and `sbo` bytes between 8-row groups (stride dimension).
/// Fields as in smem_desc_sw128; swizzle mode 0. Both offsets multiples of 16.
__device__ __forceinline__ uint64_t smem_desc_kmajor(const void* tile, uint32_t lbo, uint32_t sbo) {
  const uint64_t addr = smem_addr(tile);
  return ((addr & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

/// Keeps the compiler from reusing `r`'s register before an asynchronous reader (a
/// register-A wgmma) has finished with it: call after the wgmma_wait that covers the reader.
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

/// D (+)= A * B, m64n32k16, bf16 x bf16 -> f32: A from registers (per warp of the warpgroup
/// the m16n8k16 A fragment of its 16 rows), B (32 x 16, K-major, no swizzle) from a shared
/// memory descriptor (smem_desc_kmajor); scale_d = 0 overwrites D (PTX ISA "wgmma.mma_async").
/// D: 16 registers per thread, d[4j + e] = the m16n8 C fragment of n8 tile j.
__device__ __forceinline__ void wgmma_m64n32k16_bf16_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t desc_b,
                                                      int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/// D (+)= A * B, m64n64k16, bf16 x bf16 -> f32: A from registers (per warp of the warpgroup
/// the m16n8k16 A fragment of its 16 rows), B (64 x 16, K-major, no swizzle) from a shared
/// memory descriptor (smem_desc_kmajor); scale_d = 0 overwrites D (PTX ISA "wgmma.mma_async").
/// D: 32 registers per thread, d[4j + e] = the m16n8 C fragment of n8 tile j.
__device__ __forceinline__ void wgmma_m64n64k16_bf16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b,
                                                      int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/// The register-A bf16 m64nNk16 MMA for N = 32 or 64.
template <int N>
__device__ __forceinline__ void wgmma_bf16_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  if constexpr (N == 64) {
    wgmma_m64n64k16_bf16_rs(d, a, desc_b, scale_d);
  } else {
    static_assert(N == 32, "wgmma_bf16_rs: N is 32 or 64");
    wgmma_m64n32k16_bf16_rs(d, a, desc_b, scale_d);
  }
}

#endif  // __CUDACC__

}  // namespace mxfp4::cuda
