// Builders of path fp8's 8-bit operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with the primitives and block rule of fmt::quantize_block, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v3). Two kernels write the same bytes: per slice (a CTA of 256 threads per
// (16-row tile, 128-K slice), which also reads the exponents of two more slices of the chain
// chunk; for few rows) and per chain chunk (1024 threads per (16-row tile, 8 slices), each
// element read once; for many rows). 8 elements (one 16-byte load of bf16) per thread and slice.
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
  /// The scale byte of the loaded elements' block and whether the block has a nonzero code,
  /// without the codes (the 4 lanes of the block call this together): the block's largest
  /// magnitude rounds to a nonzero e2m1 value exactly when some element does (the rounding
  /// is monotonic, and quarter() rounds that element's |v| * 2^-s the same way).
  __device__ uint8_t block_exponent(const Raw& raw, bool& nonzero) const {
    float v[8];
    bf16_pairs_to_f32(raw.w, v);
    int s;
    float amax;
    if (!quarter_block_exponent(v, rule, s, amax)) {
      nonzero = false;
      return kScaleNaN;
    }
    nonzero = fmt::e2m1_round_value(amax * fmt::exp2i(-s)) != 0.f;
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
  /// The block's scale byte and whether it has a nonzero code (code & 7: -0 is zero), without
  /// the values (the 4 lanes of the block call this together).
  __device__ uint8_t block_exponent(const Raw& raw, bool& nonzero) const {
    uint32_t any = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) any |= raw.pairs[i] & 0x77u;
#pragma unroll
    for (int d = 1; d < 4; d <<= 1) any |= __shfl_xor_sync(0xFFFFFFFFu, any, d);
    nonzero = any != 0;
    return raw.scale;
  }
};

/// Rows per image CTA (16 threads per row and slice).
constexpr int kImageRows = 16;

/// The range (fp8::group_range) of a row's group from its 4 blocks' scale bytes and whether
/// each block has a nonzero code, both the same in the 4 lanes of a block (the row's 16
/// adjacent lanes hold it; all 32 lanes of the warp call this together): a reduction over
/// blocks, lanes 4 apart.
__device__ fp8::GroupRange blocks_range(uint8_t sb, bool block_nonzero) {
  constexpr int kNone = 1 << 20;
  const bool counts = block_nonzero && sb != kScaleNaN;
  int lo = counts ? int(sb) - 127 : kNone, hi = counts ? int(sb) - 127 : -kNone, nan = sb == kScaleNaN;
#pragma unroll
  for (int d = 4; d < 16; d <<= 1) {  // the row's 4 blocks
    lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, d));
    nan |= __shfl_xor_sync(0xFFFFFFFFu, nan, d);
  }
  return fp8::group_range(lo, hi, hi > -kNone, nan != 0);
}

/// The range of row r's group in slice j from the 16 adjacent lanes that hold it (lane i:
/// elements 8i .. 8i+7; all 32 lanes of the warp call this together); also this lane's e2m1
/// values, its block's exponent s and whether the block has a nonzero code.
template <class Source>
__device__ fp8::GroupRange slice_range(const Source& src, const typename Source::Raw& raw, float (&vals)[8], int& s,
                                       int& block_nonzero) {
  const uint8_t sb = src.quarter(raw, vals);
  bool nonzero = false;
#pragma unroll
  for (int e = 0; e < 8; ++e) nonzero |= vals[e] != 0.f;
  s = int(sb) - 127;
  block_nonzero = nonzero;
#pragma unroll
  for (int d = 1; d < 4; d <<= 1) block_nonzero |= __shfl_xor_sync(0xFFFFFFFFu, block_nonzero, d);  // the block's 4 lanes
  return blocks_range(sb, block_nonzero != 0);
}

/// slice_range without the codes (Source::block_exponent), for the slices whose exponents
/// alone a CTA needs: the same range, as a block counts exactly when some lane of it has a
/// nonzero code.
template <class Source>
__device__ fp8::GroupRange slice_range_only(const Source& src, const typename Source::Raw& raw) {
  bool nonzero;
  const uint8_t sb = src.block_exponent(raw, nonzero);
  return blocks_range(sb, nonzero);
}

/// Writes lane i's 8 codes of row r's group in slice j (kind `kind`, exponent R; its e2m1
/// values `vals` and block exponent s) and, from lane 0 of the row's 16 adjacent lanes (all
/// 32 lanes of the warp call this together), the group's exponent word and scale.
__device__ void write_group(const fp8::ImageGeometry& g, int64_t rows, int64_t r, int64_t j, int i, fp8::GroupKind kind,
                            int R, const float (&vals)[8], int s, bool block_nonzero, uint8_t* __restrict__ out) {
  const bool flagged = r < rows && kind == fp8::GroupKind::flagged;
  // This block's image exponent and the s8 codes value * 2^(s - e) (fp8::e2m1_to_s8 on the
  // CPU): for a block with nonzero codes on the path s - e lies in [kMinShift, kMaxShift], so
  // the fp32 product is an exact integer of at most 96 in magnitude and the truncating
  // conversion returns it; zeros (of either sign) give 0. Flagged groups are zero.
  const int e = flagged ? fp8::kFlaggedExponent : fp8::block_image_exponent(kind, R, s, block_nonzero);
  const float f = fmt::exp2i(min(max(s - e, fp8::kMinShift), fp8::kMaxShift));
  uint32_t words[2];
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    uint32_t word = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) word |= (uint32_t(__float2int_rz(vals[4 * w + q] * f)) & 0xFFu) << (8 * q);
    words[w] = flagged ? 0u : word;
  }
  *reinterpret_cast<uint2*>(out + g.code_offset(r, j * fp8::kSliceK + 8 * i)) = make_uint2(words[0], words[1]);
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

/// The tile bytes of 16-row tile t in slice j from `bits` (bit 0: a row is flagged, bit 1: a
/// row is wide, bit 2: a row's chain ends after slice j): its flag byte and its byte of the
/// quarter's wide and break bytes (quarter t: atom t / 4, its byte t % 4).
__device__ void write_tile_bytes(const fp8::ImageGeometry& g, int64_t t, int64_t j, int bits, uint8_t* __restrict__ out) {
  out[g.flag_offset() + g.flag_index(t, j)] = uint8_t(bits & 1);
  uint8_t* record = out + g.wide_offset() + g.wide_index(t / 4, j);
  record[t % 4] = uint8_t((bits >> 1) & 1);
  record[fp8::kBreakByte + t % 4] = uint8_t((bits >> 2) & 1);
  if (t % 4 == 0) {  // the record's padding
    uint32_t* pad = reinterpret_cast<uint32_t*>(record);
    pad[2] = pad[3] = 0u;
  }
}

/// Per-slice kernel (few rows: many CTAs). One CTA per (16-row tile t, 128-K slice j): thread
/// 16 rr + i owns elements 8i .. 8i+7 of the slice in row 16 t + rr (quarter i % 4 of block
/// i / 4). The group's R needs the anchor of its chain chunk (the range of the chunk's first
/// slice c, fp8::chunk_anchor) and its break byte the next slice's R, so the CTA also reads its
/// rows of slices c and j + 1 (when they are other slices of the chunk) for their exponents.
/// The 16 threads of a row agree on the groups with shuffles, and the 8 warps on the flag,
/// wide and break bytes of the tile.
template <class Source>
__global__ void __launch_bounds__(kImageRows * 16) fp8_image_slice_kernel(Source src, int64_t rows, int64_t K,
                                                                          uint8_t* __restrict__ out) {
  // Launched with PDL (launch_pdl): wait for the stream's previous kernel, which may write the
  // source or still read `out`; then the GEMM (PDL) may start and request B, which is final by
  // then. It waits for this grid before reading A's image.
  grid_dependency_wait();
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j = blockIdx.y, c = j - j % fp8::kChainSlices;
  const int rr = int(threadIdx.x) / 16, i = int(threadIdx.x) % 16;
  const int64_t r = t * kImageRows + rr, k0 = j * fp8::kSliceK + 8 * i;
  const bool has_first = c != j, has_next = !fp8::chunk_ends(j, g.slices);  // CTA-uniform
  // The loads first: this slice, the chunk's first slice and the next one (zeros if unused).
  const typename Source::Raw raw = src.load(r, k0);
  typename Source::Raw raw_first{}, raw_next{};
  if (has_first) raw_first = src.load(r, c * fp8::kSliceK + 8 * i);
  if (has_next) raw_next = src.load(r, k0 + fp8::kSliceK);
  float vals[8];
  int s, block_nonzero;
  const fp8::GroupRange range = slice_range(src, raw, vals, s, block_nonzero);
  const fp8::GroupRange first = has_first ? slice_range_only(src, raw_first) : range;
  bool has_anchor = false;
  const int anchor = fp8::chunk_anchor(first, has_anchor);
  const int R = fp8::choose_exponent(range, has_anchor, anchor);
  bool breaks = true;  // the row's chain ends after this slice
  if (has_next) {
    const fp8::GroupRange next = slice_range_only(src, raw_next);
    breaks = !fp8::chain_continues(range.kind, R, next.kind, fp8::choose_exponent(next, has_anchor, anchor));
  }
  write_group(g, rows, r, j, i, range.kind, R, vals, s, block_nonzero != 0, out);
  // The tile's bytes. Padding rows (zero codes) are never flagged or wide and never break a
  // chain; a chunk's last slice breaks every chain.
  const bool real = r < rows;
  __shared__ int warp_bits[kImageRows / 2];
  const int warp = int(threadIdx.x) / 32;
  const int bits = __any_sync(0xFFFFFFFFu, real && range.kind == fp8::GroupKind::flagged) |
                   (__any_sync(0xFFFFFFFFu, real && range.kind == fp8::GroupKind::wide) << 1) |
                   (__any_sync(0xFFFFFFFFu, real && breaks) << 2);
  if (threadIdx.x % 32 == 0) warp_bits[warp] = bits;
  __syncthreads();
  if (threadIdx.x == 0) {
    int b = has_next ? 0 : 4;
#pragma unroll
    for (int k = 0; k < kImageRows / 2; ++k) b |= warp_bits[k];
    write_tile_bytes(g, t, j, b, out);
  }
  // No padding follows the flags (fp8_layout.hpp: they end 16-byte aligned), so every byte
  // of the image has been written.
}

/// Slice groups of the per-chunk kernel: thread group sg quantizes slices sg, sg + 4, ... of
/// the chunk (two per thread: 1024 threads, both loads in flight).
constexpr int kSliceGroups = 4;
constexpr int kSlicesPerThread = fp8::kChainSlices / kSliceGroups;
constexpr int kChunkThreads = kImageRows * 16 * kSliceGroups;
static_assert(fp8::kChainSlices % kSliceGroups == 0, "slices split evenly over the slice groups");
static_assert(kImageRows * fp8::kChainSlices <= kChunkThreads, "one thread per (row, slice) plans the chunk");

/// Per-chunk kernel (many rows: reads every element once). One CTA per (16-row tile t, chain
/// chunk of kChainSlices slices from j0), in three phases:
/// 1. thread (sg, rr, i) quantizes elements 8i .. 8i+7 of slices sg + kSliceGroups u of row
///    16 t + rr (quarter i % 4 of block i / 4); the 16 lanes of a row and slice reduce the
///    block exponents to the group's range (fp8::group_range) in shared memory;
/// 2. thread 16 jj + row picks the R of (row, jj) and of (row, jj + 1) from the row's anchor
///    (fp8::chunk_anchor, choose_exponent), and the 16 lanes of slice jj reduce the tile's
///    flagged, wide and break bits and write its tile bytes;
/// 3. the threads of phase 1 write their codes and the groups' exponent words and scales.
/// The same bytes as the per-slice kernel (both follow fp8::plan_groups).
template <class Source>
__global__ void __launch_bounds__(kChunkThreads) fp8_image_chunk_kernel(Source src, int64_t rows, int64_t K,
                                                                        uint8_t* __restrict__ out) {
  grid_dependency_wait();  // PDL: as in fp8_image_slice_kernel
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j0 = int64_t(blockIdx.y) * fp8::kChainSlices;
  const int sg = int(threadIdx.x) / (kImageRows * 16), rr = int(threadIdx.x) / 16 % kImageRows, i = int(threadIdx.x) % 16;
  const int64_t r = t * kImageRows + rr;
  const int slices = g.slices - j0 < fp8::kChainSlices ? int(g.slices - j0) : fp8::kChainSlices;  // in this chunk
  __shared__ fp8::GroupRange range[kImageRows][fp8::kChainSlices];
  __shared__ int exponent[kImageRows][fp8::kChainSlices];

  // Phase 1. Both loads first (zeros past K), then the quantization and the groups' ranges.
  typename Source::Raw raw[kSlicesPerThread];
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) raw[u] = src.load(r, (j0 + sg + kSliceGroups * u) * fp8::kSliceK + 8 * i);
  float vals[kSlicesPerThread][8];
  int s[kSlicesPerThread], block_nonzero[kSlicesPerThread];
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) {
    const fp8::GroupRange gr = slice_range(src, raw[u], vals[u], s[u], block_nonzero[u]);
    if (i == 0) range[rr][sg + kSliceGroups * u] = gr;
  }
  __syncthreads();

  // Phase 2 (warps 0-3, whole warps). Padding rows (zero codes) are never flagged or wide and
  // never break a chain; a chunk's last slice breaks every chain.
  if (threadIdx.x < kImageRows * fp8::kChainSlices) {
    const int jj = int(threadIdx.x) / kImageRows, row = int(threadIdx.x) % kImageRows;
    const bool real = t * kImageRows + row < rows;
    bool has_anchor = false;
    const int anchor = fp8::chunk_anchor(range[row][0], has_anchor);
    int bits = 0;
    if (jj < slices) {
      const fp8::GroupRange gr = range[row][jj];
      const int R = fp8::choose_exponent(gr, has_anchor, anchor);
      exponent[row][jj] = R;
      bool breaks = true;
      if (jj + 1 < slices) {
        const fp8::GroupRange next = range[row][jj + 1];
        breaks = !fp8::chain_continues(gr.kind, R, next.kind, fp8::choose_exponent(next, has_anchor, anchor));
      }
      bits = int(real && gr.kind == fp8::GroupKind::flagged) | (int(real && gr.kind == fp8::GroupKind::wide) << 1) |
             (int((real && breaks) || fp8::chunk_ends(j0 + jj, g.slices)) << 2);
    }
#pragma unroll
    for (int d = 1; d < kImageRows; d <<= 1) bits |= __shfl_xor_sync(0xFFFFFFFFu, bits, d);  // the slice's 16 rows
    if (row == 0 && jj < slices) write_tile_bytes(g, t, j0 + jj, bits, out);
  }
  __syncthreads();

  // Phase 3.
#pragma unroll
  for (int u = 0; u < kSlicesPerThread; ++u) {
    const int jj = sg + kSliceGroups * u;
    if (jj >= slices) break;  // warp-uniform
    write_group(g, rows, r, j0 + jj, i, range[rr][jj].kind, exponent[rr][jj], vals[u], s[u], block_nonzero[u] != 0, out);
  }
  // No padding follows the flags (fp8_layout.hpp: they end 16-byte aligned), so every byte
  // of the image has been written.
}

/// ImageKernel::automatic runs the per-chunk kernel when it has at least this many CTAs (of
/// 1024 threads; fewer leave most of the SMs idle, and the per-slice kernel, with 8x the CTAs,
/// is faster). H200, session 19 (call_split, K = 2048): 32 CTAs (M = 256) per slice 2.8-4.1 us
/// against per chunk 4.8-5.8; 64 CTAs (M = 512) per slice 8.2 against 5.8.
constexpr int64_t kChunkKernelMinCtas = 48;

template <class Source>
void launch_image(const Source& src, int64_t rows, int64_t K, uint8_t* out, cudaStream_t stream, ImageKernel kernel,
                  const char* name) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t tiles = g.rows_padded / kImageRows, chunks = (g.slices + fp8::kChainSlices - 1) / fp8::kChainSlices;
  if (kernel == ImageKernel::automatic)  // past 65535 slices only chunks fit grid.y
    kernel = tiles * chunks >= kChunkKernelMinCtas || g.slices > 65535 ? ImageKernel::per_chunk : ImageKernel::per_slice;
  // Chunks (per-chunk kernel) or slices (per-slice kernel) run along grid.y.
  if (kernel == ImageKernel::per_chunk && chunks > 65535)
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 chain chunks of " +
                          std::to_string(fp8::kChainSlices * fp8::kSliceK));
  if (kernel == ImageKernel::per_slice && g.slices > 65535)
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 slices of " +
                          std::to_string(fp8::kSliceK) + " for the per-slice kernel");
  if (kernel == ImageKernel::per_chunk)
    launch_pdl(fp8_image_chunk_kernel<Source>, dim3(unsigned(tiles), unsigned(chunks)), dim3(kChunkThreads), stream,
               name, src, rows, K, out);
  else
    launch_pdl(fp8_image_slice_kernel<Source>, dim3(unsigned(tiles), unsigned(g.slices)), dim3(kImageRows * 16), stream,
               name, src, rows, K, out);
}

}  // namespace

void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream, ImageKernel kernel) {
  launch_image(Bf16Source{A, M, K, lda, rule}, M, K, out, stream, kernel, "fp8_image_kernel<bf16>");
}

void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream, ImageKernel kernel) {
  launch_image(PackedSource{B.data, B.N, B.K}, B.N, B.K, out, stream, kernel, "fp8_image_kernel<packed>");
}

void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream) { fp8_image_from_packed(p, out, as_stream(stream)); }

}  // namespace mxfp4::cuda
