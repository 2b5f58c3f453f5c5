// Spec §1 tables and every worked example E1-E14 of spec §2.2 as literal bytes (scale, codes
// in element order, packed bytes), under the aiter, floor and rceil rules, through every
// input dtype that represents the block exactly and both scale layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "common/test_util.hpp"
#include "cpu/spec_ref.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

float f32_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Expect {
  uint8_t scale;
  std::string codes;   // 32 hex digits, element order
  std::string packed;  // 16 bytes
};

struct Example {
  std::string id;
  std::vector<float> x;  // 32 values
  Expect aiter;
  std::optional<Expect> floor;  // when it differs from aiter
  std::optional<Expect> rceil;  // when it differs from aiter
};

std::vector<float> tile(std::vector<float> pattern, int times) {
  std::vector<float> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), pattern.begin(), pattern.end());
  return out;
}

std::vector<float> from_f32_bits(std::initializer_list<uint32_t> bits) {
  std::vector<float> out;
  for (uint32_t b : bits) out.push_back(f32_bits(b));
  return out;
}

std::vector<float> from_bf16_bits(std::initializer_list<uint16_t> bits) {
  std::vector<float> out;
  for (uint16_t b : bits) out.push_back(bf16_to_f32(b));
  return out;
}

std::vector<Example> examples() {
  std::vector<Example> ex;
  ex.push_back({"E1", std::vector<float>(32, 0.0f), {0x00, rep("0", 32), rep("00", 16)}, {}, {}});
  ex.push_back({"E2", std::vector<float>(32, -0.0f), {0x00, rep("8", 32), rep("88", 16)}, {}, {}});
  ex.push_back({"E3", tile({6, 5, 2.5, 1.25, 0.25, 0.75, -5, -0.25}, 4),
                {0x7F, rep("764202E8", 4), rep("67 24 20 8E", 4)}, {}, {}});
  ex.push_back({"E4", tile({7, 3.5, 1.75, 0.875}, 8), {0x80, rep("6421", 8), rep("46 12", 8)},
                Expect{0x7F, rep("7642", 8), rep("67 24", 8)}, {}});
  // rceil (smallest s with amax / 2^s <= 6): amax 6.96875 > 6 gives s = 1, byte 0x80; the
  // elements / 2 = 3.484375, -3, 1.5, -1.375, 0.15625, 0.09375, -0.5, 2.25 -> 5 D 3 B 0 0 9 4.
  ex.push_back({"E5", tile({6.96875f, -6, 3, -2.75f, 0.3125f, 0.1875f, -1, 4.5f}, 4),
                {0x7F, rep("7F5D10A6", 4), rep("F7 D5 01 6A", 4)}, {},
                Expect{0x80, rep("5D3B0094", 4), rep("D5 B3 00 49", 4)}});
  ex.push_back({"E6",
                from_f32_bits({0x3EB14E3C, 0xBD4C63F1, 0x3EC240B8, 0xC01816F0, 0x3ECAC083, 0x3F195183, 0xBF200000,
                               0xBED9096C, 0xBF1E83E4, 0x3E8D5CFB, 0xBEBFCB92, 0x3E15B574, 0x3F058794, 0xBF04F766,
                               0xBF5985F0, 0xBF52DE01, 0x3F03B646, 0x3EB39C0F, 0x3CF41F21, 0xBEB14120, 0x3EC88CE7,
                               0x3DE075F7, 0x3FB985F0, 0x3FD9B717, 0xBF0C1BDA, 0xC0057247, 0x3FE7AACE, 0x3EB7A787,
                               0x3FBB295F, 0xC0141D7E, 0x3EAEB1C4, 0xBF64A234}),
                {0x7E, "182E22AAA1912ABB21092055AE615E1C", "81 E2 22 AA 1A 19 A2 BB 12 90 02 55 EA 16 E5 C1"},
                {},
                {}});
  {
    std::vector<float> x = {8, 0.5f, f32_bits(0x3F000003), -0.5f, 1.5f, 0, -0.0f, 2.5f};
    x.resize(32, 1.0f);
    ex.push_back({"E7", x, {0x80, "60182082" + rep("1", 24), "06 81 02 28 " + rep("11", 12)}, {}, {}});
  }
  {
    std::vector<float> x = {1, -0.5f, 0, 6, -3, 2, 0.5f, -1.5f};
    x.resize(32, 0.0f);
    ex.push_back({"E8", x, {0x7F, "2907D41B" + rep("0", 24), "92 70 4D B1 " + rep("00", 12)}, {}, {}});
  }
  ex.push_back({"E9", std::vector<float>(32, 1.0f), {0x7D, rep("6", 32), rep("66", 16)}, {}, {}});
  ex.push_back({"E10", tile({0.4375f, -0.21875f, 0.109375f, 0.0546875f}, 8), {0x7C, rep("6C21", 8), rep("C6 12", 8)},
                Expect{0x7B, rep("7E42", 8), rep("E7 24", 8)}, {}});
  ex.push_back({"E11", std::vector<float>(32, std::ldexp(1.0f, -129)), {0x00, rep("0", 32), rep("00", 16)}, {}, {}});
  ex.push_back({"E12", std::vector<float>(32, bf16_to_f32(0x0040)), {0x00, rep("2", 32), rep("22", 16)}, {}, {}});
  {
    std::vector<float> x = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 6};
    for (int i = 0; i < 8; ++i) x.push_back(-x[size_t(i)]);
    x.resize(32, 0.0f);
    ex.push_back({"E13", x,
                  {0x7F, "022446678AACCEEF" + rep("0", 16), "20 42 64 76 A8 CA EC FE " + rep("00", 8)}, {}, {}});
  }
  // Floor: 0x7E from the spec; codes derived from the floor rule (s = -1, elements * 2).
  ex.push_back({"E14",
                from_bf16_bits({0xBFCB, 0x3E9A, 0xBF31, 0x3FFC, 0xBFAC, 0x3F5A, 0xBD93, 0x3F3F, 0x3EE6, 0xBF8B, 0xBFB2,
                                0x3F50, 0x3F56, 0xBE4A, 0xBEB0, 0xBF95, 0xBEEF, 0xC07E, 0x3EE8, 0x3FCE, 0xBFC5, 0x3E9E,
                                0x3EC9, 0xBED1, 0x3E76, 0x3F80, 0x3F5E, 0x3EAB, 0xBEE4, 0x3E84, 0xBD8E, 0xBFD9}),
                {0x7F, "B194B2811AB2289A9E13B1190221918B", "1B 49 2B 18 A1 2B 82 A9 E9 31 1B 91 20 12 19 B8"},
                Expect{0x7E, "D1B6D3832CD3399CAF25D12A1431A18D", "1D 6B 3D 38 C2 3D 93 C9 FA 52 1D A2 41 13 1A D8"},
                {}});
  return ex;
}

const Expect& expected_for(const Example& e, ScaleRule rule) {
  if (rule == ScaleRule::floor && e.floor) return *e.floor;
  if (rule == ScaleRule::rceil && e.rceil) return *e.rceil;
  return e.aiter;
}

const char* rule_name(ScaleRule r) { return r == ScaleRule::aiter ? "aiter" : r == ScaleRule::floor ? "floor" : "rceil"; }

// Quantizes one block through the public API in `dtype` (when exact) and both scale layouts;
// checks scale, packed bytes and codes against `want`. Returns the number of dtypes run.
int check_block(const Example& e, ScaleRule rule, const Expect& want) {
  int ran = 0;
  const std::vector<uint8_t> want_packed = parse_bytes(want.packed);
  const std::vector<uint8_t> want_codes = parse_nibbles(want.codes);
  EXPECT_EQ(want_packed.size(), 16u) << e.id;
  EXPECT_EQ(want_codes.size(), 32u) << e.id;
  for (DType dt : {DType::fp32, DType::bf16, DType::fp16}) {
    std::vector<uint8_t> input;
    if (dt == DType::fp32) {
      input.resize(128);
      std::memcpy(input.data(), e.x.data(), 128);
    } else {
      std::vector<uint16_t> h(32);
      bool exact = true;
      for (int i = 0; i < 32; ++i) {
        if (dt == DType::bf16) {
          h[size_t(i)] = f32_to_bf16(e.x[size_t(i)]);
          const float back = bf16_to_f32(h[size_t(i)]);
          exact = exact && std::memcmp(&e.x[size_t(i)], &back, 4) == 0;
        } else {
          auto v = exact_f16(e.x[size_t(i)]);
          exact = exact && v.has_value();
          h[size_t(i)] = v.value_or(0);
        }
      }
      if (!exact) continue;
      input.resize(64);
      std::memcpy(input.data(), h.data(), 64);
    }
    ++ran;
    for (ScaleLayout sl : {ScaleLayout::plain, ScaleLayout::aiter_shuffled}) {
      std::vector<uint8_t> codes(16, 0xAA);
      std::vector<uint8_t> scales(sl == ScaleLayout::plain ? 1 : size_t(shuffled_scales_bytes(1, 1)), 0x5A);
      quantize(input.data(), dt, 1, 32, 32, codes.data(), scales.data(), rule, {}, sl);
      const std::string where = e.id + " rule=" + rule_name(rule) + " dtype=" + std::to_string(int(dt)) +
                                " layout=" + std::to_string(int(sl));
      EXPECT_EQ(int(scales[0]), int(want.scale)) << where;  // offset(0, 0) = 0 in both layouts
      EXPECT_EQ(hex(codes), hex(want_packed)) << where;
      std::vector<uint8_t> got_codes;
      for (uint8_t b : codes) {
        got_codes.push_back(b & 0xF);
        got_codes.push_back(b >> 4);
      }
      EXPECT_EQ(got_codes, want_codes) << where;
    }
  }
  return ran;
}

TEST(SpecExamples, TableIsSelfConsistent) {
  // The literal codes pack to the literal bytes (element 2i in the low nibble, spec §1.1).
  for (const Example& e : examples())
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      const Expect& w = expected_for(e, rule);
      const auto c = parse_nibbles(w.codes);
      const auto p = parse_bytes(w.packed);
      ASSERT_EQ(c.size(), 32u) << e.id;
      ASSERT_EQ(p.size(), 16u) << e.id;
      for (size_t i = 0; i < 16; ++i) EXPECT_EQ(int(p[i]), int(c[2 * i] | (c[2 * i + 1] << 4))) << e.id << " " << i;
    }
}

TEST(SpecExamples, AiterRule) {
  for (const Example& e : examples()) EXPECT_GE(check_block(e, ScaleRule::aiter, e.aiter), 1) << e.id;
}

TEST(SpecExamples, FloorRule) {
  int differing = 0;
  for (const Example& e : examples()) {
    differing += e.floor.has_value();
    EXPECT_GE(check_block(e, ScaleRule::floor, expected_for(e, ScaleRule::floor)), 1) << e.id;
  }
  EXPECT_EQ(differing, 3);  // E4, E10, E14 (spec §2.2)
}

TEST(SpecExamples, RceilRule) {
  for (const Example& e : examples()) EXPECT_GE(check_block(e, ScaleRule::rceil, expected_for(e, ScaleRule::rceil)), 1);
}

TEST(SpecExamples, IndependentReferenceAgreesWithTable) {
  // Guards the test-side reference (used for random cross-checks) with the spec's literals.
  for (const Example& e : examples())
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      double x[32];
      for (int i = 0; i < 32; ++i) x[i] = e.x[size_t(i)];
      const RefBlock r = ref_quantize(x, rule);
      const Expect& w = expected_for(e, rule);
      EXPECT_EQ(int(r.scale), int(w.scale)) << e.id << " " << rule_name(rule);
      EXPECT_EQ(std::vector<uint8_t>(r.codes.begin(), r.codes.end()), parse_nibbles(w.codes)) << e.id;
    }
}

TEST(SpecExamples, AmaxSevenDiffersByRule) {
  // spec §2: amax = 7.0 gives byte 127 (floor) but 128 (aiter, rceil).
  std::vector<float> x(32, 0.0f);
  x[5] = 7.0f;
  uint8_t codes[16], s = 0;
  quantize(x.data(), DType::fp32, 1, 32, 32, codes, &s, ScaleRule::floor);
  EXPECT_EQ(s, 127);
  quantize(x.data(), DType::fp32, 1, 32, 32, codes, &s, ScaleRule::aiter);
  EXPECT_EQ(s, 128);
  quantize(x.data(), DType::fp32, 1, 32, 32, codes, &s, ScaleRule::rceil);
  EXPECT_EQ(s, 128);
}

TEST(Format, E2m1TableOfSpec) {
  const float want[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    const float got = fmt::e2m1_to_f32(uint8_t(c));
    EXPECT_EQ(got, want[c]) << "code " << c;
    EXPECT_EQ(std::signbit(got), c >= 8) << "code " << c;
  }
}

TEST(Format, E8m0Decode) {
  EXPECT_EQ(fmt::e8m0_to_f32(0), std::ldexp(1.0f, -127));  // subnormal, not 0 (spec §1.2)
  EXPECT_GT(fmt::e8m0_to_f32(0), 0.0f);
  EXPECT_EQ(fmt::e8m0_to_f32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(fmt::e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(fmt::e8m0_to_f32(128), 2.0f);
  EXPECT_EQ(fmt::e8m0_to_f32(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(fmt::e8m0_to_f32(255)));
  for (int b = 0; b < 255; ++b) EXPECT_EQ(double(fmt::e8m0_to_f32(uint8_t(b))), std::ldexp(1.0, b - 127)) << b;
}

TEST(Format, DequantIsExactEverywhere) {
  // Every (code, scale) pair: e2m1 * 2^(b-127) exactly, except 254 * |code| >= 4 -> +-Inf.
  for (int b = 0; b < 256; ++b)
    for (int c = 0; c < 16; ++c) {
      const float got = fmt::dequant_f32(uint8_t(c), uint8_t(b));
      if (b == 255) {
        EXPECT_TRUE(std::isnan(got));
        continue;
      }
      const double want = ref_e2m1(uint8_t(c)) * std::ldexp(1.0, b - 127);
      if (std::fabs(want) >= 0x1p128) {
        EXPECT_TRUE(std::isinf(got)) << c << " " << b;
        EXPECT_EQ(std::signbit(got), c >= 8);
      } else {
        EXPECT_EQ(double(got), want) << "code " << c << " byte " << b;
        EXPECT_EQ(std::signbit(got), c >= 8);
      }
    }
}

// Random blocks of many kinds: the library quantizer equals the independent reference.
TEST(Format, RandomBlocksMatchIndependentReference) {
  Rng rng(1234);
  int64_t blocks = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    const int kind = trial % 6;
    const int shift = int(rng.uniform_int(-150, 127));
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) {
      double v = 0;
      switch (kind) {
        case 0:  // normal values at a random scale (bf16-rounded)
          v = bf16_to_f32(f32_to_bf16(float(std::ldexp(rng.normal(), shift))));
          break;
        case 1:  // exact tie points and code values at a random scale
          v = std::ldexp(double(rng.uniform_int(-48, 48)) * 0.125, std::max(shift, -120));
          break;
        case 2: {  // arbitrary finite fp32 bit patterns
          uint32_t u = uint32_t(rng.next_u64());
          if (((u >> 23) & 0xFF) == 0xFF) u &= 0xBFFFFFFFu;
          v = f32_bits(u);
          break;
        }
        case 3:  // tiny values around the E8M0 / fp32 subnormal range
          v = std::ldexp(double(rng.uniform_int(-64, 64)), int(rng.uniform_int(-155, -120)));
          break;
        case 4:  // near the top of the range (2^127 * 1.75 boundary)
          v = std::ldexp(1.0 + rng.uniform(), 127) * (rng.uniform() < 0.5 ? -1 : 1);
          v = std::fabs(v) > 3.4e38 ? 3.4e38 : v;
          break;
        default:  // signed zeros and ties at 2^0 with occasional non-finite values
          v = rng.uniform() < 0.3 ? (rng.uniform() < 0.5 ? -0.0 : 0.0) : double(rng.uniform_int(-24, 24)) * 0.25;
          if (rng.uniform() < 0.02) v = rng.uniform() < 0.5 ? INFINITY : NAN;
          break;
      }
      x[size_t(i)] = float(v);
    }
    double xd[32];
    for (int i = 0; i < 32; ++i) xd[i] = x[size_t(i)];
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      uint8_t packed[16], s = 0;
      quantize(x.data(), DType::fp32, 1, 32, 32, packed, &s, rule);
      const RefBlock r = ref_quantize(xd, rule);
      ASSERT_EQ(int(s), int(r.scale)) << "trial " << trial << " rule " << rule_name(rule);
      for (int i = 0; i < 16; ++i)
        ASSERT_EQ(int(packed[i]), int(r.codes[size_t(2 * i)] | (r.codes[size_t(2 * i + 1)] << 4)))
            << "trial " << trial << " rule " << rule_name(rule) << " byte " << i;
      ++blocks;
    }
  }
  EXPECT_EQ(blocks, 18000);
}

TEST(Format, Fp16InputsMatchFp32Inputs) {
  // Every finite binary16 value, 32 per block: the fp16 path equals the fp32 path.
  std::vector<uint16_t> h;
  std::vector<float> f;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if (((b >> 10) & 31) == 31) continue;
    const uint32_t e = (b >> 10) & 31, m = b & 1023;
    const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), int(e) - 25);
    h.push_back(uint16_t(b));
    f.push_back(float((b & 0x8000) ? -mag : mag));
  }
  const int64_t rows = int64_t(h.size()) / 32;
  const size_t nr = static_cast<size_t>(rows);
  std::vector<uint8_t> c16(nr * 16), s16(nr), c32(nr * 16), s32(nr);
  quantize(h.data(), DType::fp16, rows, 32, 32, c16.data(), s16.data());
  quantize(f.data(), DType::fp32, rows, 32, 32, c32.data(), s32.data());
  EXPECT_EQ(c16, c32);
  EXPECT_EQ(s16, s32);
}

}  // namespace
}  // namespace mxfp4::test
