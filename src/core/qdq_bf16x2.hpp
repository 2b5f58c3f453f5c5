// Quantize-dequantize of two bf16 activations at a time in packed bf16x2 arithmetic: the inner
// step of the GPU activation quantizers (spec §2 steps 4-5, then §1.3's dequantization).
//
// Given a block's shared exponent s, element v becomes e2m1(v * 2^-s) * 2^s as a bf16 pattern,
// bit-identical to fmt::e2m1_quantize_dequantize_bf16 (checked for every finite bf16 v of both
// signs and every s in [-127, 127] in tests/cpu/test_qdq.cpp). On the GPU each step below is
// one instruction for both halves (PTX ISA: mul/add/sub.rn.bf16x2, min/max.bf16x2, sm_90),
// ~5 per element against ~12 for the fp32 form. On the host every bf16x2 operation is an exact
// model (each half rounded once to bf16, nearest even, subnormals kept), so the CPU test runs
// this very sequence of operations.
//
// Why each step is exact or rounds as the fp32 form does:
//   - |v| * 2^-s is exact unless it falls into bf16's subnormal range (below 2^-126), where
//     any rounding still leaves it below 0.25, i.e. code 0, as in fp32;
//   - min(y, 6) saturates; m = 2^(e + 6), e the binade of max(y, 1), has a bf16 ulp of
//     2^(e-1), the e2m1 grid spacing at y (0.5 below 2, 1 in [2, 4), 2 in [4, 6]), so
//     (y + m) - m is y rounded to the grid, ties to even (fmt::e2m1_round_value with fp32's
//     2^22 in place of bf16's 2^6);
//   - the grid value times 2^s has at most two significant bits: exact, or +-Inf past 2^128
//     (as fp32), or a bf16 subnormal down to 2^-128;
//   - the sign is v's (-0 for negatives that round to 0).
#pragma once

#include <cstdint>

#include "mxfp4/format.hpp"

#if !defined(__CUDA_ARCH__)
#include <algorithm>
#include <cmath>
#endif

namespace mxfp4::qdq {

namespace bf16x2 {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint32_t mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t add(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t sub(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t fma(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ uint32_t min(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t max(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
#else
/// bf16 bits of x + err (x a double, err the exact remainder of the operation that produced
/// it, |err| at most half an ulp of x in double), rounded once to nearest even: err only
/// decides a tie of x between two bf16 values. Subnormals kept, Inf past the largest finite
/// bf16.
inline uint16_t round_to_bf16(double x, double err) {
  if (std::isnan(x)) return 0x7FC0u;
  const bool neg = std::signbit(x);
  if (neg) x = -x, err = -err;
  uint32_t bits = 0;
  if (std::isinf(x)) {
    bits = 0x7F80u;
  } else if (x != 0.0 || err != 0.0) {
    int e = 0;
    std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
    const double ulp = std::ldexp(1.0, std::max(e - 1, -126) - 7);
    const double q = x / ulp, f = std::floor(q), rem = q - f;
    double r = f;
    if (rem > 0.5 || (rem == 0.5 && (err > 0.0 || (err == 0.0 && std::fmod(f, 2.0) != 0.0)))) r = f + 1.0;
    const double v = r * ulp;
    bits = v >= std::ldexp(1.0, 128) ? 0x7F80u : (fmt::f32_bits(float(v)) >> 16);
  }
  return uint16_t(bits | (neg ? 0x8000u : 0u));
}
/// op(x, y) on the low halves and on the high halves of a and b (bf16 patterns), packed.
template <class Op>
inline uint32_t per_half(uint32_t a, uint32_t b, Op op) {
  return uint32_t(op(uint16_t(a), uint16_t(b))) | (uint32_t(op(uint16_t(a >> 16), uint16_t(b >> 16))) << 16);
}
inline double value(uint16_t h) { return double(fmt::bf16_to_f32(h)); }
/// Sums: the double sum plus its exact error (TwoSum), so the single rounding to bf16 is exact.
inline uint16_t sum_to_bf16(double a, double b) {
  const double s = a + b, bb = s - a, err = (a - (s - bb)) + (b - bb);
  return round_to_bf16(s, err);
}
/// Products of two bf16 values are exact in double (8 x 8 significant bits, exponents >= -266).
inline uint32_t mul(uint32_t a, uint32_t b) {
  return per_half(a, b, [](uint16_t x, uint16_t y) { return round_to_bf16(value(x) * value(y), 0.0); });
}
inline uint32_t add(uint32_t a, uint32_t b) {
  return per_half(a, b, [](uint16_t x, uint16_t y) { return sum_to_bf16(value(x), value(y)); });
}
inline uint32_t sub(uint32_t a, uint32_t b) {
  return per_half(a, b, [](uint16_t x, uint16_t y) { return sum_to_bf16(value(x), -value(y)); });
}
/// a * b + c per half, rounded once: the product is exact in double, the sum exact by TwoSum.
inline uint32_t fma(uint32_t a, uint32_t b, uint32_t c) {
  const uint32_t lo = sum_to_bf16(value(uint16_t(a)) * value(uint16_t(b)), value(uint16_t(c)));
  const uint32_t hi = sum_to_bf16(value(uint16_t(a >> 16)) * value(uint16_t(b >> 16)), value(uint16_t(c >> 16)));
  return lo | (hi << 16);
}
/// min and max of non-NaN halves (the only operands below).
inline uint32_t min(uint32_t a, uint32_t b) {
  return per_half(a, b, [](uint16_t x, uint16_t y) { return value(x) <= value(y) ? x : y; });
}
inline uint32_t max(uint32_t a, uint32_t b) {
  return per_half(a, b, [](uint16_t x, uint16_t y) { return value(x) >= value(y) ? x : y; });
}
#endif
}  // namespace bf16x2

/// The bf16 pattern of 2^e (e in [-127, 127]; 2^-127 is a bf16 subnormal) in both halves.
MXFP4_HD uint32_t pow2_pair(int e) { return (fmt::f32_bits(fmt::exp2i(e)) >> 16) * 0x00010001u; }

/// |v| of elements v0 (low half of `w`) and v1 (high half), finite bf16, times 2^-s (inv2 =
/// pow2_pair(-s)) and rounded to the e2m1 grid {0, 0.5, ..., 6}: fmt::e2m1_round_value of
/// |v| * 2^-s, as bf16 (the first steps of e2m1_qdq_pair; see the file comment).
MXFP4_HD uint32_t e2m1_grid_pair(uint32_t w, uint32_t inv2) {
  const uint32_t y = bf16x2::mul(w & 0x7FFF7FFFu, inv2);  // |v| * 2^-s
  const uint32_t yc = bf16x2::min(y, 0x40C040C0u);        // saturate at 6.0
  const uint32_t one = bf16x2::max(yc, 0x3F803F80u);      // max(y, 1.0): its binade e
  const uint32_t m = (one & 0x7F807F80u) + 0x03000300u;   // 2^(e + 6) per half (no carry between halves)
  return bf16x2::sub(bf16x2::add(yc, m), m);              // y on the e2m1 grid, ties to even
}

/// Elements v0 (low half of `w`) and v1 (high half), finite bf16, quantized with the block's
/// shared exponent s and dequantized: fmt::e2m1_quantize_dequantize_bf16 of each, with
/// inv2 = pow2_pair(-s) and scale2 = pow2_pair(s). See the file comment for why it is exact.
MXFP4_HD uint32_t e2m1_qdq_pair(uint32_t w, uint32_t inv2, uint32_t scale2) {
  return bf16x2::mul(e2m1_grid_pair(w, inv2), scale2) | (w & 0x80008000u);
}

/// PTX prmt.b32 (default mode): byte i of the result is byte (sel >> 4i) & 7 of the 8 bytes
/// {b, a} (a: bytes 0-3), or, when bit 3 of that nibble is set, that byte's sign bit
/// replicated (0x00 or 0xFF). On the host, a model of the instruction.
MXFP4_HD uint32_t byte_permute(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t bytes = uint64_t(a) | (uint64_t(b) << 32);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t n = (sel >> (4 * i)) & 0xFu, x = uint32_t(bytes >> (8 * (n & 7u))) & 0xFFu;
    d |= ((n & 8u) ? ((x & 0x80u) ? 0xFFu : 0u) : x) << (8 * i);
  }
  return d;
#endif
}

/// Four two's complement bytes n_i (byte i) from magnitudes |n_i| <= 127 in the bytes of
/// `mag` and sign masks (0xFF: negative, 0x00) in the bytes of `neg`: |n| with bit 7 set,
/// complemented where negative, is 0x7F - |n| <= 0x7F, so adding 1 carries into no other byte;
/// clearing bit 7 then leaves 0x100 - |n| (0 for a negative zero).
MXFP4_HD uint32_t apply_signs(uint32_t mag, uint32_t neg) {
  return (((mag | 0x80808080u) ^ neg) + (neg & 0x01010101u)) ^ 0x80808080u;
}

/// The s8 image bytes of four bf16 elements (pairs w0: elements 0, 1; w1: elements 2, 3;
/// finite) of a block with shared exponent s and image shift d in [1, 4]: byte i is
/// fp8::e2m1_to_s8(fmt::e2m1_encode(v_i * 2^-s), d), with inv2 = pow2_pair(-s) and
/// shift2 = pow2_pair(d). The grid value times 2^d is an integer <= 96 (at most two
/// significant bits): 128 plus it is exact in bf16 ([128, 256) has an ulp of 1), and its low
/// byte is the integer. The sign is v's (a negative zero gives 0, as s8 has no -0).
MXFP4_HD uint32_t e2m1_s8_quad(uint32_t w0, uint32_t w1, uint32_t inv2, uint32_t shift2) {
  const uint32_t x0 = bf16x2::fma(e2m1_grid_pair(w0, inv2), shift2, 0x43004300u);
  const uint32_t x1 = bf16x2::fma(e2m1_grid_pair(w1, inv2), shift2, 0x43004300u);
  return apply_signs(byte_permute(x0, x1, 0x6420u), byte_permute(w0, w1, 0xFDB9u));
}

}  // namespace mxfp4::qdq
