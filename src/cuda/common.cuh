// Device-side building blocks shared by the CUDA kernels: error checks, e2m1 -> bf16 fragment
// decoding, the mma.sync wrapper and the packed-layout addressing of docs/packed-layout.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/packed_layout.hpp"
#include "mxfp4/format.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Throws CudaError naming `what` when `err` is not cudaSuccess.
inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw CudaError(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")");
  }
}

/// Checks the launch that was just queued (configuration errors surface here).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

/// Launches `kernel` on `stream` with programmatic dependent launch allowed (CUDA programming
/// guide, "Programmatic Dependent Launch"): its CTAs may be scheduled while the stream's
/// previous kernel is still finishing, which hides the launch latency between the two. The
/// kernel must therefore execute griddepcontrol.wait (grid_dependency_wait, bulk_copy.cuh)
/// before it reads global memory that an earlier operation of the stream may write, or writes
/// memory that an earlier kernel may still read (a workspace, C), and should signal its own
/// dependents (grid_dependents_launch) only after that wait, so that a dependent that reads
/// inputs before its wait still sees every earlier operation complete (the one exception:
/// quantize_fragments with `trigger_first`, under GemmOptions::weights_static, whose dependent
/// reads nothing but the promised-static weights before its own wait). The chain assumes that
/// the stream's previous kernel was not itself launched with PDL without waiting for its own
/// predecessor (docs/dispatch.md). `smem_bytes` of dynamic shared memory per CTA. Throws CudaError
/// naming `name` when the launch fails.
template <class... Params, class... Args>
void launch_pdl_smem(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                     const char* name, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...), name);
}
/// launch_pdl_smem without dynamic shared memory.
template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, const char* name,
                Args... args) {
  launch_pdl_smem(kernel, grid, block, 0, stream, name, args...);
}

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/// Geometry of the packed layout (docs/packed-layout.md) for a [rows, K] matrix.
using PackedGeometry = packed::Geometry;

#if defined(__CUDACC__)

/// bf16x2 multiply (round to nearest even; subnormals kept: PTX mul.rn.bf16x2 has no ftz).
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/// bf16 pair {lo, hi} (lo in the low half) of two fp32 values rounded to nearest even: one
/// cvt.rn.bf16x2.f32 (PTX ISA; subnormals kept). For non-NaN inputs these are the bits of
/// fmt::f32_to_bf16; a NaN becomes the canonical NaN 0x7FFF, not f32_to_bf16's quiet NaN with
/// sign and payload kept, so callers route NaN inputs to f32_to_bf16 (every kernel writes the
/// same bits).
__device__ __forceinline__ uint32_t bf16_pair_rn(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

/// Stores 16 bytes {x0, x1, x2, x3} at global address `dst` (16-byte aligned) when `pred` is
/// true: one predicated st.global.v4.b32 (PTX ISA), no branch, so that callers in
/// warp-synchronous code (shuffles around the store) keep their schedule. `dst` is a generic
/// address of global memory (cudaMalloc'd). No "memory" clobber: its callers (path fp8's
/// epilogue) read nothing they store, and their next barrier carries one.
__device__ __forceinline__ void st_global_v4_if(void* dst, uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, bool pred) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.u32 p, %5, 0;\n @p st.global.v4.b32 [%0], {%1, %2, %3, %4};\n}" ::"l"(dst),
      "r"(x0), "r"(x1), "r"(x2), "r"(x3), "r"(uint32_t(pred)));
}

/// Stores 8 bytes {x0, x1} at global address `dst` (8-byte aligned) when `pred` is true: one
/// predicated st.global.v2.f32 (PTX ISA), no branch, as st_global_v4_if. Same caveats.
__device__ __forceinline__ void st_global_v2_f32_if(void* dst, float x0, float x1, bool pred) {
  asm volatile("{\n .reg .pred p;\n setp.ne.u32 p, %3, 0;\n @p st.global.v2.f32 [%0], {%1, %2};\n}" ::"l"(dst), "f"(x0),
               "f"(x1), "r"(uint32_t(pred)));
}

/// bf16x2 with both halves equal to 2^e (e in [-133, 127]; 2^-127.. subnormal), or NaN for
/// E8M0 byte 0xFF when called through scale_bf16x2.
__device__ __forceinline__ uint32_t pow2_bf16x2(int e) {
  const uint32_t h = e >= -126 ? uint32_t(e + 127) << 7 : (1u << (e + 133));
  return h | (h << 16);
}

/// bf16x2 {2^(b-127), 2^(b-127)} for an E8M0 byte b (0xFF -> NaN).
__device__ __forceinline__ uint32_t scale_bf16x2(uint32_t b) {
  return b == 0xFFu ? 0x7FC07FC0u : pow2_bf16x2(int(b) - 127);
}

/// D += A * B for one m16n8k16 bf16 MMA with fp32 accumulators (PTX ISA "mma.sync").
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// bf16x2 factors of one lane's 4 scale bytes for one 64-wide chunk (row g / g+8 x K block
/// 0 / 1), computed once per chunk. When every scale byte of the warp is <= 128 (sb <= 1, all
/// real weights), `fused` is set and each factor is 2^(sb+126): one multiply turns the
/// scaled-down decode into e2m1 * 2^sb. Otherwise (huge scales, NaN) the decode is first
/// multiplied by 2^126 and then by 2^sb (or NaN), two exact steps.
struct ChunkScales {
  uint32_t f[2][2];  // [K block][row half: 0 = row g, 1 = row g + 8]
  bool fused;
};

/// True when every scale byte of the warp's chunk words `sc` is <= 128 (sb <= 1, all real
/// weights): ChunkScales' `fused` case. Warp-collective.
__device__ __forceinline__ bool chunk_scales_fuse(uint32_t sc) {
  return __all_sync(0xFFFFFFFFu, packed::scale_bytes_fuse(sc));
}

/// Scale byte of K block `blk` and row half `half` in a lane's chunk word.
__device__ __forceinline__ uint32_t chunk_scale_byte(uint32_t sc, int blk, int half) {
  return (sc >> (8 * (2 * half + blk))) & 0xFFu;
}

__device__ __forceinline__ ChunkScales chunk_scales(uint32_t sc) {
  ChunkScales cs;
  cs.fused = chunk_scales_fuse(sc);
#pragma unroll
  for (int blk = 0; blk < 2; ++blk)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const uint32_t b = chunk_scale_byte(sc, blk, half);
      // packed::fused_scale_factor's value, (b + 126) << 7 in both halves, the older way (path
      // tiled's per-factor select; no workload shape runs that path, so it was not re-measured).
      const uint32_t h = (b + 126u) << 7;
      cs.f[blk][half] = cs.fused ? (h | (h << 16)) : scale_bf16x2(b);
    }
  return cs;
}

/// chunk_scales for a caller that branches once per chunk on chunk_scales_fuse (FUSED known at
/// compile time, no per-factor branches): f[blk][half] as in ChunkScales.
template <bool FUSED>
__device__ __forceinline__ void chunk_scale_factors(uint32_t sc, uint32_t (&f)[2][2]) {
  if constexpr (FUSED) {
    // 2^(b - 127 + 126) for b <= 128 in two operations, one of them on the FMA pipe
    // (packed::fused_scale_factor). Session 33: with chunk_scales_fuse's 3-operation test, 0.1-0.4
    // us off the mma.sync and gemv shapes of the workload (docs/perf-notes.md).
#pragma unroll
    for (int blk = 0; blk < 2; ++blk)
#pragma unroll
      for (int half = 0; half < 2; ++half) f[blk][half] = packed::fused_scale_factor(sc, 2 * half + blk);
  } else {
#pragma unroll
    for (int blk = 0; blk < 2; ++blk)
#pragma unroll
      for (int half = 0; half < 2; ++half) f[blk][half] = scale_bf16x2(chunk_scale_byte(sc, blk, half));
  }
}

/// Decodes one lane's code word for K16 step `step` (0..3 of a chunk) into the m16n8k16 A
/// fragment e2m1 * 2^s (exact: representable in bf16 unless |value| >= 2^128), with the
/// chunk's factors f[blk][half]; outside the fused case the scaled-down decode is first
/// multiplied by 2^126.
/// (Its rotations as mul.wide.u32 products, IMAD.WIDE on the FMA pipe, measured slower in
/// session 33: an IMAD.WIDE takes 4 clocks per warp instruction, a funnel shift 2.)
__device__ __forceinline__ void decode_weight_fragment(uint32_t word, const uint32_t (&f)[2][2], bool fused, int step,
                                                       uint32_t (&a)[4]) {
  packed::decode_word_scaled_down(word, a);  // the codes times 2^-126
  const int blk = step >> 1;  // K16 steps 0,1 -> block 0; 2,3 -> block 1
  if (!fused) {
    const uint32_t up = pow2_bf16x2(126);
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = bf16x2_mul(a[q], up);
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) a[q] = bf16x2_mul(a[q], f[blk][q & 1]);
}
__device__ __forceinline__ void decode_weight_fragment(uint32_t word, const ChunkScales& cs, int step,
                                                       uint32_t (&a)[4]) {
  decode_weight_fragment(word, cs.f, cs.fused, step, a);
}

#endif  // __CUDACC__

}  // namespace mxfp4::cuda
