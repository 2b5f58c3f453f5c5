// Path "fp8" (issue 6, docs/fp8-path.md): the GPU 8-bit images are byte-identical to the CPU
// oracle fp8::build_image; wide groups (the 2^-20 / 2^+20 tile, in weights and in
// activation rows) are computed exactly in the GEMM with one exponent per block, flagged ones
// (NaN blocks, exponents out of range) by the fix-up; cancelling slices of narrow and of wide
// groups and K = 16384 keep spec §3's bound. The fp8 configurations also run in every general
// GPU GEMM test (tests/gpu/test_gpu_gemm.cpp, gpu_cases.hpp).
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "common/test_util.hpp"
#include "core/fp8_layout.hpp"
#include "cpu/fp8_plan.hpp"
#include "cuda/fp8_kernels.hpp"
#include "gpu/gpu_cases.hpp"
#include "gpu/gpu_util.hpp"

namespace mxfp4::test {
namespace {

/// Sets block b of row r of `m` to `code` in every element and scale byte `sb`.
void set_block(HostMx& m, int64_t r, int64_t b, uint8_t code, uint8_t sb) {
  for (int64_t k = 32 * b; k < 32 * b + 32; k += 2) m.codes[size_t(r * m.K / 2 + k / 2)] = uint8_t(code | code << 4);
  m.scales[size_t(r * (m.K / 32) + b)] = sb;
}

/// Weights with adversarial groups: rows 0..127 form the 128 x 128 tile with block
/// maxima 2^-20 and 2^+20 in every row's first slice (wide groups); rows 130..133 get an
/// all-zero block, a NaN block (flagged), exponent 60 (flagged) and a span of 14 (wide).
HostMx adversarial_weights(int64_t N, int64_t K, uint64_t seed) {
  HostMx b = random_mx(N, K, seed);
  for (int64_t r = 0; r < 128; ++r) {
    set_block(b, r, 0, 0x7, 127 - 20 - 2);  // 6 * 2^-22: block max 1.5 * 2^-20
    set_block(b, r, 1, 0x5 | ((r & 1) << 3), 127 + 20 - 1);
  }
  set_block(b, 130, 2, 0x0, 0);
  set_block(b, 131, 1, 0x3, 0xFF);
  for (int64_t blk = 4; blk < std::min<int64_t>(8, K / 32); ++blk) set_block(b, 132, blk, 0x2, 127 + 60);
  set_block(b, 133, 0, 0x2, 120), set_block(b, 133, 1, 0x2, 134);
  return b;
}

/// The exact reference of A_q * B^T: unrounded sums and sum_k |a_k b_k| (gemm_reference).
struct Reference {
  std::vector<double> sum, abs_sum;
  Reference(const HostMx& aq, const HostMx& b)
      : sum(size_t(aq.rows * b.rows)), abs_sum(size_t(aq.rows * b.rows)) {
    std::vector<uint16_t> bf16(sum.size());
    gemm_reference(aq.view(), b.view(), bf16.data(), b.rows, sum.data(), abs_sum.data());
  }
};

/// Runs gemm with `cfg` into a poisoned bf16 C [M, N] and returns it.
std::vector<uint16_t> run_gemm(const DeviceBuf& a, int64_t M, int64_t K, const PackedWeights& pw, const GemmConfig* cfg) {
  DeviceBuf c(size_t(M * pw.N * 2), 0xFF);
  GemmOptions opt;
  opt.config = cfg;
  gemm(a.get<uint16_t>(), M, K, K, pw, c.get<uint16_t>(), pw.N, opt, cuda_exec());
  return c.download<uint16_t>();
}

/// Flags every `every`-th weight row of b for path fp8's fix-up: its first two blocks get the
/// scales 2^-60 and 2^60 (block exponents out of [-47, 49], fp8::group_range).
void flag_weight_rows(HostMx& b, int64_t every) {
  for (int64_t r = 0; r < b.rows; r += every) set_first_scales(b, r, -60, 60);
}

/// Flags every `every`-th row of bf16 A [M, K] likewise: its first two blocks scaled by 2^-60
/// and 2^60.
void flag_activation_rows(std::vector<uint16_t>& a, int64_t M, int64_t K, int64_t every) {
  for (int64_t r = 0; r < M; r += every) spread_first_blocks(a, K, r, 60);
}

/// Asserts that exactly the rows r % every == 0 of m have a flagged group in their first slice
/// (fp8::plan_groups), so that a test flags what it means to.
void assert_flagged_every(const HostMx& m, int64_t every, const char* what) {
  const fp8::GroupPlan plan = fp8::plan_groups(m.view());
  for (int64_t r = 0; r < m.rows; ++r) ASSERT_EQ(plan.exact[size_t(r * plan.slices)], r % every != 0) << what << " " << r;
}

/// ImageKernel::automatic, then every kernel it can stand for, each forced.
std::vector<cuda::ImageKernel> automatic_and_every_image_kernel() {
  std::vector<cuda::ImageKernel> k{cuda::ImageKernel::automatic};
  k.insert(k.end(), std::begin(cuda::kEveryImageKernel), std::end(cuda::kEveryImageKernel));
  return k;
}

TEST(GpuFp8, WeightImageIsByteIdenticalToTheCpuOracle) {
  MXFP4_REQUIRE_GPU();
  for (const auto& [N, K] : {std::pair<int64_t, int64_t>{200, 2880}, {136, 96}, {300, 512}}) {
    const HostMx b = adversarial_weights(N, K, 910001 + N);
    const DevicePacked pk(b);
    const std::vector<uint8_t> gpu = pk.fp8->download<uint8_t>();
    std::vector<uint8_t> cpu(size_t(fp8_weights_bytes(N, K)), 0x5A);
    fp8::build_image(b.view(), cpu.data());
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) ASSERT_EQ(gpu[i], cpu[i]) << N << "x" << K << " byte " << i;
    // Each image kernel, forced, into poison: the same bytes.
    for (const auto kernel : cuda::kEveryImageKernel) {
      DeviceBuf img(random_bytes(cpu.size(), 910101 + N));
      cuda::fp8_image_from_packed(pk.pw, img.get(), nullptr, kernel);
      const std::vector<uint8_t> forced = img.download<uint8_t>();
      for (size_t i = 0; i < cpu.size(); ++i)
        ASSERT_EQ(forced[i], cpu[i]) << N << "x" << K << " kernel " << int(kernel) << " byte " << i;
    }
    // The public CPU prepack_fp8 writes the same bytes from the packed layout.
    std::vector<uint8_t> packed(size_t(packed_bytes(N, K))), cpu2(cpu.size(), 0xA5);
    const PackedWeights hp = prepack(b.view(), packed.data());
    const PackedWeights h8 = prepack_fp8(hp, cpu2.data());
    EXPECT_EQ(h8.fp8, cpu2.data());
    EXPECT_EQ(cpu2, cpu) << N << "x" << K;
  }
}

TEST(GpuFp8, ActivationImageIsByteIdenticalToTheCpuOracle) {
  MXFP4_REQUIRE_GPU();
  // K = 672: 6 slices (one chain chunk), the last one 32 wide; K = 2080: 17 slices (three
  // chunks, the last of one slice, 32 wide); K = 1376 with M = 257: 11 slices (a last chunk of
  // 3, the last slice 96 wide) and a 16-row tile of one real row (session 21's review).
  for (const auto& [M, K] : {std::pair<int64_t, int64_t>{150, 672}, {150, 2080}, {257, 1376}}) {
    std::vector<uint16_t> a = randn_bf16(size_t(M * K), 920001);
    // Row 10: a block of -2^-133 (scale byte 0, every code -0) among normal blocks, so its
    // shift s - e lies far outside [1, 4] while its bytes must stay 0 (review, session 11).
    for (int64_t k = 32; k < 64; ++k) a[size_t(10 * K + k)] = 0x8001;
    for (int64_t k = 0; k < 32; ++k) a[size_t(5 * K + k)] = fmt::f32_to_bf16(0x1p20f);   // row 5: span 40
    for (int64_t k = 32; k < 64; ++k) a[size_t(5 * K + k)] = fmt::f32_to_bf16(0x1p-20f);
    for (int64_t k = 64; k < 96; ++k) a[size_t(11 * K + k)] = fmt::f32_to_bf16(0x1p-60f);  // row 11: out of range
    a[size_t(7 * K + 300)] = 0x7FC0;                                                     // row 7: NaN
    for (int64_t k = 128; k < 160; ++k) a[size_t(100 * K + k)] = fmt::f32_to_bf16(0x1p-20f);  // row 100 (quarter 6):
    for (int64_t k = 160; k < 192; ++k) a[size_t(100 * K + k)] = fmt::f32_to_bf16(0x1p20f);   // span 40 in slice 1
    for (int64_t k = 128; k < 256; ++k) a[size_t(9 * K + k)] = 0;                         // row 9: zero slice
    // Rows 20..59: every block scaled by 2^e, e drawn from [-7, 7] per block (narrow and wide
    // groups, shifts s - e over the whole range [kMinShift, kMaxShift]); rows 60..63:
    // +-1.5 * 2^e with e = -7 and +7 in alternate blocks (block exponents exactly 14 apart
    // under every rule: wide), rows 64..67 the same with e = 0 and 3 (exactly 3 apart: narrow).
    std::mt19937_64 rng(920002);
    for (int64_t r = 20; r < 68; ++r)
      for (int64_t b = 0; b < K / 32; ++b) {
        const int e = r < 60 ? int(rng() % 15) - 7 : r < 64 ? (b % 2 ? 7 : -7) : (b % 2 ? 3 : 0);
        for (int64_t k = 32 * b; k < 32 * b + 32; ++k) {
          const float x = r < 60 ? fmt::bf16_to_f32(a[size_t(r * K + k)]) : (rng() % 2 ? 1.5f : -1.5f);
          a[size_t(r * K + k)] = fmt::f32_to_bf16(std::ldexp(x, e));
        }
      }
    const DeviceBuf da(a);
    const int64_t bytes = fp8::ImageGeometry::of(M, K).total_bytes();
    for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
      const HostMx aq = quantize_bf16(a, M, K, rule);
      std::vector<uint8_t> cpu(static_cast<size_t>(bytes));
      fp8::build_image(aq.view(), cpu.data());
      for (const auto kernel : automatic_and_every_image_kernel()) {
        DeviceBuf img(random_bytes(size_t(bytes), 920101 + K));
        cuda::fp8_image_from_bf16(da.get<uint16_t>(), M, K, K, rule, img.get(), nullptr, kernel);
        const std::vector<uint8_t> gpu = img.download<uint8_t>();
        for (size_t i = 0; i < cpu.size(); ++i)
          ASSERT_EQ(gpu[i], cpu[i]) << "rule " << int(rule) << " kernel " << int(kernel) << " byte " << i;
      }
      const fp8::GroupPlan plan = fp8::plan_groups(aq.view());
      auto at = [&](int64_t r, int64_t j) { return size_t(r * plan.slices + j); };
      EXPECT_TRUE(plan.exact[at(5, 0)] && plan.wide[at(5, 0)]);
      EXPECT_FALSE(plan.exact[at(11, 0)]);
      EXPECT_FALSE(plan.exact[at(7, 2)]);
      EXPECT_TRUE(plan.exact[at(100, 1)] && plan.wide[at(100, 1)]);
      EXPECT_TRUE(plan.exact[at(9, 1)]);
      EXPECT_TRUE(plan.exact[at(60, 1)] && plan.wide[at(60, 1)]);     // span 14
      EXPECT_TRUE(plan.exact[at(64, 1)] && !plan.wide[at(64, 1)]);    // span 3
    }
  }
}

/// A with an odd row stride (lda = K + 3: most 8-element quarters are not 16-byte aligned, so
/// the image kernels take their out-of-line unaligned loads), every image kernel, against the
/// CPU oracle byte for byte. K = 1088: one whole chain chunk and one of half a slice's width.
TEST(GpuFp8, ActivationImageOfAnOddlyStridedViewIsByteIdentical) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 40, K = 1088, lda = K + 3;
  const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 930001);
  DeviceBuf da(size_t(((M - 1) * lda + K) * 2), NoInit{});
  cuda_ok(cudaMemcpy2D(da.get(), size_t(lda) * 2, a.data(), size_t(K) * 2, size_t(K) * 2, size_t(M), cudaMemcpyHostToDevice),
          "cudaMemcpy2D H2D");
  const int64_t bytes = fp8::ImageGeometry::of(M, K).total_bytes();
  std::vector<uint8_t> cpu(static_cast<size_t>(bytes));
  fp8::build_image(quantize_bf16(a, M, K).view(), cpu.data());
  for (const auto kernel : automatic_and_every_image_kernel()) {
    DeviceBuf img(random_bytes(size_t(bytes), 930101));
    cuda::fp8_image_from_bf16(da.get<uint16_t>(), M, K, lda, ScaleRule::aiter, img.get(), nullptr, kernel);
    const std::vector<uint8_t> gpu = img.download<uint8_t>();
    for (size_t i = 0; i < cpu.size(); ++i) ASSERT_EQ(gpu[i], cpu[i]) << "kernel " << int(kernel) << " byte " << i;
  }
}

/// The adversarial groups in weights and activations, every fp8 tile shape, bf16 and
/// fp32 outputs, every element against the exact reference.
TEST(GpuFp8, FlaggedGroupsInWeightsAndActivationsStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 200, N = 264, K = 512;
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 930001);
  for (int64_t r = 64; r < 192; ++r) {  // a 128-row activation tile with maxima 2^20 / 2^-20
    for (int64_t k = 0; k < 32; ++k) a[size_t(r * K + k)] = fmt::f32_to_bf16((k % 3 ? 0x1p20f : -0x1.8p19f));
    for (int64_t k = 32; k < 64; ++k) a[size_t(r * K + k)] = fmt::f32_to_bf16(0x1p-20f * float(1 + k % 5));
  }
  for (int64_t k = 256; k < 384; ++k) a[size_t(3 * K + k)] = 0;  // zero blocks
  a[size_t(10 * K + 77)] = 0x7FC0;                             // NaN: row 10 of C is NaN
  const HostMx aq = quantize_bf16(a, M, K), b = adversarial_weights(N, K, 930002);
  const DeviceBuf da(a);
  const DevicePacked pk(b);
  const Reference r(aq, b);
  const std::vector<double>&ref = r.sum, &abs_sum = r.abs_sum;
  for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(64, 128), fp8_cfg(128, 64),
                                fp8_cfg(64, 64), fp8_cfg(256, 128), fp8_cfg(128, 64, false, 2)}) {
    const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
    const ContractReport rep = check_gemm_contract(C.data(), M, N, N, ref.data(), abs_sum.data());
    EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
    for (int64_t n = 0; n < N; ++n) EXPECT_TRUE(std::isnan(fmt::bf16_to_f32(C[size_t(10 * N + n)]))) << n;
    // fp32 output: the same contract without the final rounding.
    DeviceBuf c32(size_t(M * N * 4), 0xFF);
    GemmOptions opt;
    opt.config = &cfg;
    gemm(da.get<uint16_t>(), M, K, K, pk.pw, c32.get<float>(), N, opt, cuda_exec());
    const std::vector<float> C32 = c32.download<float>();
    const ContractReport rep32 = check_gemm_contract_f32(C32.data(), M, N, N, ref.data(), abs_sum.data());
    EXPECT_TRUE(rep32.ok()) << "fp32 C " << describe(cfg) << ": " << rep32.str();
  }
}

/// Many flagged lines scattered over both operands (the fix-up collects them in row order and
/// recomputes them 16 lines x 64 rows of the other operand at a time): every 7th activation
/// row and every 5th weight row with a 2^-60 / 2^60 pair of blocks (exponents out of range),
/// then every activation row flagged (1100 lines: five windows of 256). Tiles of 128 x 128,
/// split-K, and 64 x 64 (180 tiles: more than the SMs, CTAs store several).
/// M and N are not multiples of 64, K = 224 ends in a partial slice; every element of C within
/// the contract, and bitwise reproducible.
TEST(GpuFp8, ManyScatteredFlaggedLinesStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 1100, N = 600, K = 224;
  HostMx b = random_mx(N, K, 931002);
  flag_weight_rows(b, 5);
  ASSERT_NO_FATAL_FAILURE(assert_flagged_every(b, 5, "weight row"));
  const DevicePacked pk(b);
  for (int64_t every : {7, 1}) {
    std::vector<uint16_t> a = randn_bf16(size_t(M * K), 931001 + every);
    flag_activation_rows(a, M, K, every);
    const HostMx aq = quantize_bf16(a, M, K);
    ASSERT_NO_FATAL_FAILURE(assert_flagged_every(aq, every, "row"));
    const DeviceBuf da(a);
    const Reference r(aq, b);
    for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(128, 64, false, 2), fp8_cfg(64, 64)}) {
      const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
      const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
      EXPECT_TRUE(rep.ok()) << describe(cfg) << " every " << every << ": " << rep.str();
      EXPECT_EQ(run_gemm(da, M, K, pk.pw, &cfg), C) << describe(cfg) << " every " << every << ": not reproducible";
    }
  }
}

/// The fix-up on every grid shape: flagged lines (every 9th activation row, every 11th weight
/// row: a 2^-60 / 2^60 pair of blocks) under a persistent grid whose CTAs store several tiles
/// (64 x 64: 170 tiles), 128 x 128, the 20-warp 128 x 128, the 2-CTA pair, 192 x 128, and
/// split-K clusters whose ranks store uneven row shares, some without a slice (K = 160: 2
/// slices, split 3 and 6). Every element within the contract, bitwise reproducible.
TEST(GpuFp8, FlaggedLinesInPersistentAndSplitTilesStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 1040, N = 600, K = 160;
  HostMx b = random_mx(N, K, 932002);
  flag_weight_rows(b, 11);
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 932001);
  flag_activation_rows(a, M, K, 9);
  const HostMx aq = quantize_bf16(a, M, K);
  ASSERT_NO_FATAL_FAILURE(assert_flagged_every(aq, 9, "row"));
  ASSERT_NO_FATAL_FAILURE(assert_flagged_every(b, 11, "weight row"));
  const DeviceBuf da(a);
  const DevicePacked pk(b);
  const Reference ref(aq, b);
  for (const GemmConfig& cfg : {fp8_cfg(64, 64), fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(256, 128),
                                GemmConfig{GemmPath::fp8, 128, 192, 1, 16}, fp8_cfg(128, 64, false, 3),
                                fp8_cfg(64, 128, false, 6)}) {
    const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
    const ContractReport rep = check_gemm_contract(C.data(), M, N, N, ref.sum.data(), ref.abs_sum.data());
    EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
    EXPECT_EQ(run_gemm(da, M, K, pk.pw, &cfg), C) << describe(cfg) << ": not reproducible";
  }
}

/// bf16 A [M, K] and B [N, K] whose 128-K slices have blocks of different scales that cancel:
/// every A row repeats 6 x32, `a1` x32, 6 x32, 0 x32 and every B row 6 x32, 1.5 x32, -6 x32,
/// 0 x32, so each slice contributes 1152 + 48 a1 - 1152 = 48 a1 exactly.
std::pair<std::vector<uint16_t>, std::vector<uint16_t>> cancelling_slices(int64_t M, int64_t N, int64_t K, float a1) {
  std::vector<uint16_t> a(size_t(M * K)), b(size_t(N * K));
  const float av[4] = {6.f, a1, 6.f, 0.f}, bv[4] = {6.f, 1.5f, -6.f, 0.f};
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t m = 0; m < M; ++m) a[size_t(m * K + k)] = fmt::f32_to_bf16(av[(k / 32) % 4]);
    for (int64_t n = 0; n < N; ++n) b[size_t(n * K + k)] = fmt::f32_to_bf16(bv[(k / 32) % 4]);
  }
  return {a, b};
}

/// Split-K clusters (2 to 8 CTAs per tile, on every tile shape; splits that do not divide the
/// tile's rows share the reduction's rows unevenly): every element within the contract,
/// including ranks that get no slice (K = 384: 3 slices, split 4 to 8), and the
/// rank-ordered reduction is bitwise reproducible across calls and equal with fp32 output.
TEST(GpuFp8, SplitKClustersStayWithinContractAndDeterministic) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 130, N = 200;
  for (int64_t K : {384, 2048}) {
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 940001 + K);
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, 940002 + K);
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    const Reference r(aq, b);
    for (int split : {2, 3, 4, 5, 6, 7, 8}) {
      for (const GemmConfig& cfg : {fp8_cfg(128, 64, false, split), fp8_cfg(64, 64, false, split),
                                    fp8_cfg(128, 128, true, split), fp8_cfg(64, 128, false, split)}) {
        const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
        const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
        EXPECT_TRUE(rep.ok()) << describe(cfg) << " K=" << K << ": " << rep.str();
        EXPECT_EQ(run_gemm(da, M, K, pk.pw, &cfg), C) << describe(cfg) << " K=" << K << ": not reproducible";
      }
    }
  }
}

/// Path fp8 at decode sizes (M <= 64; tune candidates since session 13, the dispatcher's choice
/// for 32 < M <= 64 with N x K >= 10 Mi weights since session 23): 64-token tiles with most
/// rows past M, unsplit and split-K clusters (split 8 over 8 slices gives every rank one),
/// every element within the contract and reproducible.
TEST(GpuFp8, SmallMTilesStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t N = 200, K = 1024;
  for (int64_t M : {1, 7, 16, 64}) {
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 950001 + M);
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, 950002 + M);
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    const Reference r(aq, b);
    for (const GemmConfig& cfg : {fp8_cfg(64, 64), fp8_cfg(64, 64, false, 2), fp8_cfg(64, 64, false, 8),
                                  fp8_cfg(64, 128, true), fp8_cfg(64, 128, true, 4)}) {
      const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
      const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
      EXPECT_TRUE(rep.ok()) << describe(cfg) << " M=" << M << ": " << rep.str();
      EXPECT_EQ(run_gemm(da, M, K, pk.pw, &cfg), C) << describe(cfg) << " M=" << M << ": not reproducible";
    }
  }
}

/// Blocks of different scale in one slice, with a cancelling sum. a1 = 0.75 (block exponents
/// 0 and -3: narrow groups, the slice's four k32 sums chain in the tensor core): 36 per slice.
/// a1 = 0.375 (exponents 0 and -4: wide A groups, one promotion per block): 18 per slice. The
/// e4m3 tensor core, whose adder keeps 13 fraction bits and truncates, gave 16 for the latter
/// slice summed whole (session 3: the reason the e4m3 design promoted every block).
TEST(GpuFp8, BlocksOfDifferentScaleInOneSliceStayExact) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 256, N = 128, K = 256;  // the pattern in both slices
  for (const float a1 : {0.75f, 0.375f}) {
    const auto [a, b] = cancelling_slices(M, N, K, a1);
    const HostMx aq = quantize_bf16(a, M, K);
    const fp8::GroupPlan plan = fp8::plan_groups(aq.view());
    ASSERT_EQ(bool(plan.wide[0]), a1 < 0.5f);
    const DeviceBuf da(a);
    const DevicePacked pk(quantize_bf16(b, N, K));
    // Every consumer shape: WN = 128 (two m64n64 blocks), the 64 x 64 warpgroups of one, two
    // and four per CTA, and the cluster pair.
    for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(64, 64), fp8_cfg(128, 64),
                                  fp8_cfg(64, 128, true), fp8_cfg(256, 128)}) {
      const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
      for (size_t i = 0; i < C.size(); ++i)
        ASSERT_EQ(fmt::bf16_to_f32(C[i]), 2 * 48 * a1) << describe(cfg) << " a1 " << a1 << " element " << i;
    }
  }
}

/// K = 16384 (512 promotions) with an exactly known answer: A = 1, B row n alternates +6 and
/// -4 times 2^(n % 7 - 3) along K, so every C[m, n] = 8192 * 2 * 2^(n % 7 - 3) exactly; and a
/// random K = 16384 problem within spec §3's bound.
TEST(GpuFp8, K16384PromotionKeepsTheBound) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 256, N = 128, K = 16384;
  const DeviceBuf a_one(std::vector<uint16_t>(size_t(M * K), fmt::f32_to_bf16(1.0f)));
  HostMx b;
  b.rows = N, b.K = K;
  b.codes.assign(size_t(N * K / 2), 0);
  b.scales.assign(size_t(N * K / 32), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < K / 32; ++blk) {
      set_block(b, n, blk, 0x7, uint8_t(127 + n % 7 - 3));  // +6 everywhere, then -4 at odd k
      for (int64_t k = 32 * blk + 1; k < 32 * blk + 32; k += 2) {
        uint8_t& byte = b.codes[size_t(n * K / 2 + k / 2)];
        byte = uint8_t((byte & 0x0F) | (0xE << 4));  // code 0xE = -4
      }
    }
  const DevicePacked pk(b);
  for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(64, 64), fp8_cfg(256, 128)}) {
    const std::vector<uint16_t> C = run_gemm(a_one, M, K, pk.pw, &cfg);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        ASSERT_EQ(fmt::bf16_to_f32(C[size_t(m * N + n)]), std::ldexp(16384.0f, int(n % 7) - 3))
            << describe(cfg) << " at (" << m << ", " << n << ")";
  }
  const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 940001);
  const HostMx aq = quantize_bf16(a, M, K), br = random_mx(N, K, 940002);
  const DeviceBuf da(a);
  const DevicePacked pr(br);
  const Reference r(aq, br);
  const GemmConfig cfg = fp8_cfg(128, 128);
  const std::vector<uint16_t> C = run_gemm(da, M, K, pr.pw, &cfg);
  const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
  EXPECT_TRUE(rep.ok()) << rep.str();
  RecordProperty("worst_ratio", std::to_string(rep.worst_ratio));
  std::printf("K = 16384 random: worst |C - ref| / bound = %.4f\n", rep.worst_ratio);
}

/// Chains of narrow slices (fp8_layout.hpp: consecutive slices whose rows keep their R add
/// into one s32 sum, promoted once per chain):
/// - the largest chain sums: A and B all 6, but 3 in the first slice of every chain chunk
///   (and 0.75 in its block 3, with one 0.0625 at the block's first element), so the chunk's
///   first slice gets R = -4 and the rest keep it with codes 96: each chain sums 96 * 48^2 +
///   31 * 12^2 + 1 + 7 * 128 * 96^2 = 8483185 < 2^24 in the tensor core, an odd sum that a
///   chain across a chunk's end (beyond 2^24) could not convert exactly. The fp32 output is
///   the chains' sums promoted in K order, one FFMA each;
/// - random operands whose chains break mid-chunk for some rows only: a slice scaled by 2^-3
///   (another R), a wide slice, a zero slice, a NaN block, in A rows and B rows; K = 4480 (35
///   slices) so that split-K ranges end inside a chunk. Every fp8 tile shape, within spec §3.
TEST(GpuFp8, ChainsOfNarrowSlicesStayExact) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 256, N = 192, K = 4480, S = K / 128;
  auto chain_pattern = [&](int64_t rows) {
    std::vector<uint16_t> x(size_t(rows * K), fmt::f32_to_bf16(6.0f));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k) {
        if ((k / 128) % fp8::kChainSlices != 0) continue;
        const int64_t kk = k % 128;  // the chunk's first slice
        x[size_t(r * K + k)] = fmt::f32_to_bf16(kk < 96 ? 3.0f : kk == 96 ? 0.0625f : 0.75f);
      }
    return x;
  };
  {
    const std::vector<uint16_t> a = chain_pattern(M), b = chain_pattern(N);
    const HostMx bq = quantize_bf16(b, N, K);
    const fp8::GroupPlan plan = fp8::plan_groups(bq.view());
    for (int64_t j = 0; j < S; ++j) {  // chains of 8 slices (the last chunk: 3), R = -4
      ASSERT_EQ(plan.R[size_t(j)], -4) << j;
      ASSERT_EQ(bool(plan.cont[size_t(j)]), !fp8::chunk_ends(j, S)) << j;
    }
    // The chains' exact integer sums (codes 48, 12, 1 and 96), promoted in K order with the
    // scale 2^(-4 - 4) as the GEMM does: fmaf(float(S), 2^-8, acc).
    const int64_t first = 96 * 48 * 48 + 31 * 12 * 12 + 1, rest = 128 * 96 * 96;
    float want = 0.f;
    for (int64_t c = 0; c < S; c += fp8::kChainSlices) {
      const int64_t sum = first + (std::min<int64_t>(S, c + fp8::kChainSlices) - c - 1) * rest;
      ASSERT_LT(sum, int64_t{1} << 24);
      want = std::fmaf(float(sum), 0x1p-8f, want);
    }
    const DeviceBuf da(a);
    const DevicePacked pk(bq);
    for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(64, 64), fp8_cfg(256, 128)}) {
      DeviceBuf c32(size_t(M * N * 4), 0xFF);
      GemmOptions opt;
      opt.config = &cfg;
      gemm(da.get<uint16_t>(), M, K, K, pk.pw, c32.get<float>(), N, opt, cuda_exec());
      const std::vector<float> C = c32.download<float>();
      for (size_t i = 0; i < C.size(); ++i) ASSERT_EQ(C[i], want) << describe(cfg) << " element " << i;
    }
  }
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 950001), b = randn_bf16(size_t(N * K), 950002);
  auto scale_range = [&](std::vector<uint16_t>& x, int64_t r, int64_t k0, int64_t k1, float f) {
    for (int64_t k = k0; k < k1; ++k) x[size_t(r * K + k)] = fmt::f32_to_bf16(fmt::bf16_to_f32(x[size_t(r * K + k)]) * f);
  };
  for (int64_t r = 0; r < M; r += 5) scale_range(a, r, 3 * 128, 4 * 128, 0x1p-3f);       // another R in slice 3
  for (int64_t r = 1; r < M; r += 7) scale_range(a, r, 5 * 128, 5 * 128 + 32, 0x1p8f);   // wide slice 5
  for (int64_t r = 2; r < M; r += 11) scale_range(a, r, 10 * 128, 11 * 128, 0.f);        // zero slice 10
  a[size_t(77 * K + 20 * 128 + 5)] = 0x7FC0;                                               // NaN: row 77
  for (int64_t r = 0; r < N; r += 3) scale_range(b, r, 9 * 128, 10 * 128, 0x1p-3f);       // B: slice 9
  for (int64_t r = 1; r < N; r += 13) scale_range(b, r, 17 * 128 + 64, 17 * 128 + 96, 0x1p9f);  // wide 17
  const HostMx aq = quantize_bf16(a, M, K), bq = quantize_bf16(b, N, K);
  const fp8::GroupPlan pa = fp8::plan_groups(aq.view());
  ASSERT_TRUE(pa.cont[0] && pa.cont[1] && !pa.cont[2] && !pa.cont[3]);  // row 0 breaks around slice 3
  ASSERT_TRUE(pa.cont[size_t(3 * S + 2)] && pa.cont[size_t(3 * S + 3)]);   // row 3 does not
  const DeviceBuf da(a);
  const DevicePacked pk(bq);
  const Reference ref(aq, bq);
  for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(64, 128), fp8_cfg(128, 64),
                                fp8_cfg(64, 64), fp8_cfg(256, 128), fp8_cfg(128, 64, false, 2), fp8_cfg(128, 64, false, 4)}) {
    const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
    const ContractReport rep = check_gemm_contract(C.data(), M, N, N, ref.sum.data(), ref.abs_sum.data());
    EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
  }
}

/// The persistent walk over many tiles with partial edges, for every non-PAIR unsplit tile
/// shape: M = 520 and N = 3720 end in partial tiles (150-531 tiles, several per CTA on a
/// 132-SM GPU). K = 384 (3 slices) with random operands, within the contract and reproducible;
/// K = 640 with cancelling slices (48 a1 per slice, exact: narrow chains and wide groups),
/// every element equal. (Written for session 21's tail-split experiment, kept as a shape test.)
// The 192 x 128 tile where its last M tile reaches past the A image's rows (padded to 256):
// M = 1000 (6 tiles, rows 960..1151 against 1024 image rows) and 1024 (the same tiles, the last
// one holding 64 real rows). The producer repeats the image's last atom past it; every real
// row must stay within the contract, narrow, wide and chained slices alike.
TEST(GpuFp8, TallTilePastTheImageStaysWithinContract) {
  MXFP4_REQUIRE_GPU();
  const GemmConfig tall{GemmPath::fp8, 128, 192, 1, 16};
  for (const int64_t M : {int64_t(1000), int64_t(1024)}) {
    constexpr int64_t N = 264, K = 1152;  // 9 slices: a chain chunk of 8 and one more
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), uint64_t(980000 + M));
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, 980003);
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    const Reference r(aq, b);
    const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &tall);
    const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
    EXPECT_TRUE(rep.ok()) << "M " << M << ": " << rep.str();
    EXPECT_EQ(run_gemm(da, M, K, pk.pw, &tall), C) << "M " << M << ": not reproducible";
    for (const float a1 : {0.75f, 0.375f}) {  // narrow groups (chains), wide groups
      const auto [ca, cb] = cancelling_slices(M, N, 640, a1);
      const DeviceBuf dca(ca);
      const DevicePacked cpk(quantize_bf16(cb, N, 640));
      const std::vector<uint16_t> CC = run_gemm(dca, M, 640, cpk.pw, &tall);
      for (size_t e = 0; e < CC.size(); ++e)
        ASSERT_EQ(fmt::bf16_to_f32(CC[e]), 5 * 48 * a1) << "M " << M << " a1 " << a1 << " element " << e;
    }
  }
}

TEST(GpuFp8, PersistentTilesWithPartialEdgesStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 520, N = 3720;
  // (192 x 128: three 64 x 128 consumer warpgroups, forced configurations only; M = 520 -> 3 M tiles,
  // inside the A image's 768 padded rows.)
  const std::vector<GemmConfig> cfgs = {fp8_cfg(128, 128),
                                        fp8_cfg(128, 128, true),
                                        fp8_cfg(64, 128),
                                        fp8_cfg(64, 128, true),
                                        fp8_cfg(128, 64),
                                        fp8_cfg(64, 64),
                                        GemmConfig{GemmPath::fp8, 128, 192, 1, 16}};
  {
    constexpr int64_t K = 384;
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 970001);
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, 970002);
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    const Reference r(aq, b);
    for (const GemmConfig& cfg : cfgs) {
      const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
      const ContractReport rep = check_gemm_contract(C.data(), M, N, N, r.sum.data(), r.abs_sum.data());
      EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
      EXPECT_EQ(run_gemm(da, M, K, pk.pw, &cfg), C) << describe(cfg) << ": not reproducible";
    }
  }
  constexpr int64_t K = 640;
  for (const float a1 : {0.75f, 0.375f}) {  // narrow groups (chains), wide groups
    const auto [a, b] = cancelling_slices(M, N, K, a1);
    const DeviceBuf da(a);
    const DevicePacked pk(quantize_bf16(b, N, K));
    for (const GemmConfig& cfg : cfgs) {
      const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
      for (size_t e = 0; e < C.size(); ++e)
        ASSERT_EQ(fmt::bf16_to_f32(C[e]), 5 * 48 * a1) << describe(cfg) << " a1 " << a1 << " element " << e;
    }
  }
}

// Persistent tiles (more tiles than resident CTAs: the plain instantiations, not the FIX ones)
// whose last tiles reach past N (N % 128 = 8, 64, 56: one 8-column group of a lane, a whole
// 64-column warpgroup, seven groups; 5: a lane's group straddling N) and past M (M % 16 = 13,
// 13, 4: a warp whose second row lies past M), into a guarded C of random bytes. bf16 C: ldc %
// 8 == 0 with C 16-byte aligned (the 16-byte stores), an even ldc % 8 != 0 (4-byte pair stores)
// and an odd ldc at a 2-byte offset (2-byte stores); every element within the contract. fp32 C
// (the tensor-parallel partials): an even ldc with C 8-byte aligned (8-byte pair stores), an odd
// ldc and an even ldc at a 4-byte offset (4-byte stores); every element within spec §3's bound
// without the final rounding (|C - ref| <= 2^-12 sum |a b| + 2^-133, as the fp32 checks above).
// No byte outside C changed (session 51's reviews of the epilogue: no guarded-C test ran a
// persistent kernel past N; session 52: v4 moved every fp32 tile onto the rolled checked stores,
// session 53's v5 onto stores of their own).
TEST(GpuFp8, PersistentTilesPastNAndMWriteOnlyInsideC) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t K = 128;
  const std::vector<GemmConfig> cfgs = {fp8_cfg(128, 128), fp8_cfg(128, 128, true), fp8_cfg(64, 128),
                                        fp8_cfg(64, 128, true), fp8_cfg(128, 64), fp8_cfg(64, 64),
                                        fp8_cfg(256, 128), GemmConfig{GemmPath::fp8, 128, 192, 1, 16}};
  uint64_t seed = 990000;
  for (const auto& [M, N] : {std::pair<int64_t, int64_t>{2061, 1288}, {2109, 1216}, {2100, 1336}, {2061, 1285}}) {
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), ++seed);
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, ++seed);
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    const Reference r(aq, b);
    const int64_t n8 = (N + 7) / 8 * 8, even = N + N % 2;
    struct Layout {
      bool f32;
      size_t shift;
      int64_t ldc;
    };
    const Layout layouts[] = {{false, 0, n8 + 8}, {false, 0, n8 + 64}, {false, 0, n8 + 2}, {false, 2, even + 5},
                              {true, 0, even + 6}, {true, 0, even + 3},  {true, 4, even + 2}};
    for (const GemmConfig& cfg : cfgs) {
      for (const Layout& l : layouts) {
        const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
                                 describe(cfg) + (l.f32 ? " fp32" : " bf16") + " C shift " + std::to_string(l.shift) +
                                 " ldc " + std::to_string(l.ldc);
        const int64_t elem = l.f32 ? 4 : 2;
        const StridedRegion region{M, N * elem, l.ldc * elem};
        const Guarded c(size_t(region.span()), l.shift, ++seed);
        GemmOptions opt;
        opt.config = &cfg;
        if (l.f32)
          gemm(da.get<uint16_t>(), M, K, K, pk.pw, c.data<float>(), l.ldc, opt, cuda_exec());
        else
          gemm(da.get<uint16_t>(), M, K, K, pk.pw, c.data<uint16_t>(), l.ldc, opt, cuda_exec());
        cuda_ok(cudaDeviceSynchronize(), "sync");
        ASSERT_EQ(c.changed_outside(region), "") << what;
        const std::vector<uint8_t> bytes = c.logical();
        ContractReport rep;
        if (l.f32) {
          std::vector<float> C(bytes.size() / 4);
          std::memcpy(C.data(), bytes.data(), C.size() * 4);
          rep = check_gemm_contract_f32(C.data(), M, N, l.ldc, r.sum.data(), r.abs_sum.data());
        } else {
          std::vector<uint16_t> C(bytes.size() / 2);
          std::memcpy(C.data(), bytes.data(), C.size() * 2);
          rep = check_gemm_contract(C.data(), M, N, l.ldc, r.sum.data(), r.abs_sum.data());
        }
        EXPECT_TRUE(rep.ok()) << what << ": " << rep.str();
      }
    }
  }
}

/// Chains in a persistent grid: more tiles than SMs, so CTAs run several tiles through one
/// ring and a tile's last chain (ending at its last slice) is followed by the next tile's
/// first; some rows break their chains mid-chunk. 64 x 64 tiles (144 tiles over at most 132
/// persistent CTAs) and split-K 2 (one cluster per tile, in waves).
TEST(GpuFp8, ChainsAcrossPersistentTilesStayWithinContract) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 1024, N = 576, K = 1152;  // 9 slices: chunks of 8 and 1
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 960001);
  for (int64_t r = 0; r < M; r += 7)  // another R in slice 2 for every 7th row
    for (int64_t k = 2 * 128; k < 3 * 128; ++k) a[size_t(r * K + k)] = fmt::f32_to_bf16(fmt::bf16_to_f32(a[size_t(r * K + k)]) * 0.125f);
  const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, 960002);
  const DeviceBuf da(a);
  const DevicePacked pk(b);
  const Reference ref(aq, b);
  for (const GemmConfig& cfg : {fp8_cfg(64, 64), fp8_cfg(64, 64, false, 2)}) {
    const std::vector<uint16_t> C = run_gemm(da, M, K, pk.pw, &cfg);
    const ContractReport rep = check_gemm_contract(C.data(), M, N, N, ref.sum.data(), ref.abs_sum.data());
    EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
  }
}

TEST(GpuFp8, ForcedFp8WithoutImageThrowsAndTheDispatcherFallsBack) {
  MXFP4_REQUIRE_GPU();
  // The dispatcher picks path fp8 for each shape; without an image gemm() runs the tiled path
  // (M > 128) or the small-M kernel (M = 100: short K; M = 40: N x K = 10 Mi, session 23).
  struct Shape { int64_t M, N, K; };
  for (const Shape s : {Shape{512, 64, 256}, Shape{100, 1024, 256}, Shape{40, 5120, 2048}}) {
    const int64_t M = s.M, N = s.N, K = s.K;
    ASSERT_EQ(choose_gemm_config(M, N, K, cuda_device_info(0)).path, GemmPath::fp8) << M << "x" << N << "x" << K;
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), uint64_t(950001 + M));
    const HostMx aq = quantize_bf16(a, M, K), b = random_mx(N, K, uint64_t(950002 + M));
    const DeviceBuf da(a);
    const DevicePacked pk(b);
    PackedWeights plain = pk.pw;
    plain.fp8 = nullptr;
    const GemmConfig cfg = fp8_cfg(128, 128);
    DeviceBuf c(size_t(M * N * 2), 0xFF);
    GemmOptions opt;
    opt.config = &cfg;
    EXPECT_THROW(gemm(da.get<uint16_t>(), M, K, K, plain, c.get<uint16_t>(), N, opt, cuda_exec()), InvalidArgument);
    const std::vector<uint16_t> C = run_gemm(da, M, K, plain, nullptr);  // default config, no image
    const ContractReport rep = check_gemm_contract(C.data(), N, aq.view(), b.view());
    EXPECT_TRUE(rep.ok()) << M << "x" << N << "x" << K << ": " << rep.str();
  }
}

}  // namespace
}  // namespace mxfp4::test

#else
TEST(GpuFp8, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
