// GPU layout conversions: AITER scale/weight shuffles (spec §4) and packed layout v1
// (docs/packed-layout.md). One thread per byte or per (row, K block); offsets come from the
// same formulas the CPU uses (fmt::aiter_*_offset, packed_*_offset).
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

/// One thread per (row, K block) of the padded grid: writes 16 code bytes and 1 scale byte.
__global__ void prepack_kernel(MxMatrix b, PackedGeometry geo, uint8_t* __restrict__ out) {
  const int64_t kblocks_p = geo.k_padded / 32;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= geo.rows_padded * kblocks_p) return;
  const int64_t r = idx / kblocks_p, c = idx % kblocks_p;
  const int64_t kblocks = b.K / 32, kb = b.K / 2;
  const bool real = r < b.rows && c < kblocks;
  uint8_t s = 0;
  if (real) {
    s = b.scales[b.scale_layout == ScaleLayout::aiter_shuffled ? fmt::aiter_scale_offset(r, c, round_up(kblocks, 8))
                                                               : r * kblocks + c];
  }
  out[packed_scale_offset(geo, r, c)] = s;
#pragma unroll 4
  for (int i = 0; i < 16; ++i) {
    const int64_t col = c * 16 + i;  // byte column of the plain layout
    uint8_t v = 0;
    if (real) {
      v = b.codes[b.code_layout == CodeLayout::aiter_shuffled ? fmt::aiter_weight_offset(r, col, kb) : r * kb + col];
    }
    out[packed_code_offset(geo, r, 2 * col)] = v;
  }
}

__global__ void unpack_kernel(const uint8_t* __restrict__ packed, PackedGeometry geo, int64_t N, int64_t K,
                              uint8_t* __restrict__ codes, uint8_t* __restrict__ scales) {
  const int64_t kblocks = K / 32;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= N * kblocks) return;
  const int64_t r = idx / kblocks, c = idx % kblocks;
  scales[idx] = packed[packed_scale_offset(geo, r, c)];
#pragma unroll 4
  for (int i = 0; i < 16; ++i) {
    const int64_t col = c * 16 + i;
    codes[r * (K / 2) + col] = packed[packed_code_offset(geo, r, 2 * col)];
  }
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
  prepack_kernel<<<blocks_for(geo.rows_padded * geo.k_padded / 32), kThreads, 0, as_stream(stream)>>>(b, geo, out);
  check_launch("prepack_kernel");
}

void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, void* stream) {
  const PackedGeometry geo = PackedGeometry::of(p.N, p.K);
  unpack_kernel<<<blocks_for(p.N * p.K / 32), kThreads, 0, as_stream(stream)>>>(p.data, geo, p.N, p.K, codes, scales);
  check_launch("unpack_kernel");
}

}  // namespace mxfp4::cuda
