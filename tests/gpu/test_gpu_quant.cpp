// GPU quantizer, dequantizer, AITER layouts and prepack against the CPU backend, bit for bit
// (bug kinds K02/K03: every producer agrees).
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <cmath>
#include <cstring>

#include "common/test_util.hpp"
#include "gpu/gpu_util.hpp"

namespace mxfp4::test {
namespace {

/// Random raw bit patterns (every class: normals, subnormals, zeros, Inf, NaN) mixed with
/// scaled normals so most blocks are finite; `bytes_per` is 2 or 4.
std::vector<uint8_t> random_bits(size_t n_elems, int bytes_per, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> out(n_elems * bytes_per);
  for (size_t i = 0; i < n_elems; ++i) {
    const uint64_t r = rng.next_u64();
    uint32_t v;
    const size_t block = i / 32;
    if (block % 4 == 0) {
      v = uint32_t(r);  // anything, including NaN/Inf/subnormal
    } else {
      // A normal value with a block-dependent exponent (scales vary by block).
      const int e = int(block * 37 % 200) - 100;
      const float f = float(int32_t(r >> 40) % 4096) / 512.0f * std::ldexp(1.0f, e);
      std::memcpy(&v, &f, 4);
      if (bytes_per == 2) v = uint32_t(fmt::f32_to_bf16(f)) << 16;
    }
    if (bytes_per == 2) {
      const uint16_t h = uint16_t(v >> 16);
      std::memcpy(&out[2 * i], &h, 2);
    } else {
      std::memcpy(&out[4 * i], &v, 4);
    }
  }
  return out;
}

TEST(GpuQuantize, MatchesCpuBitForBitAllDtypesRulesAndScaleLayouts) {
  MXFP4_REQUIRE_GPU();
  const int64_t rows = 67, K = 1664, stride = K + 32;
  for (DType dt : {DType::bf16, DType::fp16, DType::fp32}) {
    const int bpe = dt == DType::fp32 ? 4 : 2;
    const auto x = random_bits(size_t(rows * stride), bpe, 1234 + int(dt));
    DeviceBuf dx(x);
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      for (ScaleLayout sl : {ScaleLayout::plain, ScaleLayout::aiter_shuffled}) {
        const int64_t sbytes = sl == ScaleLayout::plain ? rows * K / 32 : shuffled_scales_bytes(rows, K / 32);
        std::vector<uint8_t> cq(rows * K / 2), cs(sbytes, 0x5A);
        quantize(x.data(), dt, rows, K, stride, cq.data(), cs.data(), rule, Exec{}, sl);
        DeviceBuf gq(rows * K / 2), gs(sbytes, 0x5A);
        quantize(dx.get(), dt, rows, K, stride, gq.get(), gs.get(), rule, cuda_exec(), sl);
        const auto hq = gq.download<uint8_t>();
        const auto hs = gs.download<uint8_t>();
        ASSERT_EQ(hq, cq) << "codes differ, dtype " << int(dt) << " rule " << int(rule);
        ASSERT_EQ(hs, cs) << "scales differ (padding included: both must leave it untouched), dtype " << int(dt)
                          << " rule " << int(rule) << " layout " << int(sl);
      }
    }
  }
}

TEST(GpuQuantize, BugKindBlocksMatchCpu) {
  MXFP4_REQUIRE_GPU();
  // K01, K02 (x 2^-20, 2^20, 2^-120), K04, K05, K06, K07 blocks as fp32 rows of one block each.
  std::vector<std::vector<float>> blocks = {
      // K04: the 16 e2m1 values and their negatives, twice; the sticky-bit block (amax 6).
      {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6,
       0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6},
      {6, 0.251953125f, 0.2490234375f, 1.2578125f, 4.96875f, 5.03125f},
      {5, 1.25f, 0.25f, 2.5f, -1.25f, 0.75f, 1.75f, 3.5f, 0.251953125f, 1.2578125f, 0.5f, 0.50390625f},
      {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 6, -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5, -6},
      std::vector<float>(32, 1.203125f), std::vector<float>(32, 7.0f), {6.8125f, -6.8125f, 1.0f}, {7.5f},
      {0x1.8p-114f}, {0x1p-126f}, {0x1p-128f}, {0x1.8p-128f}, {0x1p-130f}, {0x1p-133f},
      {1, 2, NAN, 0.5f}, {1, INFINITY}, {3.4e38f, -3.4e38f}};
  for (float s : {0x1p-20f, 0x1p20f, 0x1p-120f}) {
    std::vector<float> b = blocks[1];
    for (float& v : b) v *= s;
    blocks.push_back(b);
  }
  const int64_t rows = int64_t(blocks.size()), K = 32;
  std::vector<float> x(rows * K, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < blocks[r].size(); ++i) x[r * K + i] = blocks[r][i];
  DeviceBuf dx(x);
  for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
    std::vector<uint8_t> cq(rows * 16), cs(rows);
    quantize(x.data(), DType::fp32, rows, K, K, cq.data(), cs.data(), rule);
    DeviceBuf gq(rows * 16), gs(rows);
    quantize(dx.get(), DType::fp32, rows, K, K, gq.get(), gs.get(), rule, cuda_exec());
    EXPECT_EQ(gq.download<uint8_t>(), cq) << "rule " << int(rule);
    EXPECT_EQ(gs.download<uint8_t>(), cs) << "rule " << int(rule);
  }
}

TEST(GpuDequantize, MatchesCpuForFp32AndBf16) {
  MXFP4_REQUIRE_GPU();
  const int64_t rows = 40, K = 256;
  HostMx q = random_mx(rows, K, 77);
  for (size_t i = 0; i < q.scales.size(); ++i) q.scales[i] = uint8_t((i * 53) % 256);  // every byte incl. 0, 254, 255
  DeviceBuf dc(q.codes), ds(q.scales);
  const MxMatrix dq{dc.get(), ds.get(), rows, K, CodeLayout::plain, ScaleLayout::plain};
  std::vector<float> c32(rows * K);
  dequantize(q.view(), c32.data(), DType::fp32, K);
  DeviceBuf g32(rows * K * 4);
  dequantize(dq, g32.get(), DType::fp32, K, cuda_exec());
  const auto h32 = g32.download<uint32_t>();
  ASSERT_EQ(0, std::memcmp(h32.data(), c32.data(), c32.size() * 4));
  std::vector<uint16_t> c16(rows * K);
  dequantize(q.view(), c16.data(), DType::bf16, K);
  DeviceBuf g16(rows * K * 2);
  dequantize(dq, g16.get(), DType::bf16, K, cuda_exec());
  ASSERT_EQ(g16.download<uint16_t>(), c16);
}

TEST(GpuLayouts, AiterShufflesMatchCpu) {
  MXFP4_REQUIRE_GPU();
  const int64_t N = 272, K = 1664;  // kblocks = 52: scale padding in both directions
  HostMx q = random_mx(N, K, 5);
  const int64_t sbytes = shuffled_scales_bytes(N, K / 32);
  std::vector<uint8_t> cs(sbytes, 0xEE), cw(N * K / 2);
  shuffle_scales(q.scales.data(), N, K / 32, cs.data());
  shuffle_weight(q.codes.data(), N, K, cw.data());
  DeviceBuf ds(q.scales), dw(q.codes), gs(sbytes, 0xEE), gw(N * K / 2);
  shuffle_scales(ds.get(), N, K / 32, gs.get(), cuda_exec());
  shuffle_weight(dw.get(), N, K, gw.get(), cuda_exec());
  ASSERT_EQ(gs.download<uint8_t>(), cs);
  ASSERT_EQ(gw.download<uint8_t>(), cw);
  DeviceBuf us(N * K / 32), uw(N * K / 2);
  unshuffle_scales(gs.get(), N, K / 32, us.get(), cuda_exec());
  unshuffle_weight(gw.get(), N, K, uw.get(), cuda_exec());
  ASSERT_EQ(us.download<uint8_t>(), q.scales);
  ASSERT_EQ(uw.download<uint8_t>(), q.codes);
}

TEST(GpuPrepack, MatchesCpuAndUnpacksExactly) {
  MXFP4_REQUIRE_GPU();
  for (int64_t N : {1, 3, 16, 258}) {
    for (int64_t K : {32, 96, 2048}) {
      HostMx q = random_mx(N, K, uint64_t(N * 1000 + K));
      const int64_t pb = packed_bytes(N, K);
      std::vector<uint8_t> cp(pb, 0xCC);
      prepack(q.view(), cp.data());
      DeviceBuf dc(q.codes), ds(q.scales), gp(pb, 0xCC);
      const MxMatrix dq{dc.get(), ds.get(), N, K, CodeLayout::plain, ScaleLayout::plain};
      const PackedWeights pw = prepack(dq, gp.get(), cuda_exec());
      ASSERT_EQ(gp.download<uint8_t>(), cp) << "N=" << N << " K=" << K;
      DeviceBuf uc(N * K / 2), us(N * K / 32);
      unpack(pw, uc.get(), us.get(), cuda_exec());
      ASSERT_EQ(uc.download<uint8_t>(), q.codes) << "N=" << N << " K=" << K;
      ASSERT_EQ(us.download<uint8_t>(), q.scales) << "N=" << N << " K=" << K;
    }
  }
}

TEST(GpuPrepack, FromAiterLayoutsEqualsFromPlain) {
  MXFP4_REQUIRE_GPU();
  const int64_t N = 64, K = 640;
  HostMx q = random_mx(N, K, 9);
  std::vector<uint8_t> ss(shuffled_scales_bytes(N, K / 32), 0xFF), sw(N * K / 2);  // padding = NaN bytes
  shuffle_scales(q.scales.data(), N, K / 32, ss.data());
  shuffle_weight(q.codes.data(), N, K, sw.data());
  DeviceBuf dc(q.codes), ds(q.scales), dsw(sw), dss(ss);
  DeviceBuf p1(packed_bytes(N, K)), p2(packed_bytes(N, K));
  prepack(MxMatrix{dc.get(), ds.get(), N, K}, p1.get(), cuda_exec());
  prepack(MxMatrix{dsw.get(), dss.get(), N, K, CodeLayout::aiter_shuffled, ScaleLayout::aiter_shuffled}, p2.get(),
          cuda_exec());
  ASSERT_EQ(p1.download<uint8_t>(), p2.download<uint8_t>());
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuQuantize, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
