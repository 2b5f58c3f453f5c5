// The exact fix-up of path "fp8" (docs/fp8-path.md): rows of C whose activation row has a
// flagged scaling group (fp8::group_range: a NaN scale or a block exponent out of [-47, 49]) and
// columns whose weight row has one are recomputed on CUDA cores from the MXFP4 operands:
// each 32-element block's sum of e2m1 products is exact in fp32 (multiples of 1/4, at most
// 32 * 36), scaled by 2^(sa + sb) with one scalbnf (exponents added first, spec §3), and the
// block contributions are summed in fp32 in K order. A NaN scale makes the element NaN.
// The flagged rows of each image are collected in row order, then recomputed as work items of
// 16 flagged lines x 64 rows of the other operand spread over the grid: each block of the other
// operand is quantized (or decoded) once per 16 lines, not once per line (session 14: one line
// per pass over every thread took 0.6-75 ms per call with 16 flagged weight rows).
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
/// The price: flagged lines are recomputed by 16 CTAs, not 132 (docs/perf-notes.md, session 14).
#ifndef MXFP4_EXP_FIXUP_GRID  // a measurement (docs/perf-notes.md plan): the fix-up's CTAs
#define MXFP4_EXP_FIXUP_GRID 16
#endif
constexpr int kGrid = MXFP4_EXP_FIXUP_GRID;
static_assert(kGrid >= 1, "the fix-up needs a CTA");

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

/// True when some group of row r of the image (geometry g) is flagged (its exponent word is 0:
/// kFlaggedExponent's byte in every block).
__device__ bool row_flagged(const uint8_t* img, const fp8::ImageGeometry& g, int64_t r) {
  static_assert(fp8::exponent_byte(fp8::kFlaggedExponent) == 0, "flagged groups have exponent word 0");
  for (int64_t j = 0; j < g.slices; ++j)
    if (*reinterpret_cast<const uint32_t*>(img + g.exponent_at(r, j)) == 0u) return true;
  return false;
}

/// Flagged lines (rows of one image with a flagged group) collected per window, in row order.
constexpr int kListCap = 512;
constexpr int kLines = 16;    ///< flagged lines of one work item
constexpr int kOthers = 64;   ///< rows of the other operand of one work item (one per thread pair)
static_assert(kThreads == 2 * kOthers && kLines % 2 == 0, "a thread owns one other row and half the lines");

/// Shared memory of the flagged passes (one instance for both passes).
struct FixSmem {
  float xs[kLines][32];  ///< the lines' block (e2m1 values, unscaled)
  float ys[kOthers][33];  ///< the other rows' block; padded: thread o reads row o, a bank per lane
  uint8_t xsb[kLines], ysb[kOthers];  ///< their scale bytes
  int list[kListCap];     ///< flagged lines of the window, in row order
};

/// Collects, in row order, the rows of `img` (geometry g, `rows` real rows) that have a flagged
/// group and whose ordinal among them is in [first, first + kListCap), into `list`; returns how
/// many flagged rows the image has in all. Quarter tiles (16 rows, one flag byte per slice) are
/// scanned first, kThreads at a time; only the rows of flagged ones are checked (row_flagged).
/// Every thread of the CTA must call this; the result is the same in all of them.
__device__ int64_t collect_lines(const uint8_t* img, const fp8::ImageGeometry& g, int64_t rows, int64_t first,
                                 int* list) {
  __shared__ uint32_t warp_mask[kThreads / 32];
  __shared__ int64_t found;
  constexpr int kQ = fp8::kFlagRows;
  static_assert(kQ <= 32, "one warp checks the rows of a quarter tile");
  const int64_t quarters = (rows + kQ - 1) / kQ;
  __syncthreads();  // `list` and `found` may still be read by the previous window's items
  if (threadIdx.x == 0) found = 0;
  for (int64_t q0 = 0; q0 < quarters; q0 += kThreads) {
    const int64_t q = q0 + threadIdx.x;
    int f = 0;
    if (q < quarters)
      for (int64_t j = 0; j < g.slices; ++j) f |= img[g.flag_offset() + g.flag_index(q, j)];
    const uint32_t m = __ballot_sync(0xFFFFFFFFu, f != 0);
    if (threadIdx.x % 32 == 0) warp_mask[threadIdx.x / 32] = m;
    __syncthreads();
    for (int w = 0; w < kThreads / 32; ++w) {
      for (uint32_t bits = warp_mask[w]; bits != 0; bits &= bits - 1) {  // uniform: shared memory
        const int64_t qq = q0 + 32 * w + __ffs(int(bits)) - 1;
        if (threadIdx.x < 32) {
          const int64_t r = qq * kQ + threadIdx.x;
          const uint32_t rm = __ballot_sync(0xFFFFFFFFu, threadIdx.x < kQ && r < rows && row_flagged(img, g, r));
          if (threadIdx.x == 0) {
            for (uint32_t rb = rm; rb != 0; rb &= rb - 1, ++found)
              if (found >= first && found < first + kListCap) list[found - first] = int(qq * kQ + __ffs(int(rb)) - 1);
          }
        }
        __syncthreads();
      }
    }
    __syncthreads();  // warp_mask is rewritten by the next chunk
  }
  return found;
}

/// One work item: C entries of up to kLines flagged lines `lines` (nl of them) against the
/// kOthers rows of the other operand from o0. Rows (kColumns false): line = activation row m,
/// others = weight rows n; columns: line = weight row n, others = activation rows m that are
/// not flagged themselves (their whole row of C is recomputed by the rows pass). Per 32-element
/// block the 80 blocks are staged in shared memory (activation blocks quantized, weight blocks
/// decoded, one per thread), then thread (o, half) adds block_term of its other row against
/// each of its kLines / 2 lines, in K order (bitwise the sums of the line-at-a-time version
/// this replaced in session 14).
template <bool kColumns>
__device__ void fix_tile(const FixupArgs& a, const int* lines, int nl, int64_t o0, const fp8::ImageGeometry& ga,
                         FixSmem& sm) {
  float(&xs)[kLines][32] = sm.xs;
  float(&ys)[kOthers][33] = sm.ys;
  uint8_t(&xsb)[kLines] = sm.xsb;
  uint8_t(&ysb)[kOthers] = sm.ysb;
  constexpr int kHalf = kLines / 2;
  const int64_t kblocks = a.K / 32, others = kColumns ? a.M : a.N;
  const int ol = threadIdx.x % kOthers, half = threadIdx.x / kOthers;
  const int64_t o = o0 + ol;
  const bool keep = o < others && !(kColumns && row_flagged(a.a_img, ga, o));
  float acc[kHalf] = {};
  for (int64_t b = 0; b < kblocks; ++b) {
    __syncthreads();
    float v[32];
    if (threadIdx.x < kOthers) {
      uint8_t sb = 0;
      if (o < others) {
        sb = kColumns ? activation_block(a, o, b, v) : weight_block(a, o, b, v);
      } else {
#pragma unroll
        for (int i = 0; i < 32; ++i) v[i] = 0.f;
      }
#pragma unroll
      for (int i = 0; i < 32; ++i) ys[ol][i] = v[i];
      ysb[ol] = sb;
    } else if (threadIdx.x < kOthers + kLines) {
      const int j = threadIdx.x - kOthers;
      uint8_t sb = 0;
      if (j < nl) {
        sb = kColumns ? weight_block(a, lines[j], b, v) : activation_block(a, lines[j], b, v);
      } else {
#pragma unroll
        for (int i = 0; i < 32; ++i) v[i] = 0.f;
      }
#pragma unroll
      for (int i = 0; i < 32; ++i) xs[j][i] = v[i];
      xsb[j] = sb;
    }
    __syncthreads();
    float y[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) y[i] = ys[ol][i];
    const uint8_t sy = ysb[ol];
#pragma unroll
    for (int jj = 0; jj < kHalf; ++jj) {
      const int j = half * kHalf + jj;
      if (j < nl) acc[jj] += block_term(xs[j], xsb[j], y, sy);
    }
  }
  if (!keep) return;
#pragma unroll
  for (int jj = 0; jj < kHalf; ++jj) {
    const int j = half * kHalf + jj;
    if (j < nl) kColumns ? store(a, o, lines[j], acc[jj]) : store(a, lines[j], o, acc[jj]);
  }
}

/// Recomputes every C entry of the flagged rows of one image (kColumns false: A's, whole rows
/// of C; true: B's, whole columns but the flagged rows'), as work items of kLines flagged lines
/// x kOthers other rows spread over the grid, kListCap lines per window.
template <bool kColumns>
__device__ void fix_flagged(const FixupArgs& a, const fp8::ImageGeometry& ga, const fp8::ImageGeometry& gb,
                            FixSmem& sm) {
  int* list = sm.list;
  const uint8_t* img = kColumns ? a.b_img : a.a_img;
  const fp8::ImageGeometry& g = kColumns ? gb : ga;
  const int64_t rows = kColumns ? a.N : a.M, others = kColumns ? a.M : a.N;
  const int64_t other_tiles = (others + kOthers - 1) / kOthers;
  for (int64_t first = 0;; first += kListCap) {
    const int64_t total = collect_lines(img, g, rows, first, list);
    const int64_t n = min(total - first, int64_t(kListCap));
    if (n <= 0) return;
    const int64_t items = (n + kLines - 1) / kLines * other_tiles;
    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {
      const int64_t grp = it / other_tiles;
      fix_tile<kColumns>(a, list + grp * kLines, int(min(int64_t(kLines), n - grp * kLines)),
                         it % other_tiles * kOthers, ga, sm);
    }
    if (total <= first + kListCap) return;
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
  __shared__ FixSmem sm;
  fix_flagged<false>(a, ga, gb, sm);
  fix_flagged<true>(a, ga, gb, sm);
}

}  // namespace

void fp8_fixup(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, const uint8_t* a_img,
               const PackedWeights& B, void* C, bool c_f32, int64_t ldc, cudaStream_t stream) {
  const FixupArgs args{A, M, K, lda, rule, a_img, B.data, B.fp8, B.N, C, c_f32, ldc};
  // Programmatic dependent launch after gemm_fp8 (common.cuh launch_pdl).
  launch_pdl(fp8_fixup_kernel, dim3(kGrid), dim3(kThreads), stream, "cudaLaunchKernelEx(fp8_fixup_kernel)", args);
}

}  // namespace mxfp4::cuda
