// Builders of path fp8's 8-bit operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with the primitives and block rule of fmt::quantize_block, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v3). Two kernels write the same bytes (cuda::ImageKernel): per chain chunk
// (1024 threads per (16-row tile, 8 slices), each element read once; 8 elements, one 16-byte
// load of bf16, per thread and slice) and a serial window (128 threads per (16-row tile, W
// slices of 128 K), each thread walking its window with 16 elements per slice; the window also
// reads the exponents of the chain chunk's slices around it). W = 1 and 2 for few rows (per
// slice, per two slices), W = 8, a whole chunk, for very many rows.
#include <cuda_fp8.h>

#include "core/fp8_layout.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "cuda/fp8_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

/// Elements p[0..7] of a bf16 row not 16-byte aligned (a view with an odd row stride or
/// offset), as 4 pairs. Out of line, so that the image kernels' loads branch to it instead of
/// issuing its 8 two-byte loads predicated off beside every 16-byte load (session 21's ncu of
/// the serial kernel: 1.1 load instructions per element where 1/8 do the work).
__device__ __noinline__ uint4 load8_bf16_unaligned(const uint16_t* p) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// Block source: bf16 activations A [M, K] (row stride lda), quantized under kRule (a template
/// parameter, so that the rule's branches fold away and the slices' range computations are
/// straight-line code the scheduler can interleave). A quarter (8 elements) is loaded first
/// (load: one 16-byte load, so a thread can have all of its chunk's loads in flight) and
/// encoded later (codes).
template <ScaleRule kRule>
struct Bf16Source {
  const uint16_t* A;
  int64_t M, K, lda;
  struct Raw {
    uint32_t w[4];  ///< bf16 pairs: element 2i in the low half of w[i]
  };
  /// bf16 elements k0 .. k0+7 of row r (k0 % 8 == 0); zeros outside [M, K] (K % 32 == 0).
  __device__ Raw load(int64_t r, int64_t k0) const {
    uint4 u = make_uint4(0u, 0u, 0u, 0u);
    if (r < M && k0 < K) {
      const uint16_t* p = A + r * lda + k0;
      u = (reinterpret_cast<uintptr_t>(p) & 15) == 0 ? __ldg(reinterpret_cast<const uint4*>(p)) : load8_bf16_unaligned(p);
    }
    return Raw{{u.x, u.y, u.z, u.w}};
  }
  /// The loaded elements' part of their block's maximum magnitude: the largest bf16 patterns
  /// with the sign cleared (integer order is value order), of the even and the odd elements.
  __device__ uint32_t partial(const Raw& raw) const {
    return max_u16x2(max_u16x2(raw.w[0] & 0x7FFF7FFFu, raw.w[1] & 0x7FFF7FFFu),
                     max_u16x2(raw.w[2] & 0x7FFF7FFFu, raw.w[3] & 0x7FFF7FFFu));
  }
  __device__ static uint32_t combine(uint32_t a, uint32_t b) { return max_u16x2(a, b); }
  /// The scale byte of a block and whether it has a nonzero code, from the partial of all of
  /// its elements (combined over the lanes that hold it), without the codes. Maximum magnitude
  /// >= 0x7F80: Inf or NaN, the NaN scale byte, as in quantize_quarter_words; the shared
  /// exponent by fmt::shared_exponent, as fmt::quantize_block. The largest magnitude rounds to
  /// a nonzero e2m1 value exactly when some element does (the rounding is monotonic).
  __device__ uint8_t block_exponent(uint32_t m, const Raw& /*raw*/, bool& nonzero) const {
    const uint32_t amax = max(m & 0xFFFFu, m >> 16);
    const bool finite = amax < 0x7F80u;  // else Inf or NaN: the NaN scale byte, no codes
    const float a = fmt::f32_from_bits((finite ? amax : 0u) << 16);
    const int s = fmt::shared_exponent(a, kRule);
    nonzero = finite && fmt::e2m1_round_value(a * fmt::exp2i(-s)) != 0.f;
    return finite ? uint8_t(s + 127) : kScaleNaN;
  }
  /// The 8 s8 image bytes (fp8::e2m1_to_s8 of each element's code, shift d in [1, 4]) of the
  /// loaded elements of a finite block with shared exponent s: qdq::e2m1_s8_quad, bit-identical
  /// to encoding with fmt::quantize_block (tests/cpu/test_qdq.cpp, every bf16 and s).
  __device__ uint2 codes(const Raw& raw, int s, int d) const {
    const uint32_t inv2 = qdq::pow2_pair(-s), shift2 = qdq::pow2_pair(d);
    return make_uint2(qdq::e2m1_s8_quad(raw.w[0], raw.w[1], inv2, shift2), qdq::e2m1_s8_quad(raw.w[2], raw.w[3], inv2, shift2));
  }
};

/// Block source: packed weights (layout v3, docs/packed-layout.md) B [N, K].
struct PackedSource {
  const uint8_t* data;
  int64_t N, K;
  struct Raw {
    uint32_t codes;  ///< e2m1 codes of elements k0 .. k0+7, element i in bits 4i .. 4i+3
    uint8_t scale;   ///< the block's scale byte
  };
  /// The codes of elements k0 .. k0+7 of row r and their block's scale byte; zero codes and
  /// scale byte 127 outside [N, K].
  __device__ Raw load(int64_t r, int64_t k0) const {
    Raw raw{0u, 127};
    if (r >= N || k0 >= K) return raw;
    const PackedGeometry g = PackedGeometry::of(N, K);
#pragma unroll
    for (int i = 0; i < 4; ++i) raw.codes |= uint32_t(packed::read_code_pair(data, r, k0 + 2 * i, g.k_padded)) << (8 * i);
    raw.scale = data[packed::scale_offset(r, k0 / 32, g.rows_padded, g.k_padded)];
    return raw;
  }
  /// The loaded codes' magnitude bits (code & 7: -0 is zero).
  __device__ uint32_t partial(const Raw& raw) const { return raw.codes & 0x77777777u; }
  __device__ static uint32_t combine(uint32_t a, uint32_t b) { return a | b; }
  /// The block's scale byte and whether it has a nonzero code, from the partial of all of its
  /// codes (combined over the lanes that hold it), without the values.
  __device__ uint8_t block_exponent(uint32_t any, const Raw& raw, bool& nonzero) const {
    nonzero = any != 0;
    return raw.scale;
  }
  /// The 8 s8 image bytes (fp8::e2m1_to_s8, shift d in [1, 4]) of the loaded codes.
  __device__ uint2 codes(const Raw& raw, int /*s*/, int d) const {
    return make_uint2(fp8::e2m1_to_s8_quad(raw.codes, d), fp8::e2m1_to_s8_quad(raw.codes >> 16, d));
  }
};

/// Rows per image CTA.
constexpr int kImageRows = 16;
/// The lanes that hold a row's slice: 16 (E = 1 load of 8 elements per lane: the per-chunk
/// kernel) or 8 (E = 2 loads, 16 elements per lane: the serial kernels, whose per-group work,
/// the shuffles and the range logic, is then shared by twice the elements; session 25).
template <int E>
constexpr int kRowLanes = 16 / E;
/// Lanes per 32-element block.
template <int E>
constexpr int kBlockLanes = 4 / E;
/// Loads of 8 elements per lane and slice in the serial kernels, and their threads per CTA (16
/// rows of 8 lanes). MXFP4_EXP_SERIAL_E=1 builds session 24's 16 lanes per row (a measurement).
#ifndef MXFP4_EXP_SERIAL_E
#define MXFP4_EXP_SERIAL_E 2
#endif
constexpr int kSerialE = MXFP4_EXP_SERIAL_E, kSerialThreads = kImageRows * kRowLanes<kSerialE>;
static_assert(kSerialE == 1 || kSerialE == 2, "8 or 16 elements per lane and slice");
/// The window kernel's slices (ImageKernel::per_window): 4 of a chain chunk's 8, or
/// MXFP4_EXP_SERIAL_W (a measurement; 8 = the whole chunk). Windows of 4 run twice the CTAs of
/// whole chunks for ~25% more reads (each window also reads the chunk's first slice or the
/// slice after it, mostly from L2). Session 25 call 6 (call_split, image alone): 4096x7168x2048
/// 12.03 -> 10.97 us, 2048x7168x2048 6.78 (two slices 7.80); 8192^3 bench 974 -> 939.
#ifndef MXFP4_EXP_SERIAL_W
#define MXFP4_EXP_SERIAL_W 4
#endif
constexpr int kSerialW = MXFP4_EXP_SERIAL_W;
static_assert(fp8::kChainSlices % kSerialW == 0 && kSerialW >= 2, "the serial window divides a chain chunk");

/// The scale byte of a block and whether it has a nonzero code, from this lane's E loads of
/// its elements (the block's kBlockLanes<E> adjacent lanes hold it; all 32 lanes of the warp
/// call this together): the sources' partials, combined in the lane, then over the lanes.
template <int E, class Source>
__device__ uint8_t block_exponent(const Source& src, const typename Source::Raw* raw, bool& nonzero) {
  uint32_t p = src.partial(raw[0]);
#pragma unroll
  for (int e = 1; e < E; ++e) p = Source::combine(p, src.partial(raw[e]));
#pragma unroll
  for (int d = 1; d < kBlockLanes<E>; d <<= 1) p = Source::combine(p, __shfl_xor_sync(0xFFFFFFFFu, p, d));
  return src.block_exponent(p, raw[0], nonzero);
}

/// The range (fp8::group_range) of a row's group from its 4 blocks' scale bytes and whether
/// each block has a nonzero code, both the same in the lanes of a block (the row's
/// kRowLanes<E> adjacent lanes hold it; all 32 lanes of the warp call this together): a
/// reduction over blocks, lanes kBlockLanes<E> apart.
template <int E>
__device__ fp8::GroupRange blocks_range(uint8_t sb, bool block_nonzero) {
  constexpr int kNone = 1 << 20;
  const bool counts = block_nonzero && sb != kScaleNaN;
  int lo = counts ? int(sb) - 127 : kNone, hi = counts ? int(sb) - 127 : -kNone, nan = sb == kScaleNaN;
#pragma unroll
  for (int d = kBlockLanes<E>; d < kRowLanes<E>; d <<= 1) {  // the row's 4 blocks
    lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, d));
    nan |= __shfl_xor_sync(0xFFFFFFFFu, nan, d);
  }
  return fp8::group_range(lo, hi, hi > -kNone, nan != 0);
}

/// The range of a row's group in a slice from the kRowLanes<E> adjacent lanes that hold it
/// (lane i: elements 8Ei .. 8Ei+8E-1 in its E loads `raw`; all 32 lanes of the warp call this
/// together); also this lane's block exponent s (scale byte - 127) and whether its block has a
/// nonzero code.
template <int E, class Source>
__device__ fp8::GroupRange slice_range(const Source& src, const typename Source::Raw* raw, int& s, bool& block_nonzero) {
  const uint8_t sb = block_exponent<E>(src, raw, block_nonzero);
  s = int(sb) - 127;
  return blocks_range<E>(sb, block_nonzero);
}

/// slice_range without the lane's block exponent, for the slices whose ranges alone a CTA needs.
template <int E, class Source>
__device__ fp8::GroupRange slice_range_only(const Source& src, const typename Source::Raw* raw) {
  int s;
  bool nonzero;
  return slice_range<E>(src, raw, s, nonzero);
}

/// Where row r's group in slice j goes in the image: lane i's 8E codes (E loads of 8), the
/// group's exponent word and its scale (in the metadata block of the row's atom). Codes and
/// metadata blocks are slice-major, so next_slice() moves all three by one slice.
struct GroupSlot {
  uint8_t* codes;
  uint32_t* exponent;
  float* scale;
  template <int E>
  __device__ static GroupSlot of(const fp8::ImageGeometry& g, int64_t r, int64_t j, int i, uint8_t* out) {
    return {out + g.code_offset(r, j * fp8::kSliceK + 8 * E * i), reinterpret_cast<uint32_t*>(out + g.exponent_at(r, j)),
            reinterpret_cast<float*>(out + g.scale_at(r, j))};
  }
  /// The same slot one slice later: codes move by a slice of atoms, the metadata by a slice of
  /// blocks.
  __device__ void next_slice(const fp8::ImageGeometry& g) {
    const int64_t words = g.meta_slice_stride() / 4;
    codes += g.rows_padded * fp8::kSliceK, exponent += words, scale += words;
  }
};

/// Writes lane i's 8E codes of a row's group (kind `kind`, exponent R; its E loads `raw`,
/// block exponent s) into `slot` and, from lane 0 of the row's kRowLanes<E> adjacent lanes (all
/// 32 lanes of the warp call this together), the group's exponent word and scale. `real`: the
/// row is inside the matrix (padding rows: scale 1); nothing is stored unless `store` (the
/// shuffles still run, so that callers can call it uniformly). Lane i's codes are one 8-byte
/// (E = 1) or one whole 16-byte swizzle chunk (E = 2, chunk i of the row).
template <int E, class Source>
__device__ void write_group(const Source& src, const typename Source::Raw* raw, const GroupSlot& slot, bool real, int i,
                            fp8::GroupKind kind, int R, int s, bool block_nonzero, bool store = true) {
  static_assert(E == 1 || E == 2, "8 or 16 elements per lane");
  const bool flagged = real && kind == fp8::GroupKind::flagged;
  // This block's image exponent and the s8 codes value * 2^(s - e) (fp8::e2m1_to_s8 on the
  // CPU): for a block with nonzero codes on the path s - e lies in [kMinShift, kMaxShift]
  // (elsewhere every code is zero, and any shift in range gives 0). Flagged groups (their
  // blocks may hold Inf or NaN) are zero.
  const int e = flagged ? fp8::kFlaggedExponent : fp8::block_image_exponent(kind, R, s, block_nonzero);
  const int d = min(max(s - e, fp8::kMinShift), fp8::kMaxShift);
  uint2 words[E];
#pragma unroll
  for (int x = 0; x < E; ++x) words[x] = flagged ? make_uint2(0u, 0u) : src.codes(raw[x], s, d);
  if (store) {
    if constexpr (E == 1)
      *reinterpret_cast<uint2*>(slot.codes) = words[0];
    else
      *reinterpret_cast<uint4*>(slot.codes) = make_uint4(words[0].x, words[0].y, words[1].x, words[1].y);
  }
  // The row's exponent word: block b's E8M0 byte from its first lane (kBlockLanes<E> b of the
  // row's kRowLanes<E>).
  uint32_t word = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b)
    word |= uint32_t(fp8::exponent_byte(__shfl_sync(0xFFFFFFFFu, e, kBlockLanes<E> * b, kRowLanes<E>))) << (8 * b);
  if (store && i == 0) {
    *slot.exponent = word;
    *slot.scale = !real ? 1.f : flagged ? 0.f : fmt::exp2i(R);
  }
}

/// The tile bytes of 16-row tile t in slice j from `bits` (bit 0: a row is flagged, bit 1: a
/// row is wide, bit 2: a row's chain ends after slice j): its flag byte and its byte of the
/// quarter's wide and break bytes (quarter t: atom t / 4, its byte t % 4).
__device__ void write_tile_bytes(const fp8::ImageGeometry& g, int64_t t, int64_t j, int bits, uint8_t* __restrict__ out) {
  out[g.flag_offset() + g.flag_index(t, j)] = uint8_t(bits & 1);
  uint8_t* record = out + g.record_at(t / 4, j);
  record[t % 4] = uint8_t((bits >> 1) & 1);
  record[fp8::kBreakByte + t % 4] = uint8_t((bits >> 2) & 1);
  if (t % 4 == 0) {  // the record's padding
    uint32_t* pad = reinterpret_cast<uint32_t*>(record);
    pad[2] = pad[3] = 0u;
  }
}

/// A row's tile bits for write_tile_bytes (before the OR over the tile's rows): padding rows
/// (zero codes) are never flagged or wide and never break a chain.
__device__ __forceinline__ int tile_bits(bool real, fp8::GroupKind kind, bool breaks) {
  return int(real && kind == fp8::GroupKind::flagged) | (int(real && kind == fp8::GroupKind::wide) << 1) |
         (int(breaks) << 2);
}

/// The tile bytes of slices j0 .. j0 + slices - 1 from each of the tile's NW warps' votes
/// (warp_bits[u][warp], the OR over the warp's rows of tile_bits): thread u writes slice j0 +
/// u's. Called by every thread after the CTA barrier that follows the votes.
template <int S, int NW>
__device__ void write_voted_tile_bytes(const fp8::ImageGeometry& g, int64_t t, int64_t j0, int slices,
                                       const int (&warp_bits)[S][NW], uint8_t* __restrict__ out) {
  if (threadIdx.x < unsigned(slices)) {
    int bits = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) bits |= warp_bits[threadIdx.x][w];
    write_tile_bytes(g, t, j0 + int(threadIdx.x), bits, out);
  }
}

/// Per-chunk kernel (many rows: every element is read once). One CTA of 1024 threads per
/// (16-row tile t, chain chunk of kChainSlices slices from j0): thread group sg (of kGroups)
/// takes slices sg * kPer .. sg * kPer + kPer - 1 of the chunk (kPer = kChainSlices / kGroups),
/// and its thread 16 rr + i elements 8i .. 8i+7 of row 16 t + rr in each (quarter i % 4 of
/// block i / 4). Two phases:
/// 1. every thread issues its kPer loads, then per slice the 16 lanes of a row reduce the
///    group's range (fp8::group_range) with shuffles; lane 0 of the row puts it in shared
///    memory;
/// 2. after one CTA barrier each thread takes the row's anchor (the chunk's first slice,
///    fp8::chunk_anchor) and, per own slice, R (choose_exponent) and the break bit (from the
///    next slice's R), writes its codes and the group's exponent word and scale, and votes the
///    tile bits (flagged, wide, break over the warp's two rows) into shared memory; after a
///    second barrier one thread per slice writes the tile bytes.
/// The same bytes as the other image kernels (all follow fp8::plan_groups). Session 21 (with
/// qdq::e2m1_s8_quad): 1024 x 2048 5.9 -> 5.5 us, 128 x 7168 5.9 -> 5.0.
constexpr int kGroups = 4, kChunkThreads = kImageRows * 16 * kGroups;

template <class Source>
__global__ void __launch_bounds__(kChunkThreads) fp8_image_chunk_kernel(Source src, int64_t rows, int64_t K,
                                                                        uint8_t* __restrict__ out) {
  constexpr int kPer = fp8::kChainSlices / kGroups;
  static_assert(fp8::kChainSlices % kGroups == 0, "slices split evenly over the thread groups");
  grid_dependency_wait();  // PDL: as in fp8_image_serial_kernel
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j0 = int64_t(blockIdx.y) * fp8::kChainSlices;
  const int sg = int(threadIdx.x) / (kImageRows * 16), rr = int(threadIdx.x) / 16 % kImageRows, i = int(threadIdx.x) % 16;
  const int warp = int(threadIdx.x) / 32 % (kImageRows / 2), u0 = sg * kPer;  // warp within the group; first slice
  const int64_t r = t * kImageRows + rr;
  const bool real = r < rows;
  const int slices = g.slices - j0 < fp8::kChainSlices ? int(g.slices - j0) : fp8::kChainSlices;  // CTA-uniform
  __shared__ fp8::GroupRange range[kImageRows][fp8::kChainSlices];
  // Per block: scale byte | (nonzero << 8), so that phase 2 keeps only the loaded elements in
  // registers.
  __shared__ uint16_t block[kImageRows][fp8::kChainSlices][4];
  __shared__ int warp_bits[fp8::kChainSlices][kImageRows / 2];

  // Phase 1.
  typename Source::Raw raw[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u)
    if (u0 + u < slices) raw[u] = src.load(r, (j0 + u0 + u) * fp8::kSliceK + 8 * i);
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    if (u0 + u >= slices) break;  // warp-uniform
    int s;
    bool nonzero;
    const fp8::GroupRange gr = slice_range<1>(src, &raw[u], s, nonzero);
    if (i == 0) range[rr][u0 + u] = gr;
    if (i % 4 == 0) block[rr][u0 + u][i / 4] = uint16_t((s + 127) | (int(nonzero) << 8));
  }
  __syncthreads();

  // Phase 2.
  bool has_anchor = false;
  const int anchor = fp8::chunk_anchor(range[rr][0], has_anchor);
  GroupSlot slot = GroupSlot::of<1>(g, r, j0 + u0, i, out);
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int jj = u0 + u;
    if (jj >= slices) break;  // warp-uniform
    const fp8::GroupRange gr = range[rr][jj];
    const int R = fp8::choose_exponent(gr, has_anchor, anchor);
    const int b = block[rr][jj][i / 4];
    write_group<1>(src, &raw[u], slot, real, i, gr.kind, R, (b & 0xFF) - 127, (b >> 8) != 0);
    slot.next_slice(g);
    bool breaks = true;  // a chunk's last slice breaks every chain
    if (jj + 1 < slices) {
      const fp8::GroupRange next = range[rr][jj + 1];
      breaks = real && !fp8::chain_continues(gr.kind, R, next.kind, fp8::choose_exponent(next, has_anchor, anchor));
    }
    const int vote = int(__reduce_or_sync(0xFFFFFFFFu, uint32_t(tile_bits(real, gr.kind, breaks))));
    if (threadIdx.x % 32 == 0) warp_bits[jj][warp] = vote;
  }
  __syncthreads();
  write_voted_tile_bytes(g, t, j0, slices, warp_bits, out);
  // No padding follows the flags (fp8_layout.hpp: they end 16-byte aligned), so every byte
  // of the image has been written.
}

/// Serial kernels: one CTA of kSerialThreads (128) threads per (16-row tile t, window of W
/// slices from j0 inside a chain chunk): thread 8 rr + i owns elements 16i .. 16i+15 of row 16 t
/// + rr (two 16-byte loads of bf16, one 16-byte swizzle chunk of codes) in every slice of the
/// window. It issues its loads first, then walks the slices in order: the 8 lanes of a row
/// hold each slice's range after the shuffle reduction, so the anchor, R and the previous
/// slice's break bit need no shared memory and no CTA barrier; it writes each slice's codes,
/// exponent word and scale at once. One barrier at the end combines the 4 warps' tile bits.
/// W = kChainSlices (a whole chunk: every element read once) for very many rows; W = 1 and 2
/// (per slice, per two slices) for few rows (many CTAs). A window inside a chunk also reads the
/// exponents of the chunk's first slice (the anchor) and of the slice after the window (the
/// last slice's break bit). The same bytes as the chunk kernel. Session 21, W = 8: 4096 x 2048 21.9 -> 14.2 us (the
/// 1024-thread kernel of session 20: 54 -> ~37 instructions per element, and no phases that
/// stall the whole SM); the same walk in two phases with a barrier between them took 17.0.
/// Session 25: 16 instead of 8 elements per lane (8 lanes per row, not 16) share each group's
/// shuffles and range logic among twice the elements.
template <class Source, int W>
__global__ void __launch_bounds__(kSerialThreads) fp8_image_serial_kernel(Source src, int64_t rows, int64_t K,
                                                                          uint8_t* __restrict__ out) {
  static_assert(fp8::kChainSlices % W == 0, "windows never straddle a chain chunk");
  constexpr int E = kSerialE, kLanes = kRowLanes<E>, kWarps = kSerialThreads / 32;
  // Launched with PDL (launch_pdl): wait for the stream's previous kernel, which may write the
  // source or still read `out`; then the GEMM (PDL) may start and request B, which is final by
  // then. It waits for this grid before reading A's image.
  grid_dependency_wait();
  grid_dependents_launch();
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j0 = int64_t(blockIdx.y) * W, c = j0 - j0 % fp8::kChainSlices;
  const int rr = int(threadIdx.x) / kLanes, i = int(threadIdx.x) % kLanes, warp = int(threadIdx.x) / 32;
  const int64_t r = t * kImageRows + rr;
  const bool real = r < rows;
  const int slices = g.slices - j0 < W ? int(g.slices - j0) : W;  // in this window; CTA-uniform
  // CTA-uniform: the anchor's slice and the slice after the window, when they lie elsewhere.
  const bool has_first = c != j0, has_next = (j0 + W) % fp8::kChainSlices != 0 && j0 + W < g.slices;
  __shared__ int warp_bits[W][kWarps];

  // Every slice of a whole window; past K (the last chunk) the loads give zeros and nothing is
  // stored, so the walk has no early exit and the compiler may overlap the slices.
  typename Source::Raw raw[W][E], raw_first[E]{}, raw_next[E]{};
#pragma unroll
  for (int u = 0; u < W; ++u)
#pragma unroll
    for (int x = 0; x < E; ++x) raw[u][x] = src.load(r, (j0 + u) * fp8::kSliceK + 8 * (E * i + x));
  if (has_first)
#pragma unroll
    for (int x = 0; x < E; ++x) raw_first[x] = src.load(r, c * fp8::kSliceK + 8 * (E * i + x));
  if (has_next)
#pragma unroll
    for (int x = 0; x < E; ++x) raw_next[x] = src.load(r, (j0 + W) * fp8::kSliceK + 8 * (E * i + x));

  GroupSlot slot = GroupSlot::of<E>(g, r, j0, i, out);
  bool has_anchor = false;
  int anchor = 0, prev_R = 0, prev_bits = 0;
  if (has_first) anchor = fp8::chunk_anchor(slice_range_only<E>(src, raw_first), has_anchor);
  fp8::GroupKind prev_kind = fp8::GroupKind::narrow;
  // Slice u's tile bits (its break bit settled by the next slice), OR-ed over the warp's four
  // rows; lane 0 stores them.
  auto settle = [&](int u, int bits) {
    const int vote = int(__reduce_or_sync(0xFFFFFFFFu, uint32_t(bits)));
    if (threadIdx.x % 32 == 0 && u < slices) warp_bits[u][warp] = vote;
  };
#pragma unroll
  for (int u = 0; u < W; ++u) {
    int s;
    bool block_nonzero;
    const fp8::GroupRange range = slice_range<E>(src, raw[u], s, block_nonzero);
    if (u == 0 && !has_first) anchor = fp8::chunk_anchor(range, has_anchor);
    const int R = fp8::choose_exponent(range, has_anchor, anchor);
    write_group<E>(src, raw[u], slot, real, i, range.kind, R, s, block_nonzero, u < slices);
    slot.next_slice(g);
    // The previous slice breaks where its row does not continue into this one, or where it
    // was the matrix's last (this slice lies past K).
    if (u > 0)
      settle(u - 1, prev_bits | (int((real && !fp8::chain_continues(prev_kind, prev_R, range.kind, R)) || u == slices) << 2));
    prev_bits = tile_bits(real, range.kind, false);
    prev_kind = range.kind, prev_R = R;
  }
  // The window's last slice: it continues into the slice after the window where that slice is
  // in the chunk and the row goes on; a chunk's (or the matrix's) last slice breaks every chain.
  bool last_breaks = true;
  if (has_next) {
    const fp8::GroupRange next = slice_range_only<E>(src, raw_next);
    last_breaks = real && !fp8::chain_continues(prev_kind, prev_R, next.kind, fp8::choose_exponent(next, has_anchor, anchor));
  }
  settle(W - 1, prev_bits | (int(last_breaks) << 2));
  __syncthreads();
  write_voted_tile_bytes(g, t, j0, slices, warp_bits, out);
}

/// ImageKernel::automatic runs a windowed kernel when there are at least this many (16-row
/// tile, chunk) units (fewer leave most of the SMs idle, and the per-slice kernel, with 8x the
/// CTAs, is faster). H200, session 19 (call_split, K = 2048, the 1024-thread per-chunk kernel):
/// 32 units (M = 256) per slice 2.8-4.1 us against per chunk 4.8-5.8; 64 units (M = 512) per
/// slice 8.2 against 5.8. Session 25 (16 elements per lane): 32 units per slice 2.42-2.62
/// against two slices 2.84-2.86.
constexpr int64_t kChunkKernelMinCtas = 48;
/// ... and the window kernel from 1.5 units per SM (measured with whole chunks, W = 8). Session 21, call 5 (K = 2048): 128
/// units (M = 1024) serial 6.3 us, per chunk 5.5; 256 (M = 2048) 8.8 against 10.5; 384 (M =
/// 3072) 13.8 against 14.7; 512 (M = 4096) 14.2 against 19.0. Session 25 (16 elements per
/// lane): 512 units serial 12.0, two slices 12.5.
constexpr int64_t kSerialChunkMinCtasPerTwoSms = 3;
/// Between the two, the window of two slices (W = 2) unless MXFP4_EXP_IMAGE_PER_CHUNK (the
/// 1024-thread per-chunk kernel, session 24's choice: a measurement). Session 25 call_split
/// (16 elements per lane), two slices against per chunk: 1024x2048 4.56 against 5.33 us,
/// 128x7168 4.17 against 4.78 (serial 6.13 and 5.77).
#ifdef MXFP4_EXP_IMAGE_PER_CHUNK
constexpr ImageKernel kMidImageKernel = ImageKernel::per_chunk;
#else
constexpr ImageKernel kMidImageKernel = ImageKernel::per_two_slices;
#endif

template <class Source>
void launch_image(const Source& src, int64_t rows, int64_t K, uint8_t* out, cudaStream_t stream, ImageKernel kernel,
                  const char* name) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t tiles = g.rows_padded / kImageRows, chunks = (g.slices + fp8::kChainSlices - 1) / fp8::kChainSlices;
  if (kernel == ImageKernel::automatic) {  // past 65535 slices only chunks fit grid.y
    const int64_t sms = cached_device_info(current_device()).sm_count;
    kernel = 2 * tiles * chunks >= kSerialChunkMinCtasPerTwoSms * sms ? ImageKernel::per_window
             : g.slices > 65535                                       ? ImageKernel::per_chunk
             : tiles * chunks >= kChunkKernelMinCtas                  ? kMidImageKernel
                                                                      : ImageKernel::per_slice;
  }
  // Chunks (per-chunk kernels) or slices (per-slice kernel) run along grid.y.
  if (kernel != ImageKernel::per_slice && chunks > 65535)
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 chain chunks of " +
                          std::to_string(fp8::kChainSlices * fp8::kSliceK));
  if (((kernel == ImageKernel::per_slice || kernel == ImageKernel::per_two_slices) && g.slices > 65535) ||
      (kernel == ImageKernel::per_window && (g.slices + kSerialW - 1) / kSerialW > 65535))
    throw InvalidArgument("FP8 image: K = " + std::to_string(K) + " has more than 65535 slices of " +
                          std::to_string(fp8::kSliceK) + " for the per-slice kernels");
  const dim3 chunk_grid{unsigned(tiles), unsigned(chunks)};
  if (kernel == ImageKernel::per_window)
    launch_pdl(fp8_image_serial_kernel<Source, kSerialW>,
               dim3(unsigned(tiles), unsigned(kSerialW == fp8::kChainSlices ? chunks : (g.slices + kSerialW - 1) / kSerialW)),
               dim3(kSerialThreads), stream, name, src, rows, K, out);
  else if (kernel == ImageKernel::per_two_slices)
    launch_pdl(fp8_image_serial_kernel<Source, 2>, dim3(unsigned(tiles), unsigned((g.slices + 1) / 2)), dim3(kSerialThreads),
               stream, name, src, rows, K, out);
  else if (kernel == ImageKernel::per_chunk)
    launch_pdl(fp8_image_chunk_kernel<Source>, chunk_grid, dim3(kChunkThreads), stream, name, src, rows, K, out);
  else  // per slice: a window of one slice
    launch_pdl(fp8_image_serial_kernel<Source, 1>, dim3(unsigned(tiles), unsigned(g.slices)), dim3(kSerialThreads), stream,
               name, src, rows, K, out);
}

}  // namespace

void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream, ImageKernel kernel) {
  switch (rule) {
    case ScaleRule::aiter:
      return launch_image(Bf16Source<ScaleRule::aiter>{A, M, K, lda}, M, K, out, stream, kernel, "fp8_image_kernel<bf16>");
    case ScaleRule::floor:
      return launch_image(Bf16Source<ScaleRule::floor>{A, M, K, lda}, M, K, out, stream, kernel, "fp8_image_kernel<bf16>");
    case ScaleRule::rceil:
      return launch_image(Bf16Source<ScaleRule::rceil>{A, M, K, lda}, M, K, out, stream, kernel, "fp8_image_kernel<bf16>");
  }
  throw InvalidArgument("FP8 image: unknown scale rule " + std::to_string(int(rule)));
}

void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream, ImageKernel kernel) {
  launch_image(PackedSource{B.data, B.N, B.K}, B.N, B.K, out, stream, kernel, "fp8_image_kernel<packed>");
}

void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream) { fp8_image_from_packed(p, out, as_stream(stream)); }

}  // namespace mxfp4::cuda
