// Bug kinds K10-K14 of shared/spec/bug-kinds.md on the CPU GEMM (MxMatrix and PackedWeights
// entry points): N tails of the packed layout, small N, small M with canaries, poisoned
// padding, run-to-run determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

struct Packed {
  std::vector<uint8_t> buf;
  PackedWeights p;
};

Packed pack_dense(const std::vector<float>& b, int64_t N, int64_t K) {
  Packed out;
  out.buf.assign(size_t(packed_bytes(N, K)), 0xFF);
  std::vector<uint8_t> tmp(size_t(N * K / 2 + N * K / 32));
  out.p = prepack_dense(b.data(), DType::fp32, N, K, K, out.buf.data(), tmp.data());
  return out;
}

TEST(BugK10, NTailOnPackedLayout) {
  const int64_t M = 16, K = 128;
  for (int64_t N : {1, 3, 258, 260}) {
    std::vector<float> b(size_t(N * K));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) b[size_t(n * K + k)] = float((n % 7) - 3);
    const Packed pk = pack_dense(b, N, K);
    const std::vector<uint16_t> a(size_t(M * K), 0x3F80);
    std::vector<uint16_t> c(size_t(M * N), 0xBEEF);
    gemm(a.data(), M, K, K, pk.p, c.data(), N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        ASSERT_EQ(bf16_to_f32(c[size_t(m * N + n)]), 128.0f * float((n % 7) - 3)) << "N=" << N << " n=" << n;
    if (N >= 258) {
      EXPECT_EQ(bf16_to_f32(c[256]), 128.0f);
      EXPECT_EQ(bf16_to_f32(c[257]), 256.0f);
    }
  }
}

TEST(BugK11, SmallNDecodesScales) {
  const int64_t K = 64;
  for (int64_t N = 1; N <= 9; ++N) {
    std::vector<float> b(size_t(N * K));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) b[size_t(n * K + k)] = std::ldexp(1.0f, int(n + 3));
    const HostMx bq = quantize_f32(b, N, K);
    const Packed pk = pack_dense(b, N, K);
    const std::vector<uint16_t> a(size_t(K), 0x3F80);
    std::vector<uint16_t> c1(static_cast<size_t>(N)), c2(static_cast<size_t>(N));
    gemm(a.data(), 1, K, K, bq.view(), c1.data(), N);
    gemm(a.data(), 1, K, K, pk.p, c2.data(), N);
    for (int64_t n = 0; n < N; ++n) {
      EXPECT_EQ(bf16_to_f32(c1[size_t(n)]), 64.0f * std::ldexp(1.0f, int(n + 3))) << N << " " << n;
      EXPECT_EQ(c2[size_t(n)], c1[size_t(n)]);
    }
  }
}

// K12-K14 on the CPU take fewer sizes than bug-kinds.md lists (the CPU GEMM of 6144^2 or
// K = 16384 per M would take minutes); GpuGemm.K12K13SmallMAndSplitKNeverLeak and
// GpuGemm.K14DeterministicAcrossCallsAndStreams run the full lists on the GPU.
TEST(BugK12, SmallMWithCanaryRows) {
  for (int64_t NK : {64, 6144}) {
    const int64_t N = NK, K = NK;
    const Packed pk = pack_dense(std::vector<float>(size_t(N * K), 1.0f), N, K);
    const std::vector<int64_t> Ms = NK == 64 ? std::vector<int64_t>{1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33}
                                             : std::vector<int64_t>{1, 4, 16, 17, 33};
    for (int64_t M : Ms) {
      const std::vector<uint16_t> a(size_t(M * K), 0x3F80);
      std::vector<uint16_t> c(size_t((M + 4) * N), 0xBEEF);
      gemm(a.data(), M, K, K, pk.p, c.data(), N);
      const uint16_t want = f32_to_bf16(float(K));
      for (int64_t i = 0; i < (M + 4) * N; ++i)
        ASSERT_EQ(c[size_t(i)], i < M * N ? want : uint16_t(0xBEEF)) << "N=K=" << NK << " M=" << M << " i=" << i;
    }
  }
}

TEST(BugK13, PoisonedPaddingAndSlack) {
  const int64_t N = 256;
  for (int64_t K : {64, 96, 512}) {
    // B = 1.0 with AITER-shuffled scales whose padding is 0xFF (NaN if it were read).
    std::vector<float> bd(size_t(N * K), 1.0f);
    std::vector<uint8_t> codes(size_t(N * K / 2));
    std::vector<uint8_t> scales(size_t(shuffled_scales_bytes(N, K / 32)), 0xFF);
    quantize(bd.data(), DType::fp32, N, K, K, codes.data(), scales.data(), ScaleRule::aiter, {},
             ScaleLayout::aiter_shuffled);
    MxMatrix b{codes.data(), scales.data(), N, K, CodeLayout::plain, ScaleLayout::aiter_shuffled};
    const Packed pk = pack_dense(bd, N, K);
    const int64_t lda = K + 32;
    for (int64_t M = 1; M <= 256; M += (K == 64 ? 1 : 5)) {
      std::vector<uint16_t> a(size_t(M * lda), 0xFFFF);  // slack between rows: NaN
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) a[size_t(m * lda + k)] = 0x3F80;
      std::vector<uint16_t> c1(size_t(M * N)), c2(size_t(M * N));
      gemm(a.data(), M, K, lda, b, c1.data(), N);
      gemm(a.data(), M, K, lda, pk.p, c2.data(), N);
      const uint16_t want = f32_to_bf16(float(K));
      for (int64_t i = 0; i < M * N; ++i) {
        ASSERT_EQ(c1[size_t(i)], want) << "K=" << K << " M=" << M << " i=" << i;
        ASSERT_EQ(c2[size_t(i)], want) << "K=" << K << " M=" << M << " i=" << i;
      }
    }
  }
}

TEST(BugK14, RepeatedCallsAreBitwiseIdentical) {
  const int64_t N = 1024, K = 16384;
  const HostMx b = random_mx(N, K, 14);
  std::vector<uint8_t> buf(size_t(packed_bytes(N, K)));
  const PackedWeights p = prepack(b.view(), buf.data());
  for (int64_t M : {1, 8, 16}) {
    const auto a = randn_bf16(size_t(M * K), uint64_t(M));
    std::vector<uint16_t> first(size_t(M * N));
    gemm(a.data(), M, K, K, p, first.data(), N);
    for (int call = 0; call < 4; ++call) {
      Exec ex;
      ex.threads = call % 2 + 1;
      std::vector<uint16_t> c(size_t(M * N));
      if (call % 2)
        gemm(a.data(), M, K, K, p, c.data(), N, {}, ex);
      else
        gemm(a.data(), M, K, K, b.view(), c.data(), N, {}, ex);
      ASSERT_EQ(c, first) << "M=" << M << " call " << call;
    }
  }
}

}  // namespace
}  // namespace mxfp4::test
