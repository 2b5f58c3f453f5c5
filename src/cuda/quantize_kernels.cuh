// Device helpers for reading activation blocks and writing them as mma.sync B fragments.
//
// Activation fragment layout (used by the tiled GEMM's global buffer and the fused GEMM's
// shared memory): activations A [M, K] quantized per spec §2 and stored as bf16 values
// e2m1 * 2^s, grouped by 8-row token tile j and K16 step i into 256-byte chunks at
// u32 index (j * KS + i) * 64, KS = K16 steps per row. Inside a chunk, lane l (g = l / 4,
// t = l % 4) owns two u32 at 2l: {A[8j+g][16i+2t], A[8j+g][16i+2t+1]} and
// {A[8j+g][16i+2t+8], A[8j+g][16i+2t+9]} (low half = first element): the b0b1 and b2b3
// registers of the m16n8k16 B fragment (PTX ISA, "Matrix Fragments for mma.m16n8k16").
#pragma once

#include <cuda_fp16.h>

#include "core/qdq_bf16x2.hpp"
#include "cuda/common.cuh"

namespace mxfp4::cuda {

/// Loads 32 consecutive elements of dtype D starting at element `offset` of `x` into fp32,
/// exactly (16-byte vector loads when aligned).
template <DType D>
__device__ __forceinline__ void load_block(const void* x, int64_t offset, float (&v)[32]) {
  if constexpr (D == DType::fp32) {
    const float* p = static_cast<const float*>(x) + offset;
    if ((reinterpret_cast<uintptr_t>(p) & 15) == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float4 f = __ldg(reinterpret_cast<const float4*>(p) + i);
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 32; ++i) v[i] = p[i];
    }
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(x) + offset;
    uint32_t w[16];
    if ((reinterpret_cast<uintptr_t>(p) & 15) == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + i);
        w[4 * i] = u.x, w[4 * i + 1] = u.y, w[4 * i + 2] = u.z, w[4 * i + 3] = u.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) w[i] = uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 16);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint16_t lo = uint16_t(w[i] & 0xFFFFu), hi = uint16_t(w[i] >> 16);
      if constexpr (D == DType::bf16) {
        v[2 * i] = fmt::bf16_to_f32(lo);
        v[2 * i + 1] = fmt::bf16_to_f32(hi);
      } else {
        v[2 * i] = __half2float(__ushort_as_half(lo));
        v[2 * i + 1] = __half2float(__ushort_as_half(hi));
      }
    }
  }
}

/// Order of the 64 words inside a 256-byte (token tile, K16 step) chunk.
///   mma:   lane l's two registers at 2l, 2l + 1 (one uint2 load per lane: the mma.sync B
///          fragment);
///   wgmma: register reg of lane l = 4g + t at 32 reg + l, i.e. two 8 x 8 core matrices
///          (tokens x K8, 16 bytes per token) 128 bytes apart: a K-major wgmma B operand
///          without swizzle (PTX ISA, "Shared Memory Matrix Layout").
enum class FragOrder { mma, wgmma };

/// u32 index of lane `lane`'s register `reg` (0: b0b1, 1: b2b3) for token tile j, K16 step i.
template <FragOrder O = FragOrder::mma>
__device__ __forceinline__ int64_t a_fragment_index(int64_t j, int64_t i, int64_t ks, int lane, int reg) {
  return (j * ks + i) * 64 + (O == FragOrder::mma ? 2 * lane + reg : 32 * reg + lane);
}

/// Shared exponent s (spec §2, fmt::shared_exponent under `rule`) of the 32-element block whose
/// 8 consecutive elements `v` this lane holds, the other 24 being held by the 3 neighbouring
/// lanes (lanes 4i..4i+3 hold one block, in element order). Returns false, leaving s unset,
/// when the block has a non-finite element (its scale is then the NaN byte); `amax`: the
/// block's largest finite magnitude. Same block rule as fmt::quantize_block (max and the
/// non-finite flag are order-free). All 32 lanes of the warp must call this together.
__device__ __forceinline__ bool quarter_block_exponent(const float (&v)[8], ScaleRule rule, int& s, float& amax) {
  amax = 0.f;
  uint32_t nonfinite = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t a = fmt::f32_bits(v[i]) & 0x7FFFFFFFu;
    nonfinite |= uint32_t(a >= 0x7F800000u);
    amax = fmaxf(amax, fmt::f32_from_bits(a < 0x7F800000u ? a : 0u));
  }
#pragma unroll
  for (int d = 1; d < 4; d <<= 1) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, d));
    nonfinite |= __shfl_xor_sync(0xFFFFFFFFu, nonfinite, d);
  }
  if (nonfinite) return false;
  s = fmt::shared_exponent(amax, rule);
  return true;
}

/// quarter_block_exponent without the block's largest finite magnitude.
__device__ __forceinline__ bool quarter_block_exponent(const float (&v)[8], ScaleRule rule, int& s) {
  float amax;
  return quarter_block_exponent(v, rule, s, amax);
}

/// The 8 bf16 values held as 4 pairs `w` (element 2i in the low half of w[i]) in fp32, exactly.
__device__ __forceinline__ void bf16_pairs_to_f32(const uint32_t (&w)[4], float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = fmt::bf16_to_f32(uint16_t(w[i] & 0xFFFFu));
    v[2 * i + 1] = fmt::bf16_to_f32(uint16_t(w[i] >> 16));
  }
}

/// Per-half maximum of two pairs of 16-bit unsigned integers (PTX max.u16x2, sm_90).
__device__ __forceinline__ uint32_t max_u16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/// Quantizes the quarter block held as 4 bf16 pairs `w` (element 2i in the low half of w[i])
/// with the 3 lanes holding its other quarters (lanes 4i..4i+3 hold one block, in element
/// order; all 32 lanes must call this together) and returns the 4 fragment words of those 8
/// dequantized values e2m1 * 2^s: word t holds elements 2t, 2t + 1 (the same pairing as `w`).
/// Bit-identical to fmt::quantize_block then dequantization: the block's maximum magnitude is
/// the largest of the bf16 patterns with the sign cleared (their integer order is the value
/// order, Inf and NaN above every finite value, so a maximum >= 0x7F80 means a non-finite
/// block: the NaN scale, every element the canonical NaN); shared exponent by
/// fmt::shared_exponent; elements by qdq::e2m1_qdq_pair (bf16x2, src/core/qdq_bf16x2.hpp).
/// Session 16 measured the fp32 form it replaced (fmt::e2m1_quantize_dequantize_bf16 per
/// element) 0.1-0.2 us slower per call on the paths that quantize A in every CTA.
__device__ __forceinline__ void quantize_quarter_words(const uint32_t (&w)[4], ScaleRule rule, uint32_t (&words)[4]) {
  uint32_t m = max_u16x2(max_u16x2(w[0] & 0x7FFF7FFFu, w[1] & 0x7FFF7FFFu), max_u16x2(w[2] & 0x7FFF7FFFu, w[3] & 0x7FFF7FFFu));
#pragma unroll
  for (int d = 1; d < 4; d <<= 1) m = max_u16x2(m, __shfl_xor_sync(0xFFFFFFFFu, m, d));
  const uint32_t amax = max(m & 0xFFFFu, m >> 16);
  if (amax >= 0x7F80u) {  // Inf or NaN in the block
    const uint32_t nan = uint32_t(fmt::f32_to_bf16(fmt::dequant_f32(0, kScaleNaN))) * 0x00010001u;
#pragma unroll
    for (int t = 0; t < 4; ++t) words[t] = nan;
    return;
  }
  const int s = fmt::shared_exponent(fmt::f32_from_bits(amax << 16), rule);
  const uint32_t inv2 = qdq::pow2_pair(-s), scale2 = qdq::pow2_pair(s);
#pragma unroll
  for (int t = 0; t < 4; ++t) words[t] = qdq::e2m1_qdq_pair(w[t], inv2, scale2);
}

/// One 16-byte piece of mma-order fragments from a quarter block's 4 fragment words `w`
/// (register q % 2 of fragment lanes f0 + t, word t; quantize_quarter_words), traded with the
/// lane holding the block's other half of that K16 step (lane ^ 1, register 1 - q % 2): lane
/// q % 2 = 0 returns {f0 register 0, f0 register 1, f0 + 1 register 0, f0 + 1 register 1},
/// the words at a_fragment_index(.., f0, 0) .. +3, and lane q % 2 = 1 the same for fragment
/// lanes f0 + 2, f0 + 3. One 16-byte store per lane instead of four 4-byte stores that hit
/// two banks per warp (16-way conflicts). All 32 lanes of the warp must call this together.
__device__ __forceinline__ uint4 mma_piece_of_quarter(const uint32_t (&w)[4], int q) {
  const bool odd = q % 2 != 0;
  const uint32_t r0 = __shfl_xor_sync(0xFFFFFFFFu, odd ? w[0] : w[2], 1);
  const uint32_t r1 = __shfl_xor_sync(0xFFFFFFFFu, odd ? w[1] : w[3], 1);
  return odd ? make_uint4(r0, w[2], r1, w[3]) : make_uint4(w[0], r0, w[1], r1);
}

/// Loads elements 8q .. 8q+7 of the 32-element block (row r, K block c) of the bf16 matrix
/// A [M, K] (row stride lda) as 4 pairs (element 2i of them in the low half of w[i]); zeros
/// when r >= M or 32c >= K. One 16-byte load when the address allows it.
__device__ __forceinline__ void load_quarter_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, int64_t r,
                                                  int64_t c, int q, uint32_t (&w)[4]) {
  w[0] = w[1] = w[2] = w[3] = 0u;
  if (r < M && c * 32 < K) {
    const uint16_t* src = A + r * lda + c * 32 + 8 * q;
    if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(src));
      w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
    } else {  // a view with an odd row stride or offset
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = uint32_t(src[2 * i]) | (uint32_t(src[2 * i + 1]) << 16);
    }
  }
}

/// Loads elements 8q .. 8q+7 of the 32-element block (row r, K block c) of the bf16 matrix
/// A [M, K] (row stride lda; zeros outside [M, K]) and quantizes them (quantize_quarter_words;
/// all 32 lanes must call this together): word t belongs at
/// a_fragment_index(r / 8, 2c + q / 2, KS, 4 * (r % 8) + t, q % 2).
__device__ __forceinline__ void quantize_quarter_to_fragment_words(const uint16_t* A, int64_t M, int64_t K,
                                                                   int64_t lda, int64_t r, int64_t c, int q,
                                                                   ScaleRule rule, uint32_t (&words)[4]) {
  uint32_t w[4];
  load_quarter_bf16(A, M, K, lda, r, c, q, w);
  quantize_quarter_words(w, rule, words);
}

/// Quantizes A [M, K] (bf16, row stride lda) under `rule` into the activation fragment layout
/// with round_up(M, 8) rows and round_up(K, 64) columns (padding zero), chunks in word order
/// `order`; `frags` must hold round_up(M,8) * round_up(K,64) * 2 bytes and be 16-byte aligned
/// (16-byte stores). Launched with programmatic dependent launch (common.cuh launch_pdl): the
/// kernel waits for the stream's previous kernel before it reads A or writes `frags`, then
/// lets the next kernel start. It also zeroes `n_counters` ints at `counters` (path splitk's
/// split-K tile counters, which the GEMM reads only after its wait for this kernel; may be
/// null when n_counters is 0). `trigger_first`: the next kernel may launch before this
/// kernel's wait, which is legal only when that kernel reads nothing but B before its own wait
/// and B is not written while the call may run (GemmOptions::weights_static; path splitk's
/// GEMM). Throws CudaError when the launch fails. Defined in quantize.cu.
void quantize_fragments(const uint16_t* A, int64_t M, int64_t K, int64_t lda, uint32_t* frags, ScaleRule rule,
                        cudaStream_t stream, FragOrder order = FragOrder::mma, int* counters = nullptr,
                        int64_t n_counters = 0, bool trigger_first = false);

}  // namespace mxfp4::cuda
