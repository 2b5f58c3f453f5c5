// Builders of path fp8's 8-bit operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with the primitives and block rule of fmt::quantize_block, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v3). One CTA of 1024 threads per (16-row tile, chain chunk of kChainSlices
// 128-K slices), 8 elements (one 16-byte load of bf16) per thread and slice, two slices per
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

/// Rows per image CTA (16 threads per row and slice): one flag byte.
constexpr int kImageRows = 16;
/// Slice groups per image CTA: thread group sg holds slices sg and sg + kSliceGroups of the
/// chunk, so a CTA has kImageRows * 16 * kSliceGroups = 1024 threads. (Session 18's first chunk
/// kernel ran a whole chunk in 256 threads and was 3-4x slower than one CTA per slice.)
constexpr int kSliceGroups = 4;
constexpr int kSlicesPerThread = fp8::kChainSlices / kSliceGroups;
constexpr int kImageThreads = kImageRows * 16 * kSliceGroups;
static_assert(fp8::kChainSlices % kSliceGroups == 0, "slices split evenly over the slice groups");

/// One CTA per (16-row tile t, chain chunk c of kChainSlices slices), in three phases:
/// 1. thread (sg, rr, i) quantizes elements 8i .. 8i+7 of slices sg + kSliceGroups u of row
///    16 t + rr (quarter i % 4 of block i / 4); the 16 lanes of a row and slice (adjacent)
///    reduce the block exponents to the group's range (fp8::group_range) in shared memory;
/// 2. one thread per row walks the chunk's slices in order and picks each group's R
///    (fp8::choose_exponent: kept from the previous slice where possible) and the row's
///    flagged, wide and break bits;
/// 3. the threads of phase 1 write their codes and the group's exponent word and scale, and one
///    thread per slice the flag byte and the record bytes of the tile's quarter.
template <class Source>
__global__ void __launch_bounds__(kImageThreads) fp8_image_kernel(Source src, int64_t rows, int64_t K, uint8_t* __restrict__ out) {
  // Launched with PDL (launch_pdl): wait for the stream's previous kernel, which may write the
  // source or still read `out`; then the GEMM (PDL) may start and request B, which is final by
  // then. It waits for this grid before reading A's image.
  grid_dependency_wait();
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j0 = int64_t(blockIdx.y) * fp8::kChainSlices;
  const int sg = int(threadIdx.x) / (kImageRows * 16), rr = int(threadIdx.x) / 16 % kImageRows, i = int(threadIdx.x) % 16;
  const int64_t r = t * kImageRows + rr;
  __shared__ fp8::GroupRange range[kImageRows][fp8::kChainSlices];
  __shared__ int exponent[kImageRows][fp8::kChainSlices];
  __shared__ uint32_t row_bits[3][kImageRows];  // flagged, wide, break: bit jj per slice

  // Phase 1. Both loads first (zeros past K), then the quantization and the group's range.
  typename Source::Raw raw[kSlicesPerThread];
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) raw[u] = src.load(r, (j0 + sg + kSliceGroups * u) * fp8::kSliceK + 8 * i);
  constexpr int kNone = 1 << 20;
  float vals[kSlicesPerThread][8];
  int s[kSlicesPerThread], block_nonzero[kSlicesPerThread];
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) {
    const uint8_t sb = src.quarter(raw[u], vals[u]);
    bool nonzero = false;
#pragma unroll
    for (int e = 0; e < 8; ++e) nonzero |= vals[u][e] != 0.f;
    s[u] = int(sb) - 127;
    const bool counts = nonzero && sb != kScaleNaN;
    int lo = counts ? s[u] : kNone, hi = counts ? s[u] : -kNone, nan = sb == kScaleNaN, bnz = nonzero;
#pragma unroll
    for (int d = 1; d < 16; d <<= 1) {  // the 16 lanes of one row and slice are adjacent
      lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, d));
      hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, d));
      nan |= __shfl_xor_sync(0xFFFFFFFFu, nan, d);
      if (d < 4) bnz |= __shfl_xor_sync(0xFFFFFFFFu, bnz, d);  // the block's 4 lanes
    }
    block_nonzero[u] = bnz;
    if (i == 0) range[rr][sg + kSliceGroups * u] = fp8::group_range(lo, hi, hi > -kNone, nan != 0);
  }
  __syncthreads();

  // Phase 2: each slice's R follows from the previous one's. Padding rows (zero codes) never
  // break a chain and are never flagged or wide; a chunk's last slice breaks every chain.
  const int slices = g.slices - j0 < fp8::kChainSlices ? int(g.slices - j0) : fp8::kChainSlices;  // in this chunk
  if (threadIdx.x < kImageRows) {
    const int row = int(threadIdx.x);
    const bool real = t * kImageRows + row < rows;
    uint32_t flagged = 0, wide = 0, brk = 0;
    fp8::GroupKind prev_kind = fp8::GroupKind::flagged;
    int prev_R = 0;
    for (int jj = 0; jj < slices; ++jj) {
      const fp8::GroupRange gr = range[row][jj];
      const int R = fp8::choose_exponent(gr, jj > 0 && prev_kind == fp8::GroupKind::narrow, prev_R);
      exponent[row][jj] = R;
      if (jj > 0 && real && !fp8::chain_continues(prev_kind, prev_R, gr.kind, R, true)) brk |= 1u << (jj - 1);
      if (real && gr.kind == fp8::GroupKind::flagged) flagged |= 1u << jj;
      if (real && gr.kind == fp8::GroupKind::wide) wide |= 1u << jj;
      prev_kind = gr.kind, prev_R = R;
    }
    if (fp8::chunk_ends(j0 + slices - 1, g.slices)) brk |= 1u << (slices - 1);
    row_bits[0][row] = flagged, row_bits[1][row] = wide, row_bits[2][row] = brk;
  }
  __syncthreads();

  // Phase 3.
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) {
    const int jj = sg + kSliceGroups * u;
    if (jj >= slices) break;
    const int64_t j = j0 + jj, k0 = j * fp8::kSliceK + 8 * i;
    const fp8::GroupKind kind = range[rr][jj].kind;
    const int R = exponent[rr][jj];
    const bool flagged = r < rows && kind == fp8::GroupKind::flagged;
    // This block's image exponent and the s8 codes value * 2^(s - e) (fp8::e2m1_to_s8 on the
    // CPU): for a block with nonzero codes on the path s - e lies in [kMinShift, kMaxShift], so
    // the fp32 product is an exact integer of at most 96 in magnitude and the truncating
    // conversion returns it; zeros (of either sign) give 0. Flagged groups are zero.
    const int e = flagged ? fp8::kFlaggedExponent : fp8::block_image_exponent(kind, R, s[u], block_nonzero[u] != 0);
    const float f = fmt::exp2i(min(max(s[u] - e, fp8::kMinShift), fp8::kMaxShift));
    uint32_t words[2];
#pragma unroll
    for (int w = 0; w < 2; ++w) {
      uint32_t word = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) word |= (uint32_t(__float2int_rz(vals[u][4 * w + q] * f)) & 0xFFu) << (8 * q);
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
  }
  // The tile's quarter (atom t / 4, its byte t % 4): one thread per slice.
  if (threadIdx.x < unsigned(slices)) {
    const int jj = int(threadIdx.x);
    const int64_t j = j0 + jj;
    uint32_t qf = 0, qw = 0, qb = 0;
#pragma unroll
    for (int row = 0; row < kImageRows; ++row) qf |= row_bits[0][row], qw |= row_bits[1][row], qb |= row_bits[2][row];
    out[g.flag_offset() + g.flag_index(t, j)] = uint8_t((qf >> jj) & 1u);
    uint8_t* record = out + g.wide_offset() + g.wide_index(t / 4, j);
    record[t % 4] = uint8_t((qw >> jj) & 1u);
    record[fp8::kBreakByte + t % 4] = uint8_t((qb >> jj) & 1u);
    if (t % 4 == 0) {  // the record's padding
      uint32_t* pad = reinterpret_cast<uint32_t*>(record);
      pad[2] = pad[3] = 0u;
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
  launch_pdl(fp8_image_kernel<Source>, grid, dim3(kImageThreads), stream, name, src, rows, K, out);
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
