// CPU GEMM (spec §3): the reference against an independent naive loop (bit for bit), the
// fast GEMM against the reference and the naive loop within the contract, exact-rounding edge
// cases, extreme scales, strides, threads, and the blocked fallback kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/test_util.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/spec_ref.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

// --- Independent naive oracle -----------------------------------------------------------

double naive_decode(const HostMx& q, int64_t r, int64_t k) {
  const uint8_t s = q.scales[size_t(r * (q.K / 32) + k / 32)];
  const uint8_t byte = q.codes[size_t(r * (q.K / 2) + k / 2)];
  const uint8_t code = (k % 2) ? (byte >> 4) : (byte & 15);
  if (s == 0xFF) return NAN;
  return ref_e2m1(code) * std::ldexp(1.0, int(s) - 127);
}

// Sums of exact products in ascending k, in double; also sum |a b|.
void naive_sums(const HostMx& A, const HostMx& B, std::vector<double>& sum, std::vector<double>& abs) {
  sum.assign(size_t(A.rows * B.rows), 0.0);
  abs.assign(sum.size(), 0.0);
  for (int64_t m = 0; m < A.rows; ++m)
    for (int64_t n = 0; n < B.rows; ++n)
      for (int64_t k = 0; k < A.K; ++k) {
        const double p = naive_decode(A, m, k) * naive_decode(B, n, k);
        sum[size_t(m * B.rows + n)] += p;
        abs[size_t(m * B.rows + n)] += std::fabs(p);
      }
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// double -> bf16, nearest even, by bracketing x between its two bf16 neighbours.
uint16_t naive_bf16(double x) {
  if (std::isnan(x)) return 0x7FC0;
  if (std::isinf(x)) return x > 0 ? 0x7F80 : 0xFF80;
  float f = float(x);
  if (std::isinf(f)) f = std::copysign(FLT_MAX, float(x));
  if (std::fabs(double(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);  // f = x toward zero
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u &= 0xFFFF0000u;  // bf16 toward zero
  const double lo = std::fabs(double(from_bits(u)));
  const double hi = (u & 0x7FFFFFFFu) == 0x7F7F0000u ? 0x1p128 : std::fabs(double(from_bits(u + 0x10000u)));
  const double mid = (lo + hi) / 2, a = std::fabs(x);
  const bool up = a > mid || (a == mid && ((u >> 16) & 1u));
  return uint16_t((u >> 16) + (up ? 1 : 0));
}

HostMx with_row_scales(HostMx q, int spread, uint64_t seed) {
  // Shifts each row's scales by a row-dependent amount (scales vary by row and by K block).
  Rng rng(seed);
  for (int64_t r = 0; r < q.rows; ++r) {
    const int shift = int(rng.uniform_int(-spread, spread));
    for (int64_t j = 0; j < q.K / 32; ++j) {
      uint8_t& s = q.scales[size_t(r * (q.K / 32) + j)];
      s = uint8_t(std::clamp(int(s) + shift + int(rng.uniform_int(-2, 2)), 0, 254));
    }
  }
  return q;
}

// --- Tests ------------------------------------------------------------------------------

TEST(GemmReference, EqualsNaiveLoopBitForBit) {
  const int64_t shapes[][3] = {{1, 1, 32}, {3, 5, 96}, {7, 9, 160}, {16, 13, 1664}};
  for (const auto& sh : shapes) {
    const HostMx A = with_row_scales(random_mx(sh[0], sh[2], 1), 30, 2);
    const HostMx B = with_row_scales(random_mx(sh[1], sh[2], 3), 30, 4);
    std::vector<double> want, want_abs;
    naive_sums(A, B, want, want_abs);
    std::vector<double> got(want.size()), got_abs(want.size());
    std::vector<uint16_t> c(want.size());
    gemm_reference(A.view(), B.view(), c.data(), sh[1], got.data(), got_abs.data());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << i;
      ASSERT_EQ(got_abs[i], want_abs[i]) << i;
      ASSERT_EQ(c[i], naive_bf16(want[i])) << i << " sum " << want[i];
    }
  }
}

// One-term product: A[0, 0] = e2m1(ca) * 2^(sa-127), B[0, 0] likewise, the rest +0.
std::pair<HostMx, HostMx> one_term(uint8_t ca, uint8_t sa, uint8_t cb, uint8_t sb) {
  HostMx A, B;
  A.rows = B.rows = 1;
  A.K = B.K = 32;
  A.codes.assign(16, 0);
  B.codes.assign(16, 0);
  A.codes[0] = ca;
  B.codes[0] = cb;
  A.scales = {sa};
  B.scales = {sb};
  return {A, B};
}

TEST(GemmReference, SingleRoundingEdgeCases) {
  struct Case {
    uint8_t ca, sa, cb, sb;
    uint16_t want;
  };
  const Case cases[] = {
      {1, 0, 3, 123, 0x0003},    // 0.5 * 1.5 * 2^-131 = 3 * 2^-133: three bf16 subnormal ulps
      {1, 0, 1, 122, 0x0000},    // 2^-134: half an ulp, tie to even -> +0
      {3, 0, 1, 122, 0x0002},    // 3 * 2^-134: 1.5 ulps -> 2 ulps (even)
      {9, 0, 1, 122, 0x8000},    // -2^-134 -> -0
      {6, 254, 2, 0, 0x4080},    // 2^129 * 2^-127 = 4: exponents combine, stays finite
      {3, 254, 2, 127, 0x7F40},  // 1.5 * 2^127: finite
      {7, 254, 7, 127, 0x7F80},  // 36 * 2^127: +Inf
      {15, 254, 7, 127, 0xFF80}, // -Inf
  };
  for (const Case& t : cases) {
    const auto [A, B] = one_term(t.ca, t.sa, t.cb, t.sb);
    uint16_t c = 0x1234, cf = 0x1234;
    gemm_reference(A.view(), B.view(), &c, 1);
    EXPECT_EQ(c, t.want) << int(t.ca) << " " << int(t.sa) << " " << int(t.cb) << " " << int(t.sb);
    gemm_quantized(A.view(), B.view(), &cf, 1);  // the fast GEMM takes its exact path here
    EXPECT_EQ(cf, t.want) << "fast " << int(t.ca) << " " << int(t.sa) << " " << int(t.cb) << " " << int(t.sb);
  }
}

TEST(GemmReference, NoDoubleRoundingThroughFloat) {
  // 256 + 1 + 2^-30 rounds to 258 in one step; via float it would become 257 and then tie to 256.
  HostMx A, B;
  A.rows = B.rows = 1;
  A.K = B.K = 96;
  A.codes.assign(48, 0);
  B.codes.assign(48, 0);
  A.scales = {133, 127, 112};  // 2^6, 1, 2^-15
  B.scales = {127, 127, 112};
  A.codes[0] = 6;   // 4 * 2^6 = 256
  A.codes[16] = 2;  // 1
  A.codes[32] = 2;  // 2^-15
  B.codes[0] = B.codes[16] = B.codes[32] = 2;
  uint16_t c = 0;
  double sum = 0;
  gemm_reference(A.view(), B.view(), &c, 1, &sum);
  EXPECT_EQ(sum, 257.0 + 0x1p-30);
  EXPECT_EQ(c, 0x4381);  // 258
}

TEST(Gemm, FastGemmWithinContractOfReferenceAndNaive) {
  const int64_t Ms[] = {1, 3, 17, 64, 129};
  const int64_t Ns[] = {1, 7, 64, 100};
  const int64_t Ks[] = {32, 96, 160, 1664};
  uint64_t seed = 100;
  for (int64_t K : Ks)
    for (int64_t M : Ms)
      for (int64_t N : Ns) {
        ++seed;
        std::vector<uint16_t> a = randn_bf16(size_t(M * K), seed);
        for (int64_t m = 0; m < M; ++m)  // rows of very different magnitude
          for (int64_t k = 0; k < K; ++k)
            a[size_t(m * K + k)] = f32_to_bf16(std::ldexp(bf16_to_f32(a[size_t(m * K + k)]), int(m % 9) * 3 - 12));
        const HostMx B = with_row_scales(random_mx(N, K, seed * 7), 8, seed);
        std::vector<uint16_t> c(size_t(M * N));
        gemm(a.data(), M, K, K, B.view(), c.data(), N);
        const HostMx A = quantize_bf16(a, M, K);
        const ContractReport rep = check_gemm_contract(c.data(), N, A.view(), B.view());
        ASSERT_TRUE(rep.ok()) << M << "x" << N << "x" << K << ": " << rep.str();
        if (M * N * K <= 64 * 64 * 1664) {
          std::vector<double> sum, abs;
          naive_sums(A, B, sum, abs);
          const ContractReport rep2 = check_gemm_contract(c.data(), M, N, N, sum.data(), abs.data());
          ASSERT_TRUE(rep2.ok()) << M << "x" << N << "x" << K << " vs naive: " << rep2.str();
        }
      }
}

TEST(Gemm, ExtremeScalesStayWithinContract) {
  // Random codes and scale bytes over the whole E8M0 range: the fp32 path is unsafe here and
  // the exact path must run (products like 2^129 * 2^-127 stay finite).
  Rng rng(9);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t M = 1 + trial * 5, N = 3 + trial * 4, K = 64 + 32 * trial;
    HostMx A, B;
    for (HostMx* q : {&A, &B}) {
      q->rows = (q == &A) ? M : N;
      q->K = K;
      q->codes.resize(size_t(q->rows * K / 2));
      q->scales.resize(size_t(q->rows * K / 32));
      for (auto& b : q->codes) b = uint8_t(rng.next_u64());
      for (auto& s : q->scales) s = uint8_t(rng.uniform_int(0, 254));
    }
    std::vector<uint16_t> c(size_t(M * N)), cr(size_t(M * N));
    gemm_quantized(A.view(), B.view(), c.data(), N);
    gemm_reference(A.view(), B.view(), cr.data(), N);
    const ContractReport rep = check_gemm_contract(c.data(), N, A.view(), B.view());
    EXPECT_TRUE(rep.ok()) << rep.str();
    EXPECT_EQ(c, cr);
  }
}

TEST(Gemm, SubnormalProductsWithinContract) {
  // Scale bytes near 0 on both sides: products far below fp32's range.
  const int64_t M = 9, N = 11, K = 160;
  HostMx A = random_mx(M, K, 31), B = random_mx(N, K, 32);
  Rng rng(33);
  for (auto& s : A.scales) s = uint8_t(rng.uniform_int(0, 12));
  for (auto& s : B.scales) s = uint8_t(rng.uniform_int(100, 130));
  std::vector<uint16_t> c(size_t(M * N));
  gemm_quantized(A.view(), B.view(), c.data(), N);
  const ContractReport rep = check_gemm_contract(c.data(), N, A.view(), B.view());
  EXPECT_TRUE(rep.ok()) << rep.str();
}

TEST(Gemm, StridesCanariesAndThreads) {
  const int64_t M = 37, N = 45, K = 160, lda = K + 37, ldc = N + 5, extra_rows = 3;
  const auto dense = randn_bf16(size_t(M * K), 8);
  std::vector<uint16_t> a(size_t(M * lda), 0x7FC0);  // stride padding holds NaN: never read
  for (int64_t m = 0; m < M; ++m) std::memcpy(&a[size_t(m * lda)], &dense[size_t(m * K)], size_t(K) * 2);
  const HostMx B = random_mx(N, K, 9);
  std::vector<uint16_t> want(size_t(M * N));
  gemm(dense.data(), M, K, K, B.view(), want.data(), N);
  for (int threads : {0, 1, 2, 5}) {
    Exec ex;
    ex.threads = threads;
    std::vector<uint16_t> c(size_t((M + extra_rows) * ldc), 0xBEEF);
    gemm(a.data(), M, K, lda, B.view(), c.data(), ldc, {}, ex);
    for (int64_t m = 0; m < M + extra_rows; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        if (m < M && n < N)
          ASSERT_EQ(c[size_t(m * ldc + n)], want[size_t(m * N + n)]) << threads << " " << m << "," << n;
        else
          ASSERT_EQ(c[size_t(m * ldc + n)], 0xBEEF) << "canary " << m << "," << n;
      }
  }
}

// C = A * I^T is A's quantized value, exact in bf16: the CPU GEMM (which quantizes A with
// the same fmt primitives) must return the dequantized A_q value for value, under every rule,
// with a K tail in the last 64-wide chunk and an odd row stride. The GPU runs the same check on
// every path (GpuGemm.ActivationQuantizationIsBitExactOnEveryPath).
TEST(Gemm, ActivationQuantizationIsBitExact) {
  for (auto [K, lda] : {std::pair<int64_t, int64_t>{1024, 1024}, {1056, 1057}}) {
    const HostMx eye = identity_mx(K);
    for (int64_t M : {1, 5, 130}) {
      const std::vector<uint16_t> a = quantizer_probe_bf16(M, K, lda, uint64_t(1000 + M + K));
      const std::vector<uint16_t> dense = dense_rows(a, M, K, lda);
      for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
        const HostMx aq = quantize_bf16(dense, M, K, rule);
        std::vector<float> want(size_t(M * K));
        dequantize(aq.view(), want.data(), DType::fp32, K);
        std::vector<uint16_t> c(size_t(M * K), 0xFFFF);
        GemmOptions opt;
        opt.rule = rule;
        gemm(a.data(), M, K, lda, eye.view(), c.data(), K, opt);
        for (int64_t i = 0; i < M * K; ++i)
          ASSERT_EQ(bf16_to_f32(c[size_t(i)]), want[size_t(i)])
              << "K " << K << " rule " << int(rule) << " at (" << i / K << ", " << i % K << ")";
      }
    }
  }
}

/// Long K with cancellation (review, session 12): one +1 and one -1 product around 2^22 - 64
/// products of 2^-32. fp32 accumulation over the whole K loses every small product that meets
/// a partial sum near 1 (result 0 against the exact 2^-10, twice the bound 2^-11 + ...); the
/// fp32 path sums K in chunks whose fp32 sums are added in fp64 (src/cpu/gemm.cpp).
TEST(Gemm, LongKWithCancellationStaysWithinContract) {
  const int64_t M = 1, N = 2, K = int64_t(1) << 22;
  HostMx A, B;
  A.rows = M, B.rows = N, A.K = B.K = K;
  A.codes.assign(size_t(M * K / 2), 0x22);  // every code 1.0
  A.scales.assign(size_t(M * K / 32), 127);
  B.codes.assign(size_t(N * K / 2), 0x22);
  B.scales.assign(size_t(N * K / 32), 127 - 32);  // 2^-32 products
  for (int64_t n = 0; n < N; ++n) {
    const int64_t first = n * (K / 32), last = first + K / 32 - 1;  // block indices of row n
    // Block 0: one 1.0 (scale 2^0) and zeros; the last block: one -1.0 (n = 0) or +1.0.
    for (int64_t i = 0; i < 16; ++i) B.codes[size_t(first * 16 + i)] = B.codes[size_t(last * 16 + i)] = 0x00;
    B.codes[size_t(first * 16)] = 0x02;
    B.codes[size_t(last * 16 + 15)] = n == 0 ? 0xA0 : 0x20;
    B.scales[size_t(first)] = B.scales[size_t(last)] = 127;
  }
  std::vector<uint16_t> c(size_t(M * N), 0xFFFF);
  gemm_quantized(A.view(), B.view(), c.data(), N);
  const ContractReport rep = check_gemm_contract(c.data(), N, A.view(), B.view());
  EXPECT_TRUE(rep.ok()) << rep.str();
  std::vector<float> c32(size_t(M * N), NAN);
  cpu::gemm_mx(A.view(), B.view(), cpu::GemmOut{c32.data(), true, N}, 2);
  const double want = double(K - 64) * 0x1p-32;
  EXPECT_NEAR(c32[0], want, 0x1p-12 * 2.0 + 0x1p-8 * want);
}

TEST(Gemm, BlockedFallbackKernel) {
  for (auto [M, N, K] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {5, 33, 300}, {70, 17, 513}, {64, 64, 256}}) {
    const auto a = randn_f32(size_t(M * K), uint64_t(M + N));
    const auto b = randn_f32(size_t(N * K), uint64_t(M * N + K));
    for (int threads : {1, 2, 3}) {
      std::vector<float> c(size_t(M * N), NAN);
      cpu::gemm_f32_blocked(a.data(), b.data(), c.data(), M, N, K, K, threads);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double s = 0, sa = 0;
          for (int64_t k = 0; k < K; ++k) {
            s += double(a[size_t(m * K + k)]) * b[size_t(n * K + k)];
            sa += std::fabs(double(a[size_t(m * K + k)]) * b[size_t(n * K + k)]);
          }
          ASSERT_LE(std::fabs(c[size_t(m * N + n)] - s), double(K) * 0x1p-23 * sa + 1e-30) << m << "," << n;
        }
    }
    // Rows ld = K + 7 floats apart (the fp32 path's K chunks): the same sums bit for bit.
    const int64_t ld = K + 7;
    std::vector<float> ap(size_t(M * ld), NAN), bpd(size_t(N * ld), NAN), c1(size_t(M * N)), c2(size_t(M * N), NAN);
    for (int64_t m = 0; m < M; ++m) std::copy_n(a.data() + m * K, K, ap.data() + m * ld);
    for (int64_t n = 0; n < N; ++n) std::copy_n(b.data() + n * K, K, bpd.data() + n * ld);
    cpu::gemm_f32_blocked(a.data(), b.data(), c1.data(), M, N, K, K, 2);
    cpu::gemm_f32_blocked(ap.data(), bpd.data(), c2.data(), M, N, K, ld, 2);
    EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float))) << M << "x" << N << "x" << K;
  }
}

TEST(Gemm, ExplainOnCpuIsTheDocumentedFixedConfig) {
  const GemmConfig c = explain_gemm(5, 7, 64);
  EXPECT_EQ(c.path, GemmPath::tiled);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.block_m, 64);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_EQ(c.warps, 0);
}

TEST(Gemm, CheckContractCatchesErrors) {
  // The helper itself must fail on a wrong result, a NaN mismatch and a wrong Inf.
  const double ref[4] = {1.0, NAN, 3.0e38, 0x1p-134};
  const double abs[4] = {1.0, NAN, 3.0e38, 0x1p-134};
  const uint16_t good[4] = {0x3F80, 0x7FC0, f32_to_bf16(3.0e38f), 0x0000};
  EXPECT_TRUE(check_gemm_contract(good, 1, 4, 4, ref, abs).ok());
  uint16_t bad[4] = {0x3F81, 0x7FC0, f32_to_bf16(3.0e38f), 0x0000};  // 1 + 2^-7 > 1 + 2^-8 + 2^-12
  const ContractReport r1 = check_gemm_contract(bad, 1, 4, 4, ref, abs);
  EXPECT_EQ(r1.failures, 1);
  EXPECT_EQ(r1.worst_n, 0);
  bad[0] = 0x3F80;
  bad[1] = 0x3F80;
  EXPECT_EQ(check_gemm_contract(bad, 1, 4, 4, ref, abs).nan_mismatches, 1);
  bad[1] = 0x7FC0;
  bad[2] = 0x7F80;
  EXPECT_EQ(check_gemm_contract(bad, 1, 4, 4, ref, abs).failures, 1);
  // The fp32 form: no final-rounding term (1 + 2^-11 fails, 1 + 2^-13 passes), NaN both ways, Inf.
  float f[4] = {1.0f + 0x1p-13f, NAN, 3.0e38f, 0.0f};
  EXPECT_TRUE(check_gemm_contract_f32(f, 1, 4, 4, ref, abs).ok());
  f[0] = 1.0f + 0x1p-11f;
  const ContractReport r2 = check_gemm_contract_f32(f, 1, 4, 4, ref, abs);
  EXPECT_EQ(r2.failures, 1);
  EXPECT_EQ(r2.worst_n, 0);
  f[0] = 1.0f;
  f[1] = 1.0f;
  EXPECT_EQ(check_gemm_contract_f32(f, 1, 4, 4, ref, abs).nan_mismatches, 1);
  f[1] = NAN;
  f[0] = NAN;
  EXPECT_EQ(check_gemm_contract_f32(f, 1, 4, 4, ref, abs).nan_mismatches, 1);
  f[0] = 1.0f;
  f[2] = INFINITY;
  EXPECT_EQ(check_gemm_contract_f32(f, 1, 4, 4, ref, abs).failures, 1);
}

// The GPU tests' oracle for sampled rows (reference_rows, check_rows_contract): the same sums
// as the whole reference, rows in any order with repeats, C with a row stride, a wrong
// element caught at its row, and a row out of range rejected.
TEST(Gemm, RowsReferenceEqualsTheWholeReference) {
  const int64_t M = 37, N = 45, K = 224, ldc = N + 3;
  const HostMx A = random_mx(M, K, 61), B = random_mx(N, K, 62);
  std::vector<uint16_t> whole(size_t(M * N));
  std::vector<double> sum(size_t(M * N)), abs(size_t(M * N));
  gemm_reference(A.view(), B.view(), whole.data(), N, sum.data(), abs.data());
  const std::vector<int64_t> rows{36, 0, 18, 5, 36};
  const RowsReference ref = reference_rows(A, B, rows);
  ASSERT_EQ(ref.sum.size(), rows.size() * size_t(N));
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t n = 0; n < N; ++n) {
      ASSERT_EQ(ref.sum[i * size_t(N) + size_t(n)], sum[size_t(rows[i] * N + n)]) << rows[i] << ", " << n;
      ASSERT_EQ(ref.abs_sum[i * size_t(N) + size_t(n)], abs[size_t(rows[i] * N + n)]) << rows[i] << ", " << n;
    }
  std::vector<uint16_t> C(size_t(M * ldc), 0xFFFF);  // padding columns hold NaN: never read
  for (int64_t m = 0; m < M; ++m) std::copy_n(whole.begin() + m * N, N, C.begin() + m * ldc);
  int64_t failed = 7;
  EXPECT_TRUE(check_rows_contract(C.data(), ldc, ref, &failed).ok());
  EXPECT_EQ(failed, -1);
  C[size_t(18 * ldc + 44)] ^= 0x0040;  // a mantissa bit far above the bound
  const ContractReport bad = check_rows_contract(C.data(), ldc, ref, &failed);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(failed, 18);
  EXPECT_EQ(bad.worst_n, 44);
  C[size_t(18 * ldc + 44)] ^= 0x0040;
  C[size_t(1 * ldc + 3)] ^= 0x0040;  // row 1 is not sampled
  EXPECT_TRUE(check_rows_contract(C.data(), ldc, ref).ok());
  EXPECT_THROW(reference_rows(A, B, {M}), std::out_of_range);
  EXPECT_THROW(reference_rows(A, B, {-1}), std::out_of_range);
  EXPECT_THROW(reference_rows(A, B, {}), std::invalid_argument);
  RowsReference short_ref = ref;  // a reference not made by reference_rows: one sum missing
  short_ref.sum.pop_back();
  EXPECT_THROW(check_rows_contract(C.data(), ldc, short_ref), std::invalid_argument);
  EXPECT_THROW(check_rows_contract(C.data(), ldc, RowsReference{}), std::invalid_argument);
}

}  // namespace
}  // namespace mxfp4::test
