// The exact fix-up of path "fp8" (docs/fp8-path.md): rows of C whose activation row has a
// flagged scaling group (fp8::plan_group: exponent span > 14, NaN scale or |R| > 48) and
// columns whose weight row has one are recomputed on CUDA cores from the MXFP4 operands:
// each 32-element block's sum of e2m1 products is exact in fp32 (multiples of 1/4, at most
// 32 * 36), scaled by 2^(sa + sb) with one scalbnf (exponents added first, spec §3), and the
// block contributions are summed in fp32 in K order. A NaN scale makes the element NaN.
// The common case (nothing flagged) costs one parallel read of both images' tile flags per
// CTA: the kernel is launched as a programmatic dependent of the GEMM (PDL), so its launch
// and flag scan overlap the GEMM; every CTA then waits for the GEMM (griddepcontrol.wait,
// the PDL contract for the work queued after it) and returns unless something is flagged.
#include "core/fp8_layout.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/fp8_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kThreads = 128;
/// CTAs of the fix-up. Few and small on purpose (session 12: call_split put 0.1-1.2 us on the
/// fix-up launch when nothing is flagged, 0.9 at 256x2880x512): PDL lets them start during
/// the GEMM, but only where an SM has room. A CTA of 128 threads at 128 registers (16384)
/// fits beside no dispatched GEMM CTA (they hold 61440-64512 of 65536 registers), only on the
/// SMs the GEMM leaves free (256x2880x512: 42 of 132; at most 4 fix-up CTAs each), where
/// they scan the flags during the GEMM; 132 CTAs of 256 threads mostly started after the
/// GEMM's CTAs left. Session 13: 16 CTAs of 128 threads took 0.3-0.5 us off the M = 256 calls.
/// The price: flagged groups are recomputed by 2048 threads instead of 33792, up to ~16x
/// longer per flagged line (unmeasured; docs/perf-notes.md plan).
#ifndef MXFP4_EXP_FIXUP_GRID  // a measurement (docs/perf-notes.md plan): the fix-up's CTAs
#define MXFP4_EXP_FIXUP_GRID 16
#endif
constexpr int kGrid = MXFP4_EXP_FIXUP_GRID;
static_assert(kGrid >= 1, "the fix-up needs a CTA");
constexpr int kChunk = 32;  ///< blocks of the shared row staged in shared memory at once

struct FixupArgs {
  const uint16_t* A;
  int64_t M, K, lda;
  ScaleRule rule;
  const uint8_t* a_img;
  const uint8_t* b_packed;
  const uint8_t* b_img;
  int64_t N;
  void* C;
  bool c_f32;
  int64_t ldc;
};

/// Activation block (row r, block b) as e2m1 values (unscaled) and its scale byte.
__device__ uint8_t activation_block(const FixupArgs& a, int64_t r, int64_t b, float (&x)[32]) {
  float v[32];
  uint8_t codes[32];
  load_block<DType::bf16>(a.A, r * a.lda + b * 32, v);
  const uint8_t sb = fmt::quantize_block(v, 32, codes, a.rule);
#pragma unroll
  for (int i = 0; i < 32; ++i) x[i] = fmt::e2m1_to_f32(codes[i]);
  return sb;
}

/// Weight block (row n, block b) as e2m1 values (unscaled) and its scale byte.
__device__ uint8_t weight_block(const FixupArgs& a, int64_t n, int64_t b, float (&x)[32]) {
  const PackedGeometry g = PackedGeometry::of(a.N, a.K);
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const uint8_t pair = packed::read_code_pair(a.b_packed, n, b * 32 + i, g.k_padded);
    x[i] = fmt::e2m1_to_f32(pair & 0xF);
    x[i + 1] = fmt::e2m1_to_f32(pair >> 4);
  }
  return a.b_packed[packed::scale_offset(n, b, g.rows_padded, g.k_padded)];
}

/// Exact contribution of one block pair: (sum of e2m1 products) * 2^(sa + sb), NaN for 0xFF.
__device__ float block_term(const float* x, uint8_t sx, const float (&y)[32], uint8_t sy) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) s = fmaf(x[i], y[i], s);  // exact: multiples of 1/4 below 2^11
  if (sx == kScaleNaN || sy == kScaleNaN) return __int_as_float(0x7FC00000);
  return scalbnf(s, (int(sx) - 127) + (int(sy) - 127));
}

__device__ void store(const FixupArgs& a, int64_t m, int64_t n, float v) {
  if (a.c_f32) {
    static_cast<float*>(a.C)[m * a.ldc + n] = v;
  } else {
    static_cast<uint16_t*>(a.C)[m * a.ldc + n] = fmt::f32_to_bf16(v);
  }
}

/// True when some group of row r of the image (geometry g) is flagged (scale 0).
__device__ bool row_flagged(const uint8_t* img, const fp8::ImageGeometry& g, int64_t r) {
  const float* scales = reinterpret_cast<const float*>(img + g.scale_offset());
  for (int64_t j = 0; j < g.slices; ++j)
    if (scales[g.scale_index(r, j)] == 0.f) return true;
  return false;
}

/// True (in every thread of the CTA) when 16-row quarter tile q of the image has a flagged group.
__device__ bool tile_flagged(const uint8_t* img, const fp8::ImageGeometry& g, int64_t q) {
  int any = 0;
  for (int64_t j = threadIdx.x; j < g.slices; j += kThreads) any |= img[g.flag_offset() + g.flag_index(q, j)];
  return __syncthreads_or(any) != 0;
}

/// Recomputes row m of C (one activation row against every weight row) or, with
/// `columns`, column n of C (one weight row against every activation row that is not
/// flagged itself). The shared row is staged kChunk blocks at a time in shared memory.
template <bool kColumns>
__device__ void fix_line(const FixupArgs& a, int64_t line, const fp8::ImageGeometry& ga) {
  __shared__ float xs[kChunk][32];
  __shared__ uint8_t xsb[kChunk];
  const int64_t kblocks = a.K / 32, others = kColumns ? a.M : a.N;
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t o0 = int64_t(blockIdx.x) * kThreads; o0 < others; o0 += step) {
    const int64_t o = o0 + threadIdx.x;
    const bool active = o < others && !(kColumns && row_flagged(a.a_img, ga, o));
    float acc = 0.f;
    for (int64_t b0 = 0; b0 < kblocks; b0 += kChunk) {
      __syncthreads();
      if (threadIdx.x < kChunk && b0 + threadIdx.x < kblocks) {
        float x[32];
        xsb[threadIdx.x] = kColumns ? weight_block(a, line, b0 + threadIdx.x, x) : activation_block(a, line, b0 + threadIdx.x, x);
#pragma unroll
        for (int i = 0; i < 32; ++i) xs[threadIdx.x][i] = x[i];
      }
      __syncthreads();
      if (!active) continue;
      for (int64_t bb = 0; bb < kChunk && b0 + bb < kblocks; ++bb) {
        float y[32];
        const uint8_t sy = kColumns ? activation_block(a, o, b0 + bb, y) : weight_block(a, o, b0 + bb, y);
        acc += block_term(xs[bb], xsb[bb], y, sy);
      }
    }
    if (active) kColumns ? store(a, o, line, acc) : store(a, line, o, acc);
  }
}

__global__ void __launch_bounds__(kThreads, 4) fp8_fixup_kernel(const FixupArgs a) {
  const fp8::ImageGeometry ga = fp8::ImageGeometry::of(a.M, a.K), gb = fp8::ImageGeometry::of(a.N, a.K);
  // Both images are complete: B's since prepack_fp8, A's since the GEMM let this grid launch
  // (its threads signal launch_dependents only after their wait for the image kernel).
  const int64_t na = ga.flag_count(), nb = gb.flag_count();
  int any = 0;
#pragma unroll 8
  for (int64_t i = threadIdx.x; i < na; i += kThreads) any |= a.a_img[ga.flag_offset() + i];
#pragma unroll 8
  for (int64_t i = threadIdx.x; i < nb; i += kThreads) any |= a.b_img[gb.flag_offset() + i];
  // Every path waits for the GEMM: work queued after this kernel must find the GEMM complete
  // too (the PDL contract), and C is written only after it.
  grid_dependency_wait();
  if (!__syncthreads_or(any)) return;
  constexpr int kQ = fp8::kFlagRows;
  for (int64_t q = 0; q < ga.rows_padded / kQ; ++q) {
    if (!tile_flagged(a.a_img, ga, q)) continue;
    for (int64_t r = q * kQ; r < min(a.M, (q + 1) * kQ); ++r)
      if (row_flagged(a.a_img, ga, r)) fix_line<false>(a, r, ga);
  }
  for (int64_t q = 0; q < gb.rows_padded / kQ; ++q) {
    if (!tile_flagged(a.b_img, gb, q)) continue;
    for (int64_t n = q * kQ; n < min(a.N, (q + 1) * kQ); ++n)
      if (row_flagged(a.b_img, gb, n)) fix_line<true>(a, n, ga);
  }
}

}  // namespace

void fp8_fixup(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, const uint8_t* a_img,
               const PackedWeights& B, void* C, bool c_f32, int64_t ldc, cudaStream_t stream) {
  const FixupArgs args{A, M, K, lda, rule, a_img, B.data, B.fp8, B.N, C, c_f32, ldc};
  // Programmatic dependent launch after gemm_fp8 (common.cuh launch_pdl).
  launch_pdl(fp8_fixup_kernel, dim3(kGrid), dim3(kThreads), stream, "cudaLaunchKernelEx(fp8_fixup_kernel)", args);
}

}  // namespace mxfp4::cuda
