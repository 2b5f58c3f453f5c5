// The correctness check of `mxfp4 bench` and `mxfp4 tune` (tools/cli/bench_data.cpp): a
// reference computed once per shape on sampled rows, then any number of results checked
// against it by spec §3's bound. Each case starts from a correct C and breaks it on purpose.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bench_data.hpp"
#include "cpu/fp8_plan.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4cli::bench {
namespace {

struct Case {
  int64_t M = 7, N = 40, K = 96;
  HostMx aq, b;
  std::vector<uint16_t> a, c;  // A (bf16) and a correct C from the CPU GEMM
  Case() {
    a = randn_bf16(M, K, 41, {1});
    aq = quantize_bf16(a, M, K);
    b = quantize_bf16(randn_bf16(N, K, 41, {2}), N, K);
    c.assign(size_t(M * N), 0xFFFF);
    mxfp4::gemm(a.data(), M, K, K, b.view(), c.data(), N);
  }
};

TEST(BenchCheck, ACorrectResultPassesAndOneWrongElementFailsWithItsPlace) {
  Case t;
  const Reference ref = reference_rows(t.aq, t.b, sample_rows(t.M, t.N, t.K));
  ASSERT_EQ(ref.rows.size(), size_t(t.M));  // a small shape: every row
  const CheckResult ok = check_gemm(ref, t.c);
  EXPECT_TRUE(ok.correct) << ok.first_failure;
  EXPECT_EQ(ok.rows_checked, t.M);
  EXPECT_LE(ok.max_err_ratio, 1.0);
  std::vector<uint16_t> bad = t.c;
  const float v = mxfp4::fmt::bf16_to_f32(bad[size_t(3 * t.N + 17)]);
  bad[size_t(3 * t.N + 17)] = mxfp4::fmt::f32_to_bf16(v * 1.5f + 1.f);
  const CheckResult r = check_gemm(ref, bad);
  EXPECT_FALSE(r.correct);
  EXPECT_GT(r.max_err_ratio, 1.0);
  EXPECT_EQ(r.first_failure.rfind("C[3, 17] = ", 0), 0u) << r.first_failure;
  // The same verdicts from the one-shot form.
  EXPECT_TRUE(check_gemm(t.aq, t.b, t.c, ref.rows).correct);
  EXPECT_FALSE(check_gemm(t.aq, t.b, bad, ref.rows).correct);
}

TEST(BenchCheck, NaNOrInfinityWhereTheReferenceIsFiniteFails) {
  Case t;
  const Reference ref = reference_rows(t.aq, t.b, sample_rows(t.M, t.N, t.K));
  for (uint16_t poison : {uint16_t(0x7FC0), uint16_t(0x7F80), uint16_t(0xFF80)}) {
    std::vector<uint16_t> bad = t.c;
    bad[size_t(6 * t.N + 39)] = poison;
    EXPECT_FALSE(check_gemm(ref, bad).correct) << std::hex << poison;
  }
}

TEST(BenchCheck, OnlyTheSampledRowsAreChecked) {
  Case t;
  const Reference ref = reference_rows(t.aq, t.b, {0, 4, 6});
  EXPECT_EQ(ref.cref.size(), size_t(3 * t.N));
  std::vector<uint16_t> bad = t.c;
  for (int64_t n = 0; n < t.N; ++n) bad[size_t(2 * t.N + n)] = 0x7FC0;  // row 2: not sampled
  const CheckResult r = check_gemm(ref, bad);
  EXPECT_TRUE(r.correct) << r.first_failure;
  EXPECT_EQ(r.rows_checked, 3);
  bad[size_t(4 * t.N + 1)] = 0x7FC0;  // row 4: sampled
  EXPECT_FALSE(check_gemm(ref, bad).correct);
}

/// `mxfp4 bench --wide-activations`: every group of every row becomes wide (never flagged),
/// and only the first block of each slice changes, by exactly 2^8.
TEST(BenchData, WidenGroupsMakesEveryGroupWide) {
  constexpr int64_t rows = 24, K = 416;  // the last slice is 32 wide: left alone
  std::vector<uint16_t> x = randn_bf16(rows, K, 6, {4});
  const std::vector<uint16_t> orig = x;
  widen_groups(x, rows, K);
  const HostMx m = quantize_bf16(x, rows, K);
  const mxfp4::fp8::GroupPlan plan = mxfp4::fp8::plan_groups(m.view());
  ASSERT_EQ(plan.slices, 4);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_TRUE(plan.exact[size_t(r * 4 + j)] && plan.wide[size_t(r * 4 + j)]) << r << ", " << j;
      for (int64_t k = 128 * j; k < 128 * j + 128; ++k) {
        const float want = mxfp4::fmt::bf16_to_f32(orig[size_t(r * K + k)]) * (k < 128 * j + 32 ? 256.f : 1.f);
        ASSERT_EQ(mxfp4::fmt::bf16_to_f32(x[size_t(r * K + k)]), want) << r << ", " << k;
      }
    }
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(plan.wide[size_t(r * 4 + 3)], 0) << r;
  EXPECT_THROW(widen_groups(x, rows, 32), CliError);
}

/// `mxfp4 bench --flagged-weight-rows`: exactly the chosen rows get a group that path fp8's
/// image cannot hold (their first 128-K slice), nothing else changes, and bad counts throw.
TEST(BenchData, FlagRowsFlagsExactlyTheChosenRowsFirstGroup) {
  constexpr int64_t rows = 40, K = 256;
  std::vector<uint16_t> x = randn_bf16(rows, K, 5, {3});
  const std::vector<uint16_t> orig = x;
  flag_rows(x, rows, K, 0);
  EXPECT_EQ(x, orig);
  flag_rows(x, rows, K, 5);  // rows 0, 8, 16, 24, 32
  const HostMx m = quantize_bf16(x, rows, K);
  const mxfp4::fp8::GroupPlan plan = mxfp4::fp8::plan_groups(m.view());
  ASSERT_EQ(plan.slices, 2);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(plan.exact[size_t(r * 2)] == 0, r % 8 == 0) << "row " << r;
    EXPECT_TRUE(plan.exact[size_t(r * 2 + 1)]) << "row " << r;
    for (int64_t k = 0; k < K; ++k)
      if (r % 8 != 0 || k >= 64) ASSERT_EQ(x[size_t(r * K + k)], orig[size_t(r * K + k)]) << r << ", " << k;
  }
  EXPECT_THROW(flag_rows(x, rows, K, rows + 1), CliError);
  EXPECT_THROW(flag_rows(x, rows, K, -1), CliError);
  EXPECT_THROW(flag_rows(x, rows, 32, 1), CliError);
}

}  // namespace
}  // namespace mxfp4cli::bench
