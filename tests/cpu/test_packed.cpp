// Packed layout v2 (docs/packed-layout.md): sizes, the doc's example offsets, an independent
// forward reading of the doc's tile/lane/byte tables, padding zero, prepack -> unpack identity.
#include <gtest/gtest.h>

#include <vector>

#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

TEST(PackedLayout, Sizes) {
  EXPECT_EQ(packed_bytes(16, 64), 512 + 32);
  EXPECT_EQ(packed_bytes(1, 32), 512 + 32);     // Np = 16, Kp = 64
  EXPECT_EQ(packed_bytes(17, 96), 2048 + 128);  // Np = 32, Kp = 128
  EXPECT_EQ(packed_bytes(7168, 2048), 7168 * 2048 / 2 + 7168 * 2048 / 32);
}

TEST(PackedLayout, DocExampleOffsets) {
  // N = 16, K = 64: codes of (row 9, k = 34) and (row 9, k = 35) in the high nibbles of
  // bytes 88 and 90; scale of (row 9, block 1) at 519 (docs/packed-layout.md, "Example").
  const int64_t N = 16, K = 64;
  std::vector<uint8_t> codes(N * K / 2, 0), scales(N * K / 32, 0);
  codes[9 * 32 + 17] = 0xAB;
  scales[9 * 2 + 1] = 0xCD;
  std::vector<uint8_t> out(size_t(packed_bytes(N, K)), 0x77);
  prepack(MxMatrix{codes.data(), scales.data(), N, K}, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    const int want = i == 88 ? 0xB0 : i == 90 ? 0xA0 : i == 519 ? 0xCD : 0;
    EXPECT_EQ(int(out[i]), want) << "offset " << i;
  }
}

// The doc's layout read forwards: for every tile, lane and byte, which (row, k) it holds.
// Returns -1 for padding. Code bytes: value index r * (K/2) + k/2.
struct DocLayout {
  int64_t N, K, Np, Kp;
  std::vector<int64_t> code_src;   // per code-region nibble (2 * byte + half): plain element r*K + k, or -1
  std::vector<int64_t> scale_src;  // per scale-region byte: plain scale index or -1
  DocLayout(int64_t rows, int64_t cols) : N(rows), K(cols), Np((rows + 15) / 16 * 16), Kp((cols + 63) / 64 * 64) {
    code_src.assign(size_t(Np * Kp), -1);
    scale_src.assign(size_t(Np * Kp / 32), -1);
    for (int64_t nt = 0; nt < Np / 16; ++nt)
      for (int64_t kc = 0; kc < Kp / 64; ++kc) {
        const int64_t tile = nt * (Kp / 64) + kc;
        for (int64_t l = 0; l < 32; ++l) {
          const int64_t g = l / 4, t = l % 4;
          for (int64_t jw = 0; jw < 4; ++jw)      // word 2h + s
            for (int64_t p = 0; p < 8; ++p) {     // nibble p = q + 4e
              const int64_t q = p % 4, e = p / 4;
              const int64_t r = 16 * nt + g + 8 * (q % 2);
              const int64_t k = 64 * kc + 16 * jw + 2 * t + 8 * (q / 2) + e;
              const int64_t byte = tile * 512 + 16 * l + 4 * jw + p / 2;
              if (r < N && k < K) code_src[size_t(2 * byte + p % 2)] = r * K + k;
            }
        }
        for (int64_t g = 0; g < 8; ++g)
          for (int64_t i = 0; i < 4; ++i) {
            const int64_t r = 16 * nt + g + (i >= 2 ? 8 : 0), b = 2 * kc + (i % 2);
            if (r < N && b < K / 32) scale_src[size_t(tile * 32 + 4 * g + i)] = r * (K / 32) + b;
          }
      }
  }
};

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 32},  {3, 64},  {15, 96},  {16, 64},  {17, 160},
                                                           {33, 32}, {48, 1664}, {258, 96}, {260, 128}};

TEST(PackedLayout, MatchesDocTablesWithZeroPadding) {
  for (auto [N, K] : kShapes) {
    const HostMx b = random_mx(N, K, uint64_t(N * 1000 + K));
    std::vector<uint8_t> out(size_t(packed_bytes(N, K)), 0xFF);  // poison: every byte must be written
    prepack(b.view(), out.data());
    const DocLayout doc(N, K);
    const size_t code_bytes = doc.code_src.size() / 2;
    ASSERT_EQ(out.size(), code_bytes + doc.scale_src.size());
    for (size_t i = 0; i < doc.code_src.size(); ++i) {
      const int64_t src = doc.code_src[i];
      const int got = (out[i / 2] >> (4 * (i % 2))) & 0xF;
      const int want = src < 0 ? 0 : (b.codes[size_t(src / 2)] >> (4 * (src % 2))) & 0xF;
      ASSERT_EQ(got, want) << N << "x" << K << " code nibble " << i;
    }
    for (size_t i = 0; i < doc.scale_src.size(); ++i) {
      const int64_t src = doc.scale_src[i];
      ASSERT_EQ(int(out[code_bytes + i]), src < 0 ? 0 : int(b.scales[size_t(src)]))
          << N << "x" << K << " scale byte " << i;
    }
  }
}

TEST(PackedLayout, RoundTripIdentityFromEveryInputLayout) {
  for (auto [N, K] : kShapes) {
    const HostMx b = random_mx(N, K, uint64_t(N + 7 * K));
    std::vector<uint8_t> ref(size_t(packed_bytes(N, K)));
    prepack(b.view(), ref.data());
    std::vector<uint8_t> shc(b.codes.size()), shs(size_t(shuffled_scales_bytes(N, K / 32)), 0xFF);
    const bool can_shuffle_codes = N % 16 == 0 && K % 64 == 0;
    if (can_shuffle_codes) shuffle_weight(b.codes.data(), N, K, shc.data());
    shuffle_scales(b.scales.data(), N, K / 32, shs.data());
    for (int variant = 0; variant < 4; ++variant) {
      MxMatrix v = b.view();
      if (variant & 1) {
        if (!can_shuffle_codes) continue;
        v.codes = shc.data();
        v.code_layout = CodeLayout::aiter_shuffled;
      }
      if (variant & 2) {
        v.scales = shs.data();
        v.scale_layout = ScaleLayout::aiter_shuffled;
      }
      for (int threads : {1, 2}) {
        Exec ex;
        ex.threads = threads;
        std::vector<uint8_t> out(ref.size(), 0x5A);
        const PackedWeights p = prepack(v, out.data(), ex);
        EXPECT_EQ(p.N, N);
        EXPECT_EQ(p.K, K);
        EXPECT_EQ(p.version, kPackedLayoutVersion);
        EXPECT_EQ(p.data, out.data());
        EXPECT_EQ(out, ref) << N << "x" << K << " variant " << variant;
        std::vector<uint8_t> codes(b.codes.size(), 0x5A), scales(b.scales.size(), 0x5A);
        unpack(p, codes.data(), scales.data(), ex);
        EXPECT_EQ(codes, b.codes) << N << "x" << K << " variant " << variant;
        EXPECT_EQ(scales, b.scales) << N << "x" << K << " variant " << variant;
      }
    }
  }
}

TEST(PackedLayout, PrepackDenseEqualsQuantizeThenPrepack) {
  for (auto [N, K] : kShapes) {
    const auto x = randn_bf16(size_t(N * K), uint64_t(N * 3 + K));
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      const HostMx q = quantize_bf16(x, N, K, rule);
      std::vector<uint8_t> want(size_t(packed_bytes(N, K))), got(want.size(), 0xFF);
      prepack(q.view(), want.data());
      std::vector<uint8_t> tmp(size_t(N * K / 2 + N * K / 32));
      const PackedWeights p = prepack_dense(x.data(), DType::bf16, N, K, K, got.data(), tmp.data(), rule);
      EXPECT_EQ(got, want) << N << "x" << K;
      EXPECT_EQ(p.N, N);
      EXPECT_EQ(p.K, K);
    }
  }
}

}  // namespace
}  // namespace mxfp4::test
