// Packed layout v3 (docs/packed-layout.md): sizes, the doc's example offsets, an independent
// forward reading of the doc's tile/lane/byte tables, padding zero, prepack -> unpack identity.
#include <gtest/gtest.h>

#include <vector>

#include "common/test_util.hpp"
#include "core/packed_layout.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

TEST(PackedLayout, Sizes) {
  EXPECT_EQ(packed_bytes(16, 64), 512 + 32);
  EXPECT_EQ(packed_bytes(1, 32), 512 + 32);     // Np = 16, Kp = 64
  EXPECT_EQ(packed_bytes(17, 96), 2048 + 128);  // Np = 32, Kp = 128
  EXPECT_EQ(packed_bytes(7168, 2048), 7168 * 2048 / 2 + 7168 * 2048 / 32);
}

// The doc's bit table: bit j (0: m, 1: e0, 2: e1, 3: sign) of the code of register q, half e
// sits at word bit kDocBit[q][e][j] (docs/packed-layout.md, "Code region").
constexpr int kDocBit[4][2][4] = {{{6, 7, 8, 15}, {22, 23, 24, 31}},
                                  {{10, 11, 12, 19}, {26, 27, 28, 3}},
                                  {{16, 17, 18, 25}, {0, 1, 2, 9}},
                                  {{20, 13, 14, 21}, {4, 29, 30, 5}}};

TEST(PackedLayout, DocExampleOffsets) {
  // N = 16, K = 64: codes 0xB of (row 9, k = 34) and 0xA of (row 9, k = 35) in the word at
  // byte 88 (register 1): 0x08080C08; scale of (row 9, block 1) at 519
  // (docs/packed-layout.md, "Example").
  const int64_t N = 16, K = 64;
  std::vector<uint8_t> codes(N * K / 2, 0), scales(N * K / 32, 0);
  codes[9 * 32 + 17] = 0xAB;
  scales[9 * 2 + 1] = 0xCD;
  std::vector<uint8_t> out(size_t(packed_bytes(N, K)), 0x77);
  prepack(MxMatrix{codes.data(), scales.data(), N, K}, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    const int want = i == 88 ? 0x08 : i == 89 ? 0x0C : i == 90 ? 0x08 : i == 91 ? 0x08 : i == 519 ? 0xCD : 0;
    EXPECT_EQ(int(out[i]), want) << "offset " << i;
  }
}

// The doc's layout read forwards: for every tile, lane and byte, which (row, k) it holds.
// Returns -1 for padding. Code bytes: value index r * (K/2) + k/2.
struct DocLayout {
  int64_t N, K, Np, Kp;
  std::vector<int64_t> code_src;   // per code (8 * word + q + 4e): plain element r*K + k, or -1
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
            for (int64_t p = 0; p < 8; ++p) {     // code p = q + 4e
              const int64_t q = p % 4, e = p / 4;
              const int64_t r = 16 * nt + g + 8 * (q % 2);
              const int64_t k = 64 * kc + 16 * jw + 2 * t + 8 * (q / 2) + e;
              const int64_t word = (tile * 512 + 16 * l + 4 * jw) / 4;
              if (r < N && k < K) code_src[size_t(8 * word + p)] = r * K + k;
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

// The kernels' decoder (packed::decode_word_scaled_down, also compiled into the GPU K loops)
// against the doc's bit table: every code in every register and half, next to random
// neighbours, decodes to the bf16 pair e2m1(code) * 2^-126; the library's scatter/gather
// agree with the table, and every word bit belongs to exactly one code.
TEST(PackedLayout, DecoderMatchesDocBitTable) {
  uint32_t seen = 0;
  for (int q = 0; q < 4; ++q)
    for (int e = 0; e < 2; ++e)
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(packed::code_bit(q, e, j), kDocBit[q][e][j]) << q << " " << e << " " << j;
        EXPECT_EQ(seen & (1u << kDocBit[q][e][j]), 0u) << "bit used twice";
        seen |= 1u << kDocBit[q][e][j];
      }
  EXPECT_EQ(seen, 0xFFFFFFFFu);
  Rng rng(77);
  for (int trial = 0; trial < 20000; ++trial) {
    uint32_t codes[4][2], w = 0;
    for (int q = 0; q < 4; ++q)
      for (int e = 0; e < 2; ++e) {
        codes[q][e] = trial < 16 ? uint32_t(trial) : uint32_t(rng.next_u64() & 0xFu);  // every code first
        for (int j = 0; j < 4; ++j) w |= ((codes[q][e] >> j) & 1u) << kDocBit[q][e][j];
      }
    uint32_t r[4];
    packed::decode_word_scaled_down(w, r);
    for (int q = 0; q < 4; ++q)
      for (int e = 0; e < 2; ++e) {
        ASSERT_EQ(packed::gather_code(w, q, e), codes[q][e]);
        ASSERT_EQ(packed::scatter_code(codes[q][e], q, e) & ~packed::scatter_code(0xFu, q, e), 0u);
        const float got = fmt::bf16_to_f32(uint16_t(r[q] >> (16 * e)));
        const float want = fmt::e2m1_to_f32(uint8_t(codes[q][e])) * fmt::exp2i(-126);
        ASSERT_EQ(fmt::f32_bits(got), fmt::f32_bits(want)) << "word " << std::hex << w << " q " << q << " e " << e;
      }
  }
}

// The K loops' scale-case test and fused factors (packed::scale_bytes_fuse, fused_scale_factor,
// bit tricks also compiled into the GPU K loops) against their definitions: every byte value at
// every position next to random neighbours (the test is per byte, so a carry between bytes
// would show), and every pair of bytes in positions 1 and 2; each fused factor times every
// decoded code is e2m1 * 2^(b - 127), exactly.
TEST(PackedLayout, FusedScaleTestAndFactorsMatchTheirDefinitions) {
  Rng rng(91);
  auto check = [](uint32_t sc) {
    bool all = true;
    for (int i = 0; i < 4; ++i) all = all && ((sc >> (8 * i)) & 0xFFu) <= 128u;
    ASSERT_EQ(packed::scale_bytes_fuse(sc), all) << std::hex << sc;
    for (int i = 0; i < 4; ++i) {
      const uint32_t b = (sc >> (8 * i)) & 0xFFu;
      if (b > 128u) continue;
      const uint32_t h = (b + 126u) << 7;
      ASSERT_EQ(packed::fused_scale_factor(sc, i), h | (h << 16)) << std::hex << sc << " byte " << i;
    }
  };
  for (int i = 0; i < 4; ++i)
    for (uint32_t b = 0; b < 256; ++b)
      for (int trial = 0; trial < 8; ++trial) {
        const uint32_t other = trial == 0 ? 0u : trial == 1 ? 0x80808080u : uint32_t(rng.next_u64());
        check((other & ~(0xFFu << (8 * i))) | (b << (8 * i)));
      }
  for (uint32_t pair = 0; pair < 65536; ++pair) check((pair << 8) | 0x7F00007Fu);
  for (uint32_t b = 0; b <= 128; ++b) {
    const uint32_t f = packed::fused_scale_factor(b << 16, 2);
    for (uint32_t code = 0; code < 16; ++code) {
      uint32_t w = 0;
      for (int j = 0; j < 4; ++j) w |= ((code >> j) & 1u) << kDocBit[0][0][j];  // register 0, low half
      uint32_t r[4];
      packed::decode_word_scaled_down(w, r);
      const float got = fmt::bf16_to_f32(uint16_t(r[0])) * fmt::bf16_to_f32(uint16_t(f));
      const float want = fmt::e2m1_to_f32(uint8_t(code)) * fmt::exp2i(int(b) - 127);
      ASSERT_EQ(fmt::f32_bits(got), fmt::f32_bits(want)) << "scale byte " << b << " code " << code;
      ASSERT_EQ(f >> 16, f & 0xFFFFu);
    }
  }
}

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
      const uint8_t* wb = out.data() + 4 * (i / 8);
      const uint32_t w = uint32_t(wb[0]) | (uint32_t(wb[1]) << 8) | (uint32_t(wb[2]) << 16) | (uint32_t(wb[3]) << 24);
      const int q = int(i % 4), e = int((i % 8) / 4);
      int got = 0;
      for (int j = 0; j < 4; ++j) got |= int((w >> kDocBit[q][e][j]) & 1u) << j;
      const int want = src < 0 ? 0 : (b.codes[size_t(src / 2)] >> (4 * (src % 2))) & 0xF;
      ASSERT_EQ(got, want) << N << "x" << K << " code " << i;
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
