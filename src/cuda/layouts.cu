// GPU layout conversions: AITER scale/weight shuffles (spec §4) and packed layout v3
// (docs/packed-layout.md). Offsets come from the formulas the CPU uses (fmt::aiter_*_offset,
// src/core/packed_layout.hpp).
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"

namespace mxfp4::cuda {
namespace {

constexpr int kThreads = 256;
int blocks_for(int64_t n) { return int((n + kThreads - 1) / kThreads); }

__global__ void shuffle_scales_kernel(const uint8_t* __restrict__ src, int64_t rows, int64_t kblocks,
                                      uint8_t* __restrict__ dst, bool to_shuffled) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * kblocks) return;
  const int64_t r = idx / kblocks, c = idx % kblocks;
  const int64_t so = fmt::aiter_scale_offset(r, c, round_up(kblocks, 8));
  if (to_shuffled) dst[so] = src[idx];
  else dst[idx] = src[so];
}

__global__ void shuffle_weight_kernel(const uint8_t* __restrict__ src, int64_t N, int64_t kb,
                                      uint8_t* __restrict__ dst, bool to_shuffled) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= N * kb) return;
  const int64_t n = idx / kb, c = idx % kb;
  const int64_t so = fmt::aiter_weight_offset(n, c, kb);
  if (to_shuffled) dst[so] = src[idx];
  else dst[idx] = src[so];
}

/// Code nibble of plain-or-AITER MXFP4 matrix `b` at (r, k), or 0 outside [rows, K).
__device__ __forceinline__ uint32_t source_code(const MxMatrix& b, int64_t r, int64_t k) {
  if (r >= b.rows || k >= b.K) return 0;
  const int64_t kb = b.K / 2, col = k / 2;
  const int64_t off = b.code_layout == CodeLayout::aiter_shuffled ? fmt::aiter_weight_offset(r, col, kb) : r * kb + col;
  return (b.codes[off] >> (4 * (k % 2))) & 0xFu;
}

/// Threads [0, words): one 32-bit code word each (8 codes gathered from the source);
/// threads [words, words + scale bytes): one scale byte each. Every byte of `out` is written.
__global__ void prepack_kernel(MxMatrix b, PackedGeometry geo, uint8_t* __restrict__ out) {
  const int64_t words = geo.code_bytes / 4, kblocks_p = geo.k_padded / 32;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < words) {
    const int64_t tile = idx / 128, within = idx % 128;
    const int64_t nt = tile / geo.k_chunks, kc = tile % geo.k_chunks;
    const int lane = int(within / 4), jw = int(within % 4);
    const int g = lane / 4, t = lane % 4;
    uint32_t w = 0;
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      const int q = p % 4, e = p / 4;
      const int64_t r = 16 * nt + g + 8 * (q & 1);
      const int64_t k = 64 * kc + 16 * jw + 2 * t + 8 * (q >> 1) + e;
      w |= packed::scatter_code(source_code(b, r, k), q, e);
    }
    reinterpret_cast<uint32_t*>(out)[idx] = w;
    return;
  }
  const int64_t si = idx - words;
  if (si >= geo.rows_padded * kblocks_p) return;
  const int64_t r = si / kblocks_p, c = si % kblocks_p;
  const int64_t kblocks = b.K / 32;
  uint8_t s = 0;
  if (r < b.rows && c < kblocks) {
    s = b.scales[b.scale_layout == ScaleLayout::aiter_shuffled ? fmt::aiter_scale_offset(r, c, round_up(kblocks, 8))
                                                               : r * kblocks + c];
  }
  out[packed::scale_offset(r, c, geo.rows_padded, geo.k_padded)] = s;
}

/// Inverse: one thread per code word (it holds 4 whole plain bytes) or per real scale byte.
__global__ void unpack_kernel(const uint8_t* __restrict__ packed, PackedGeometry geo, int64_t N, int64_t K,
                              uint8_t* __restrict__ codes, uint8_t* __restrict__ scales) {
  const int64_t words = geo.code_bytes / 4;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < words) {
    const uint32_t w = reinterpret_cast<const uint32_t*>(packed)[idx];
    const int64_t tile = idx / 128, within = idx % 128;
    const int64_t nt = tile / geo.k_chunks, kc = tile % geo.k_chunks;
    const int lane = int(within / 4), jw = int(within % 4);
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t r = 16 * nt + g + 8 * (q & 1);
      const int64_t k = 64 * kc + 16 * jw + 2 * t + 8 * (q >> 1);
      if (r < N && k < K) codes[r * (K / 2) + k / 2] = uint8_t(packed::gather_code(w, q, 0) | (packed::gather_code(w, q, 1) << 4));
    }
    return;
  }
  const int64_t si = idx - words, kblocks = K / 32;
  if (si >= N * kblocks) return;
  const int64_t r = si / kblocks, c = si % kblocks;
  scales[si] = packed[packed::scale_offset(r, c, geo.rows_padded, geo.k_padded)];
}

}  // namespace

void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, void* stream) {
  shuffle_scales_kernel<<<blocks_for(rows * kblocks), kThreads, 0, as_stream(stream)>>>(plain, rows, kblocks, shuffled,
                                                                                         true);
  check_launch("shuffle_scales_kernel");
}

void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, void* stream) {
  shuffle_scales_kernel<<<blocks_for(rows * kblocks), kThreads, 0, as_stream(stream)>>>(shuffled, rows, kblocks, plain,
                                                                                         false);
  check_launch("unshuffle_scales_kernel");
}

void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, void* stream) {
  shuffle_weight_kernel<<<blocks_for(N * K / 2), kThreads, 0, as_stream(stream)>>>(plain, N, K / 2, shuffled, true);
  check_launch("shuffle_weight_kernel");
}

void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, void* stream) {
  shuffle_weight_kernel<<<blocks_for(N * K / 2), kThreads, 0, as_stream(stream)>>>(shuffled, N, K / 2, plain, false);
  check_launch("unshuffle_weight_kernel");
}

void prepack(const MxMatrix& b, uint8_t* out, void* stream) {
  const PackedGeometry geo = PackedGeometry::of(b.rows, b.K);
  const int64_t threads = geo.code_bytes / 4 + geo.rows_padded * geo.k_padded / 32;
  prepack_kernel<<<blocks_for(threads), kThreads, 0, as_stream(stream)>>>(b, geo, out);
  check_launch("prepack_kernel");
}

void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, void* stream) {
  const PackedGeometry geo = PackedGeometry::of(p.N, p.K);
  const int64_t threads = geo.code_bytes / 4 + p.N * p.K / 32;
  unpack_kernel<<<blocks_for(threads), kThreads, 0, as_stream(stream)>>>(p.data, geo, p.N, p.K, codes, scales);
  check_launch("unpack_kernel");
}

}  // namespace mxfp4::cuda
