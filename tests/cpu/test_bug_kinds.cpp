// Bug kinds K01-K09 of shared/spec/bug-kinds.md on the CPU paths (quantizer producers,
// dequantizer, GEMM), with the right results as literals; K10-K14 are in
// test_bug_kinds_gemm.cpp (docs/hardening.md §7 lists every kind's tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/test_util.hpp"
#include "cpu/block_paths.hpp"
#include "cpu/spec_ref.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

// Every producer gives `scale` and `bytes` (16 bytes as hex).
void expect_all_paths(const std::vector<float>& block, ScaleRule rule, int scale, const std::string& bytes,
                      const std::string& what) {
  const auto results = quantize_all_paths(block, rule);
  ASSERT_GE(results.size(), 6u);
  for (const auto& r : results) {
    EXPECT_EQ(int(r.scale), scale) << what << " via " << r.path;
    EXPECT_EQ(hex(r.packed), hex(parse_bytes(bytes))) << what << " via " << r.path;
  }
}

std::vector<float> block_of(std::vector<float> head, float fill = 0.0f) {
  head.resize(32, fill);
  return head;
}

// Quantizes a 1 x 32 fp32 block, returns (scale, 32 codes).
std::pair<int, std::vector<uint8_t>> q1(const std::vector<float>& x, ScaleRule rule = ScaleRule::aiter) {
  uint8_t c[16], s = 0;
  quantize(x.data(), DType::fp32, 1, 32, 32, c, &s, rule);
  std::vector<uint8_t> codes;
  for (uint8_t b : c) {
    codes.push_back(b & 15);
    codes.push_back(b >> 4);
  }
  return {int(s), codes};
}

std::vector<float> dequant1(const uint8_t* codes, uint8_t scale, int64_t K = 32) {
  MxMatrix m;
  m.codes = codes;
  m.scales = &scale;
  m.rows = 1;
  m.K = K;
  std::vector<float> out(static_cast<size_t>(K));
  dequantize(m, out.data(), DType::fp32, K);
  return out;
}

TEST(BugK01, TiesRoundToEvenNotAway) {
  const auto b = block_of({5, 1.25f, 0.25f, 2.5f, -1.25f, 0.75f, 1.75f, 3.5f, 0.251953125f, 1.2578125f, 0.5f, 0.50390625f});
  expect_all_paths(b, ScaleRule::aiter, 127, "26 40 2A 64 31 11 " + rep("00", 10), "K01");
}

TEST(BugK02, EveryEntryPointAgreesAtTies) {
  std::vector<float> base = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 6};
  for (int i = 0; i < 8; ++i) base.push_back(-base[size_t(i)]);
  base.resize(32, 0.0f);
  const std::string bytes = "20 42 64 76 A8 CA EC FE " + rep("00", 8);
  const int shifts[4] = {0, -20, 20, -120};
  const int scales[4] = {127, 107, 147, 7};
  for (int t = 0; t < 4; ++t) {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[size_t(i)] = std::ldexp(base[size_t(i)], shifts[t]);
    expect_all_paths(x, ScaleRule::aiter, scales[t], bytes, "K02 x 2^" + std::to_string(shifts[t]));
  }
}

TEST(BugK03, QdqFixedPointExample) {
  const auto x = block_of({3.25f, 0.5f});
  uint8_t c[16], s = 0;
  quantize(x.data(), DType::fp32, 1, 32, 32, c, &s);
  EXPECT_EQ(s, 126);
  EXPECT_EQ(c[0], 0x27);
  for (int i = 1; i < 16; ++i) EXPECT_EQ(c[i], 0);
  const auto d = dequant1(c, s);
  EXPECT_EQ(d[0], 3.0f);
  EXPECT_EQ(d[1], 0.5f);
  uint8_t c2[16], s2 = 0;
  quantize(d.data(), DType::fp32, 1, 32, 32, c2, &s2);
  EXPECT_EQ(s2, s);
  EXPECT_EQ(hex(c2, 16), hex(c, 16));
}

TEST(BugK03, GemmOnBf16EqualsGemmOnQuantizedBitForBit) {
  const int64_t shapes[][3] = {{1, 7, 32}, {5, 33, 96}, {17, 64, 160}, {64, 48, 1664}, {130, 20, 256}};
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    const auto a = randn_bf16(size_t(M * K), 7 + uint64_t(M));
    const HostMx b = random_mx(N, K, 11 + uint64_t(N));
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      std::vector<uint16_t> c1(size_t(M * N)), c2(size_t(M * N)), c3(size_t(M * N));
      GemmOptions opt;
      opt.rule = rule;
      gemm(a.data(), M, K, K, b.view(), c1.data(), N, opt);
      const HostMx aq = quantize_bf16(a, M, K, rule);
      gemm_quantized(aq.view(), b.view(), c2.data(), N);
      EXPECT_EQ(c1, c2) << M << "x" << N << "x" << K;
      // Prepacked B gives the same bits too.
      std::vector<uint8_t> packed(size_t(packed_bytes(N, K)));
      const PackedWeights p = prepack(b.view(), packed.data());
      gemm(a.data(), M, K, K, p, c3.data(), N, opt);
      EXPECT_EQ(c1, c3) << M << "x" << N << "x" << K;
    }
  }
}

TEST(BugK04, SubnormalCodesAndStickyBits) {
  std::vector<float> vals;
  for (int c = 0; c < 16; ++c) vals.push_back(float(ref_e2m1(uint8_t(c))));
  std::vector<float> x = vals;
  x.insert(x.end(), vals.begin(), vals.end());
  expect_all_paths(x, ScaleRule::aiter, 127, rep("10 32 54 76 98 BA DC FE", 2), "K04 e2m1 values");
  uint8_t c[16], s = 0;
  quantize(x.data(), DType::fp32, 1, 32, 32, c, &s);
  const auto d = dequant1(c, s);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(d[size_t(i)], x[size_t(i)]) << i;
    EXPECT_EQ(std::signbit(d[size_t(i)]), std::signbit(x[size_t(i)])) << i;
  }
  const auto [scale, codes] = q1(block_of({6, 0.251953125f, 0.2490234375f, 1.2578125f, 4.96875f, 5.03125f}));
  EXPECT_EQ(scale, 127);
  EXPECT_EQ(codes[1], 1);
  EXPECT_EQ(codes[2], 0);
  EXPECT_EQ(codes[3], 3);
  EXPECT_EQ(codes[4], 6);
  EXPECT_EQ(codes[5], 7);
}

TEST(BugK05, ScaleNotOneBinadeTooSmall) {
  const float v[4] = {1.203125f, 2.703125f, 5.5f, 7.0f};
  const int bytes[4] = {125, 126, 127, 128};
  const float maxima[4] = {1.0f, 3.0f, 6.0f, 8.0f};
  for (int t = 0; t < 4; ++t) {
    std::vector<float> x(32, v[t]);
    uint8_t c[16], s = 0;
    quantize(x.data(), DType::fp32, 1, 32, 32, c, &s);
    EXPECT_EQ(int(s), bytes[t]) << v[t];
    const auto d = dequant1(c, s);
    for (float e : d) EXPECT_EQ(e, maxima[t]) << v[t];
  }
  // Invariant deq(block max) >= 0.75 amax, every rule, random blocks.
  Rng rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<float> x(32);
    const int e = int(rng.uniform_int(-100, 100));
    for (auto& f : x) f = float(std::ldexp(rng.normal(), e));
    float amax = 0;
    for (float f : x) amax = std::max(amax, std::fabs(f));
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      uint8_t c[16], s = 0;
      quantize(x.data(), DType::fp32, 1, 32, 32, c, &s, rule);
      const auto d = dequant1(c, s);
      float dmax = 0;
      for (float f : d) dmax = std::max(dmax, std::fabs(f));
      ASSERT_GE(dmax, 0.75f * amax) << "trial " << trial << " rule " << int(rule);
    }
  }
}

TEST(BugK06, SaturationAtBlockMax) {
  {
    const auto [s, c] = q1(block_of({6.8125f, -6.8125f, 1.0f}));
    EXPECT_EQ(s, 127);
    EXPECT_EQ(c[0], 0x7);
    EXPECT_EQ(c[1], 0xF);
    EXPECT_EQ(c[2], 0x2);
  }
  {
    const auto [s, c] = q1(block_of({7.5f}));
    EXPECT_EQ(s, 128);
    EXPECT_EQ(c[0], 6);
    uint8_t packed[16] = {6};
    EXPECT_EQ(dequant1(packed, uint8_t(s))[0], 8.0f);
  }
  {
    // bf16 max 0x7F7F: byte 254 with code 4, which decodes to 2^128: +Inf in fp32 and bf16.
    std::vector<uint16_t> x(32, 0);
    x[0] = 0x7F7F;
    uint8_t c[16], s = 0;
    quantize(x.data(), DType::bf16, 1, 32, 32, c, &s);
    EXPECT_EQ(s, 254);
    EXPECT_EQ(c[0] & 15, 4);
    const auto d = dequant1(c, s);
    EXPECT_TRUE(std::isinf(d[0]) && d[0] > 0);
    MxMatrix m{c, &s, 1, 32};
    std::vector<uint16_t> db(32);
    dequantize(m, db.data(), DType::bf16, 32);
    EXPECT_EQ(db[0], 0x7F80);
  }
}

TEST(BugK07, TinyAndSubnormalInputs) {
  const double amax[6] = {1.5 * 0x1p-114, 0x1p-126, 0x1p-128, 1.5 * 0x1p-128, 0x1p-130, 0x1p-133};
  const int scale[6] = {11, 0, 0, 0, 0, 0};
  const int maxcode[6] = {7, 4, 1, 2, 0, 0};
  for (int t = 0; t < 6; ++t) {
    std::vector<float> x(32, 0.0f);
    x[3] = float(amax[t]);
    x[9] = float(-amax[t] / 2);
    for (DType dt : {DType::fp32, DType::bf16}) {
      std::vector<uint16_t> hb(32);
      // -amax/2 = -2^-134 (t = 5) has no bf16 value: the bf16 block holds its rounding (-0).
      for (int i = 0; i < 32; ++i) hb[size_t(i)] = fmt::f32_to_bf16(x[size_t(i)]);
      uint8_t c[16], s = 0;
      quantize(dt == DType::fp32 ? static_cast<const void*>(x.data()) : hb.data(), dt, 1, 32, 32, c, &s);
      EXPECT_EQ(int(s), scale[t]) << t;
      EXPECT_EQ(int((c[1] >> 4) & 7), maxcode[t]) << t;
      for (float d : dequant1(c, s)) EXPECT_TRUE(std::isfinite(d)) << t;
    }
  }
  // GEMM K = 32 of a 2^-126 block with B = 1.0 gives 2^-121 (bf16 0x0300), not 0.
  std::vector<uint16_t> a(32, 0x0080);  // 2^-126
  const HostMx b = quantize_f32(std::vector<float>(4 * 32, 1.0f), 4, 32);
  std::vector<uint16_t> c(4, 0xFFFF), cr(4, 0xFFFF);
  gemm(a.data(), 1, 32, 32, b.view(), c.data(), 4);
  const HostMx aq = quantize_bf16(a, 1, 32);
  gemm_reference(aq.view(), b.view(), cr.data(), 4);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(c[size_t(n)], 0x0300) << n;
    EXPECT_EQ(cr[size_t(n)], 0x0300) << n;
  }
}

TEST(BugK08, NonFiniteNotHiddenBehindFiniteScale) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> x = bad != bad ? block_of({1, 2, bad, 0.5f}) : block_of({1, bad});
    for (const auto& r : quantize_all_paths(x, ScaleRule::aiter)) {
      EXPECT_EQ(int(r.scale), 0xFF) << r.path;
      EXPECT_EQ(hex(r.packed), rep("00", 16)) << r.path;
    }
    uint8_t c[16], s = 0;
    quantize(x.data(), DType::fp32, 1, 32, 32, c, &s);
    for (float d : dequant1(c, s)) EXPECT_TRUE(std::isnan(d));
  }
  // GEMM M = 2, K = 64: row 0 holds the NaN block, row 1 is all 1.0; B = 1.0.
  const int64_t M = 2, N = 8, K = 64;
  std::vector<uint16_t> a(M * K, 0x3F80);
  a[0] = 0x3F80, a[1] = 0x4000, a[2] = 0x7FC0, a[3] = 0x3F00;
  for (int k = 4; k < 32; ++k) a[size_t(k)] = 0;
  for (float bval : {1.0f, 0.0f}) {
    const HostMx b = quantize_f32(std::vector<float>(N * K, bval), N, K);
    std::vector<uint16_t> c(M * N), cr(M * N);
    gemm(a.data(), M, K, K, b.view(), c.data(), N);
    gemm_reference(quantize_bf16(a, M, K).view(), b.view(), cr.data(), N);
    for (int n = 0; n < N; ++n) {
      EXPECT_EQ(c[size_t(n)], 0x7FC0) << "B=" << bval << " n=" << n;  // NaN (canonical bits)
      EXPECT_EQ(cr[size_t(n)], 0x7FC0) << "B=" << bval << " n=" << n;
      const uint16_t want = bval == 1.0f ? 0x4280 : 0x0000;  // 64.0 or +0
      EXPECT_EQ(c[size_t(N + n)], want) << n;
      EXPECT_EQ(cr[size_t(N + n)], want) << n;
    }
  }
  // A NaN block in B poisons its output column only.
  std::vector<float> bd(N * K, 1.0f);
  bd[3 * K + 40] = NAN;
  const HostMx b = quantize_f32(bd, N, K);
  std::vector<uint16_t> ones(M * K, 0x3F80), c(M * N);
  gemm(ones.data(), M, K, K, b.view(), c.data(), N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      if (n == 3)
        EXPECT_TRUE(std::isnan(bf16_to_f32(c[size_t(m * N + n)])));
      else
        EXPECT_EQ(c[size_t(m * N + n)], 0x4280);
}

TEST(BugK09, KTailsAndScaleStrides) {
  const int64_t M = 64, N = 64;
  // Literal rows 0-4 (the pattern repeats with period 5 in m), bf16 values.
  const std::pair<int64_t, std::vector<float>> cases[] = {
      {32, {32, 64, 128, 256, 512}},
      {64, {96, 192, 384, 768, 544}},
      {96, {224, 448, 896, 800, 608}},
      {160, {992, 992, 992, 992, 992}},
      {1664, {9984, 10112, 10304, 10688, 10496}},
  };
  for (const auto& [K, rows] : cases) {
    std::vector<uint16_t> a(size_t(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) a[size_t(m * K + k)] = f32_to_bf16(std::ldexp(1.0f, int((m + k / 32) % 5)));
    const HostMx b = quantize_f32(std::vector<float>(size_t(N * K), 1.0f), N, K);
    const HostMx aq = quantize_bf16(a, M, K);
    std::vector<uint8_t> packed(size_t(packed_bytes(N, K)));
    const PackedWeights p = prepack(b.view(), packed.data());
    std::vector<std::vector<uint16_t>> outs(4, std::vector<uint16_t>(size_t(M * N)));
    gemm(a.data(), M, K, K, b.view(), outs[0].data(), N);
    gemm(a.data(), M, K, K, p, outs[1].data(), N);
    gemm_quantized(aq.view(), b.view(), outs[2].data(), N);
    gemm_reference(aq.view(), b.view(), outs[3].data(), N);
    for (size_t o = 0; o < outs.size(); ++o)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
          ASSERT_EQ(bf16_to_f32(outs[o][size_t(m * N + n)]), rows[size_t(m % 5)])
              << "K=" << K << " path " << o << " m=" << m << " n=" << n;
  }
}

}  // namespace
}  // namespace mxfp4::test
