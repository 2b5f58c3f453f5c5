// Path fp8's groundwork (issue 6, src/cpu/fp8_plan.hpp): exact e2m1 -> s8 encoding, the
// scaling-group planner's narrow / wide / flagged rule, and the CPU model of the path against
// the exact reference, including the adversarial tiles and a K = 16384 case with a known
// answer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/test_util.hpp"
#include "cpu/fp8_plan.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::test {
namespace {

TEST(Fp8Plan, EveryE2m1ValueTimesEveryShiftIsExactInS8) {
  for (int code = 0; code < 16; ++code)
    for (int d = fp8::kMinShift; d <= fp8::kMaxShift; ++d) {
      const float want = fmt::e2m1_to_f32(uint8_t(code)) * std::ldexp(1.f, d);
      const int8_t got = int8_t(fp8::e2m1_to_s8(uint8_t(code), d));
      EXPECT_EQ(float(got), want) << "code " << code << " d " << d;  // -0 and +0 both give 0
    }
  // The range is tight: 6 * 2^5 = 192 > 127, and 0.5 * 2^0 is not an integer.
  EXPECT_GT(6 * (1 << (fp8::kMaxShift + 1)), 127);
  EXPECT_EQ(fp8::kMinShift, 1);
  // Image exponent bytes (E8M0): exact powers of two, and +0.0 for the flagged groups' byte.
  for (int e = -126; e <= 127; ++e) EXPECT_EQ(fp8::exp2_of_exponent_byte(fp8::exponent_byte(e)), std::ldexp(1.f, e)) << e;
  EXPECT_EQ(fmt::f32_bits(fp8::exp2_of_exponent_byte(fp8::exponent_byte(fp8::kFlaggedExponent))), 0u);
}

// The GPU image kernels' four-at-a-time form of e2m1_to_s8 (byte_permute tables, run here on
// the instruction's host model): every quad of codes (all 65536) at every shift.
TEST(Fp8Plan, FourCodesAtOnceMatchE2m1ToS8) {
  for (uint32_t codes = 0; codes < 0x10000u; ++codes)
    for (int d = fp8::kMinShift; d <= fp8::kMaxShift; ++d) {
      const uint32_t got = fp8::e2m1_to_s8_quad(codes | 0xABCD0000u, d);  // upper bits ignored
      for (int i = 0; i < 4; ++i)
        ASSERT_EQ((got >> (8 * i)) & 0xFFu, fp8::e2m1_to_s8(uint8_t(codes >> (4 * i)), d))
            << "codes 0x" << std::hex << codes << std::dec << " d " << d << " byte " << i;
    }
}

/// Sets block b of row r to `code` in every element and scale byte `sb`.
void fill_block(HostMx& m, int64_t r, int64_t b, uint8_t code, uint8_t sb) {
  for (int64_t k = 32 * b; k < 32 * b + 32; k += 2) m.codes[size_t(r * m.K / 2 + k / 2)] = uint8_t(code | code << 4);
  m.scales[size_t(r * (m.K / 32) + b)] = sb;
}

TEST(Fp8Plan, RealisticWeightsAreNarrowAndEncodeToTheirValues) {
  const HostMx w = random_mx(64, 1024, 801);
  const fp8::GroupPlan p = fp8::plan_groups(w.view());
  ASSERT_EQ(p.slices, 8);
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t s = 0; s < p.slices; ++s) {
      const size_t i = size_t(r * p.slices + s);
      ASSERT_TRUE(p.exact[i]) << r << "," << s;
      ASSERT_FALSE(p.wide[i]) << r << "," << s;  // quantized Gaussians span <= 3 binades per slice
      for (int64_t k = 128 * s; k < 128 * s + 128; ++k) {
        const uint8_t byte = w.codes[size_t(r * w.K / 2 + k / 2)];
        const uint8_t code = k % 2 ? byte >> 4 : byte & 15;
        if ((code & 7) == 0) continue;
        const uint8_t sb = w.scales[size_t(r * (w.K / 32) + k / 32)];
        const int e = p.e[4 * i + size_t((k % 128) / 32)];
        ASSERT_EQ(e, p.R[i]);
        const int8_t enc = int8_t(fp8::e2m1_to_s8(code, int(sb) - 127 - e));
        ASSERT_EQ(std::ldexp(double(enc), e), double(fmt::dequant_f32(code, sb))) << r << "," << k;
      }
    }
}

TEST(Fp8Plan, SpanZeroAndNaNBlocksDecideTheGroupKind) {
  HostMx m;
  m.rows = 7, m.K = 256;
  m.codes.assign(size_t(m.rows * m.K / 2), 0x22);  // every element 1.0
  m.scales.assign(size_t(m.rows * m.K / 32), 127);
  // Row 0: block maxima 2^-20 and 2^+20 in one slice (the tile): span 40, wide, with
  // one image exponent per block (s - 1; the two plain blocks keep theirs).
  fill_block(m, 0, 0, 0x2, 127 - 20);
  fill_block(m, 0, 1, 0x2, 127 + 20);
  // Row 1: span exactly 3 (narrow) in slice 0, 4 (wide) in slice 1.
  fill_block(m, 1, 0, 0x2, 120), fill_block(m, 1, 1, 0x2, 123), fill_block(m, 1, 2, 0x2, 121), fill_block(m, 1, 3, 0x2, 122);
  fill_block(m, 1, 4, 0x2, 120), fill_block(m, 1, 5, 0x2, 124), fill_block(m, 1, 6, 0x2, 121), fill_block(m, 1, 7, 0x2, 122);
  // Row 2: an all-zero block with scale 0 beside scale-150 blocks: narrow, R from the rest
  // (hi - 3: the top block's shift is 3).
  // Slice 1: exponent 55 - 1 = 54 > kMaxAbsR: flagged although its span is 0.
  fill_block(m, 2, 0, 0x0, 0), fill_block(m, 2, 1, 0x2, 150), fill_block(m, 2, 2, 0x2, 150), fill_block(m, 2, 3, 0x2, 150);
  for (int64_t b = 4; b < 8; ++b) fill_block(m, 2, b, 0x2, 127 + 55);
  // Row 3: a NaN scale byte: flagged. Row 4: all zero: narrow, R = 0.
  fill_block(m, 3, 2, 0x2, 0xFF);
  for (int64_t b = 0; b < 8; ++b) fill_block(m, 4, b, 0x8, 50);  // -0 codes
  // Row 6: a wide group whose lowest block sits at the range's edge (s - 1 = -48: on the path)
  // and one past it (s - 1 = -49: flagged).
  fill_block(m, 6, 0, 0x2, 127 - 47), fill_block(m, 6, 4, 0x2, 127 - 48);
  const fp8::GroupPlan p = fp8::plan_groups(m.view());
  auto at = [&](int64_t r, int64_t s) { return size_t(r * p.slices + s); };
  auto e = [&](int64_t r, int64_t s, int b) { return int(p.e[4 * at(r, s) + size_t(b)]); };
  EXPECT_TRUE(p.exact[at(0, 0)] && p.wide[at(0, 0)]);
  EXPECT_EQ(e(0, 0, 0), -21);
  EXPECT_EQ(e(0, 0, 1), 19);
  EXPECT_EQ(e(0, 0, 2), -1);
  EXPECT_EQ(p.R[at(0, 0)], -21);
  EXPECT_TRUE(p.exact[at(0, 1)] && !p.wide[at(0, 1)]);
  EXPECT_TRUE(p.exact[at(1, 0)] && !p.wide[at(1, 0)]);
  for (int b = 0; b < 4; ++b) EXPECT_EQ(e(1, 0, b), 120 - 127 - 1) << b;
  EXPECT_TRUE(p.exact[at(1, 1)] && p.wide[at(1, 1)]);
  EXPECT_EQ(e(1, 1, 1), 124 - 127 - 1);
  EXPECT_TRUE(p.exact[at(2, 0)] && !p.wide[at(2, 0)]);
  EXPECT_EQ(p.R[at(2, 0)], 150 - 127 - 3);
  EXPECT_EQ(e(2, 0, 0), 150 - 127 - 3);  // the zero block takes the group's exponent
  EXPECT_FALSE(p.exact[at(2, 1)]);
  EXPECT_EQ(e(2, 1, 3), fp8::kFlaggedExponent);
  EXPECT_FALSE(p.exact[at(3, 0)]);
  EXPECT_TRUE(p.exact[at(4, 0)] && p.exact[at(4, 1)]);
  EXPECT_EQ(p.R[at(4, 0)], 0);
  EXPECT_EQ(p.R[at(5, 0)], -3);  // plain 1.0 blocks (exponent 0): code 8 times 2^R, R = -3
  EXPECT_EQ(p.R[at(5, 1)], -3);  // the chain goes on
  EXPECT_TRUE(p.cont[at(5, 0)] && !p.cont[at(5, 1)]);  // the last slice ends every chain
  EXPECT_TRUE(p.cont[at(4, 0)]);                        // zero slices too
  EXPECT_FALSE(p.cont[at(0, 0)] || p.cont[at(1, 0)] || p.cont[at(2, 0)]);  // into wide / flagged
  EXPECT_FALSE(p.cont[at(6, 0)]);                                          // out of wide
  EXPECT_TRUE(p.exact[at(6, 0)] && p.wide[at(6, 0)]);
  EXPECT_EQ(e(6, 0, 0), -48);
  EXPECT_FALSE(p.exact[at(6, 1)]);
}

/// The narrow slices of a row's chain chunk take the chunk's anchor (the canonical R of its
/// first slice) wherever it encodes them, so their integer sums can chain; a slice that needs
/// another R, a wide or flagged slice, or a chunk's end (kChainSlices) breaks the chain
/// (GroupPlan::cont).
TEST(Fp8Plan, NarrowSlicesTakeTheirChunksAnchor) {
  HostMx m;
  m.rows = 2, m.K = 128 * 12;
  m.codes.assign(size_t(m.rows * m.K / 2), 0x77);  // every element 6
  m.scales.assign(size_t(m.rows * m.K / 32), 127);
  // Row 0, block exponents per slice (4 blocks each):
  //  0: 0 0 0 0   -> R = -3 (hi - 3): the anchor of chunk 0
  //  1: 1 1 0 0   -> [-3, -1] holds -3: kept, the top block's code is 6 * 2^4 = 96
  //  2: -1 0 0 0  -> [-4, -2] holds -3: kept
  //  3: -2 -2 -2 -2 -> [-6, -3]: kept
  //  4: -3 -2 -2 -2 -> [-6, -4]: -3 out, R = hi - 3 = -5 (break after 3 and after 4)
  //  5: zero slice -> any R: the anchor
  //  6: 0 -5 0 0  -> span 5: wide (breaks after 5 and after 6)
  //  7: 0 0 0 0   -> the anchor, chunk end (break)
  //  8: 0 0 0 0   -> chunk 1's anchor -3, not continued from 7
  //  9: NaN block -> flagged (breaks after 8 and after 9)
  // 10, 11: 0    -> R = -3; 11 is the last slice
  const int ex[12][4] = {{0, 0, 0, 0}, {1, 1, 0, 0}, {-1, 0, 0, 0}, {-2, -2, -2, -2}, {-3, -2, -2, -2}, {0, 0, 0, 0},
                         {0, -5, 0, 0}, {0, 0, 0, 0},  {0, 0, 0, 0},   {0, 0, 0, 0},     {0, 0, 0, 0},     {0, 0, 0, 0}};
  for (int j = 0; j < 12; ++j)
    for (int b = 0; b < 4; ++b) fill_block(m, 0, 4 * j + b, 0x7, uint8_t(127 + ex[j][b]));
  for (int b = 0; b < 4; ++b) fill_block(m, 0, 4 * 5 + b, 0x0, 127);
  fill_block(m, 0, 4 * 9 + 2, 0x7, 0xFF);
  const fp8::GroupPlan p = fp8::plan_groups(m.view());
  const int R[12] = {-3, -3, -3, -3, -5, -3, -1, -3, -3, -1, -3, -3};
  const bool cont[12] = {true, true, true, false, false, false, false, false, false, false, true, false};
  for (int j = 0; j < 12; ++j) {
    if (j != 6 && j != 9) EXPECT_EQ(p.R[size_t(j)], R[j]) << "slice " << j;
    EXPECT_EQ(bool(p.cont[size_t(j)]), cont[j]) << "slice " << j;
  }
  EXPECT_TRUE(p.wide[6] && !p.exact[9]);
  // The codes decode to their values under the kept R (slice 1's top block: 96 * 2^-3 = 12).
  std::vector<uint8_t> img(size_t(fp8::ImageGeometry::of(m.rows, m.K).total_bytes()));
  fp8::build_image(m.view(), img.data());
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(m.rows, m.K);
  EXPECT_EQ(int8_t(img[size_t(g.code_offset(0, 128))]), 96);
  // Break bytes of atom 0, quarter 0 (rows 0..15): set where row 0 or 1 breaks. Row 1 (all 6,
  // exponent 0) chains within each chunk.
  for (int j = 0; j < 12; ++j)
    EXPECT_EQ(img[size_t(g.record_at(0, j) + fp8::kBreakByte)], uint8_t(!cont[j])) << j;
  EXPECT_TRUE(p.cont[size_t(12 + 0)] && !p.cont[size_t(12 + 7)] && p.cont[size_t(12 + 8)]);
}

/// The fp32-output contract: |C - ref| <= 2^-12 sum |a b| + 2^-133, NaN exactly where ref is.
void expect_within_contract(const std::vector<float>& C, const HostMx& a, const HostMx& b) {
  std::vector<uint16_t> c16(size_t(a.rows * b.rows));
  std::vector<double> ref(c16.size()), abs(c16.size());
  gemm_reference(a.view(), b.view(), c16.data(), b.rows, ref.data(), abs.data());
  for (size_t i = 0; i < C.size(); ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(C[i])) << i;
      continue;
    }
    EXPECT_LE(std::fabs(double(C[i]) - ref[i]), 0x1p-12 * abs[i] + 0x1p-133) << i << ": " << C[i] << " vs " << ref[i];
  }
}

TEST(Fp8Model, RandomAndAdversarialOperandsStayWithinTheContract) {
  const HostMx a = random_mx(8, 512, 811), b = random_mx(24, 512, 812);
  std::vector<float> c(size_t(8 * 24));
  fp8::gemm_model(a.view(), b.view(), c.data(), 24);
  expect_within_contract(c, a, b);
  // Wide groups stay on the path with one exponent per block; out-of-range and NaN groups take
  // the exact path.
  HostMx a2 = a, b2 = b;
  fill_block(a2, 0, 0, 0x3, 127 - 20), fill_block(a2, 0, 1, 0x5, 127 + 20);
  fill_block(a2, 1, 4, 0x3, 127 - 60), fill_block(a2, 1, 5, 0x5, 127 + 2);
  fill_block(b2, 3, 4, 0x7, 127 + 20), fill_block(b2, 3, 6, 0x1, 127 - 20);
  fill_block(b2, 4, 8, 0x7, 127 + 60);
  fill_block(b2, 5, 9, 0x2, 0xFF);
  const fp8::GroupPlan pa = fp8::plan_groups(a2.view()), pb = fp8::plan_groups(b2.view());
  ASSERT_TRUE(pa.exact[0] && pa.wide[0]);
  ASSERT_FALSE(pa.exact[size_t(1 * pa.slices + 1)]);
  ASSERT_TRUE(pb.exact[size_t(3 * pb.slices + 1)] && pb.wide[size_t(3 * pb.slices + 1)]);
  ASSERT_FALSE(pb.exact[size_t(4 * pb.slices + 2)]);
  fp8::gemm_model(a2.view(), b2.view(), c.data(), 24);
  expect_within_contract(c, a2, b2);
  for (int64_t m = 0; m < 8; ++m) EXPECT_TRUE(std::isnan(c[size_t(m * 24 + 5)])) << m;  // column 5: NaN block
  EXPECT_FALSE(std::isnan(c[size_t(0 * 24 + 4)]));
}

TEST(Fp8Model, K16384WithAKnownAnswerIsExact) {
  // A row: 1.0 everywhere with scale 2^(s mod 5) per block; B row: 1.5 with scale 2^-(s mod 3).
  // Every block's products are small integers times powers of two, so the block sums are exact
  // and the result is the exact fp64 sum (narrow and wide groups both occur).
  constexpr int64_t K = 16384;
  HostMx a, b;
  a.rows = 1, b.rows = 2, a.K = b.K = K;
  a.codes.assign(K / 2, 0x22), b.codes.assign(2 * K / 2, 0x33);
  a.scales.resize(K / 32), b.scales.resize(2 * K / 32);
  double want = 0;
  for (int64_t blk = 0; blk < K / 32; ++blk) {
    a.scales[size_t(blk)] = uint8_t(127 + blk % 5);
    b.scales[size_t(blk)] = b.scales[size_t(K / 32 + blk)] = uint8_t(127 - blk % 3);
    want += 32 * std::ldexp(1.0, int(blk % 5)) * 1.5 * std::ldexp(1.0, -int(blk % 3));
  }
  std::vector<float> c(2);
  fp8::gemm_model(a.view(), b.view(), c.data(), 2);
  EXPECT_EQ(double(c[0]), want);
  EXPECT_EQ(c[0], c[1]);
  expect_within_contract(c, a, b);
}

/// The 8-bit image (core/fp8_layout.hpp): every element of a group on the path decodes to its
/// dequantized value (s8 code times 2^e of its block), narrow groups have one exponent, wide
/// ones differ; flagged groups hold zero codes and the flagged exponent byte and set their tile
/// flag; padding rows hold zero codes and exponents.
TEST(Fp8Image, DecodesToTheDequantizedValuesAndFlagsTheRest) {
  HostMx m = random_mx(130, 416, 802);  // 4 slices, the last one partial (K % 128 = 32)
  fill_block(m, 70, 0, 0x2, 127 - 60), fill_block(m, 70, 1, 0x2, 127 + 20);  // exponent -61: flagged
  fill_block(m, 71, 4, 0x2, 127 - 20), fill_block(m, 71, 5, 0x2, 127 + 20);  // span 40: wide
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(m.rows, m.K);
  ASSERT_EQ(g.rows_padded, 256);
  ASSERT_EQ(g.slices, 4);
  std::vector<uint8_t> img(size_t(g.total_bytes()), 0xCC);
  fp8::build_image(m.view(), img.data());
  const fp8::GroupPlan p = fp8::plan_groups(m.view());
  ASSERT_TRUE(p.wide[size_t(71 * p.slices + 1)]);
  const uint8_t* flags = img.data() + g.flag_offset();
  for (int64_t r = 0; r < g.rows_padded; ++r)
    for (int64_t j = 0; j < g.slices; ++j) {
      const uint8_t* word = img.data() + g.exponent_at(r, j);
      const uint8_t* record = img.data() + g.record_at(r / 64, j);
      const bool on_path = r < m.rows && p.exact[size_t(r * p.slices + j)];
      const bool differ = word[0] != word[1] || word[0] != word[2] || word[0] != word[3];
      float scale;
      std::memcpy(&scale, img.data() + g.scale_at(r, j), 4);
      if (r >= m.rows) ASSERT_TRUE(word[0] == fp8::exponent_byte(0) && !differ && scale == 1.f) << r;
      if (r < m.rows) ASSERT_EQ(differ, bool(p.wide[size_t(r * p.slices + j)])) << r << "," << j;
      if (on_path) ASSERT_EQ(scale, std::ldexp(1.f, p.R[size_t(r * p.slices + j)])) << r << "," << j;
      if (r < m.rows && !on_path) ASSERT_EQ(scale, 0.f) << r << "," << j;
      // The wide record of r's atom has r's quarter byte set iff some row of the quarter is wide.
      bool quarter_wide = false;
      for (int64_t q = r / 16 * 16; q < r / 16 * 16 + 16 && q < m.rows; ++q) quarter_wide |= p.wide[size_t(q * p.slices + j)] != 0;
      ASSERT_EQ(record[(r % 64) / 16], uint8_t(quarter_wide)) << r << "," << j;
      // Its break byte is set iff some row of the quarter does not continue its chain or the
      // slice ends a chunk (padding quarters too).
      bool quarter_breaks = fp8::chunk_ends(j, g.slices);
      for (int64_t q = r / 16 * 16; q < r / 16 * 16 + 16 && q < m.rows; ++q) quarter_breaks |= !p.cont[size_t(q * p.slices + j)];
      ASSERT_EQ(record[fp8::kBreakByte + (r % 64) / 16], uint8_t(quarter_breaks)) << r << "," << j;
      for (int b = 8; b < 16; ++b) ASSERT_EQ(record[b], 0) << r << "," << j;
      if (r < m.rows && !on_path) {
        for (int b = 0; b < 4; ++b) ASSERT_EQ(word[b], 0) << r << "," << j;
        ASSERT_EQ(flags[g.flag_index(r / fp8::kFlagRows, j)], 1) << r << "," << j;
      }
      for (int64_t k = j * 128; k < (j + 1) * 128; ++k) {
        const uint8_t code = img[size_t(g.code_offset(r, k))];
        if (!on_path || k >= m.K) {
          ASSERT_EQ(code, 0) << r << "," << k;
          continue;
        }
        const uint8_t e2m1 = uint8_t((m.codes[size_t(r * m.K / 2 + k / 2)] >> (4 * (k % 2))) & 0xF);
        const float want = fmt::dequant_f32(e2m1, m.scales[size_t(r * (m.K / 32) + k / 32)]);
        ASSERT_EQ(float(int8_t(code)) * fp8::exp2_of_exponent_byte(word[(k % 128) / 32]), want) << r << "," << k;
      }
    }
  EXPECT_EQ(flags[g.flag_index(4, 0)], 1);  // row 70 lives in quarter tile 4 (rows 64..79)
  EXPECT_EQ(flags[g.flag_index(0, 0)], 0);
  EXPECT_EQ(flags[g.flag_index(3, 0)], 0);  // rows 48..63 share row 70's 64-row tile, not its flag
  EXPECT_EQ(flags[g.flag_index(5, 0)], 0);
  EXPECT_EQ(g.flag_count(), 4 * (256 / 16));
  EXPECT_EQ(img[size_t(g.record_at(1, 1))], 1);  // row 71: atom 1, quarter 0, slice 1
  EXPECT_EQ(g.total_bytes(), 4 * 256 * (128 + 4 + 4) + 4 * (256 / 64) * 16 + 4 * (256 / 16));
  // Layout 4: one 528-byte metadata block per (slice, 64-row atom) after the codes, slice-major
  // (64 scales, 64 exponent words, the record), so 128 rows of a slice are 1056 contiguous bytes.
  EXPECT_EQ(g.meta_block(0, 0), 4 * 256 * 128);
  EXPECT_EQ(g.meta_block(1, 0), 4 * 256 * 128 + 528);
  EXPECT_EQ(g.meta_block(0, 1), 4 * 256 * 128 + 4 * 528);
  EXPECT_EQ(g.scale_at(70, 2), g.meta_block(1, 2) + 4 * 6);
  EXPECT_EQ(g.exponent_at(70, 2), g.meta_block(1, 2) + 256 + 4 * 6);
  EXPECT_EQ(g.record_at(3, 3), g.meta_block(3, 3) + 512);
  EXPECT_EQ(g.flag_offset(), g.meta_block(0, 4));
  // Rows of one 64-row tile and one slice are contiguous 128-byte lines, chunk-swizzled.
  EXPECT_EQ(g.code_offset(0, 0), 0);
  EXPECT_EQ(g.code_offset(1, 0), 128 + 16);
  EXPECT_EQ(g.code_offset(64, 0), 8192);
  EXPECT_EQ(g.code_offset(0, 128), 4 * 8192);
}

TEST(Fp8Image, PublicPrepackFp8ValidatesItsArguments) {
  const HostMx m = random_mx(40, 256, 803);
  std::vector<uint8_t> packed(size_t(packed_bytes(40, 256))), img(size_t(fp8_weights_bytes(40, 256)));
  const PackedWeights pw = prepack(m.view(), packed.data());
  EXPECT_THROW(prepack_fp8(pw, nullptr), InvalidArgument);
  EXPECT_THROW(prepack_fp8(pw, packed.data() + 8), InvalidArgument);  // overlaps p.data
  PackedWeights bad = pw;
  bad.version = 1;
  EXPECT_THROW(prepack_fp8(bad, img.data()), TypeMismatch);
  EXPECT_THROW(fp8_weights_bytes(40, 48), InvalidArgument);
  EXPECT_THROW(fp8_weights_bytes(0, 256), InvalidArgument);
  const PackedWeights w8 = prepack_fp8(pw, img.data());
  EXPECT_EQ(w8.fp8, img.data());
  EXPECT_EQ(w8.data, pw.data);
  // The CPU GEMM takes weights with an image and gives the same bits as without.
  const std::vector<uint16_t> a = randn_bf16(size_t(3 * 256), 804);
  std::vector<uint16_t> c1(3 * 40), c2(3 * 40);
  gemm(a.data(), 3, 256, 256, pw, c1.data(), 40);
  gemm(a.data(), 3, 256, 256, w8, c2.data(), 40);
  EXPECT_EQ(c1, c2);
  // A forced configuration is checked on the CPU as on CUDA: fp8 needs the image, and the
  // tile must be one the kernels have.
  GemmConfig fp8{GemmPath::fp8, 128, 128, 1, 12}, odd{GemmPath::fp8, 16, 8, 3, 1};
  GemmOptions opt;
  opt.config = &fp8;
  EXPECT_THROW(gemm(a.data(), 3, 256, 256, pw, c2.data(), 40, opt), InvalidArgument);
  EXPECT_THROW(gemm(a.data(), 3, 256, 256, m.view(), c2.data(), 40, opt), InvalidArgument);
  gemm(a.data(), 3, 256, 256, w8, c2.data(), 40, opt);
  EXPECT_EQ(c1, c2);
  opt.config = &odd;
  EXPECT_THROW(gemm(a.data(), 3, 256, 256, w8, c2.data(), 40, opt), InvalidArgument);
}

}  // namespace
}  // namespace mxfp4::test
