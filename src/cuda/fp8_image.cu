// Builders of path fp8's 8-bit operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with the primitives and block rule of fmt::quantize_block, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v3). One CTA of 16 x kRows threads per (kRows-row tile, 128-K slice), kRows
// 16 or 64 (chosen per call, fp8_image_rows_per_cta), 8 elements (one 16-byte load of bf16) per
// thread.
#include <cuda_fp8.h>

#include "core/fp8_layout.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "cuda/fp8_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

/// Block source: bf16 activations A [M, K] (row stride lda), quantized under `rule`.
struct Bf16Source {
  const uint16_t* A;
  int64_t M, K, lda;
  ScaleRule rule;
  /// e2m1 values (signed grid values in {0, 0.5, ..., 6}, -0 kept) of elements k0 .. k0+7 of
  /// row r and the scale byte of their 32-element block, quantized together with the 3
  /// adjacent lanes holding the block's other quarters (all lanes of the warp call this
  /// together). The same primitives and block rule as fmt::quantize_block (max and the
  /// non-finite flag are order-free), and e2m1_round_value, which equals the value of
  /// e2m1_encode's code (checked exhaustively on the CPU): bit-identical to it. Zeros outside
  /// [M, K]; zeros and the NaN scale byte for a block with a non-finite element.
  __device__ uint8_t quarter(int64_t r, int64_t k0, float (&vals)[8]) const {
    uint32_t w[4];
    load_quarter_bf16(A, M, K, lda, r, k0 / 32, int(k0 % 32) / 8, w);
    float v[8];
    bf16_pairs_to_f32(w, v);
    int s;
    if (!quarter_block_exponent(v, rule, s)) {
#pragma unroll
      for (int i = 0; i < 8; ++i) vals[i] = 0.f;
      return kScaleNaN;
    }
    const float inv = fmt::exp2i(-s);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float q = fmt::e2m1_round_value(fabsf(v[i]) * inv);
      vals[i] = fmt::f32_from_bits(fmt::f32_bits(q) | (fmt::f32_bits(v[i]) & 0x80000000u));
    }
    return uint8_t(s + 127);
  }
};

/// Block source: packed weights (layout v3, docs/packed-layout.md) B [N, K].
struct PackedSource {
  const uint8_t* data;
  int64_t N, K;
  /// e2m1 values (fmt::e2m1_to_f32, -0 kept) of elements k0 .. k0+7 of row r and their block's
  /// scale byte; zeros and scale byte 127 outside [N, K].
  __device__ uint8_t quarter(int64_t r, int64_t k0, float (&vals)[8]) const {
    if (r >= N || k0 >= K) {
#pragma unroll
      for (int i = 0; i < 8; ++i) vals[i] = 0.f;
      return 127;
    }
    const PackedGeometry g = PackedGeometry::of(N, K);
#pragma unroll
    for (int i = 0; i < 8; i += 2) {
      const uint8_t pair = packed::read_code_pair(data, r, k0 + i, g.k_padded);
      vals[i] = fmt::e2m1_to_f32(pair & 0xF);
      vals[i + 1] = fmt::e2m1_to_f32(pair >> 4);
    }
    return data[packed::scale_offset(r, k0 / 32, g.rows_padded, g.k_padded)];
  }
};

/// One CTA per (kRows-row tile t, 128-K slice j): thread 16 rr + i owns elements 8i .. 8i+7 of
/// the slice in row kRows t + rr (quarter i % 4 of block i / 4); the 16 threads of a row
/// (adjacent lanes) agree on the group's kind and exponent with shuffles, and the 8 warps of
/// each 16 rows on the flag byte of their quarter tile.
template <class Source, int kRows>
__global__ void __launch_bounds__(kRows * 16) fp8_image_kernel(Source src, int64_t rows, int64_t K, uint8_t* __restrict__ out) {
  // Launched with PDL (launch_pdl): wait for the stream's previous kernel, which may write the
  // source or still read `out`; then the GEMM (PDL) may start and request B, which is final by
  // then. It waits for this grid before reading A's image.
  grid_dependency_wait();
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j = blockIdx.y;
  const int rr = int(threadIdx.x) / 16, i = int(threadIdx.x) % 16;
  const int64_t r = t * kRows + rr, k0 = j * fp8::kSliceK + 8 * i;
  float vals[8];
  const uint8_t sb = src.quarter(r, k0, vals);
  bool nonzero = false;
#pragma unroll
  for (int e = 0; e < 8; ++e) nonzero |= vals[e] != 0.f;
  const int s = int(sb) - 127;
  constexpr int kNone = 1 << 20;
  const bool counts = nonzero && sb != kScaleNaN;
  int lo = counts ? s : kNone, hi = counts ? s : -kNone, nan = sb == kScaleNaN, block_nonzero = nonzero;
#pragma unroll
  for (int d = 1; d < 16; d <<= 1) {  // the 16 lanes of one row are adjacent
    lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, d));
    nan |= __shfl_xor_sync(0xFFFFFFFFu, nan, d);
    if (d < 4) block_nonzero |= __shfl_xor_sync(0xFFFFFFFFu, block_nonzero, d);  // the block's 4 lanes
  }
  int R = 0;
  const fp8::GroupKind kind = fp8::plan_group(lo, hi, hi > -kNone, nan != 0, R);
  const bool flagged = r < rows && kind == fp8::GroupKind::flagged;
  // This block's image exponent and the s8 codes value * 2^(s - e) (fp8::e2m1_to_s8 on the
  // CPU): for a block with nonzero codes on the path s - e lies in [kMinShift, kMaxShift], so
  // the fp32 product is an exact integer of at most 96 in magnitude and the truncating
  // conversion returns it; zeros (of either sign) give 0. Flagged groups are zero.
  const int e = flagged ? fp8::kFlaggedExponent : fp8::block_image_exponent(kind, R, s, block_nonzero != 0);
  const float f = fmt::exp2i(min(max(s - e, fp8::kMinShift), fp8::kMaxShift));
  uint32_t words[2];
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    uint32_t word = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) word |= (uint32_t(__float2int_rz(vals[4 * w + q] * f)) & 0xFFu) << (8 * q);
    words[w] = flagged ? 0u : word;
  }
  *reinterpret_cast<uint2*>(out + g.code_offset(r, k0)) = make_uint2(words[0], words[1]);
  // The row's exponent word: block b's E8M0 byte from its first lane (4 b of the row's 16).
  uint32_t word = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b) word |= uint32_t(fp8::exponent_byte(__shfl_sync(0xFFFFFFFFu, e, 4 * b, 16))) << (8 * b);
  if (i == 0) {
    reinterpret_cast<uint32_t*>(out + g.exponent_offset())[g.group_index(r, j)] = word;
    reinterpret_cast<float*>(out + g.scale_offset())[g.group_index(r, j)] =
        r >= rows ? 1.f : flagged ? 0.f : fmt::exp2i(R);
  }
  const bool wide = r < rows && kind == fp8::GroupKind::wide;
  // Rows 16 q' .. 16 q' + 15 of the tile are warps 8 q' .. 8 q' + 7.
  constexpr int kQuarters = kRows / fp8::kFlagRows, kWarpsPerQuarter = fp8::kFlagRows * 16 / 32;
  __shared__ int warp_flagged[kRows / 2], warp_wide[kRows / 2];
  const int warp = int(threadIdx.x) / 32;
  const int any_flagged = __any_sync(0xFFFFFFFFu, flagged), any_wide = __any_sync(0xFFFFFFFFu, wide);
  if (threadIdx.x % 32 == 0) warp_flagged[warp] = any_flagged, warp_wide[warp] = any_wide;
  __syncthreads();
  if (threadIdx.x < kQuarters) {
    int f = 0, w = 0;
#pragma unroll
    for (int k = 0; k < kWarpsPerQuarter; ++k) {
      f |= warp_flagged[threadIdx.x * kWarpsPerQuarter + k];
      w |= warp_wide[threadIdx.x * kWarpsPerQuarter + k];
    }
    const int64_t q = t * kQuarters + threadIdx.x;  // quarter tile: atom q / 4, its byte q % 4
    out[g.flag_offset() + g.flag_index(q, j)] = uint8_t(f != 0);
    uint8_t* record = out + g.wide_offset() + g.wide_index(q / 4, j);
    record[q % 4] = uint8_t(w != 0);
    if (q % 4 == 0) {  // the record's padding
      uint32_t* pad = reinterpret_cast<uint32_t*>(record);
      pad[1] = pad[2] = pad[3] = 0u;
    }
  }
  // No padding follows the flags (fp8_layout.hpp: they end 16-byte aligned), so every byte
  // of the image has been written.
}

template <class Source>
void launch_image(const Source& src, int64_t rows, int64_t K, uint8_t* out, cudaStream_t stream, const char* name) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  if (g.slices > 65535)  // slices run along grid.y
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 slices of 128");
  if (fp8_image_rows_per_cta(rows, K) == 64) {
    const dim3 grid(unsigned(g.rows_padded / 64), unsigned(g.slices));
    launch_pdl(fp8_image_kernel<Source, 64>, grid, dim3(64 * 16), stream, name, src, rows, K, out);
  } else {
    const dim3 grid(unsigned(g.rows_padded / 16), unsigned(g.slices));
    launch_pdl(fp8_image_kernel<Source, 16>, grid, dim3(16 * 16), stream, name, src, rows, K, out);
  }
}

}  // namespace

/// 16 rows (one flag byte, 256 threads) spread a small image's issue over more SMs
/// (256x2880x512: 64 instead of 16); from 256 such items on, 64 rows (1024 threads) keep the
/// image on fewer SMs, so that more of the GEMM's CTAs, launched early by PDL but too large to
/// share an SM with image CTAs, start their weight loads while the image runs (session 12
/// bench: 16-row CTAs everywhere cost 256x7168x2048 +1.1 us and 128x2112x7168 +1.5 us).
int fp8_image_rows_per_cta(int64_t rows, int64_t K) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  return g.slices * (g.rows_padded / fp8::kFlagRows) >= 256 ? 64 : 16;
}

void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream) {
  launch_image(Bf16Source{A, M, K, lda, rule}, M, K, out, stream, "fp8_image_kernel<bf16>");
}

void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream) {
  launch_image(PackedSource{B.data, B.N, B.K}, B.N, B.K, out, stream, "fp8_image_kernel<packed>");
}

void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream) { fp8_image_from_packed(p, out, as_stream(stream)); }

}  // namespace mxfp4::cuda
