// Quantize-dequantize fixed points (bug kind K03): quantize(dequantize(q)) == q.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/test_util.hpp"
#include "core/fp8_layout.hpp"
#include "core/qdq_bf16x2.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

// Every scale byte 0..252 and every code: one block per (byte, code, sign of the max) holding
// the block maximum code 7 or F (so that re-quantizing picks the same scale) and `code` in a
// pattern over the other positions. Bytes 253 and 254 are excluded: a block maximum 6 * 2^126
// or 6 * 2^127 is beyond the fp32/bf16 range (it dequantizes to Inf, bug kind K06), so those
// scales have no canonical block that survives a round trip through fp32 or bf16.
void check_every_code_and_scale(ScaleRule rule, DType deq_dtype) {
  const int64_t K = 32, rows = 253 * 16 * 2;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * K / 2)), scales(static_cast<size_t>(rows));
  int64_t r = 0;
  for (int b = 0; b <= 252; ++b)
    for (int c = 0; c < 16; ++c)
      for (int max_code : {0x7, 0xF}) {
        uint8_t nib[32];
        for (int i = 0; i < 32; ++i) nib[i] = uint8_t((i % 3 == 0) ? c : (i * 5 + c) % 16);
        nib[(b + c) % 32] = uint8_t(max_code);
        for (int i = 0; i < 16; ++i) codes[size_t(r * 16 + i)] = uint8_t(nib[2 * i] | (nib[2 * i + 1] << 4));
        scales[size_t(r)] = uint8_t(b);
        ++r;
      }
  ASSERT_EQ(r, rows);
  const MxMatrix q{codes.data(), scales.data(), rows, K};
  std::vector<uint8_t> codes2(codes.size(), 0xAA), scales2(scales.size(), 0xAA);
  if (deq_dtype == DType::fp32) {
    std::vector<float> d(size_t(rows * K));
    dequantize(q, d.data(), DType::fp32, K);
    quantize(d.data(), DType::fp32, rows, K, K, codes2.data(), scales2.data(), rule);
  } else {
    std::vector<uint16_t> d(size_t(rows * K));
    dequantize(q, d.data(), DType::bf16, K);
    quantize(d.data(), DType::bf16, rows, K, K, codes2.data(), scales2.data(), rule);
  }
  for (int64_t i = 0; i < rows; ++i) {
    ASSERT_EQ(int(scales2[size_t(i)]), int(scales[size_t(i)])) << "row " << i << " rule " << int(rule);
    ASSERT_EQ(hex(codes2.data() + i * 16, 16), hex(codes.data() + i * 16, 16)) << "row " << i;
  }
}

TEST(Qdq, EveryCodeAndScaleByteAiterFp32) { check_every_code_and_scale(ScaleRule::aiter, DType::fp32); }
TEST(Qdq, EveryCodeAndScaleByteAiterBf16) { check_every_code_and_scale(ScaleRule::aiter, DType::bf16); }
TEST(Qdq, EveryCodeAndScaleByteFloorFp32) { check_every_code_and_scale(ScaleRule::floor, DType::fp32); }
TEST(Qdq, EveryCodeAndScaleByteFloorBf16) { check_every_code_and_scale(ScaleRule::floor, DType::bf16); }
TEST(Qdq, EveryCodeAndScaleByteRceilFp32) { check_every_code_and_scale(ScaleRule::rceil, DType::fp32); }

// For aiter and floor, QDQ of any quantized block is a fixed point (the decoded maximum
// re-selects the same scale). Not for rceil: amax 3.2 gives s = 0 and code 5 (3.0), whose
// re-quantization picks s = -1 and code 7: the same value, different bytes.
TEST(Qdq, RandomBlocksAreFixedPointsAiterAndFloor) {
  const int64_t rows = 2048, K = 64;
  Rng rng(77);
  std::vector<float> x(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r) {
    const int e = int(rng.uniform_int(-130, 120));
    for (int64_t k = 0; k < K; ++k) x[size_t(r * K + k)] = float(std::ldexp(rng.normal(), e));
  }
  for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor}) {
    std::vector<uint8_t> c1(size_t(rows * K / 2)), s1(size_t(rows * K / 32));
    quantize(x.data(), DType::fp32, rows, K, K, c1.data(), s1.data(), rule);
    std::vector<float> d(x.size());
    dequantize(MxMatrix{c1.data(), s1.data(), rows, K}, d.data(), DType::fp32, K);
    std::vector<uint8_t> c2(c1.size()), s2(s1.size());
    quantize(d.data(), DType::fp32, rows, K, K, c2.data(), s2.data(), rule);
    EXPECT_EQ(s1, s2) << int(rule);
    EXPECT_EQ(c1, c2) << int(rule);
  }
  // The rceil counterexample above, so that the comment stays true.
  std::vector<float> blk(32, 0.0f);
  blk[0] = 3.2f;
  uint8_t c[16], s = 0;
  quantize(blk.data(), DType::fp32, 1, 32, 32, c, &s, ScaleRule::rceil);
  EXPECT_EQ(s, 127);
  EXPECT_EQ(c[0] & 15, 5);
}

// fmt::e2m1_round_value (the GPU activation quantizers' rounding) against the threshold
// definition fmt::e2m1_round_magnitude: every finite bf16 magnitude divided by every power
// of two a block scale can take (the quantizers' y = |x| * 2^-s, s in [-127, 127]), plus the
// grid points, the ties between them and their float neighbours.
TEST(Qdq, E2m1RoundValueMatchesTheThresholdsForEveryBf16AndScale) {
  auto check = [](float a) {
    const float want = fmt::e2m1_to_f32(uint8_t(fmt::e2m1_round_magnitude(a)));
    const float got = fmt::e2m1_round_value(a);
    return fmt::f32_bits(got) == fmt::f32_bits(want);
  };
  int64_t bad = 0;
  float first_bad = 0.0f;
  for (uint32_t h = 0; h < 0x7F80u; ++h) {  // finite non-negative bf16
    const float x = fmt::bf16_to_f32(uint16_t(h));
    for (int s = -127; s <= 127; ++s) {
      const float a = x * fmt::exp2i(-s);
      if (!check(a) && bad++ == 0) first_bad = a;
    }
  }
  for (float g : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f,
                  1e30f, 3.4e38f})
    for (float a : {g, std::nextafter(g, 0.0f), std::nextafter(g, 1e38f)})
      if (!check(a) && bad++ == 0) first_bad = a;
  EXPECT_EQ(bad, 0) << "first mismatch at " << first_bad;
}

// A block has a nonzero code exactly when its largest magnitude amax rounds to a nonzero
// e2m1 value at the block's scale: e2m1_round_value(amax * 2^-s) != 0 (path fp8's per-slice
// image kernel decides a block's "nonzero" this way for the slices whose exponents alone it
// needs: Bf16Source::block_exponent in src/cuda/fp8_image.cu). Every finite bf16 amax, every scale rule,
// with the block's other elements at amax * 2^-i of both signs, and zeros.
TEST(Qdq, ABlockHasANonzeroCodeExactlyWhenItsMaximumRoundsToNonzero) {
  int64_t bad = 0, zero_blocks = 0;
  for (uint32_t h = 1; h < 0x7F80u; ++h) {  // finite positive bf16
    const float amax = fmt::bf16_to_f32(uint16_t(h));
    float x[32];
    for (int i = 0; i < 32; ++i)
      x[i] = i == 7 ? amax : i % 5 == 0 ? 0.0f : fmt::bf16_to_f32(fmt::f32_to_bf16(std::ldexp(i % 2 ? -amax : amax, -i)));
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      uint8_t codes[32];
      const int s = int(fmt::quantize_block(x, 32, codes, rule)) - 127;
      bool any = false;
      for (uint8_t c : codes) any |= (c & 7) != 0;
      zero_blocks += !any;
      bad += any != (fmt::e2m1_round_value(amax * fmt::exp2i(-s)) != 0.0f);
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(zero_blocks, 0);  // the rule's clamp at s = -127 leaves tiny blocks all zero
}

// The GPU quantizers' element result fmt::e2m1_quantize_dequantize_bf16 against the
// composition it replaces, f32_to_bf16(dequant_f32(e2m1_encode(v * 2^-s), s + 127)), bit for
// bit: every finite bf16 v of both signs and every s in [-127, 127] (so the subnormal 2^-127,
// the Inf of byte 254 with |code| >= 4, -0 and negatives that round to 0).
TEST(Qdq, E2m1QuantizeDequantizeBf16MatchesEncodeThenDequantize) {
  int64_t bad = 0;
  uint16_t first_v = 0;
  int first_s = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7F80u) == 0x7F80u) continue;  // Inf and NaN: whole-block policy, not per element
    const float v = fmt::bf16_to_f32(uint16_t(h));
    for (int s = -127; s <= 127; ++s) {
      const float inv = fmt::exp2i(-s), scale = fmt::exp2i(s);
      const uint16_t want = fmt::f32_to_bf16(fmt::dequant_f32(fmt::e2m1_encode(v * inv), uint8_t(s + 127)));
      if (fmt::e2m1_quantize_dequantize_bf16(v, inv, scale) != want && bad++ == 0) first_v = uint16_t(h), first_s = s;
    }
  }
  EXPECT_EQ(bad, 0) << "first mismatch at bf16 0x" << std::hex << first_v << std::dec << ", s = " << first_s;
}

// The GPU quantizers' packed form, qdq::e2m1_qdq_pair (bf16x2 operations, run here on their
// exact host model), against fmt::e2m1_quantize_dequantize_bf16: every finite bf16 v of both
// signs in the low half, paired with another value in the high half, for every s in
// [-127, 127], bit for bit.
TEST(Qdq, PackedBf16x2PairMatchesTheFp32FormForEveryBf16AndScale) {
  int64_t bad = 0;
  uint16_t first_v = 0;
  int first_s = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7F80u) == 0x7F80u) continue;  // Inf and NaN: whole-block policy, not per element
    const uint32_t h2 = (h * 40503u + 7u) & 0xFFFFu;  // a second, scrambled element
    const uint32_t hi = (h2 & 0x7F80u) == 0x7F80u ? h2 & 0x807Fu : h2;
    const float v = fmt::bf16_to_f32(uint16_t(h)), v2 = fmt::bf16_to_f32(uint16_t(hi));
    for (int s = -127; s <= 127; ++s) {
      const float inv = fmt::exp2i(-s), scale = fmt::exp2i(s);
      const uint32_t want = uint32_t(fmt::e2m1_quantize_dequantize_bf16(v, inv, scale)) |
                            (uint32_t(fmt::e2m1_quantize_dequantize_bf16(v2, inv, scale)) << 16);
      const uint32_t got = qdq::e2m1_qdq_pair(h | (hi << 16), qdq::pow2_pair(-s), qdq::pow2_pair(s));
      if (got != want && bad++ == 0) first_v = uint16_t(h), first_s = s;
    }
  }
  EXPECT_EQ(bad, 0) << "first mismatch at bf16 0x" << std::hex << first_v << std::dec << ", s = " << first_s;
}

// The activation image kernels' s8 bytes, qdq::e2m1_s8_quad (bf16x2 operations and
// byte_permute, on their host models), against fp8::e2m1_to_s8 of fmt::e2m1_encode: every
// finite bf16 v of both signs as element 0, three scrambled finite elements beside it, every s
// in [-127, 127] and every shift d in [1, 4], byte for byte.
TEST(Qdq, PackedS8QuadMatchesTheCodesForEveryBf16AndScale) {
  auto finite = [](uint32_t h) { return (h & 0x7F80u) == 0x7F80u ? h & 0x807Fu : h; };
  int64_t bad = 0;
  uint16_t first_v = 0;
  int first_s = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7F80u) == 0x7F80u) continue;  // Inf and NaN: whole-block policy (flagged groups)
    const uint32_t e[4] = {h, finite((h * 40503u + 7u) & 0xFFFFu), finite((h * 9973u + 1234u) & 0xFFFFu),
                           finite((h * 31u + 40000u) & 0xFFFFu)};
    const uint32_t w0 = e[0] | (e[1] << 16), w1 = e[2] | (e[3] << 16);
    for (int s = -127; s <= 127; ++s)
      for (int d = fp8::kMinShift; d <= fp8::kMaxShift; ++d) {
        const float inv = fmt::exp2i(-s);
        uint32_t want = 0;
        for (int i = 0; i < 4; ++i)
          want |= uint32_t(fp8::e2m1_to_s8(fmt::e2m1_encode(fmt::bf16_to_f32(uint16_t(e[i])) * inv), d)) << (8 * i);
        const uint32_t got = qdq::e2m1_s8_quad(w0, w1, qdq::pow2_pair(-s), qdq::pow2_pair(d));
        if (got != want && bad++ == 0) first_v = uint16_t(h), first_s = s;
      }
  }
  EXPECT_EQ(bad, 0) << "first mismatch at bf16 0x" << std::hex << first_v << std::dec << ", s = " << first_s;
}

// The host model of the bf16x2 operations rounds once, to nearest even, with subnormals:
// spot checks that would fail for a model that truncates, flushes or double-rounds.
TEST(Qdq, Bf16x2HostModelRoundsOnceToNearestEven) {
  auto bf = [](float x) { return uint32_t(fmt::f32_to_bf16(x)); };
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even (1). 1 + 3 * 2^-8: up to 1 + 2^-6.
  EXPECT_EQ(qdq::bf16x2::add(bf(1.0f), bf(0.00390625f)) & 0xFFFFu, bf(1.0f));
  EXPECT_EQ(qdq::bf16x2::add(bf(1.0f), bf(0.01171875f)) & 0xFFFFu, bf(1.015625f));
  // 64 + 2^-130: the tiny addend decides nothing; 64 - 2^-130 rounds back to 64 too.
  const uint32_t tiny = bf(std::ldexp(1.0f, -130));
  EXPECT_EQ(qdq::bf16x2::add(bf(64.0f), tiny) & 0xFFFFu, bf(64.0f));
  EXPECT_EQ(qdq::bf16x2::sub(bf(64.0f), tiny) & 0xFFFFu, bf(64.0f));
  // Subnormal products are kept: 2^-127 * 0.5 = 2^-128 (bf16 0x0020), 2^-133 * 1 stays.
  EXPECT_EQ(qdq::bf16x2::mul(qdq::pow2_pair(-127), bf(0.5f)) & 0xFFFFu, 0x0020u);
  EXPECT_EQ(qdq::bf16x2::mul(0x00010001u, bf(1.0f)) & 0xFFFFu, 0x0001u);
  // A tie of a subnormal product: 3 * 2^-134 lies between 2^-133 and 2^-132: even (2^-132).
  EXPECT_EQ(qdq::bf16x2::mul(0x00030003u, bf(0.5f)) & 0xFFFFu, 0x0002u);
  // Overflow to +Inf: 6 * 2^127.
  EXPECT_EQ(qdq::bf16x2::mul(bf(6.0f), qdq::pow2_pair(127)) & 0xFFFFu, 0x7F80u);
  // Both halves independently.
  EXPECT_EQ(qdq::bf16x2::min(bf(2.0f) | (bf(7.0f) << 16), 0x40C040C0u), bf(2.0f) | (bf(6.0f) << 16));
}

}  // namespace
}  // namespace mxfp4::test
