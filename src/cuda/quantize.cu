// GPU quantizer and dequantizer (spec §2, §1.3). One thread per 32-element block; the block
// rule is fmt::quantize_block, the same source the CPU uses, so results are bit-identical.
// Compiled without fast-math: no flush-to-zero anywhere.
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kThreads = 256;  // quantize_fragments_kernel: 8 warps = one token tile

template <DType D>
__global__ void quantize_kernel(const void* __restrict__ x, int64_t rows, int64_t K, int64_t stride,
                                uint8_t* __restrict__ codes, uint8_t* __restrict__ scales, ScaleRule rule,
                                bool shuffled) {
  const int64_t kblocks = K / 32;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * kblocks) return;
  const int64_t r = idx / kblocks, c = idx % kblocks;
  float v[32];
  load_block<D>(x, r * stride + c * 32, v);
  uint8_t q[32];
  const uint8_t s = fmt::quantize_block(v, 32, q, rule);
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) w[i] |= uint32_t(q[8 * i + 2 * j] | (q[8 * i + 2 * j + 1] << 4)) << (8 * j);
  }
  uint8_t* dst = codes + r * (K / 2) + c * 16;
  if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) dst[i] = uint8_t(w[i / 4] >> (8 * (i % 4)));
  }
  const int64_t so = shuffled ? fmt::aiter_scale_offset(r, c, round_up(kblocks, 8)) : idx;
  scales[so] = s;
}

template <typename Out>
__global__ void dequantize_kernel(MxMatrix q, Out* __restrict__ out, int64_t stride) {
  const int64_t kblocks = q.K / 32;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= q.rows * kblocks) return;
  const int64_t r = idx / kblocks, c = idx % kblocks;
  const int64_t kb = q.K / 2;
  const int64_t so = q.scale_layout == ScaleLayout::aiter_shuffled ? fmt::aiter_scale_offset(r, c, round_up(kblocks, 8))
                                                                   : idx;
  const uint8_t s = q.scales[so];
  Out* dst = out + r * stride + c * 32;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int64_t byte_col = c * 16 + i;
    const int64_t co = q.code_layout == CodeLayout::aiter_shuffled ? fmt::aiter_weight_offset(r, byte_col, kb)
                                                                   : r * kb + byte_col;
    const uint8_t b = q.codes[co];
    const float lo = fmt::dequant_f32(b & 0xF, s), hi = fmt::dequant_f32(b >> 4, s);
    if constexpr (sizeof(Out) == 4) {
      dst[2 * i] = lo;
      dst[2 * i + 1] = hi;
    } else {
      dst[2 * i] = fmt::f32_to_bf16(lo);
      dst[2 * i + 1] = fmt::f32_to_bf16(hi);
    }
  }
}

/// The quantizer's shared-memory tile holds its CTA's 16 chunks as 256 16-byte pieces (piece p
/// = words 4p .. 4p + 3 of the chunks' global order), each stored at swizzle_piece(p): an XOR of
/// p's low three bits with higher bits of p, so that the 8 lanes of one 16-byte access phase
/// (lanes 8i .. 8i + 7) hit 8 different 4-bank groups both when the threads store their pieces
/// (tile_piece) and when the CTA copies pieces 0, 1, 2, ... out in order (without it, the
/// stores were 8-way (wgmma order) or 16-way (mma order, 4-byte stores) bank conflicts).
///   wgmma: p = 16 step + 8 reg + fragment lane / 4; the swizzle key is p >> 3 = 2 step + reg.
///   mma:   p = 16 step + fragment lane / 2; the key is step (p >> 4), shifted past the
///          fragment lane's lowest bit, which a phase's lanes share pairwise.
template <FragOrder O>
__device__ __forceinline__ int swizzle_piece(int p) {
  return O == FragOrder::wgmma ? p ^ ((p >> 3) & 7) : p ^ (((p >> 4) & 3) << 1);
}

/// Piece slot (swizzled) of the 16 bytes that lane `lane` of warp `warp` stores: its quarter
/// block (block lane / 4, quarter q = lane % 4) lies in K16 step 2 (lane / 4) + q / 2 at
/// register q % 2 of fragment lanes 4 warp .. 4 warp + 3 (quantize_quarter_to_fragment_words).
///   wgmma: those 4 words are one piece, 16 step + 8 (q % 2) + warp;
///   mma:   the words of fragment lanes 4 warp + 2 (q % 2) + {0, 1}, both registers, form
///          piece 16 step + 2 warp + q % 2 (tile_piece_words trades halves with lane ^ 1).
template <FragOrder O>
__device__ __forceinline__ int tile_piece(int lane, int warp) {
  const int q = lane % 4, step = 2 * (lane / 4) + q / 2;
  return swizzle_piece<O>(O == FragOrder::wgmma ? 16 * step + 8 * (q % 2) + warp : 16 * step + 2 * warp + q % 2);
}

/// The 16 bytes of tile_piece from the lane's 4 fragment words (register q % 2 of fragment
/// lanes 4 warp + t, word t): as they are in wgmma order, mma_piece_of_quarter in mma order.
/// All 32 lanes of the warp must call this together.
template <FragOrder O>
__device__ __forceinline__ uint4 tile_piece_words(const uint32_t (&w)[4], int q) {
  if constexpr (O == FragOrder::wgmma) {
    return make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    return mma_piece_of_quarter(w, q);
  }
}

// -DMXFP4_EXP_SYNTH_QUANT=1 (a measurement only, wrong results: docs/perf-notes.md, session 32
// plan item s): quantize_fragments_kernel keeps its grid, wait and trigger but spins 0.7 us
// instead of quantizing, so path splitk's GEMM follows a kernel that neither loads nor stores.
#ifndef MXFP4_EXP_SYNTH_QUANT
#define MXFP4_EXP_SYNTH_QUANT 0
#endif
constexpr bool kExpSynthQuant = MXFP4_EXP_SYNTH_QUANT != 0;
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// A [M, K] -> bf16 fragments for the splitk and tiled GEMMs (quantize_kernels.cuh,
/// a_fragment_index) over the padded [m_padded = round_up(M, 8), k_padded] grid, padding -> 0.
/// A CTA of 8 warps covers one token tile (8 rows, warp w = row 8j + w) and 8 K blocks:
/// lane l quantizes elements 8 (l % 4) .. +7 of block 8 blockIdx.x + l / 4, so a warp reads
/// 512 contiguous bytes of its row. The CTA's fragments are up to 16 whole chunks (K16 steps;
/// fewer in the last CTA of a row when K16 steps % 16 != 0), contiguous in `frags`: they are
/// assembled in shared memory (swizzle_piece) and stored as one 16-byte piece per thread (4-byte stores
/// scattered over the chunks cost ~1 us per call at M >= 32, docs/perf-notes.md session 8).
/// Token tiles run along grid.y (strided when there are more than 65535); every index comes
/// from the grid, with no division by a runtime value.
template <FragOrder O>
__global__ void __launch_bounds__(kThreads) quantize_fragments_kernel(const uint16_t* __restrict__ A, int64_t M,
                                                                      int64_t K, int64_t lda, int64_t m_padded,
                                                                      int64_t k_padded, uint32_t* __restrict__ frags,
                                                                      ScaleRule rule, int* __restrict__ counters,
                                                                      int64_t n_counters, bool trigger_first) {
  static_assert(kThreads == 256, "8 warps (one token tile) x 32 lanes (8 K blocks)");
  __shared__ uint4 tile16[16 * 16];  // the CTA's 16 chunks as 16-byte pieces, swizzled (tile_piece)
  // Launched with programmatic dependent launch (launch_pdl): wait for the stream's previous
  // kernel (which may write A, or still read `frags` as the previous call's GEMM) first. Then
  // the GEMM launched after this kernel (PDL too) may start its weight loads: everything
  // before this grid is complete, so the weights are final. It waits for this grid's
  // completion before it reads the fragments. (Triggering before the wait, which would be
  // unsafe in general, measured no faster in session 11, when the GEMM did not yet let this
  // kernel launch early.) `trigger_first` (GemmOptions::weights_static, path splitk): the
  // caller promised that nothing running writes B, so the GEMM may launch, and stream its
  // weights, before this kernel's wait: it still waits for this grid before it reads the
  // fragments or touches C and the workspace (session 38, H100: 16x3072x1536 5.96 -> 5.03 us,
  // 16x2112x7168 9.20 -> 9.42; docs/perf-notes.md).
  if (trigger_first) grid_dependents_launch();
  grid_dependency_wait();
  if (!trigger_first) grid_dependents_launch();
  // The GEMM's split-K tile counters (path splitk's reduction through the workspace) start
  // each call at zero: the GEMM that used them last has completed (the wait above), and this
  // call's GEMM reads them only after its own wait for this grid's completion, so the zeroing
  // may follow the trigger above (which it would otherwise delay for every call).
  if (n_counters > 0 && blockIdx.x == 0 && blockIdx.y == 0) {
#pragma unroll 1
    for (int64_t i = threadIdx.x; i < n_counters; i += kThreads) counters[i] = 0;
  }
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, q = lane % 4;
  const int64_t c = int64_t(blockIdx.x) * 8 + lane / 4, ks = k_padded / 16;
  if (kExpSynthQuant) {  // measurement only: the launch and the PDL edges without the work
    const unsigned long long t0 = globaltimer_ns();
    while (globaltimer_ns() - t0 < 700) {
    }
    m_padded = 0;  // no token tile below (the timeline tool's end stamp still follows)
  }
  // Steps 16 blockIdx.x .. +15 that exist (k_padded is a multiple of 64: whole chunk pairs).
  const int steps = int(min(int64_t(16), ks - 16 * int64_t(blockIdx.x)));
  for (int64_t j = blockIdx.y; j < m_padded / 8; j += gridDim.y) {
    const int64_t r = 8 * j + warp;
    uint32_t words[4] = {0u, 0u, 0u, 0u};
    // A warp in a padding row (r >= M) writes zeros, the quantizer's result for them, without
    // running it (at M = 1, 7 of the 8 rows). The row is the warp's, so the test is uniform.
    if (r < M) quantize_quarter_to_fragment_words(A, M, K, lda, r, c, q, rule, words);  // all lanes of the warp
    tile16[tile_piece<O>(lane, warp)] = tile_piece_words<O>(words, q);
    __syncthreads();
    if (int(threadIdx.x) < steps * 16) {
      const uint4 piece = tile16[swizzle_piece<O>(int(threadIdx.x))];
      reinterpret_cast<uint4*>(frags + (j * ks + 16 * int64_t(blockIdx.x)) * 64)[threadIdx.x] = piece;
    }
    __syncthreads();  // the tile is rewritten by the next token tile
  }
}

int blocks_for(int64_t n) { return int((n + kThreads - 1) / kThreads); }

}  // namespace

void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule, ScaleLayout scale_layout, void* stream) {
  const int64_t n = rows * (K / 32);
  const bool shuffled = scale_layout == ScaleLayout::aiter_shuffled;
  const dim3 grid(blocks_for(n));
  switch (dtype) {
    case DType::bf16:
      quantize_kernel<DType::bf16><<<grid, kThreads, 0, as_stream(stream)>>>(x, rows, K, x_stride, codes, scales,
                                                                             rule, shuffled);
      break;
    case DType::fp16:
      quantize_kernel<DType::fp16><<<grid, kThreads, 0, as_stream(stream)>>>(x, rows, K, x_stride, codes, scales,
                                                                             rule, shuffled);
      break;
    case DType::fp32:
      quantize_kernel<DType::fp32><<<grid, kThreads, 0, as_stream(stream)>>>(x, rows, K, x_stride, codes, scales,
                                                                             rule, shuffled);
      break;
  }
  check_launch("quantize_kernel");
}

void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, void* stream) {
  const dim3 grid(blocks_for(q.rows * (q.K / 32)));
  if (out_dtype == DType::fp32) {
    dequantize_kernel<float><<<grid, kThreads, 0, as_stream(stream)>>>(q, static_cast<float*>(out), out_stride);
  } else {
    dequantize_kernel<uint16_t><<<grid, kThreads, 0, as_stream(stream)>>>(q, static_cast<uint16_t*>(out), out_stride);
  }
  check_launch("dequantize_kernel");
}

void quantize_fragments(const uint16_t* A, int64_t M, int64_t K, int64_t lda, uint32_t* frags, ScaleRule rule,
                        cudaStream_t stream, FragOrder order, int* counters, int64_t n_counters, bool trigger_first) {
  const int64_t m_padded = round_up(M, 8), k_padded = round_up(K, 64);
  const dim3 grid(unsigned(ceil_div(k_padded / 32, 8)), unsigned(std::min<int64_t>(m_padded / 8, 65535)));
  auto kernel = order == FragOrder::wgmma ? quantize_fragments_kernel<FragOrder::wgmma>
                                          : quantize_fragments_kernel<FragOrder::mma>;
  launch_pdl(kernel, grid, dim3(kThreads), stream, "quantize_fragments_kernel", A, M, K, lda,
             m_padded, k_padded, frags, rule, counters, n_counters, trigger_first);
}

}  // namespace mxfp4::cuda
