// Boundary validation: each bad argument throws the documented exception type and the
// message names the offending value.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "common/expect_throw.hpp"
#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

struct Bufs {
  std::vector<uint16_t> x = std::vector<uint16_t>(64 * 64, 0x3F80);
  std::vector<uint8_t> codes = std::vector<uint8_t>(64 * 32);
  std::vector<uint8_t> scales = std::vector<uint8_t>(64 * 64, 127);  // room for shuffled too
  std::vector<float> out = std::vector<float>(64 * 64);
};

TEST(Validation, Quantize) {
  Bufs b;
  auto q = [&](int64_t rows, int64_t K, int64_t stride) {
    return [&, rows, K, stride] { quantize(b.x.data(), DType::bf16, rows, K, stride, b.codes.data(), b.scales.data()); };
  };
  expect_throw<InvalidArgument>(q(4, 33, 64), "K = 33");
  expect_throw<InvalidArgument>(q(4, 16, 64), "K = 16");
  expect_throw<InvalidArgument>(q(0, 64, 64), "rows = 0");
  expect_throw<InvalidArgument>(q(-3, 64, 64), "rows = -3");
  expect_throw<InvalidArgument>(q(4, 64, 40), "x_stride = 40");
  expect_throw<InvalidArgument>([&] { quantize(nullptr, DType::bf16, 4, 64, 64, b.codes.data(), b.scales.data()); },
                                "x is a null pointer");
  expect_throw<InvalidArgument>([&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, nullptr, b.scales.data()); },
                                "codes is a null pointer");
  expect_throw<InvalidArgument>([&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), nullptr); },
                                "scales is a null pointer");
  // Output inside the input, outputs overlapping each other (byte ranges).
  auto* xb = reinterpret_cast<uint8_t*>(b.x.data());
  expect_throw<InvalidArgument>([&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, xb + 100, b.scales.data()); },
                                "overlaps input x");
  expect_throw<InvalidArgument>(
      [&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.codes.data() + 127); }, "overlaps output");
  // Just past the end is fine: 4 rows x 32 bytes of codes end at +128.
  EXPECT_NO_THROW(quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.codes.data() + 128));
  expect_throw<TypeMismatch>([&] { quantize(b.x.data(), DType(7), 4, 64, 64, b.codes.data(), b.scales.data()); },
                             "dtype value 7");
  expect_throw<TypeMismatch>(
      [&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.scales.data(), ScaleRule(9)); },
      "rule value 9");
  expect_throw<TypeMismatch>(
      [&] {
        quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.scales.data(), ScaleRule::aiter, {},
                 ScaleLayout(5));
      },
      "layout value 5");
  Exec bad;
  bad.threads = -2;
  expect_throw<InvalidArgument>(
      [&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.scales.data(), ScaleRule::aiter, bad); },
      "threads = -2");
  Exec weird;
  weird.backend = Backend(4);
  expect_throw<InvalidArgument>(
      [&] { quantize(b.x.data(), DType::bf16, 4, 64, 64, b.codes.data(), b.scales.data(), ScaleRule::aiter, weird); },
      "backend value 4");
}

TEST(Validation, Dequantize) {
  Bufs b;
  MxMatrix q{b.codes.data(), b.scales.data(), 4, 64};
  expect_throw<TypeMismatch>([&] { dequantize(q, b.out.data(), DType::fp16, 64); }, "fp16");
  expect_throw<InvalidArgument>([&] { dequantize(q, b.out.data(), DType::fp32, 10); }, "out_stride = 10");
  expect_throw<InvalidArgument>([&] { dequantize(q, nullptr, DType::fp32, 64); }, "out is a null pointer");
  MxMatrix k48 = q;
  k48.K = 48;
  expect_throw<InvalidArgument>([&] { dequantize(k48, b.out.data(), DType::fp32, 64); }, "q.K = 48");
  MxMatrix sh = q;
  sh.rows = 17;
  sh.code_layout = CodeLayout::aiter_shuffled;
  expect_throw<InvalidArgument>([&] { dequantize(sh, b.out.data(), DType::fp32, 64); }, "rows = 17");
  MxMatrix nul = q;
  nul.codes = nullptr;
  expect_throw<InvalidArgument>([&] { dequantize(nul, b.out.data(), DType::fp32, 64); }, "q.codes is a null pointer");
  MxMatrix lay = q;
  lay.code_layout = CodeLayout(3);
  expect_throw<TypeMismatch>([&] { dequantize(lay, b.out.data(), DType::fp32, 64); }, "code layout value 3");
  expect_throw<InvalidArgument>([&] { dequantize(q, b.codes.data() + 8, DType::bf16, 64); }, "overlaps input q.codes");
}

TEST(Validation, Layouts) {
  Bufs b;
  std::vector<uint8_t> big(1 << 16);
  expect_throw<InvalidArgument>([&] { shuffle_scales(b.scales.data(), 0, 2, big.data()); }, "rows = 0");
  expect_throw<InvalidArgument>([&] { unshuffle_scales(big.data(), 3, -1, b.scales.data()); }, "kblocks = -1");
  expect_throw<InvalidArgument>([&] { shuffle_scales(big.data() + 10, 3, 2, big.data()); }, "overlaps");
  expect_throw<InvalidArgument>([&] { shuffle_weight(b.codes.data(), 24, 64, big.data()); }, "N = 24");
  expect_throw<InvalidArgument>([&] { unshuffle_weight(b.codes.data(), 16, 96, big.data()); }, "K = 96");
  expect_throw<InvalidArgument>([&] { shuffle_weight(b.codes.data(), 16, 64, nullptr); }, "shuffled is a null pointer");
  expect_throw<InvalidArgument>([&] { shuffled_scales_bytes(5, 0); }, "kblocks = 0");
  EXPECT_EQ(shuffled_scales_bytes(1, 1), 256 * 8);
  EXPECT_EQ(shuffled_scales_bytes(257, 9), 512 * 16);
}

TEST(Validation, Packed) {
  Bufs b;
  std::vector<uint8_t> out(1 << 16), tmp(1 << 16);
  expect_throw<InvalidArgument>([] { packed_bytes(0, 64); }, "N = 0");
  expect_throw<InvalidArgument>([] { packed_bytes(4, 40); }, "K = 40");
  MxMatrix q{b.codes.data(), b.scales.data(), 4, 64};
  expect_throw<InvalidArgument>([&] { prepack(q, nullptr); }, "out is a null pointer");
  MxMatrix k50 = q;
  k50.K = 50;
  expect_throw<InvalidArgument>([&] { prepack(k50, out.data()); }, "b.K = 50");
  expect_throw<InvalidArgument>([&] { prepack(q, b.codes.data() + 4); }, "overlaps input b.codes");
  expect_throw<InvalidArgument>(
      [&] { prepack_dense(b.x.data(), DType::bf16, 4, 64, 64, out.data(), nullptr); }, "tmp is a null pointer");
  expect_throw<InvalidArgument>(
      [&] { prepack_dense(b.x.data(), DType::bf16, 4, 64, 64, out.data(), out.data() + 100); }, "overlaps output");
  expect_throw<TypeMismatch>([&] { prepack_dense(b.x.data(), DType(3), 4, 64, 64, out.data(), tmp.data()); },
                             "dtype value 3");
  PackedWeights p{out.data(), 4, 64, kPackedLayoutVersion + 1};
  expect_throw<TypeMismatch>([&] { unpack(p, b.codes.data(), b.scales.data()); },
                             "version = " + std::to_string(kPackedLayoutVersion + 1));
  p.version = kPackedLayoutVersion;
  p.N = 0;
  expect_throw<InvalidArgument>([&] { unpack(p, b.codes.data(), b.scales.data()); }, "p.N = 0");
  p.N = 4;
  expect_throw<InvalidArgument>([&] { unpack(p, b.codes.data(), nullptr); }, "scales is a null pointer");
}

TEST(Validation, Gemm) {
  const int64_t M = 4, N = 8, K = 64;
  std::vector<uint16_t> a(M * K, 0x3F80), c(64 * 64);
  const HostMx bq = random_mx(N, K, 1);
  const MxMatrix B = bq.view();
  std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
  const PackedWeights P = prepack(B, pbuf.data());
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, 10, B, c.data(), N); }, "lda = 10");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, c.data(), 3); }, "ldc = 3");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, 96, 96, B, c.data(), N); }, "B.K = 64");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 0, K, K, B, c.data(), N); }, "M = 0");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, 40, K, B, c.data(), N); }, "K = 40");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, a.data() + 5, N); }, "overlaps input A");
  expect_throw<InvalidArgument>(
      [&] { gemm(a.data(), M, K, K, B, reinterpret_cast<uint16_t*>(const_cast<uint8_t*>(bq.codes.data())), N); },
      "overlaps input B.codes");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, reinterpret_cast<uint16_t*>(pbuf.data() + 2), N); },
                                "overlaps input B.data");
  expect_throw<InvalidArgument>([&] { gemm(nullptr, M, K, K, B, c.data(), N); }, "A is a null pointer");
  GemmOptions bad_rule;
  bad_rule.rule = ScaleRule(6);
  expect_throw<TypeMismatch>([&] { gemm(a.data(), M, K, K, B, c.data(), N, bad_rule); }, "rule value 6");
  PackedWeights old = P;
  old.version = 0;
  expect_throw<TypeMismatch>([&] { gemm(a.data(), M, K, K, old, c.data(), N); }, "version = 0");
  Exec cuda;
  cuda.backend = Backend::cuda;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, B, c.data(), N, {}, cuda); }, "prepack");
  expect_throw<InvalidArgument>([&] { gemm_quantized(B, B, c.data(), N, cuda); }, "Backend::cpu");
  GemmConfig cfg;
  cfg.block_n = 24;
  GemmOptions forced;
  forced.config = &cfg;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, c.data(), N, forced, cuda); }, "block_n = 24");
  cfg.block_n = 64;
  cfg.block_m = 12;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), M, K, K, P, c.data(), N, forced, cuda); }, "block_m = 12");
#if !defined(MXFP4_WITH_CUDA)
  cfg.block_m = 8;  // valid (dispatcher uses multiples of 8): reaches the backend, which is missing
  expect_throw<Error>([&] { gemm(a.data(), M, K, K, P, c.data(), N, forced, cuda); }, "without the CUDA backend");
#endif
  const HostMx aq = random_mx(M, 96, 2);
  expect_throw<InvalidArgument>([&] { gemm_quantized(aq.view(), B, c.data(), N); }, "A.K = 96");
  std::vector<double> f64(M * N);
  expect_throw<InvalidArgument>(
      [&] { gemm_reference(aq.view(), aq.view(), c.data(), M, f64.data(), f64.data() + 1); }, "overlaps output");
  expect_throw<InvalidArgument>([] { explain_gemm(0, 8, 64); }, "M = 0");
  expect_throw<InvalidArgument>([] { explain_gemm(1, 8, 31); }, "K = 31");
}

// Sizes whose padding, sums or products would overflow int64 are rejected by name before any
// arithmetic on them (docs/hardening.md); no signed overflow on the way (the API fuzzer runs
// these paths under UBSan).
TEST(Validation, HugeSizes) {
  constexpr int64_t kMax = INT64_MAX;
  expect_throw<InvalidArgument>([] { shuffled_scales_bytes(kMax, 1); }, "rows = 9223372036854775807");
  expect_throw<InvalidArgument>([] { shuffled_scales_bytes(1, kMax - 3); }, "kblocks = 9223372036854775804");
  expect_throw<InvalidArgument>([] { shuffled_scales_bytes(int64_t(1) << 40, int64_t(1) << 40); }, "too large");
  expect_throw<InvalidArgument>([] { packed_bytes(kMax, 64); }, "too large");
  expect_throw<InvalidArgument>([] { packed_bytes(1, kMax / 32 * 32); }, "too large");
  expect_throw<InvalidArgument>([] { packed_bytes(int64_t(1) << 32, int64_t(1) << 31); }, "too large");
  EXPECT_EQ(packed_bytes(1, 32), 16 * 64 / 2 + 16 * 64 / 32);
  // (rows - 1) * stride + K overflows although each term is below 2^62.
  std::vector<uint8_t> buf(256);
  const int64_t big = int64_t(1) << 62;
  expect_throw<InvalidArgument>(
      [&] { quantize(buf.data(), DType::bf16, 2, big, big, buf.data() + 64, buf.data() + 128); }, "too large");
  expect_throw<InvalidArgument>(
      [&] { quantize(buf.data(), DType::fp32, 3, 64, big, buf.data() + 64, buf.data() + 128); }, "too large");
  MxMatrix q{buf.data(), buf.data() + 32, 2, 64};
  expect_throw<InvalidArgument>(
      [&] { dequantize(q, reinterpret_cast<float*>(buf.data() + 128), DType::fp32, big); }, "too large");
  std::vector<uint16_t> a(64), c(64);
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 2, 64, big, q, c.data(), 2); }, "too large");
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 2, 64, 64, q, c.data(), big); }, "too large");
  // explain_gemm rejects every shape gemm() would reject for its size.
  expect_throw<InvalidArgument>([] { explain_gemm(kMax, 16, 64); }, "too large");
  expect_throw<InvalidArgument>([] { explain_gemm(1, int64_t(1) << 58, 64); }, "too large");
  expect_throw<InvalidArgument>([] { explain_gemm(int64_t(1) << 40, int64_t(1) << 40, 64); }, "too large");
  // K beyond 2^62 (a multiple of 32) with one row: too large, not an overflow.
  MxMatrix huge_k{buf.data(), buf.data() + 32, 1, kMax / 32 * 32};
  expect_throw<InvalidArgument>([&] { dequantize(huge_k, buf.data() + 128, DType::fp32, huge_k.K); }, "too large");
  PackedWeights p{buf.data(), kMax, 64, kPackedLayoutVersion};
  expect_throw<InvalidArgument>([&] { unpack(p, buf.data() + 64, buf.data() + 128); }, "too large");
  GemmOptions opt;
  opt.workspace = buf.data() + 192;
  opt.workspace_bytes = size_t(-1);
  const HostMx bq = random_mx(16, 64, 3);
  std::vector<uint8_t> pbuf(size_t(packed_bytes(16, 64)));
  const PackedWeights P = prepack(bq.view(), pbuf.data());
  std::vector<uint16_t> a64(64, 0x3F80), c16(16);
  expect_throw<InvalidArgument>([&] { gemm(a64.data(), 1, 64, 64, P, c16.data(), 16, opt); }, "workspace_bytes");
}

// Dense elements must sit at their own alignment (the CPU reads them as typed values); on CUDA
// packed weights and the GEMM workspace at 16 bytes. Messages name the pointer and the need.
TEST(Validation, Alignment) {
  alignas(64) static uint8_t raw[1 << 16];
  uint8_t* codes = raw + 8192;
  uint8_t* scales = raw + 12288;
  // quantize: fp32 at +2 (not 4-aligned), bf16/fp16 at +1.
  expect_throw<InvalidArgument>([&] { quantize(raw + 2, DType::fp32, 1, 32, 32, codes, scales); },
                                "x = ");
  expect_throw<InvalidArgument>([&] { quantize(raw + 2, DType::fp32, 1, 32, 32, codes, scales); },
                                "not aligned to 4 bytes (fp32 elements)");
  expect_throw<InvalidArgument>([&] { quantize(raw + 1, DType::bf16, 1, 32, 32, codes, scales); },
                                "not aligned to 2 bytes (bf16 elements)");
  expect_throw<InvalidArgument>([&] { quantize(raw + 1, DType::fp16, 1, 32, 32, codes, scales); },
                                "not aligned to 2 bytes (fp16 elements)");
  EXPECT_NO_THROW(quantize(raw + 4, DType::fp32, 1, 32, 32, codes, scales));
  EXPECT_NO_THROW(quantize(raw + 2, DType::bf16, 1, 32, 32, codes + 1, scales + 1));  // bytes: any address
  // dequantize: out at +1 / +2.
  const MxMatrix q{codes, scales, 1, 32};
  expect_throw<InvalidArgument>([&] { dequantize(q, raw + 2, DType::fp32, 32); }, "out = ");
  expect_throw<InvalidArgument>([&] { dequantize(q, raw + 1, DType::bf16, 32); }, "2 bytes");
  EXPECT_NO_THROW(dequantize(q, raw + 2, DType::bf16, 32));
  // prepack_dense: b.
  expect_throw<InvalidArgument>(
      [&] { prepack_dense(raw + 1, DType::bf16, 1, 32, 32, raw + 16384, raw + 32768); }, "b = ");
  // gemm: A and C are bf16 elements.
  const HostMx bq = random_mx(16, 64, 4);
  std::vector<uint8_t> pbuf(size_t(packed_bytes(16, 64)) + 16);
  const PackedWeights P = prepack(bq.view(), pbuf.data());
  auto* a_odd = reinterpret_cast<const uint16_t*>(raw + 1);
  auto* c_odd = reinterpret_cast<uint16_t*>(raw + 16385);
  auto* c_ok = reinterpret_cast<uint16_t*>(raw + 16384);
  auto* a_ok = reinterpret_cast<const uint16_t*>(raw);
  expect_throw<InvalidArgument>([&] { gemm(a_odd, 1, 64, 64, P, c_ok, 16); }, "A = ");
  expect_throw<InvalidArgument>([&] { gemm(a_ok, 1, 64, 64, P, c_odd, 16); }, "C = ");
  expect_throw<InvalidArgument>([&] { gemm(a_ok, 1, 64, 64, bq.view(), c_odd, 16); }, "C = ");
  expect_throw<InvalidArgument>([&] { gemm_quantized(q, q, c_odd, 1); }, "C = ");
  expect_throw<InvalidArgument>([&] { gemm_reference(q, q, c_odd, 1); }, "C = ");
  expect_throw<InvalidArgument>(
      [&] { gemm_reference(q, q, c_ok, 1, reinterpret_cast<double*>(raw + 20004)); }, "out_f64 = ");
  expect_throw<InvalidArgument>(
      [&] { gemm_reference(q, q, c_ok, 1, nullptr, reinterpret_cast<double*>(raw + 20001)); }, "out_abs = ");
  // On the CPU packed weights may sit at any address (read byte by byte).
  std::vector<uint8_t> shifted(pbuf.size());
  std::copy(pbuf.begin(), pbuf.end() - 16, shifted.begin() + 1);
  const PackedWeights P1{shifted.data() + 1, 16, 64, kPackedLayoutVersion};
  std::vector<uint16_t> c1(16), c2(16);
  gemm(a_ok, 1, 64, 64, P, c1.data(), 16);
  gemm(a_ok, 1, 64, 64, P1, c2.data(), 16);
  EXPECT_EQ(c1, c2);
  // On CUDA: packed data and the workspace need 16 bytes. Checked before the backend runs
  // (these are host pointers: only the alignment check may fire).
  Exec cuda;
  cuda.backend = Backend::cuda;
  expect_throw<InvalidArgument>([&] { gemm(a_ok, 1, 64, 64, P1, c_ok, 16, {}, cuda); },
                                "B.data = ");
  expect_throw<InvalidArgument>([&] { gemm(a_ok, 1, 64, 64, P1, c_ok, 16, {}, cuda); }, "16 bytes");
  expect_throw<InvalidArgument>([&] { unpack(P1, codes, scales, cuda); }, "p.data = ");
  expect_throw<InvalidArgument>([&] { prepack(bq.view(), raw + 32772, cuda); }, "out = ");
  expect_throw<InvalidArgument>(
      [&] { prepack_dense(raw, DType::bf16, 1, 32, 32, raw + 32776, raw + 49152, ScaleRule::aiter, cuda); },
      "out = ");
  GemmOptions ws;
  ws.workspace = raw + 49160;
  ws.workspace_bytes = 1024;
  expect_throw<InvalidArgument>([&] { gemm(a_ok, 1, 64, 64, P, c_ok, 16, ws, cuda); }, "GemmOptions::workspace = ");
}

// A forced GemmConfig is validated on every backend (the CPU ignores it, but a bad one is a
// caller bug); a valid one is accepted on the CPU and does not change the result.
TEST(Validation, ForcedConfigOnCpu) {
  const HostMx bq = random_mx(16, 64, 5);
  std::vector<uint16_t> a(64, 0x3F80), c(16), c_ref(16);
  GemmConfig cfg;
  cfg.split_k = 9;
  GemmOptions forced;
  forced.config = &cfg;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 1, 64, 64, bq.view(), c.data(), 16, forced); }, "split_k = 9");
  cfg = GemmConfig{};
  cfg.warps = 0;
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 1, 64, 64, bq.view(), c.data(), 16, forced); }, "warps = 0");
  cfg = GemmConfig{};
  cfg.path = GemmPath(7);
  expect_throw<InvalidArgument>([&] { gemm(a.data(), 1, 64, 64, bq.view(), c.data(), 16, forced); }, "path value 7");
  cfg = GemmConfig{};
  gemm(a.data(), 1, 64, 64, bq.view(), c.data(), 16, forced);
  gemm(a.data(), 1, 64, 64, bq.view(), c_ref.data(), 16);
  EXPECT_EQ(c, c_ref);
}

TEST(Validation, BuildInfo) {
  EXPECT_TRUE(std::regex_match(std::string(version()), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")));
#if defined(MXFP4_WITH_CUDA)
  EXPECT_TRUE(built_with_cuda());
  EXPECT_GE(cuda_device_count(), 0);
  expect_throw<InvalidArgument>([] { cuda_device_info(-1); }, "-1");
#else
  EXPECT_FALSE(built_with_cuda());
  EXPECT_EQ(cuda_device_count(), 0);
  expect_throw<Error>([] { cuda_device_info(0); }, "without the CUDA backend");
  Exec cuda;
  cuda.backend = Backend::cuda;
  std::vector<uint16_t> x(64, 0);
  std::vector<uint8_t> c(32), s(2);
  expect_throw<Error>([&] { quantize(x.data(), DType::bf16, 1, 64, 64, c.data(), s.data(), ScaleRule::aiter, cuda); },
                      "without the CUDA backend");
#endif
}

}  // namespace
}  // namespace mxfp4::test
