// MXFP4 format primitives shared by CPU and GPU code (one source, so every producer of
// codes and scales is bit-identical by construction: bug kind K03).
//
// Everything here follows the spec, docs/semantics.md (cited as "spec §n"):
//   - e2m1 element codes (spec §1.1), packing two codes per byte, element 2i in the LOW nibble;
//   - E8M0 scale bytes (spec §1.2): byte b means 2^(b-127), byte 0 is 2^-127 (an fp32
//     subnormal, decoded exactly), 0xFF is NaN;
//   - quantization of one 32-element block (spec §2) under the "aiter", "floor" and "rceil"
//     scale rules, with the non-finite policy of spec §2.1.
// No function here flushes subnormals to zero; GPU translation units that include this header
// must be compiled without fast-math (-ftz=false, the nvcc default).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MXFP4_HD __host__ __device__ __forceinline__
#else
#define MXFP4_HD inline
#endif

namespace mxfp4 {

/// Elements that share one E8M0 scale (spec §1.3).
inline constexpr int kBlockSize = 32;
/// E8M0 byte that encodes NaN (spec §1.2).
inline constexpr uint8_t kScaleNaN = 0xFF;

/// Scale rule used to pick a block's shared exponent (spec §2).
///   aiter: AITER's dynamic_mxfp4_quant (default); floor: OCP MX v1.0; rceil: round-up.
enum class ScaleRule : int { aiter = 0, floor = 1, rceil = 2 };

namespace fmt {

/// Bit pattern of an fp32 value.
MXFP4_HD uint32_t f32_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}

/// fp32 value of a bit pattern.
MXFP4_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}

/// Exact widening of a bf16 bit pattern to fp32.
MXFP4_HD float bf16_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }

/// Exact widening of an IEEE binary16 bit pattern to fp32 (subnormals, Inf and NaN kept).
MXFP4_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);
  // Subnormal half: value = mant * 2^-24; normalise into an fp32 normal.
  int e = 113;  // biased fp32 exponent of 2^-14
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return f32_from_bits(sign | (uint32_t(e) << 23) | ((mant & 0x3FFu) << 13));
}

/// fp32 -> bf16 bit pattern, round to nearest even; NaN stays a (quiet) NaN.
MXFP4_HD uint16_t f32_to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40u);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t((u + rounding) >> 16);
}

/// Value of an e2m1 code (low 4 bits of `code`), spec §1.1 table.
MXFP4_HD float e2m1_to_f32(uint8_t code) {
  // Magnitudes of codes 0..7 are {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
  const uint32_t mag = code & 7u;
  const float m = (mag < 2u) ? 0.5f * float(mag)
                             : float(2u | (mag & 1u)) * f32_from_bits(uint32_t((mag >> 1) + 125u) << 23);
  return (code & 8u) ? -m : m;
}

/// 2^(b-127) for an E8M0 byte b (byte 0 is the subnormal 2^-127, 0xFF is NaN), spec §1.2.
MXFP4_HD float e8m0_to_f32(uint8_t b) {
  if (b == kScaleNaN) return f32_from_bits(0x7FC00000u);
  if (b == 0) return f32_from_bits(0x00400000u);
  return f32_from_bits(uint32_t(b) << 23);
}

/// Exact power of two 2^e as fp32 for e in [-149, 127] (subnormal below -126).
MXFP4_HD float exp2i(int e) {
  return e >= -126 ? f32_from_bits(uint32_t(e + 127) << 23) : f32_from_bits(1u << (e + 149));
}

/// Dequantized value e2m1(code) * 2^(scale-127) in fp32 (spec §1.3). Exact, except that
/// byte 254 with |code| >= 4 overflows to +-Inf (documented, bug kind K06).
MXFP4_HD float dequant_f32(uint8_t code, uint8_t scale) {
  // e2m1 has at most 2 significant bits, so this single IEEE product is exact whenever the
  // result is representable (subnormals included, e.g. 0.5 * 2^-127 = 2^-128).
  // NaN scales return one canonical quiet NaN, so CPU and GPU agree bit for bit.
  if (scale == kScaleNaN) return f32_from_bits(0x7FC00000u);
  return e2m1_to_f32(code) * e8m0_to_f32(scale);
}

/// Round a non-negative finite fp32 |y| (already divided by the block scale) to an e2m1
/// magnitude code 0..7: nearest of {0,0.5,1,1.5,2,3,4,6}, ties to the even code, saturating
/// at 6 (spec §2 step 5). Written as threshold counts so that CPU and GPU agree bit for bit.
MXFP4_HD uint32_t e2m1_round_magnitude(float a) {
  return uint32_t(a > 0.25f) + uint32_t(a >= 0.75f) + uint32_t(a > 1.25f) + uint32_t(a >= 1.75f) +
         uint32_t(a > 2.5f) + uint32_t(a >= 3.5f) + uint32_t(a > 5.0f);
}

/// The same rounding as e2m1_round_magnitude, returned as the grid value in fp32, i.e.
/// e2m1_to_f32(e2m1_round_magnitude(a)) for non-negative finite `a`, in ~6 instead of ~20
/// operations (for quantizers that need the dequantized value, not the code). The grid's
/// spacing at a is 2^(max(floor(log2 a), 0) - 1) (0.5 below 2, 1 in [2, 4), 2 in [4, 6]),
/// and adding then subtracting m = 2^22 x spacing rounds to a multiple of the spacing, ties to
/// even (IEEE fp32 addition rounds to nearest even; the multiples of the spacing are floats of
/// m's binade). An even multiple is an even code on every segment, so the ties agree with the
/// thresholds above; clamping to 6 first is the saturation. Checked exhaustively against
/// e2m1_round_magnitude for every bf16 value and every scale (tests/cpu/test_qdq.cpp).
MXFP4_HD float e2m1_round_value(float a) {
  const float y = a < 6.0f ? a : 6.0f;
  const float m = f32_from_bits((f32_bits(y > 1.0f ? y : 1.0f) & 0x7F800000u) + (22u << 23));
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__fadd_rn(y, m), m);  // never contracted or reassociated
#else
  const volatile float sum = y + m;  // keep the host compiler from folding (y + m) - m
  return sum - m;
#endif
}

/// bf16 bit pattern of element v quantized with the block's shared exponent s and
/// dequantized, given inv = 2^-s and scale = 2^s (exp2i): the value of
/// f32_to_bf16(dequant_f32(e2m1_encode(v * inv), s + 127)) for finite v, without the code. The
/// rounded magnitude times 2^s is one exact product (Inf past the fp32 range, as in
/// dequant_f32) with v's sign (-0 for negatives that round to 0); it has at most two
/// significant bits, so its bf16 pattern is the upper half, exact. Checked against that
/// composition for every bf16 v and every s (tests/cpu/test_qdq.cpp).
MXFP4_HD uint16_t e2m1_quantize_dequantize_bf16(float v, float inv, float scale) {
#if defined(__CUDA_ARCH__)
  const float a = fabsf(v);
#else
  const float a = f32_from_bits(f32_bits(v) & 0x7FFFFFFFu);
#endif
  const float q = e2m1_round_value(a * inv) * scale;
  return uint16_t((f32_bits(q) | (f32_bits(v) & 0x80000000u)) >> 16);
}

/// e2m1 code of y (sign bit from y's sign bit, including -0 and negatives that round to 0).
MXFP4_HD uint8_t e2m1_encode(float y) {
  const uint32_t u = f32_bits(y);
  const uint32_t mag = e2m1_round_magnitude(f32_from_bits(u & 0x7FFFFFFFu));
  return uint8_t(mag | ((u >> 28) & 8u));
}

/// Floor of log2 of a positive finite fp32 value, exact for subnormals too.
MXFP4_HD int floor_log2(float a) {
  const uint32_t u = f32_bits(a) & 0x7FFFFFFFu;
  const int e = int(u >> 23);
  if (e != 0) return e - 127;
  // Subnormal: value = m * 2^-149 with m in [1, 2^23).
  int msb = 0;
  for (uint32_t m = u; m > 1u; m >>= 1) ++msb;
  return msb - 149;
}

MXFP4_HD int clamp_exp(int s) { return s < -127 ? -127 : (s > 127 ? 127 : s); }

/// Unbiased shared exponent s of a finite block with maximum magnitude `amax` (spec §2 steps
/// 1-3 and the alternative rules). Returns a value in [-127, 127]; scale byte = s + 127.
MXFP4_HD int shared_exponent(float amax, ScaleRule rule) {
  const uint32_t bits = f32_bits(amax) & 0x7FFFFFFFu;
  if (rule == ScaleRule::aiter) {
    const uint32_t e = ((bits + 0x00200000u) >> 23) & 0xFFu;
    if (e == 0) return -127;
    if (e == 255) return 127;
    return clamp_exp(int(e) - 129);
  }
  if (bits == 0) return -127;  // all-zero block under floor and rceil
  const int fl = floor_log2(amax);
  if (rule == ScaleRule::floor) return clamp_exp(fl - 2);
  // rceil: smallest s with amax <= 6 * 2^s = 1.5 * 2^(s+2). With amax = m * 2^fl,
  // m in [1,2): s = fl - 2 when m <= 1.5, else fl - 1. m <= 1.5 <=> the 23 fraction bits
  // of the normalised significand are <= 0x400000.
  const uint32_t frac = (bits >= 0x00800000u) ? (bits & 0x7FFFFFu)
                                              : ((bits << (fl + 149 <= 23 ? 23 - (fl + 149) : 0)) & 0x7FFFFFu);
  const bool m_le_1_5 = frac <= 0x400000u;
  return clamp_exp(m_le_1_5 ? fl - 2 : fl - 1);
}

/// Quantizes one block of `n` (<= 32) fp32 values, missing elements taken as +0 (used only
/// for internal padding; the API requires K % 32 == 0). Writes n e2m1 codes (one per byte,
/// low 4 bits) to `codes` and returns the E8M0 scale byte. Non-finite blocks get 0xFF and
/// all-zero codes (spec §2.1).
MXFP4_HD uint8_t quantize_block(const float* x, int n, uint8_t* codes, ScaleRule rule) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    const uint32_t a = f32_bits(x[i]) & 0x7FFFFFFFu;
    finite = finite && (a < 0x7F800000u);
    const float af = f32_from_bits(a);
    amax = af > amax ? af : amax;
  }
  if (!finite) {
    for (int i = 0; i < n; ++i) codes[i] = 0;
    return kScaleNaN;
  }
  const int s = shared_exponent(amax, rule);
  const float inv = exp2i(-s);  // 2^-s: -s in [-127, 127]; 2^127 and 2^-127 are exact
  for (int i = 0; i < n; ++i) codes[i] = e2m1_encode(x[i] * inv);
  return uint8_t(s + 127);
}

/// Byte offset of logical scale (r, c) (row r, K block c) in AITER's e8m0_shuffle layout with
/// `sn` = round_up(kblocks, 8) padded K blocks (spec §4.1).
MXFP4_HD int64_t aiter_scale_offset(int64_t r, int64_t c, int64_t sn) {
  return (r / 32) * (32 * sn) + (c / 8) * 256 + (c % 4) * 64 + (r % 16) * 4 + ((c / 4) % 2) * 2 + ((r / 16) % 2);
}

/// Byte offset of plain code byte (n, c) (row n, byte c of K/2) in AITER's
/// shuffle_weight(layout=(16,16)) order for rows of `kb` = K/2 bytes (spec §4.2).
MXFP4_HD int64_t aiter_weight_offset(int64_t n, int64_t c, int64_t kb) {
  return (n / 16) * (16 * kb) + (c / 16) * 256 + (n % 16) * 16 + (c % 16);
}

}  // namespace fmt
}  // namespace mxfp4
