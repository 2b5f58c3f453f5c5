// GEMM with an fp32 C (the overloads of mxfp4::gemm taking float* C): spec §3's bound without
// its final-rounding term against the fp64 reference, bf16(fp32 C) == bf16 C bit for bit on
// the fp32 path, the documented double-rounding difference on the exact (extreme-scale) path,
// NaN/Inf semantics, single-step rounding double -> fp32, strides, canaries, threads and
// argument validation.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/expect_throw.hpp"
#include "common/test_util.hpp"
#include "cpu/cpu_backend.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

constexpr float kPoison = -12345.678f;  // a value no GEMM here produces
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(GemmF32, BoundAgainstReferenceAndBf16Consistency) {
  const int64_t shapes[][3] = {{1, 16, 32}, {3, 7, 96}, {17, 64, 256}, {64, 33, 1024}, {129, 100, 1664}};
  uint64_t seed = 500;
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    ++seed;
    std::vector<uint16_t> a = randn_bf16(size_t(M * K), seed);
    for (int64_t m = 0; m < M; ++m)  // rows of very different magnitude
      for (int64_t k = 0; k < K; ++k)
        a[size_t(m * K + k)] = f32_to_bf16(std::ldexp(bf16_to_f32(a[size_t(m * K + k)]), int(m % 7) * 4 - 12));
    const HostMx B = random_mx(N, K, seed * 3, float(std::ldexp(1.0, int(seed % 5) - 2)));
    std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
    const PackedWeights P = prepack(B.view(), pbuf.data());

    std::vector<float> c(size_t(M * N), kPoison), cp(size_t(M * N), kPoison);
    gemm(a.data(), M, K, K, B.view(), c.data(), N);
    gemm(a.data(), M, K, K, P, cp.data(), N);
    std::vector<uint16_t> c16(size_t(M * N), 0xBEEF);
    gemm(a.data(), M, K, K, P, c16.data(), N);

    const HostMx A = quantize_bf16(a, M, K);
    std::vector<double> ref(size_t(M * N)), abs(size_t(M * N));
    std::vector<uint16_t> rb(size_t(M * N));
    gemm_reference(A.view(), B.view(), rb.data(), N, ref.data(), abs.data());
    const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    const ContractReport rep = check_gemm_contract_f32(c.data(), M, N, N, ref.data(), abs.data());
    EXPECT_TRUE(rep.ok()) << what << ": " << rep.str();
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_EQ(bits(c[i]), bits(cp[i])) << what << " MxMatrix vs packed B at " << i;
      ASSERT_EQ(f32_to_bf16(c[i]), c16[i]) << what << ": bf16(fp32 C) != bf16 C at " << i << " (" << c[i] << ")";
    }
    // fp32 carries what the bf16 result drops: with K >= 256 some sums are not bf16 values
    // (a K = 32 sum often is: 32 products of e2m1 values under one scale).
    if (K >= 256) {
      int64_t not_bf16 = 0;
      for (float v : c) not_bf16 += bf16_to_f32(f32_to_bf16(v)) != v;
      EXPECT_GT(not_bf16, M * N / 4) << what;
    }
  }
}

// A row 0 = [256, 0.., 1, 0.., 2^-15, 0..] and B row 0 = [1, 0.., 1, 0.., 2^-15, 0..] (k = 0, 32,
// 64): the exact sum is 257 + 2^-30, whose bf16 rounding is 258 but whose fp32 rounding 257 ties to 256 in bf16.
// B row 1 is zero; `extreme` gives it scale byte 254 in block 0, which sends the CPU GEMM down
// its exact fp64 path (spec §3: such scales can overflow fp32 partial sums).
struct DoubleRoundingCase {
  std::vector<uint16_t> a;
  HostMx b;
};
DoubleRoundingCase double_rounding_case(bool extreme) {
  DoubleRoundingCase t;
  const int64_t K = 96;
  t.a.assign(size_t(K), 0);
  t.a[0] = f32_to_bf16(256.0f);
  t.a[32] = f32_to_bf16(1.0f);
  t.a[64] = f32_to_bf16(0x1p-15f);
  t.b.rows = 2;
  t.b.K = K;
  t.b.codes.assign(size_t(2 * K / 2), 0);
  t.b.scales.assign(size_t(2 * K / 32), 127);
  t.b.codes[0] = t.b.codes[16] = t.b.codes[32] = 2;  // e2m1 code 2 = 1.0
  t.b.scales[2] = 112;                               // block 2 of row 0: 2^-15
  if (extreme) t.b.scales[3] = 254;                  // row 1, block 0 (codes zero: value 0)
  return t;
}

TEST(GemmF32, Bf16OfFp32EqualsBf16OnTheFp32Path) {
  const DoubleRoundingCase t = double_rounding_case(false);
  float c[2] = {kPoison, kPoison};
  uint16_t c16[2] = {0xBEEF, 0xBEEF};
  gemm(t.a.data(), 1, 96, 96, t.b.view(), c, 2);
  gemm(t.a.data(), 1, 96, 96, t.b.view(), c16, 2);
  EXPECT_EQ(c[0], 257.0f);  // fp32 sums: 256 + 1 (+ 2^-30, below half an ulp)
  EXPECT_EQ(c16[0], 0x4380);  // 256: the same fp32 sum rounded (tie to even)
  EXPECT_EQ(f32_to_bf16(c[0]), c16[0]);
  EXPECT_EQ(bits(c[1]), 0u);
}

TEST(GemmF32, ExactPathRoundsOnceToEachType) {
  // Checked, not assumed: with extreme scales bf16(fp32 C) and the bf16 C differ by one ulp.
  const DoubleRoundingCase t = double_rounding_case(true);
  float c[2] = {kPoison, kPoison};
  uint16_t c16[2] = {0xBEEF, 0xBEEF};
  gemm(t.a.data(), 1, 96, 96, t.b.view(), c, 2);
  gemm(t.a.data(), 1, 96, 96, t.b.view(), c16, 2);
  EXPECT_EQ(c[0], 257.0f);    // 257 + 2^-30 rounded once to fp32
  EXPECT_EQ(c16[0], 0x4381);  // 258: 257 + 2^-30 rounded once to bf16
  EXPECT_EQ(f32_to_bf16(c[0]), 0x4380);  // 256: double rounding through fp32
  EXPECT_EQ(bits(c[1]), 0u);
}

TEST(GemmF32, NanRowsColumnsAndOverflow) {
  const int64_t M = 3, N = 4, K = 64;
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 77);
  a[size_t(1 * K + 40)] = 0x7FC0;  // NaN in row 1: its block gets scale 0xFF
  // Row 2: 1.75 * 2^127 quantizes to 2 * 2^127 = 2^128 (aiter rule, scale byte 254), beyond
  // fp32 but exact in the fp64 path that these scales select.
  for (int64_t k = 0; k < K; ++k) a[size_t(2 * K + k)] = 0;
  a[size_t(2 * K)] = 0x7F60;
  HostMx B = random_mx(N, K, 78);
  B.scales[size_t(3 * 2 + 1)] = 0xFF;  // row 3 holds a NaN block
  for (int i = 0; i < 16; ++i) B.codes[size_t(0 * 32 + i)] = 0x22;  // row 0, block 0: all 1.0
  B.scales[0] = 127;
  std::vector<float> c(size_t(M * N), kPoison);
  gemm(a.data(), M, K, K, B.view(), c.data(), N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float v = c[size_t(m * N + n)];
      if (m == 1 || n == 3)
        EXPECT_TRUE(std::isnan(v)) << m << "," << n << " = " << v;
      else
        EXPECT_FALSE(std::isnan(v)) << m << "," << n;
    }
  EXPECT_EQ(c[size_t(2 * N + 0)], std::numeric_limits<float>::infinity());  // 2^128 * 1
}

TEST(GemmF32, RoundToF32IsOneCorrectRounding) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::round_to_f32(0x1p128 - 0x1p103), inf);  // midpoint past FLT_MAX ties to 2^128
  EXPECT_EQ(cpu::round_to_f32(-(0x1p128 - 0x1p103)), -inf);
  EXPECT_EQ(cpu::round_to_f32(0x1p128 - 0x1p103 - 0x1p75), FLT_MAX);  // one double ulp below it
  EXPECT_EQ(cpu::round_to_f32(0x1p200), inf);
  EXPECT_EQ(cpu::round_to_f32(0x1p-150), 0.0f);           // half the smallest subnormal: tie to 0
  EXPECT_EQ(cpu::round_to_f32(1.5 * 0x1p-149), 0x1p-148f);  // tie to the even subnormal
  EXPECT_EQ(cpu::round_to_f32(1.0 + 0x1p-24), 1.0f);      // tie to even
  EXPECT_EQ(cpu::round_to_f32(1.0 + 0x1p-24 + 0x1p-40), 1.0f + 0x1p-23f);
  EXPECT_TRUE(std::signbit(cpu::round_to_f32(-0.0)));
  EXPECT_TRUE(std::isnan(cpu::round_to_f32(std::nan(""))));
}

TEST(GemmF32, StridesCanariesAndThreads) {
  const int64_t M = 21, N = 37, K = 192, ldc = N + 7, extra_rows = 2;
  const auto a = randn_bf16(size_t(M * K), 91);
  const HostMx B = random_mx(N, K, 92);
  std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
  const PackedWeights P = prepack(B.view(), pbuf.data());
  std::vector<float> want(size_t(M * N));
  gemm(a.data(), M, K, K, P, want.data(), N);
  for (int threads : {1, 2, 5}) {
    Exec ex;
    ex.threads = threads;
    std::vector<float> c(size_t((M + extra_rows) * ldc), kPoison);
    gemm(a.data(), M, K, K, P, c.data(), ldc, {}, ex);
    for (int64_t m = 0; m < M + extra_rows; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        const float v = c[size_t(m * ldc + n)];
        if (m < M && n < N)
          ASSERT_EQ(bits(v), bits(want[size_t(m * N + n)])) << threads << " " << m << "," << n;
        else
          ASSERT_EQ(v, kPoison) << "canary " << m << "," << n;
      }
  }
}

TEST(GemmF32, ValidationNamesTheOffendingValues) {
  const int64_t M = 4, N = 8, K = 64;
  std::vector<uint16_t> a(size_t(M * K), 0x3F80);
  std::vector<float> c(size_t(64 * 64));
  const HostMx bq = random_mx(N, K, 1);
  const MxMatrix B = bq.view();
  std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
  const PackedWeights P = prepack(B, pbuf.data());
  float* null_c = nullptr;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, null_c, N); }, "C is a null pointer");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, null_c, N); }, "C is a null pointer");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, c.data(), 3); }, "ldc = 3");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, 96, 96, B, c.data(), N); }, "B.K = 64");
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(c.data()) + 2);
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, misaligned, N); }, "4 bytes (fp32 elements)");
  // C's byte size is 4 per element: a C starting inside A's last row overlaps it.
  auto* in_a = reinterpret_cast<float*>(a.data() + (M - 1) * K);
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, in_a, N); }, "overlaps input A");
  expect_throw<InvalidArgument>(
      [&] { gemm(a.data(), M, K, K, P, reinterpret_cast<float*>(pbuf.data() + pbuf.size() - 16), N); },
      "overlaps input B.data");
  Exec cuda;
  cuda.backend = Backend::cuda;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, c.data(), N, {}, cuda); }, "prepack");
}

}  // namespace
}  // namespace mxfp4::test
