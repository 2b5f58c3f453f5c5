// AITER layouts (spec §4): the spec's example offsets literally, an independent derivation
// from AITER's tensor view/permute, padding never read or written, round trips.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

// Offset of logical (r, c) after shuffle_scales, found by shuffling a one-hot matrix.
int64_t observed_scale_offset(int64_t rows, int64_t kblocks, int64_t r, int64_t c) {
  std::vector<uint8_t> plain(size_t(rows * kblocks), 0);
  plain[size_t(r * kblocks + c)] = 0xAB;
  std::vector<uint8_t> sh(size_t(shuffled_scales_bytes(rows, kblocks)), 0);
  shuffle_scales(plain.data(), rows, kblocks, sh.data());
  int64_t found = -1;
  for (size_t i = 0; i < sh.size(); ++i)
    if (sh[i] == 0xAB) found = int64_t(i);
  return found;
}

int64_t observed_weight_offset(int64_t N, int64_t K, int64_t n, int64_t c) {
  std::vector<uint8_t> plain(size_t(N * K / 2), 0);
  plain[size_t(n * (K / 2) + c)] = 0xAB;
  std::vector<uint8_t> sh(plain.size(), 0);
  shuffle_weight(plain.data(), N, K, sh.data());
  int64_t found = -1;
  for (size_t i = 0; i < sh.size(); ++i)
    if (sh[i] == 0xAB) found = int64_t(i);
  return found;
}

TEST(AiterLayout, SpecScaleExamples) {
  // sn = 8: row 0, c = 0..7 and c = 0, r = 0, 1, 15, 16, 17, 31, 32, 33, 48 (spec §4.1).
  const int64_t row0[8] = {0, 64, 128, 192, 2, 66, 130, 194};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(observed_scale_offset(64, 8, 0, c), row0[c]) << "c=" << c;
    EXPECT_EQ(fmt::aiter_scale_offset(0, c, 8), row0[c]) << "c=" << c;
  }
  const int64_t rs[9] = {0, 1, 15, 16, 17, 31, 32, 33, 48};
  const int64_t col0[9] = {0, 4, 60, 1, 5, 61, 256, 260, 257};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(observed_scale_offset(64, 8, rs[i], 0), col0[i]) << "r=" << rs[i];
    EXPECT_EQ(fmt::aiter_scale_offset(rs[i], 0, 8), col0[i]) << "r=" << rs[i];
  }
}

TEST(AiterLayout, SpecWeightExamples) {
  // Kb = 64 (K = 128): (0,15)->15, (0,16)->256, (1,0)->16, (16,0)->1024, (0,32)->512 (spec §4.2).
  const int64_t ex[5][3] = {{0, 15, 15}, {0, 16, 256}, {1, 0, 16}, {16, 0, 1024}, {0, 32, 512}};
  for (const auto& e : ex) {
    EXPECT_EQ(observed_weight_offset(32, 128, e[0], e[1]), e[2]) << e[0] << "," << e[1];
    EXPECT_EQ(fmt::aiter_weight_offset(e[0], e[1], 64), e[2]) << e[0] << "," << e[1];
  }
}

// Row-major offset of an index in a tensor view `dims` permuted by `perm` (torch semantics).
int64_t permuted_offset(const std::vector<int64_t>& dims, const std::vector<int>& perm, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (int p : perm) off = off * dims[size_t(p)] + idx[size_t(p)];
  return off;
}

TEST(AiterLayout, ScaleShuffleMatchesAiterViewPermute) {
  // aiter e8m0_shuffle: view(sm/32, 2, 16, sn/8, 2, 4, 1).permute(0, 3, 5, 2, 4, 1, 6).
  for (auto [rows, kb] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {37, 5}, {256, 8}, {300, 17}}) {
    const int64_t sm = (rows + 255) / 256 * 256, sn = (kb + 7) / 8 * 8;
    std::vector<uint8_t> plain(size_t(rows * kb));
    Rng rng(uint64_t(rows * 31 + kb));
    for (auto& v : plain) v = uint8_t(rng.next_u64());
    std::vector<uint8_t> sh(size_t(shuffled_scales_bytes(rows, kb)));
    ASSERT_EQ(int64_t(sh.size()), sm * sn);
    shuffle_scales(plain.data(), rows, kb, sh.data());
    const std::vector<int64_t> dims = {sm / 32, 2, 16, sn / 8, 2, 4, 1};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < kb; ++c) {
        const int64_t off =
            permuted_offset(dims, {0, 3, 5, 2, 4, 1, 6}, {r / 32, (r / 16) % 2, r % 16, c / 8, (c / 4) % 2, c % 4, 0});
        ASSERT_EQ(sh[size_t(off)], plain[size_t(r * kb + c)]) << r << "," << c;
      }
  }
}

TEST(AiterLayout, WeightShuffleMatchesAiterViewPermute) {
  // aiter shuffle_weight(layout=(16,16)) on uint8: view(N/16, 16, Kb/32, 2, 16).permute(0, 2, 3, 1, 4).
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{{16, 64}, {48, 192}, {64, 1024}}) {
    const int64_t kb = K / 2;
    std::vector<uint8_t> plain(size_t(N * kb)), sh(size_t(N * kb));
    Rng rng(uint64_t(N + K));
    for (auto& v : plain) v = uint8_t(rng.next_u64());
    shuffle_weight(plain.data(), N, K, sh.data());
    const std::vector<int64_t> dims = {N / 16, 16, kb / 32, 2, 16};
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < kb; ++c) {
        const int64_t off = permuted_offset(dims, {0, 2, 3, 1, 4}, {n / 16, n % 16, c / 32, (c / 16) % 2, c % 16});
        ASSERT_EQ(sh[size_t(off)], plain[size_t(n * kb + c)]) << n << "," << c;
      }
  }
}

TEST(AiterLayout, ScalePaddingNeverWrittenNorRead) {
  for (auto [rows, kb] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {37, 5}, {300, 17}, {513, 3}}) {
    std::vector<uint8_t> plain(size_t(rows * kb));
    Rng rng(uint64_t(rows + 1000 * kb));
    for (auto& v : plain) v = uint8_t(rng.next_u64() % 200);  // never 0xEE
    const size_t bytes = size_t(shuffled_scales_bytes(rows, kb));
    std::vector<uint8_t> sh(bytes, 0xEE);
    shuffle_scales(plain.data(), rows, kb, sh.data());
    std::set<int64_t> image;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < kb; ++c) image.insert(fmt::aiter_scale_offset(r, c, (kb + 7) / 8 * 8));
    ASSERT_EQ(int64_t(image.size()), rows * kb);  // a bijection onto its image
    ASSERT_LT(*image.rbegin(), int64_t(bytes));
    for (size_t i = 0; i < bytes; ++i)
      EXPECT_EQ(sh[i] == 0xEE, image.count(int64_t(i)) == 0) << "offset " << i;
    // Unshuffle ignores the padding: poison it with 0xFF and compare.
    std::vector<uint8_t> poisoned = sh;
    for (size_t i = 0; i < bytes; ++i)
      if (!image.count(int64_t(i))) poisoned[i] = 0xFF;
    std::vector<uint8_t> back1(plain.size()), back2(plain.size());
    unshuffle_scales(sh.data(), rows, kb, back1.data());
    unshuffle_scales(poisoned.data(), rows, kb, back2.data());
    EXPECT_EQ(back1, plain);
    EXPECT_EQ(back2, plain);
  }
}

TEST(AiterLayout, WeightRoundTripAndThreads) {
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{{16, 64}, {48, 192}, {256, 1024}}) {
    std::vector<uint8_t> plain(size_t(N * K / 2)), sh1(plain.size()), sh2(plain.size()), back(plain.size());
    Rng rng(uint64_t(N * K));
    for (auto& v : plain) v = uint8_t(rng.next_u64());
    Exec one, two;
    one.threads = 1;
    two.threads = 2;
    shuffle_weight(plain.data(), N, K, sh1.data(), one);
    shuffle_weight(plain.data(), N, K, sh2.data(), two);
    EXPECT_EQ(sh1, sh2);
    EXPECT_NE(sh1, plain);
    unshuffle_weight(sh1.data(), N, K, back.data(), two);
    EXPECT_EQ(back, plain);
  }
}

TEST(AiterLayout, QuantizeShuffledEqualsShufflePlain) {
  const int64_t rows = 300, K = 544;  // 17 K blocks: sn = 24
  const auto x = randn_bf16(size_t(rows * K), 3);
  std::vector<uint8_t> c1(size_t(rows * K / 2)), s1(size_t(rows * K / 32)), c2(c1.size());
  quantize(x.data(), DType::bf16, rows, K, K, c1.data(), s1.data());
  const size_t bytes = size_t(shuffled_scales_bytes(rows, K / 32));
  std::vector<uint8_t> want(bytes, 0xEE), got(bytes, 0xEE);
  shuffle_scales(s1.data(), rows, K / 32, want.data());
  quantize(x.data(), DType::bf16, rows, K, K, c2.data(), got.data(), ScaleRule::aiter, {}, ScaleLayout::aiter_shuffled);
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(got, want);  // padding untouched (still 0xEE) in both
}

TEST(AiterLayout, ShuffledOperandsGiveIdenticalDequantAndGemm) {
  const int64_t M = 33, N = 64, K = 192;
  const HostMx b = random_mx(N, K, 21);
  std::vector<uint8_t> bsw(b.codes.size()), bss(size_t(shuffled_scales_bytes(N, K / 32)), 0xFF);
  shuffle_weight(b.codes.data(), N, K, bsw.data());
  shuffle_scales(b.scales.data(), N, K / 32, bss.data());
  for (int variant = 0; variant < 3; ++variant) {
    MxMatrix bv = b.view();
    if (variant != 1) {
      bv.codes = bsw.data();
      bv.code_layout = CodeLayout::aiter_shuffled;
    }
    if (variant != 0) {
      bv.scales = bss.data();
      bv.scale_layout = ScaleLayout::aiter_shuffled;
    }
    std::vector<float> d1(size_t(N * K)), d2(size_t(N * K));
    dequantize(b.view(), d1.data(), DType::fp32, K);
    dequantize(bv, d2.data(), DType::fp32, K);
    EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), d1.size() * 4)) << variant;
    const auto a = randn_bf16(size_t(M * K), 4);
    std::vector<uint16_t> c1(size_t(M * N)), c2(size_t(M * N));
    gemm(a.data(), M, K, K, b.view(), c1.data(), N);
    gemm(a.data(), M, K, K, bv, c2.data(), N);
    EXPECT_EQ(c1, c2) << variant;
  }
}

}  // namespace
}  // namespace mxfp4::test
