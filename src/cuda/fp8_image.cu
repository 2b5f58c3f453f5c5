// Builders of path fp8's 8-bit operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with the primitives and block rule of fmt::quantize_block, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v3). One CTA of 16 x 16 threads per (16-row tile, chain chunk of kChainSlices
// 128-K slices), 8 elements (one 16-byte load of bf16) per thread and slice.
#include <cuda_fp8.h>

#include "core/fp8_layout.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "cuda/fp8_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

/// Block source: bf16 activations A [M, K] (row stride lda), quantized under `rule`. A quarter
/// (8 elements) is loaded first (load: one 16-byte load, so a thread can have all of its chunk's
/// loads in flight) and quantized later (quarter).
struct Bf16Source {
  const uint16_t* A;
  int64_t M, K, lda;
  ScaleRule rule;
  struct Raw {
    uint32_t w[4];
  };
  /// bf16 elements k0 .. k0+7 of row r (k0 % 8 == 0); zeros outside [M, K].
  __device__ Raw load(int64_t r, int64_t k0) const {
    Raw raw;
    load_quarter_bf16(A, M, K, lda, r, k0 / 32, int(k0 % 32) / 8, raw.w);
    return raw;
  }
  /// e2m1 values (signed grid values in {0, 0.5, ..., 6}, -0 kept) of the loaded elements
  /// k0 .. k0+7 of row r and the scale byte of their 32-element block, quantized together with
  /// the 3 adjacent lanes holding the block's other quarters (all lanes of the warp call this
  /// together). The same primitives and block rule as fmt::quantize_block (max and the
  /// non-finite flag are order-free), and e2m1_round_value, which equals the value of
  /// e2m1_encode's code (checked exhaustively on the CPU): bit-identical to it. Zeros outside
  /// [M, K]; zeros and the NaN scale byte for a block with a non-finite element.
  __device__ uint8_t quarter(const Raw& raw, float (&vals)[8]) const {
    float v[8];
    bf16_pairs_to_f32(raw.w, v);
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
  struct Raw {
    uint8_t pairs[4];  ///< code bytes of elements (k0 + 2i, k0 + 2i + 1)
    uint8_t scale;     ///< the block's scale byte
  };
  /// The codes of elements k0 .. k0+7 of row r and their block's scale byte; zero codes and
  /// scale byte 127 outside [N, K].
  __device__ Raw load(int64_t r, int64_t k0) const {
    Raw raw{{0, 0, 0, 0}, 127};
    if (r >= N || k0 >= K) return raw;
    const PackedGeometry g = PackedGeometry::of(N, K);
#pragma unroll
    for (int i = 0; i < 4; ++i) raw.pairs[i] = packed::read_code_pair(data, r, k0 + 2 * i, g.k_padded);
    raw.scale = data[packed::scale_offset(r, k0 / 32, g.rows_padded, g.k_padded)];
    return raw;
  }
  /// e2m1 values (fmt::e2m1_to_f32, -0 kept) of the loaded elements and their scale byte.
  __device__ uint8_t quarter(const Raw& raw, float (&vals)[8]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      vals[2 * i] = fmt::e2m1_to_f32(raw.pairs[i] & 0xF);
      vals[2 * i + 1] = fmt::e2m1_to_f32(raw.pairs[i] >> 4);
    }
    return raw.scale;
  }
};

/// Rows per image CTA (16 threads per row): one flag byte. (Until session 18, one CTA per slice,
/// and 64-row CTAs for large images: with a chunk of 8 slices per CTA, 1024 threads no longer
/// hold a chunk's loads in registers.)
constexpr int kImageRows = 16;

/// One CTA per (kImageRows-row tile t, chain chunk c of kChainSlices slices): for each slice j of
/// the chunk in order, thread 16 rr + i owns elements 8i .. 8i+7 of the slice in row kImageRows t + rr
/// (quarter i % 4 of block i / 4); the 16 threads of a row (adjacent lanes) agree on the group's
/// kind and exponent with shuffles, and each slice's R follows from the previous one's
/// (fp8::plan_group). After the chunk, the 8 warps of each 16 rows agree on the flag, wide and
/// break bytes of their quarter tile for every slice. No barrier inside the slice loop, so the
/// compiler may issue later slices' loads early.
template <class Source>
__global__ void __launch_bounds__(kImageRows * 16) fp8_image_kernel(Source src, int64_t rows, int64_t K, uint8_t* __restrict__ out) {
  // Launched with PDL (launch_pdl): wait for the stream's previous kernel, which may write the
  // source or still read `out`; then the GEMM (PDL) may start and request B, which is final by
  // then. It waits for this grid before reading A's image.
  grid_dependency_wait();
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j0 = int64_t(blockIdx.y) * fp8::kChainSlices;
  const int rr = int(threadIdx.x) / 16, i = int(threadIdx.x) % 16;
  const int64_t r = t * kImageRows + rr;
  // Bit jj: slice j0 + jj has a flagged / wide group in this row, or the row's chain breaks
  // after it (the same for the 16 lanes of the row).
  uint32_t flagged_bits = 0, wide_bits = 0, break_bits = 0;
  // Three passes over the chunk's slices, so that the independent work of different slices
  // overlaps (one slice after the other, a CTA's dependent shuffle chains took ~0.7 us per
  // slice): every load first (zeros past the last slice); then each slice's quantization and
  // its row's block-exponent range; then, in order, the plan (each slice's R depends on the
  // previous one's); then the codes and metadata.
  typename Source::Raw raw[fp8::kChainSlices];
#pragma unroll
  for (int jj = 0; jj < fp8::kChainSlices; ++jj) raw[jj] = src.load(r, (j0 + jj) * fp8::kSliceK + 8 * i);
  constexpr int kNone = 1 << 20;
  float vals[fp8::kChainSlices][8];
  int s[fp8::kChainSlices], lo[fp8::kChainSlices], hi[fp8::kChainSlices], nan[fp8::kChainSlices],
      block_nonzero[fp8::kChainSlices];
#pragma unroll
  for (int jj = 0; jj < fp8::kChainSlices; ++jj) {
    const uint8_t sb = src.quarter(raw[jj], vals[jj]);
    bool nonzero = false;
#pragma unroll
    for (int e = 0; e < 8; ++e) nonzero |= vals[jj][e] != 0.f;
    s[jj] = int(sb) - 127;
    const bool counts = nonzero && sb != kScaleNaN;
    lo[jj] = counts ? s[jj] : kNone, hi[jj] = counts ? s[jj] : -kNone, nan[jj] = sb == kScaleNaN, block_nonzero[jj] = nonzero;
  }
#pragma unroll
  for (int d = 1; d < 16; d <<= 1)  // the 16 lanes of one row are adjacent
#pragma unroll
    for (int jj = 0; jj < fp8::kChainSlices; ++jj) {
      lo[jj] = min(lo[jj], __shfl_xor_sync(0xFFFFFFFFu, lo[jj], d));
      hi[jj] = max(hi[jj], __shfl_xor_sync(0xFFFFFFFFu, hi[jj], d));
      nan[jj] |= __shfl_xor_sync(0xFFFFFFFFu, nan[jj], d);
      if (d < 4) block_nonzero[jj] |= __shfl_xor_sync(0xFFFFFFFFu, block_nonzero[jj], d);  // the block's 4 lanes
    }
  int R[fp8::kChainSlices] = {};
  fp8::GroupKind kind[fp8::kChainSlices] = {};
#pragma unroll
  for (int jj = 0; jj < fp8::kChainSlices; ++jj) {
    const bool has_prev = jj > 0 && kind[jj > 0 ? jj - 1 : 0] == fp8::GroupKind::narrow;
    kind[jj] = fp8::plan_group(lo[jj], hi[jj], hi[jj] > -kNone, nan[jj] != 0, has_prev, R[jj > 0 ? jj - 1 : 0], R[jj]);
    if (jj > 0 && r < rows && !fp8::chain_continues(kind[jj - 1], R[jj - 1], kind[jj], R[jj], true))
      break_bits |= 1u << (jj - 1);
  }
#pragma unroll
  for (int jj = 0; jj < fp8::kChainSlices; ++jj) {
    const int64_t j = j0 + jj;
    if (j >= g.slices) break;
    const int64_t k0 = j * fp8::kSliceK + 8 * i;
    const bool flagged = r < rows && kind[jj] == fp8::GroupKind::flagged;
    // This block's image exponent and the s8 codes value * 2^(s - e) (fp8::e2m1_to_s8 on the
    // CPU): for a block with nonzero codes on the path s - e lies in [kMinShift, kMaxShift], so
    // the fp32 product is an exact integer of at most 96 in magnitude and the truncating
    // conversion returns it; zeros (of either sign) give 0. Flagged groups are zero.
    const int e = flagged ? fp8::kFlaggedExponent : fp8::block_image_exponent(kind[jj], R[jj], s[jj], block_nonzero[jj] != 0);
    const float f = fmt::exp2i(min(max(s[jj] - e, fp8::kMinShift), fp8::kMaxShift));
    uint32_t words[2];
#pragma unroll
    for (int w = 0; w < 2; ++w) {
      uint32_t word = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) word |= (uint32_t(__float2int_rz(vals[jj][4 * w + q] * f)) & 0xFFu) << (8 * q);
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
          r >= rows ? 1.f : flagged ? 0.f : fmt::exp2i(R[jj]);
    }
    if (flagged) flagged_bits |= 1u << jj;
    if (r < rows && kind[jj] == fp8::GroupKind::wide) wide_bits |= 1u << jj;
    if (fp8::chunk_ends(j, g.slices)) break_bits |= 1u << jj;
  }
  // Rows 16 q' .. 16 q' + 15 of the tile are warps 8 q' .. 8 q' + 7.
  constexpr int kQuarters = kImageRows / fp8::kFlagRows, kWarpsPerQuarter = fp8::kFlagRows * 16 / 32;
  __shared__ uint32_t warp_bits[3][kImageRows / 2];
  const int warp = int(threadIdx.x) / 32;
  const uint32_t f = __reduce_or_sync(0xFFFFFFFFu, flagged_bits), w = __reduce_or_sync(0xFFFFFFFFu, wide_bits),
                 b = __reduce_or_sync(0xFFFFFFFFu, break_bits);
  if (threadIdx.x % 32 == 0) warp_bits[0][warp] = f, warp_bits[1][warp] = w, warp_bits[2][warp] = b;
  __syncthreads();
  if (threadIdx.x < kQuarters) {
    uint32_t qf = 0, qw = 0, qb = 0;
#pragma unroll
    for (int k = 0; k < kWarpsPerQuarter; ++k) {
      qf |= warp_bits[0][threadIdx.x * kWarpsPerQuarter + k];
      qw |= warp_bits[1][threadIdx.x * kWarpsPerQuarter + k];
      qb |= warp_bits[2][threadIdx.x * kWarpsPerQuarter + k];
    }
    const int64_t q = t * kQuarters + threadIdx.x;  // quarter tile: atom q / 4, its byte q % 4
    for (int jj = 0; jj < fp8::kChainSlices && j0 + jj < g.slices; ++jj) {
      const int64_t j = j0 + jj;
      out[g.flag_offset() + g.flag_index(q, j)] = uint8_t((qf >> jj) & 1u);
      uint8_t* record = out + g.wide_offset() + g.wide_index(q / 4, j);
      record[q % 4] = uint8_t((qw >> jj) & 1u);
      record[fp8::kBreakByte + q % 4] = uint8_t((qb >> jj) & 1u);
      if (q % 4 == 0) {  // the record's padding
        uint32_t* pad = reinterpret_cast<uint32_t*>(record);
        pad[2] = pad[3] = 0u;
      }
    }
  }
  // No padding follows the flags (fp8_layout.hpp: they end 16-byte aligned), so every byte
  // of the image has been written.
}

template <class Source>
void launch_image(const Source& src, int64_t rows, int64_t K, uint8_t* out, cudaStream_t stream, const char* name) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t chunks = (g.slices + fp8::kChainSlices - 1) / fp8::kChainSlices;
  if (chunks > 65535)  // chunks run along grid.y
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 chunks of " +
                          std::to_string(fp8::kChainSlices * fp8::kSliceK));
  const dim3 grid(unsigned(g.rows_padded / kImageRows), unsigned(chunks));
  launch_pdl(fp8_image_kernel<Source>, grid, dim3(kImageRows * 16), stream, name, src, rows, K, out);
}

}  // namespace

void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream) {
  launch_image(Bf16Source{A, M, K, lda, rule}, M, K, out, stream, "fp8_image_kernel<bf16>");
}

void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream) {
  launch_image(PackedSource{B.data, B.N, B.K}, B.N, B.K, out, stream, "fp8_image_kernel<packed>");
}

void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream) { fp8_image_from_packed(p, out, as_stream(stream)); }

}  // namespace mxfp4::cuda
