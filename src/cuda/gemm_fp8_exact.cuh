#pragma once
// The exact fix-up of path "fp8" (docs/fp8-path.md): elements of C whose activation row has a
// flagged scaling group (fp8::group_range: a NaN scale or a block exponent out of [-47, 49])
// or whose weight row has one are recomputed on CUDA cores from the MXFP4 operands: each
// 32-element block's sum of e2m1 products is exact in fp32 (multiples of 1/4, at most 32 * 36),
// scaled by 2^(sa + sb) with one scalbnf (exponents added first, spec §3), and the block
// contributions are summed in fp32 in K order. A NaN scale makes the element NaN.
// Two forms, one code (fix_region):
//   - in the GEMM kernel (gemm_fp8_kernel.cuh), where each CTA (PAIR: cluster) stores one
//     tile, without split-K, in tiles other than 192 x 128 (gemm_fp8.cu's launch): its
//     consumer warpgroups fix what their CTA stored. The common case (nothing flagged)
//     costs no launch: once its copies are issued, the producer warpgroup reads the flag
//     bytes of the CTA's region (scan_stored_flags) and reports on an mbarrier; the consumers
//     read that one word at the end. Session 44: 0.08-0.72 us off the single-wave calls
//     (calls 4 and 5, earlier forms);
//   - fp8_fixup_kernel after the GEMM elsewhere: CTAs that store several tiles, split-K
//     (session 45: its FIX form lost 0.13-0.19 us at 128x2112x7168) and the 192 x 128 tile
//     (session 44 call 5: with the fix-up code compiled into every kernel, 1024x7168x2048
//     ran 0.5 us and 4096x7168x2048 11 us slower even on the separate kernel; hence the FIX
//     instantiations).
// Included only by gemm_fp8_kernel.cuh; the anonymous namespace keeps it in gemm_fp8.cu.
#include "core/fp8_layout.hpp"
#include "cuda/common.cuh"
#include "cuda/gemm_fp8_common.cuh"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

/// Activation block (row r, block b) as e2m1 values (unscaled) and its scale byte: A's bf16
/// block quantized under p.rule (spec §2), as the image kernel quantized it.
__device__ uint8_t activation_block(const Fp8Params& p, int64_t r, int64_t b, float (&x)[32]) {
  float v[32];
  uint8_t codes[32];
  load_block<DType::bf16>(p.A, r * p.lda + b * 32, v);
  const uint8_t sb = fmt::quantize_block(v, 32, codes, p.rule);
#pragma unroll
  for (int i = 0; i < 32; ++i) x[i] = fmt::e2m1_to_f32(codes[i]);
  return sb;
}

/// Weight block (row n, block b) as e2m1 values (unscaled) and its scale byte, from the packed
/// weights (layout v3).
__device__ uint8_t weight_block(const Fp8Params& p, int64_t n, int64_t b, float (&x)[32]) {
  const PackedGeometry g = PackedGeometry::of(p.N, p.K);
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const uint8_t pair = packed::read_code_pair(p.b_packed, n, b * 32 + i, g.k_padded);
    x[i] = fmt::e2m1_to_f32(pair & 0xF);
    x[i + 1] = fmt::e2m1_to_f32(pair >> 4);
  }
  return p.b_packed[packed::scale_offset(n, b, g.rows_padded, g.k_padded)];
}

/// Stages block b of row r (an activation row when `activation`, else a weight row) into dst
/// (e2m1 values, unscaled) and its scale byte into *dst_sb; zeros and byte 0 when !valid.
__device__ __forceinline__ void stage_block(const Fp8Params& p, bool activation, bool valid, int64_t r, int64_t b,
                                            float* dst, uint8_t* dst_sb) {
  float v[32];
  uint8_t sb = 0;
  if (valid) {
    sb = activation ? activation_block(p, r, b, v) : weight_block(p, r, b, v);
  } else {
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = 0.f;
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) dst[i] = v[i];
  *dst_sb = sb;
}

/// Exact contribution of one block pair: (sum of e2m1 products) * 2^(sa + sb), NaN for 0xFF.
__device__ float block_term(const float* x, uint8_t sx, const float (&y)[32], uint8_t sy) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) s = fmaf(x[i], y[i], s);  // exact: multiples of 1/4 below 2^11
  if (sx == kScaleNaN || sy == kScaleNaN) return __int_as_float(0x7FC00000);
  return scalbnf(s, (int(sx) - 127) + (int(sy) - 127));
}

__device__ void store_exact(const Fp8Params& p, int64_t m, int64_t n, float v) {
  if (p.c_f32) {
    static_cast<float*>(p.C)[m * p.ldc + n] = v;
  } else {
    static_cast<uint16_t*>(p.C)[m * p.ldc + n] = fmt::f32_to_bf16(v);
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

/// Threads that scan the flags (scan_stored_flags), as kScanQuarters quarter tiles x
/// kScanSlices slice phases.
constexpr int kScanQuarters = 16, kScanSlices = 8;

/// OR of the flag bytes of the 16-row quarter tiles that rows [r0, r1) of the image touch
/// (at most kScanQuarters), over every slice: scanning thread t takes quarter t % 16 and every
/// kScanSlices-th slice from t / 16. 32-bit indices (the images are far below 2^31 flag
/// bytes) and no division: the producer warpgroup that runs this has 32-56 registers.
__device__ __forceinline__ uint32_t flags_of_rows(const uint8_t* img, const fp8::ImageGeometry& g, int64_t r0,
                                                  int64_t r1, int t) {
  const int q0 = int(r0 / fp8::kFlagRows), nq = int((r1 + fp8::kFlagRows - 1) / fp8::kFlagRows) - q0;
  const int per_slice = int(g.rows_padded / fp8::kFlagRows), qi = t % kScanQuarters;
  const uint8_t* flags = img + g.flag_offset() + q0 + qi;  // flag_index(q, j) = j * per_slice + q
  uint32_t any = 0;
  if (qi < nq) {
#pragma unroll 4  // up to 4 loads in flight
    for (int j = t / kScanQuarters; j < int(g.slices); j += kScanSlices) any |= flags[j * per_slice];
  }
  return any;
}

constexpr int kLines = 16;   ///< flagged lines of one work item
constexpr int kOthers = 64;  ///< rows of the other operand of one work item (one per thread pair)
constexpr int kItemThreads = 2 * kOthers;  ///< threads that compute a work item (the others wait)
static_assert(kLines % 2 == 0, "a thread owns one other row and half the lines");
/// Flagged lines per window of collect_lines (a FIX kernel's region has at most 128 lines: one
/// window).
constexpr int kListCap = 256;

/// Shared memory of the fix-up (in the drained stage ring).
struct FixSmem {
  float xs[kLines][32];   ///< the lines' block (e2m1 values, unscaled)
  float ys[kOthers][33];  ///< the other rows' block; padded: thread o reads row o, a bank per lane
  uint8_t xsb[kLines], ysb[kOthers];  ///< their scale bytes
  int list[kListCap];     ///< flagged lines of the window, in row order
  uint32_t warp_mask[16];  ///< collect_lines: quarter tiles with a flag, per warp (<= 16 warps)
  int64_t found;
};

/// Barrier of the kT threads that run the fix-up (named barrier 1): the GEMM's consumer
/// warpgroups (the producer warpgroup is not in it), or a whole fix-up kernel CTA.
template <int kT>
__device__ __forceinline__ void consumers_sync() {
  __syncwarp();  // bar.sync is .aligned: reconverge first
  asm volatile("bar.sync 1, %0;" ::"r"(kT) : "memory");
}

/// Collects, in row order, the rows in [r0, r1) of `img` (geometry g) that have a flagged group
/// and whose ordinal among them is in [first, first + kListCap), into sm.list; returns how many
/// flagged rows [r0, r1) has in all. Quarter tiles (16 rows, one flag byte per slice) are
/// scanned first, kT at a time; only the rows of flagged ones are checked (row_flagged). Every
/// one of the kT threads calls this; the result is the same in all of them.
template <int kT>
__device__ int64_t collect_lines(const uint8_t* img, const fp8::ImageGeometry& g, int64_t r0, int64_t r1,
                                 int64_t first, FixSmem& sm) {
  constexpr int kQ = fp8::kFlagRows;
  static_assert(kQ <= 32 && kT / 32 <= 16, "one warp checks the rows of a quarter tile");
  const int64_t q0 = r0 / kQ, q1 = (r1 + kQ - 1) / kQ;
  consumers_sync<kT>();  // the list, `found` and the staging may still be read
  if (threadIdx.x == 0) sm.found = 0;
  for (int64_t qb = q0; qb < q1; qb += kT) {
    const int64_t q = qb + threadIdx.x;
    uint32_t f = 0;
    if (q < q1)
      for (int64_t j = 0; j < g.slices; ++j) f |= img[g.flag_offset() + g.flag_index(q, j)];
    const uint32_t m = __ballot_sync(0xFFFFFFFFu, f != 0);
    if (threadIdx.x % 32 == 0) sm.warp_mask[threadIdx.x / 32] = m;
    consumers_sync<kT>();
    for (int w = 0; w < kT / 32; ++w) {
      for (uint32_t bits = sm.warp_mask[w]; bits != 0; bits &= bits - 1) {  // uniform: shared memory
        const int64_t qq = qb + 32 * w + __ffs(int(bits)) - 1;
        if (threadIdx.x < 32) {
          const int64_t r = qq * kQ + threadIdx.x;
          const bool in = threadIdx.x < kQ && r >= r0 && r < r1;
          const uint32_t rm = __ballot_sync(0xFFFFFFFFu, in && row_flagged(img, g, r));
          if (threadIdx.x == 0) {
            for (uint32_t rb = rm; rb != 0; rb &= rb - 1, ++sm.found)
              if (sm.found >= first && sm.found < first + kListCap)
                sm.list[sm.found - first] = int(qq * kQ + __ffs(int(rb)) - 1);
          }
        }
        consumers_sync<kT>();
      }
    }
    consumers_sync<kT>();  // warp_mask is rewritten by the next chunk
  }
  return sm.found;
}

/// One work item: C entries of up to kLines flagged lines `lines` (nl of them) against the rows
/// [o0, min(o0 + kOthers, o1)) of the other operand. Rows (kColumns false): line = activation
/// row m, others = weight rows n; columns: line = weight row n, others = activation rows m that
/// are not flagged themselves (the rows pass recomputes them). Per 32-element block the 80
/// blocks are staged in shared memory (activation blocks quantized, weight blocks decoded, one
/// per thread), then thread (o, half) adds block_term of its other row against each of its
/// kLines / 2 lines, in K order (bitwise the sums of the line-at-a-time version of session 13).
template <bool kColumns, int kT>
__device__ void fix_item(const Fp8Params& p, const int* lines, int nl, int64_t o0, int64_t o1,
                         const fp8::ImageGeometry& ga, FixSmem& sm) {
  constexpr int kHalf = kLines / 2;
  const int64_t kblocks = p.K / 32;
  const int ol = threadIdx.x % kOthers, half = threadIdx.x / kOthers;
  const int64_t o = o0 + ol;
  const bool keep = threadIdx.x < kItemThreads && o < o1 && !(kColumns && row_flagged(p.a_img, ga, o));
  float acc[kHalf] = {};
  for (int64_t b = 0; b < kblocks; ++b) {
    consumers_sync<kT>();
    if (threadIdx.x < kOthers) {
      stage_block(p, kColumns, o < o1, o, b, sm.ys[ol], &sm.ysb[ol]);
    } else if (threadIdx.x < kOthers + kLines) {
      const int j = threadIdx.x - kOthers;
      stage_block(p, !kColumns, j < nl, j < nl ? lines[j] : 0, b, sm.xs[j], &sm.xsb[j]);
    }
    consumers_sync<kT>();
    if (threadIdx.x < kItemThreads) {
      float y[32];
#pragma unroll
      for (int i = 0; i < 32; ++i) y[i] = sm.ys[ol][i];
      const uint8_t sy = sm.ysb[ol];
#pragma unroll
      for (int jj = 0; jj < kHalf; ++jj) {
        const int j = half * kHalf + jj;
        if (j < nl) acc[jj] += block_term(sm.xs[j], sm.xsb[j], y, sy);
      }
    }
  }
  if (!keep) return;
#pragma unroll
  for (int jj = 0; jj < kHalf; ++jj) {
    const int j = half * kHalf + jj;
    if (j < nl) kColumns ? store_exact(p, o, lines[j], acc[jj]) : store_exact(p, lines[j], o, acc[jj]);
  }
}

/// One pass of fix_region: the flagged rows [l0, l1) of `img` (kColumns false: A's, lines =
/// activation rows; true: B's, lines = weight rows) against the other operand's rows [o0, o1),
/// kListCap lines per window, as work items of kLines lines x kOthers others; this group of kT
/// threads takes items worker, worker + workers, ...
template <bool kColumns, int kT>
__device__ void fix_pass(const Fp8Params& p, const uint8_t* img, const fp8::ImageGeometry& g, int64_t l0, int64_t l1,
                         int64_t o0, int64_t o1, int worker, int workers, FixSmem& sm) {
  const fp8::ImageGeometry ga{p.a_rows, p.slices};
  const int64_t other_tiles = (o1 - o0 + kOthers - 1) / kOthers;
  for (int64_t first = 0;; first += kListCap) {
    const int64_t total = collect_lines<kT>(img, g, l0, l1, first, sm);
    const int64_t n = min(total - first, int64_t(kListCap));
    if (n <= 0) return;
    const int64_t items = (n + kLines - 1) / kLines * other_tiles;
    for (int64_t it = worker; it < items; it += workers) {
      const int64_t grp = it / other_tiles;
      fix_item<kColumns, kT>(p, sm.list + grp * kLines, int(min(int64_t(kLines), n - grp * kLines)),
                             o0 + it % other_tiles * kOthers, o1, ga, sm);
    }
    if (total <= first + kListCap) return;
  }
}

/// Recomputes exactly the elements of C's region rows [m0, m1) x columns [n0, n1) whose
/// activation row or weight row has a flagged group: first the flagged rows against every
/// column of the region, then the flagged columns against the region's other rows. Called by
/// kT threads together (`worker` of `workers` such groups sharing the work items), after
/// every store of C to the region.
template <int kT>
__device__ void fix_region(const Fp8Params& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int worker,
                           int workers, FixSmem& sm) {
  fix_pass<false, kT>(p, p.a_img, fp8::ImageGeometry{p.a_rows, p.slices}, m0, m1, n0, n1, worker, workers, sm);
  fix_pass<true, kT>(p, p.b_img, fp8::ImageGeometry{p.b_rows, p.slices}, n0, n1, m0, m1, worker, workers, sm);
}

/// CTAs and threads of the separate fix-up kernel. Few and small on purpose (session 12: the
/// fix-up's launch cost 0.1-1.2 us when nothing is flagged; 16 CTAs of 128 threads took 0.3-0.5
/// us off the M = 256 calls in session 13): PDL lets them start during the GEMM where an SM has
/// room, to scan the flags there.
constexpr int kFixupGrid = 16, kFixupThreads = 128;

/// ORs the flag bytes of one image, 16 bytes per load where the flags are 16-byte aligned (they
/// fill whole 16-byte units, fp8_layout.hpp), kFixupThreads threads.
__device__ __forceinline__ uint32_t any_flag(const uint8_t* img, const fp8::ImageGeometry& g) {
  const uint8_t* f = img + g.flag_offset();
  const int64_t n = g.flag_count();
  uint32_t any = 0;
  if (reinterpret_cast<uintptr_t>(f) % 16 == 0) {
    const uint4* v = reinterpret_cast<const uint4*>(f);
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < n / 16; i += kFixupThreads) {
      const uint4 w = v[i];
      any |= w.x | w.y | w.z | w.w;
    }
  } else {
#pragma unroll 8
    for (int64_t i = threadIdx.x; i < n; i += kFixupThreads) any |= f[i];
  }
  return any;
}

/// The separate fix-up, after the plain GEMM instantiations (grids whose CTAs store several
/// tiles, split-K, and the 192 x 128 tile). Launched as a programmatic dependent
/// of the GEMM, which signals right after its own wait for the A image: each CTA reads both
/// images' flags, then waits for the GEMM (griddepcontrol.wait; work queued after this kernel
/// finds the GEMM complete too) and returns unless something is flagged; then the CTAs share
/// the work items of fix_region over all of C.
__global__ void __launch_bounds__(kFixupThreads, 4) fp8_fixup_kernel(const Fp8Params p) {
  const uint32_t any = any_flag(p.a_img, fp8::ImageGeometry{p.a_rows, p.slices}) |
                       any_flag(p.b_img, fp8::ImageGeometry{p.b_rows, p.slices});
  grid_dependency_wait();
  if (!__syncthreads_or(int(any != 0u))) return;
  __shared__ FixSmem sm;
  fix_region<kFixupThreads>(p, 0, p.M, 0, p.N, int(blockIdx.x), int(gridDim.x), sm);
}

}  // namespace
}  // namespace mxfp4::cuda
