// GPU GEMM on every path against the exact CPU reference (spec §3 bound), plus bug kinds
// K07-K14, canaries, graph capture and determinism.
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/test_util.hpp"
#include "dispatch/path_name.hpp"
#include "gpu/gpu_cases.hpp"
#include "gpu/gpu_util.hpp"

namespace mxfp4::test {
namespace {

/// The configurations every GEMM test sweeps (any M): fused (in-kernel quantization) and
/// splitk (pre-quantized A) variants with and without cluster split, 4 or 8 slabs, 1, 2 or 4
/// warps per slab; tiled; every fp8 tile (two- and four-warpgroup 128 x 128, 64 x 128, 128 x 64,
/// 64 x 64, the 256 x 128 pair) and two split-K clusters. The canary, concurrency and 64-bit
/// tests use the shorter gpu_cases.hpp path_configs. For M <= 16 also path gemv
/// (gpu_cases.hpp gemv_configs) where its shared memory fits K.
std::vector<GemmConfig> configs_for(int64_t M, int64_t K) {
  std::vector<GemmConfig> v = gemv_configs(M, K);
  v.push_back(forced_cfg(GemmPath::fused, 1, 4, 1));
  v.push_back(forced_cfg(GemmPath::fused, 1, 8, 2));
  v.push_back(forced_cfg(GemmPath::fused, 4, 4, 4));
  v.push_back(forced_cfg(GemmPath::splitk, 1, 4, 2));
  v.push_back(forced_cfg(GemmPath::splitk, 2, 8, 1));
  v.push_back(forced_cfg(GemmPath::splitk, 8, 4, 1));
  v.push_back(forced_cfg(GemmPath::splitk, 3, 8, 2));
  v.push_back(forced_cfg(GemmPath::tiled));
  v.push_back(fp8_cfg(128, 128));
  v.push_back(fp8_cfg(128, 128, true));
  v.push_back(fp8_cfg(64, 128));
  v.push_back(fp8_cfg(64, 128, true));
  v.push_back(fp8_cfg(128, 64));
  v.push_back(fp8_cfg(128, 64, false, 4));
  v.push_back(fp8_cfg(128, 128, true, 2));
  v.push_back(fp8_cfg(64, 64));
  v.push_back(fp8_cfg(256, 128));
  return v;
}

/// One GEMM problem on the device: bf16 A [M, K] and MXFP4 B [N, K] (plain, host) prepacked.
struct Problem {
  int64_t M, N, K;
  std::vector<uint16_t> a;  // bf16 bits, dense
  HostMx aq, b;
  std::unique_ptr<DeviceBuf> da, packed, fp8;
  PackedWeights pw;

  Problem(int64_t M_, std::vector<uint16_t> a_, HostMx b_) : M(M_), N(b_.rows), K(b_.K), a(std::move(a_)), b(std::move(b_)) {
    aq = quantize_bf16(a, M, K);
    da = std::make_unique<DeviceBuf>(a);
    DeviceBuf dc(b.codes), ds(b.scales);
    packed = std::make_unique<DeviceBuf>(packed_bytes(N, K));
    pw = prepack(MxMatrix{dc.get(), ds.get(), N, K}, packed->get(), cuda_exec());
    fp8 = std::make_unique<DeviceBuf>(fp8_weights_bytes(N, K));
    pw = prepack_fp8(pw, fp8->get(), cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "sync");
  }

  /// Runs the GEMM into a poisoned C with row stride ldc (>= N) and `extra_rows` canary rows.
  std::vector<uint16_t> run(const GemmConfig* cfg, int64_t ldc, int64_t extra_rows = 0, cudaStream_t s = nullptr,
                            bool weights_static = false) const {
    DeviceBuf dc(size_t((M + extra_rows) * ldc * 2), 0xFF);
    GemmOptions opt;
    opt.config = cfg;
    opt.weights_static = weights_static;
    gemm(da->get<uint16_t>(), M, K, K, pw, dc.get<uint16_t>(), ldc, opt, cuda_exec(s));
    return dc.download<uint16_t>();
  }

  /// The exact reference of rows `rows` of C (reference_rows: B decoded once for all of them),
  /// reusable for every configuration of the problem.
  RowsReference reference(const std::vector<int64_t>& rows) const { return reference_rows(aq, b, rows); }

  /// Checks rows ref.rows of C (row stride ldc) against the exact reference, per element (spec §3).
  void check(const std::vector<uint16_t>& C, int64_t ldc, const RowsReference& ref, const std::string& what) const {
    int64_t row = -1;
    const ContractReport rep = check_rows_contract(C.data(), ldc, ref, &row);
    ASSERT_TRUE(rep.ok()) << what << " row " << row << ": " << rep.str();
  }
  void check(const std::vector<uint16_t>& C, int64_t ldc, const std::vector<int64_t>& rows, const std::string& what) const {
    check(C, ldc, reference(rows), what);
  }
};

std::vector<int64_t> all_rows(int64_t M) {
  std::vector<int64_t> v(M);
  for (int64_t i = 0; i < M; ++i) v[i] = i;
  return v;
}
std::vector<int64_t> sample_rows(int64_t M, int n = 6) {
  if (M <= n) return all_rows(M);
  std::vector<int64_t> v{0, M - 1, M / 2};
  for (int i = 3; i < n; ++i) v.push_back((int64_t(i) * 7919) % M);
  return v;
}

Problem random_problem(int64_t M, int64_t N, int64_t K, uint64_t seed) {
  return Problem(M, randn_bf16(size_t(M * K), seed), random_mx(N, K, seed + 1));
}

std::vector<std::array<int64_t, 3>> workload_shapes() {
  std::ifstream in(std::string(MXFP4_SOURCE_DIR) + "/bench/shapes.txt");
  std::vector<std::array<int64_t, 3>> v;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    int64_t m, n, k;
    if (ls >> m >> n >> k) v.push_back({m, n, k});
  }
  return v;
}

TEST(GpuGemm, WorkloadShapesEveryPathWithinContract) {
  MXFP4_REQUIRE_GPU();
  const auto shapes = workload_shapes();
  ASSERT_GE(shapes.size(), 8u);
  for (const auto& [M, N, K] : shapes) {
    const Problem p = random_problem(M, N, K, uint64_t(M * 31 + N * 7 + K));
    const auto ref = p.reference(M * N * K <= (int64_t(1) << 28) ? all_rows(M) : sample_rows(M));
    for (const GemmConfig& cfg : configs_for(M, K)) {
      const auto C = p.run(&cfg, N);
      p.check(C, N, ref, std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " + describe(cfg));
    }
    const auto C = p.run(nullptr, N);  // the dispatcher's choice
    p.check(C, N, ref, "default config");
  }
}

// GemmOptions::weights_static (path gemv loads its first two batches of K chunks into
// registers and bulk-copies the next ones into shared memory before its PDL wait): the same
// bits as without it, within the contract, nothing written outside C. Per configuration
// (kws = warps per slab 1, 2, 4, 8, 16) the chunks fall in the register sets only (short K),
// in registers and shared memory (e.g. 8x2880, 13x1664 at 4 warps per slab), in all three
// places with a prefix copied (1x16384: the rest loads from global memory after the wait), or
// in registers and global memory with no room to copy (16x4096: A's fragments alone take 128
// KiB); N tails leave the last CTA's slabs short; M > 8 runs the two-tile kernel.
TEST(GpuGemm, GemvWeightsStaticMatchesDefaultBitwise) {
  MXFP4_REQUIRE_GPU();
  struct Case {
    int64_t M, K;
  };
  for (const Case& c :
       {Case{1, 32}, Case{3, 96}, Case{8, 2880}, Case{13, 1664}, Case{16, 512}, Case{1, 16384}, Case{16, 4096}}) {
    for (int64_t N : {16, 40, 264}) {
      const Problem p = random_problem(c.M, N, c.K, uint64_t(c.M * 7001 + c.K * 13 + N));
      const RowsReference ref = p.reference(all_rows(c.M));  // one for every configuration
      std::vector<GemmConfig> cfgs = gemv_configs(c.M, c.K);
      for (const GemmConfig& extra : {GemmConfig{GemmPath::gemv, 32, 8, 1, 4}, GemmConfig{GemmPath::gemv, 16, 8, 1, 8}})
        if (gemm_config_problem_for_shape(extra, c.M, c.K).empty()) cfgs.push_back(extra);  // kws 2 and 8
      ASSERT_GE(cfgs.size(), 2u) << c.M << "x" << c.K;
      for (const GemmConfig& cfg : cfgs) {
        const int64_t ldc = N + 3;
        const auto base = p.run(&cfg, ldc, 2);
        const auto fast = p.run(&cfg, ldc, 2, nullptr, /*weights_static=*/true);
        const std::string what = "weights_static " + std::to_string(c.M) + "x" + std::to_string(N) + "x" +
                                 std::to_string(c.K) + " " + describe(cfg);
        ASSERT_EQ(fast, base) << what;  // canaries included: both poisoned alike
        p.check(fast, ldc, ref, what);
        for (int64_t r = 0; r < c.M + 2; ++r)
          for (int64_t col = (r < c.M ? N : 0); col < ldc; ++col)
            ASSERT_EQ(fast[r * ldc + col], 0xFFFF) << "wrote outside C at (" << r << ", " << col << ") " << what;
      }
      // The dispatcher's choice with the option (path gemv or another path, which ignores it).
      p.check(p.run(nullptr, N, 0, nullptr, true), N, ref, "weights_static default config");
    }
  }
}

// GemmOptions::weights_static on path splitk: its quantizer lets the GEMM launch before the
// quantizer's own wait, so the GEMM must still read A's fragments, the split-K counters and
// partials only after its wait. Each call with the option follows, on the same stream and
// without a synchronisation, a call with another A' into another C' through the same
// workspace, which is poisoned (0xFF) on the stream before that pair: a GEMM that read the
// fragments, counters or partials before its wait would see A''s or the poison. C and C' must
// equal the synchronised default calls bitwise (canaries included) and C is checked against
// the contract; split-K through clusters and through the workspace (split 8, K >= 4096, M <=
// 16), M from 1 to 64 (both fragment orders).
TEST(GpuGemm, SplitkWeightsStaticMatchesDefaultBitwise) {
  MXFP4_REQUIRE_GPU();
  struct Case {
    int64_t M, N, K;
  };
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  int through_workspace = 0;
  for (const Case& c : {Case{1, 264, 512}, Case{16, 2112, 4096}, Case{8, 520, 7168}, Case{24, 264, 1664},
                        Case{64, 1040, 2048}}) {
    const Problem p = random_problem(c.M, c.N, c.K, uint64_t(c.M * 9001 + c.K * 17 + c.N));
    const Problem q(c.M, randn_bf16(size_t(c.M * c.K), uint64_t(c.M * 31 + c.K)), p.b);  // A', same weights
    const RowsReference ref = p.reference(all_rows(c.M));
    std::vector<GemmConfig> cfgs;
    for (const GemmConfig& cfg : path_configs(c.M, c.K))
      if (cfg.path == GemmPath::splitk) cfgs.push_back(cfg);
    const GemmConfig chosen = explain_gemm(c.M, c.N, c.K, cuda_exec());
    if (chosen.path == GemmPath::splitk) cfgs.push_back(chosen);
    ASSERT_GE(cfgs.size(), 3u);
    for (const GemmConfig& cfg : cfgs) {
      const int64_t ldc = c.N + 3;
      const std::string name = describe(cfg, c.M, c.N, c.K);
      const std::string what = "splitk weights_static " + name + " M=" + std::to_string(c.M);
      if (name.find("reduce=workspace") != std::string::npos) ++through_workspace;
      const auto want = p.run(&cfg, ldc, 2), want_q = q.run(&cfg, ldc, 2);
      const size_t ws_bytes = gemm_workspace_bytes(c.M, c.N, c.K, cfg);
      DeviceBuf ws(ws_bytes);
      GemmOptions opt;
      opt.config = &cfg;
      opt.workspace = ws.get();
      opt.workspace_bytes = ws_bytes;
      opt.weights_static = true;
      for (int rep = 0; rep < 3; ++rep) {
        DeviceBuf C(size_t((c.M + 2) * ldc * 2), 0xFF), Cq(size_t((c.M + 2) * ldc * 2), 0xFF);
        cuda_ok(cudaMemsetAsync(ws.get(), 0xFF, ws_bytes, s), "cudaMemsetAsync");
        gemm(q.da->get<uint16_t>(), c.M, c.K, c.K, q.pw, Cq.get<uint16_t>(), ldc, opt, cuda_exec(s));
        gemm(p.da->get<uint16_t>(), c.M, c.K, c.K, p.pw, C.get<uint16_t>(), ldc, opt, cuda_exec(s));
        cuda_ok(cudaStreamSynchronize(s), "sync");
        const auto got = C.download<uint16_t>();
        ASSERT_EQ(Cq.download<uint16_t>(), want_q) << what << " rep " << rep << " (the call before)";
        ASSERT_EQ(got, want) << what << " rep " << rep;
        if (rep == 0) p.check(got, ldc, ref, what);
      }
    }
  }
  EXPECT_GT(through_workspace, 0) << "no case reduced split-K through the workspace";
  cuda_ok(cudaStreamDestroy(s), "stream");
}

TEST(GpuGemm, OddShapesEveryPath) {
  MXFP4_REQUIRE_GPU();
  for (int64_t M : {1, 3, 17, 100, 1000}) {
    for (int64_t K : {32, 96, 160, 1664}) {
      for (int64_t N : {16, 40, 264}) {
        const Problem p = random_problem(M, N, K, uint64_t(M * 100003 + K * 101 + N));
        const RowsReference ref = p.reference(M <= 100 ? all_rows(M) : sample_rows(M, 12));
        for (const GemmConfig& cfg : configs_for(M, K)) {
          const int64_t ldc = N + 3;  // odd row stride
          const auto C = p.run(&cfg, ldc, 2);
          p.check(C, ldc, ref, "odd " + describe(cfg));
          // Canaries: the 3 slack columns of every row and the 2 rows after M stay poisoned.
          for (int64_t r = 0; r < M + 2; ++r)
            for (int64_t c = (r < M ? N : 0); c < ldc; ++c)
              ASSERT_EQ(C[r * ldc + c], 0xFFFF) << "wrote outside C at (" << r << ", " << c << ") " << describe(cfg);
        }
      }
    }
  }
}

// fp32 C (no final rounding) on every path, gemv included: |C - ref| <= 2^-12 sum|a b| (spec §3
// without the bf16 term), into a poisoned C with an odd row stride whose slack stays poisoned.
TEST(GpuGemm, Fp32OutputEveryPathWithinContract) {
  MXFP4_REQUIRE_GPU();
  for (const auto& [M, N, K] : {std::array<int64_t, 3>{1, 200, 2048}, {3, 40, 160}, {8, 264, 1664}, {130, 72, 256}}) {
    const Problem p = random_problem(M, N, K, uint64_t(M * 7 + N + K));
    std::vector<double> ref(size_t(M * N)), abs_sum(size_t(M * N));
    std::vector<uint16_t> ref16(size_t(M * N));
    gemm_reference(p.aq.view(), p.b.view(), ref16.data(), N, ref.data(), abs_sum.data());
    const int64_t ldc = N + 1;
    for (const GemmConfig& cfg : configs_for(M, K)) {
      DeviceBuf dc(size_t(M * ldc * 4), 0xFF);
      GemmOptions opt;
      opt.config = &cfg;
      gemm(p.da->get<uint16_t>(), M, K, K, p.pw, dc.get<float>(), ldc, opt, cuda_exec());
      const std::vector<uint32_t> C = dc.download<uint32_t>();
      for (int64_t m = 0; m < M; ++m)
        ASSERT_EQ(C[size_t(m * ldc + N)], 0xFFFFFFFFu) << "wrote the slack of row " << m << " " << describe(cfg);
      std::vector<float> C32(C.size());
      std::memcpy(C32.data(), C.data(), C.size() * 4);
      const ContractReport rep = check_gemm_contract_f32(C32.data(), M, N, ldc, ref.data(), abs_sum.data());
      EXPECT_TRUE(rep.ok()) << M << "x" << N << "x" << K << " fp32 C " << describe(cfg) << ": " << rep.str();
    }
  }
}

TEST(GpuGemm, InputsAreNeverWritten) {
  MXFP4_REQUIRE_GPU();
  for (int64_t M : {8, 200}) {
    const Problem p = random_problem(M, 128, 512, 42);
    const auto a0 = p.da->download<uint8_t>();
    const auto b0 = p.packed->download<uint8_t>();
    for (const GemmConfig& cfg : configs_for(M, 512)) p.run(&cfg, 128);
    EXPECT_EQ(p.da->download<uint8_t>(), a0);
    EXPECT_EQ(p.packed->download<uint8_t>(), b0);
  }
}

/// A = a_value everywhere, B[n, :] = b_row(n): C is known exactly.
Problem constant_problem(int64_t M, int64_t N, int64_t K, float a_value, const std::function<float(int64_t)>& b_row) {
  std::vector<uint16_t> a(size_t(M * K), fmt::f32_to_bf16(a_value));
  std::vector<uint16_t> b(size_t(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) b[n * K + k] = fmt::f32_to_bf16(b_row(n));
  return Problem(M, std::move(a), quantize_bf16(b, N, K));
}

void expect_exact(const std::vector<uint16_t>& C, int64_t M, int64_t N, int64_t ldc,
                  const std::function<double(int64_t, int64_t)>& want, const std::string& what) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      ASSERT_EQ(double(fmt::bf16_to_f32(C[m * ldc + n])), want(m, n)) << what << " at (" << m << ", " << n << ")";
}

/// Bit-exact activation quantization (spec §2) on every path and scale rule. B is the
/// identity (N = K, 1.0 on the diagonal, exact in MXFP4), so C[m, n] is the dequantized
/// A_q[m, n], which has at most two significant bits and is exact in bf16: C must equal the
/// CPU quantizer's result value for value (quantizer_probe_bf16: e2m1 ties, bf16 neighbours,
/// scales 2^-130 .. 2^125, zero blocks). K = 1056 has a half-filled last 64-wide chunk, and its
/// odd row stride (NaN padding between rows) turns off path fused's 16-byte staging of A.
/// The CPU GEMM passes the same check (tests/cpu/test_gemm.cpp).
TEST(GpuGemm, ActivationQuantizationIsBitExactOnEveryPath) {
  MXFP4_REQUIRE_GPU();
  for (auto [K, lda] : {std::pair<int64_t, int64_t>{1024, 1024}, {1056, 1057}}) {
    const int64_t N = K;
    const HostMx eye = identity_mx(K);
    for (int64_t M : {1, 5, 40, 130}) {
      const std::vector<uint16_t> a = quantizer_probe_bf16(M, K, lda, uint64_t(1000 + M + K));
      const std::vector<uint16_t> dense = dense_rows(a, M, K, lda);
      const Problem p(M, dense, eye);
      const DeviceBuf da(a);
      for (ScaleRule rule : {ScaleRule::aiter, ScaleRule::floor, ScaleRule::rceil}) {
        const HostMx aq = quantize_bf16(dense, M, K, rule);
        std::vector<float> want(size_t(M * K));
        dequantize(aq.view(), want.data(), DType::fp32, K);
        for (const GemmConfig& cfg : configs_for(M, K)) {
          DeviceBuf dc(size_t(M * N * 2), 0xFF);
          GemmOptions opt;
          opt.config = &cfg;
          opt.rule = rule;
          gemm(da.get<uint16_t>(), M, K, lda, p.pw, dc.get<uint16_t>(), N, opt, cuda_exec());
          const auto C = dc.download<uint16_t>();
          for (int64_t i = 0; i < M * N; ++i)
            ASSERT_EQ(fmt::bf16_to_f32(C[size_t(i)]), want[size_t(i)])
                << "K " << K << " lda " << lda << " rule " << int(rule) << " " << describe(cfg) << " at (" << i / N
                << ", " << i % N << "), A = " << fmt::bf16_to_f32(a[size_t(i / N * lda + i % N)]);
        }
      }
    }
  }
}

TEST(GpuGemm, K07SubnormalBlocksKeepTheirValue) {
  MXFP4_REQUIRE_GPU();
  // A block of 2^-126 times B = 1.0: 2^-121. And amax 1.5*2^-128 (A decodes to the bf16
  // subnormal 2^-127) times B = 2^100: 32 * 2^-27 = 2^-22.
  for (const auto& [av, bv, want] : {std::tuple{0x1p-126f, 1.0f, 0x1p-121}, std::tuple{0x1.8p-128f, 0x1p100f, 0x1p-22}}) {
    const Problem p = constant_problem(4, 16, 32, av, [&](int64_t) { return bv; });
    for (const GemmConfig& cfg : configs_for(4, 32)) {
      const auto C = p.run(&cfg, 16);
      expect_exact(C, 4, 16, 16, [&](int64_t, int64_t) { return want; }, "K07 " + describe(cfg));
    }
  }
}

TEST(GpuGemm, K08NanBlockPoisonsOnlyItsRow) {
  MXFP4_REQUIRE_GPU();
  std::vector<uint16_t> a(2 * 64, fmt::f32_to_bf16(1.0f));
  a[2] = 0x7FC0;  // NaN in row 0, block 0
  std::vector<uint16_t> b(16 * 64, fmt::f32_to_bf16(1.0f));
  const Problem p(2, a, quantize_bf16(b, 16, 64));
  for (const GemmConfig& cfg : configs_for(2, 64)) {
    const auto C = p.run(&cfg, 16);
    for (int64_t n = 0; n < 16; ++n) {
      EXPECT_TRUE(std::isnan(fmt::bf16_to_f32(C[n]))) << describe(cfg);
      EXPECT_EQ(fmt::bf16_to_f32(C[16 + n]), 64.0f) << describe(cfg);
    }
  }
}

/// Blocks that decode to 2^128 or more (bf16 max: scale byte 254, code 4; spec bug kind K06).
/// Paths fused, splitk and tiled fold scales into bf16 operands, where such elements are +-Inf
/// (the value `dequantize` returns). This pins down their known deviation from spec §3's exact
/// reference (docs/hardening.md §3): C follows IEEE arithmetic on the dequantized values, NaN
/// where such an element meets a zero weight or Infs of both signs meet, +-Inf otherwise. Path
/// fp8 flags the group and its fix-up combines exponents, so it stays exact like the CPU
/// backend (2^128 * 0 = 0) while no block's contribution overflows its fp32 sum. Every other
/// row stays within the contract (docs/hardening.md §3).
TEST(GpuGemm, DecodedOverflowFollowsIeee) {
  MXFP4_REQUIRE_GPU();
  const int64_t N = 48, K = 128;
  for (int64_t M : {3, 40, 300}) {
    std::vector<uint16_t> a = randn_bf16(size_t(M * K), uint64_t(77 + M));
    a[size_t(1 * K + 40)] = 0x7F7F;   // row 1: +2^128 at k = 40, the rest of its block rounds to 0
    a[size_t(2 * K + 3)] = 0x7F7F;    // row 2: +2^128 at k = 3 and -2^128 at k = 100
    a[size_t(2 * K + 100)] = 0xFF7F;
    const Problem p(M, a, random_mx(N, K, uint64_t(91 + M)));
    std::vector<float> da(size_t(M * K)), db(size_t(N * K));
    dequantize(p.aq.view(), da.data(), DType::fp32, K);
    dequantize(p.b.view(), db.data(), DType::fp32, K);
    ASSERT_TRUE(std::isinf(da[size_t(K + 40)]) && std::isinf(da[size_t(2 * K + 100)]));
    std::vector<int64_t> finite_rows{0};
    for (int64_t m = 3; m < M; m += 7) finite_rows.push_back(m);
    const RowsReference exact_ref = p.reference({1}), finite_ref = p.reference(finite_rows);
    for (const GemmConfig& cfg : configs_for(M, K)) {
      const auto C = p.run(&cfg, N);
      if (cfg.path == GemmPath::fp8) {
        // Row 2's two blocks of +-2^128 * b still overflow the fix-up's fp32 sum (Inf or NaN where
        // the exact sum is finite), like any fp32 accumulator: only row 1 is exact.
        p.check(C, N, exact_ref, "overflow row, exact " + describe(cfg));
        p.check(C, N, finite_ref, "overflow rows " + describe(cfg));
        continue;
      }
      for (int64_t m : {1, 2})
        for (int64_t n = 0; n < N; ++n) {
          double want = 0;
          for (int64_t k = 0; k < K; ++k) want += double(da[size_t(m * K + k)]) * double(db[size_t(n * K + k)]);
          const float got = fmt::bf16_to_f32(C[size_t(m * N + n)]);
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << describe(cfg) << " M " << M << " at (" << m << ", " << n << "): " << got;
          } else {
            ASSERT_EQ(double(got), want) << describe(cfg) << " M " << M << " at (" << m << ", " << n << ")";
          }
        }
      p.check(C, N, finite_ref, "overflow rows " + describe(cfg));
    }
  }
}

TEST(GpuGemm, K09KTailsAndScalesThatVaryByRowAndBlock) {
  MXFP4_REQUIRE_GPU();
  for (int64_t K : {32, 64, 96, 160, 1664}) {
    const int64_t M = 64, N = 64;
    std::vector<uint16_t> a(size_t(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) a[m * K + k] = fmt::f32_to_bf16(std::ldexp(1.0f, int((m + k / 32) % 5)));
    std::vector<uint16_t> b(size_t(N * K), fmt::f32_to_bf16(1.0f));
    const Problem p(M, a, quantize_bf16(b, N, K));
    for (const GemmConfig& cfg : configs_for(M, K)) {
      const auto C = p.run(&cfg, N);
      expect_exact(C, M, N, N, [&](int64_t m, int64_t) {
        double s = 0;
        for (int64_t j = 0; j < K / 32; ++j) s += 32.0 * std::ldexp(1.0, int((m + j) % 5));
        return double(fmt::bf16_to_f32(fmt::f32_to_bf16(float(s))));
      }, "K09 K=" + std::to_string(K) + " " + describe(cfg));
    }
  }
}

TEST(GpuGemm, K10K11NTailsAndSmallN) {
  MXFP4_REQUIRE_GPU();
  for (int64_t N : {1, 3, 258, 260}) {
    const Problem p = constant_problem(16, N, 128, 1.0f, [](int64_t n) { return float(n % 7) - 3.0f; });
    for (const GemmConfig& cfg : configs_for(16, 128)) {
      const auto C = p.run(&cfg, N);
      expect_exact(C, 16, N, N, [](int64_t, int64_t n) { return 128.0 * double(n % 7 - 3); }, "K10 " + describe(cfg));
    }
  }
  for (int64_t N = 1; N <= 9; ++N) {
    const Problem p = constant_problem(1, N, 64, 1.0f, [](int64_t n) { return std::ldexp(1.0f, int(n) + 3); });
    for (const GemmConfig& cfg : configs_for(1, 64)) {
      const auto C = p.run(&cfg, N);
      expect_exact(C, 1, N, N, [](int64_t, int64_t n) { return 64.0 * std::ldexp(1.0, int(n) + 3); }, "K11 " + describe(cfg));
    }
  }
}

TEST(GpuGemm, K12K13SmallMAndSplitKNeverLeak) {
  MXFP4_REQUIRE_GPU();
  for (int64_t NK : {64, 6144}) {
    for (int64_t M : {1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33}) {
      const Problem p = constant_problem(M, NK, NK, 1.0f, [](int64_t) { return 1.0f; });
      for (const GemmConfig& cfg : configs_for(M, NK)) {
        const auto C = p.run(&cfg, NK, 3);
        expect_exact(C, M, NK, NK, [&](int64_t, int64_t) { return double(NK); }, "K12 " + describe(cfg));
        for (int64_t i = M * NK; i < (M + 3) * NK; ++i) ASSERT_EQ(C[i], 0xFFFF) << "canary row touched " << describe(cfg);
      }
    }
  }
  for (int64_t K : {64, 96, 512}) {
    for (int64_t M = 1; M <= 256; M += (M < 70 ? 1 : 37)) {
      const Problem p = constant_problem(M, 256, K, 1.0f, [](int64_t) { return 1.0f; });
      for (const GemmConfig& cfg : configs_for(M, K)) {
        const auto C = p.run(&cfg, 256);
        expect_exact(C, M, 256, 256, [&](int64_t, int64_t) { return double(K); }, "K13 " + describe(cfg));
      }
    }
  }
}

// Split-K through a cluster at every split the dispatcher or a tune can pick (2..8): the push
// reduction (8 or 16 tokens per CTA: path fused at split >= 4, path splitk at 8;
// push_reduce) with every token count of its tiles, ranks owning no rows (rows < split) and
// ranks with no K chunks (K = 320: 5 chunks, split 6..8), next to path splitk's bulk-copy reduction (splitk_reduce_copy: the
// other splits of path splitk, 8 to 64 tokens; M = 32 with 8 slabs over a one-stage ring at
// split 4 fills the ring to its last byte) and the pull (path fused; path splitk with 8 slabs
// over a one-stage ring where the receive slots do not fit). K = 1536 keeps path splitk on
// clusters (the workspace reduction takes split 8 only from K = 4096). Random data against the
// exact reference; C is poisoned and has canary rows.
TEST(GpuGemm, ClusterSplitKEverySplitAndTokenCount) {
  MXFP4_REQUIRE_GPU();
  for (int64_t K : {320, 1536}) {
    for (int64_t M : {1, 3, 4, 9, 13, 16, 24, 32, 33, 64}) {
      const int64_t N = 200;
      const Problem p = random_problem(M, N, K, uint64_t(5000 + M * 13 + K));
      const RowsReference ref = p.reference(all_rows(M));
      for (int split = 2; split <= 8; ++split) {
        for (const GemmConfig& cfg : {forced_cfg(GemmPath::fused, split, 4, 1), forced_cfg(GemmPath::splitk, split, 8, 1),
                                      forced_cfg(GemmPath::splitk, split, 4, 2)}) {
          const auto C = p.run(&cfg, N + 3, 2);
          p.check(C, N + 3, ref, "M=" + std::to_string(M) + " K=" + std::to_string(K) + " " + describe(cfg));
          for (int64_t i = M * (N + 3); i < (M + 2) * (N + 3); ++i)
            ASSERT_EQ(C[size_t(i)], 0xFFFF) << "canary row touched, M=" << M << " " << describe(cfg);
          for (int64_t r = 0; r < M; ++r)
            for (int64_t c = N; c < N + 3; ++c)
              ASSERT_EQ(C[size_t(r * (N + 3) + c)], 0xFFFF) << "padding column touched, M=" << M << " " << describe(cfg);
        }
      }
    }
  }
}

TEST(GpuGemm, K14DeterministicAcrossCallsAndStreams) {
  MXFP4_REQUIRE_GPU();
  for (int64_t M : {1, 8, 16}) {
    const Problem p = random_problem(M, 4096, 16384, uint64_t(M));
    const auto ref = p.run(nullptr, 4096);
    p.check(ref, 4096, sample_rows(M, 4), "K14");
    cudaStream_t s1, s2;
    cuda_ok(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
    cuda_ok(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");
    DeviceBuf c1(size_t(M * 4096 * 2)), c2(size_t(M * 4096 * 2));
    for (int i = 0; i < 50; ++i) {
      gemm(p.da->get<uint16_t>(), M, p.K, p.K, p.pw, c1.get<uint16_t>(), 4096, {}, cuda_exec(s1));
      gemm(p.da->get<uint16_t>(), M, p.K, p.K, p.pw, c2.get<uint16_t>(), 4096, {}, cuda_exec(s2));
      if (i % 10 == 9) {
        ASSERT_EQ(c1.download<uint16_t>(), ref) << "M=" << M << " call " << i;
        ASSERT_EQ(c2.download<uint16_t>(), ref) << "M=" << M << " call " << i;
      }
    }
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
  }
}

// Path splitk's two split-K reductions: through the workspace (its split-K scratch: a caller's
// workspace of gemm_workspace_bytes(M, N, K, cfg) bytes, or the library's cached one) and
// through clusters (a caller's workspace of gemm_workspace_bytes(M, K, cfg) bytes) sum the
// ranks in the same order, so C is bitwise the same. The workspace path really ran (its
// partials region lost the stale fill), the last rank of each tile reset its counter to zero,
// a second call into a re-poisoned C gives the same C, and stale bytes in the workspace do no
// harm.
TEST(GpuGemm, SplitkReductionThroughWorkspaceMatchesClusters) {
  MXFP4_REQUIRE_GPU();
  // Split 8 over K >= 4096 and M <= 16: the only configurations with a split-K scratch
  // (splitk_scratch). The two K = 7168 shapes have 264 and 136 CTAs (2 per SM: the padded
  // launch).
  struct Shape { int64_t M, N, K; };
  for (const Shape& sh : {Shape{1, 272, 4096}, Shape{9, 272, 4096}, Shape{16, 272, 4096}, Shape{8, 2112, 7168},
                          Shape{16, 2112, 7168}}) {
    const int64_t M = sh.M;
    const Problem p = random_problem(M, sh.N, sh.K, uint64_t(700 + M + sh.N));
    {
      constexpr int split = 8;
      for (const GemmConfig& cfg :
           {forced_cfg(GemmPath::splitk, split, 4, 2), forced_cfg(GemmPath::splitk, split, 8, 1)}) {
        const std::string what = "M=" + std::to_string(M) + " " + describe(cfg);
        const size_t small = gemm_workspace_bytes(M, p.K, cfg), full = gemm_workspace_bytes(M, p.N, p.K, cfg);
        const SplitkScratch scratch = splitk_scratch(M, p.N, p.K, cfg);
        ASSERT_TRUE(scratch.needed) << what;
        ASSERT_EQ(full, scratch.end) << what;
        auto run_with = [&](size_t bytes) {
          DeviceBuf ws(bytes, 0x5A);  // stale bytes everywhere, counters included
          GemmOptions opt;
          opt.config = &cfg;
          opt.workspace = ws.get();
          opt.workspace_bytes = bytes;
          std::vector<std::vector<uint16_t>> out;
          for (int call = 0; call < 2; ++call) {
            DeviceBuf dc(size_t(M * p.N * 2), 0xFF);
            gemm(p.da->get<uint16_t>(), M, p.K, p.K, p.pw, dc.get<uint16_t>(), p.N, opt, cuda_exec());
            out.push_back(dc.download<uint16_t>());
          }
          EXPECT_EQ(out[0], out[1]) << what << " workspace " << bytes << ": second call differs";
          if (bytes >= full) {
            const auto tail = ws.download<uint8_t>();
            const bool written = std::any_of(tail.begin() + int64_t(scratch.partials_offset), tail.end(),
                                             [](uint8_t b) { return b != 0x5A; });
            EXPECT_TRUE(written) << what << ": the partial tiles were never written";
            // Every rank counted itself on its tile's counter after the quantizer zeroed it, so
            // zeros here come from the last rank's reset.
            const bool reset = std::all_of(tail.begin() + int64_t(scratch.counters_offset),
                                           tail.begin() + int64_t(scratch.counters_offset + 4 * scratch.tiles),
                                           [](uint8_t b) { return b == 0; });
            EXPECT_TRUE(reset) << what << ": a tile counter was not reset by its last rank";
          }
          return out[0];
        };
        const auto through_clusters = run_with(small), through_ws = run_with(full);
        p.check(through_ws, p.N, all_rows(M), "split-K through the workspace " + what);
        ASSERT_EQ(through_ws, through_clusters) << what;
        ASSERT_EQ(p.run(&cfg, p.N), through_ws) << what << " (cached workspace)";
      }
    }
  }
}

TEST(GpuGemm, EveryPathCapturesAndReplaysInACudaGraph) {
  MXFP4_REQUIRE_GPU();
  for (int64_t M : {4, 64, 300}) {
    const Problem p = random_problem(M, 512, 1024, uint64_t(M + 5));
    for (const GemmConfig& cfg : configs_for(M, 1024)) {
      const auto want = p.run(&cfg, 512);  // also sizes the cached workspace before capture
      cudaStream_t s;
      cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
      DeviceBuf dc(size_t(M * 512 * 2), 0xFF);
      // Warm the (device, stream) workspace outside capture, then poison C again.
      GemmOptions opt;
      opt.config = &cfg;
      gemm(p.da->get<uint16_t>(), M, p.K, p.K, p.pw, dc.get<uint16_t>(), 512, opt, cuda_exec(s));
      cuda_ok(cudaStreamSynchronize(s), "sync");
      dc.fill(0xFF);
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
      gemm(p.da->get<uint16_t>(), M, p.K, p.K, p.pw, dc.get<uint16_t>(), 512, opt, cuda_exec(s));
      cuda_ok(cudaStreamEndCapture(s, &graph), "end capture");
      cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
      for (int r = 0; r < 3; ++r) cuda_ok(cudaGraphLaunch(exec, s), "graph launch");
      cuda_ok(cudaStreamSynchronize(s), "sync");
      EXPECT_EQ(dc.download<uint16_t>(), want) << describe(cfg);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(s);
    }
  }
}

// Graph capture with the cached workspace and split-K through it (split 8, K = 4096, M = 16):
// captured while the cache holds A's fragments but not the split-K scratch (warmed by a
// smaller N), the call reduces through clusters; an eager call then grows the cache, and the
// first graph still replays correctly (its outgrown buffer is kept); a second capture reduces
// through the workspace. Every replay gives the eager result bit for bit.
TEST(GpuGemm, SplitkWorkspaceReductionCapturesAndReplays) {
  MXFP4_REQUIRE_GPU();
  const int64_t M = 16, K = 4096;
  const Problem small = random_problem(M, 64, K, 811), p = random_problem(M, 272, K, 812);
  const GemmConfig cfg = forced_cfg(GemmPath::splitk, 8, 4, 2);
  ASSERT_TRUE(splitk_scratch(M, p.N, K, cfg).needed);
  ASSERT_GT(gemm_workspace_bytes(M, p.N, K, cfg), gemm_workspace_bytes(M, small.N, K, cfg));
  const auto want = p.run(&cfg, p.N);
  p.check(want, p.N, all_rows(M), "eager " + describe(cfg));
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  GemmOptions opt;
  opt.config = &cfg;
  DeviceBuf dsmall(size_t(M * small.N * 2), 0xFF), dc(size_t(M * p.N * 2), 0xFF);
  gemm(small.da->get<uint16_t>(), M, K, K, small.pw, dsmall.get<uint16_t>(), small.N, opt, cuda_exec(s));
  cuda_ok(cudaStreamSynchronize(s), "sync");
  auto capture = [&] {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    gemm(p.da->get<uint16_t>(), M, K, K, p.pw, dc.get<uint16_t>(), p.N, opt, cuda_exec(s));
    cuda_ok(cudaStreamEndCapture(s, &graph), "end capture");
    cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    cudaGraphDestroy(graph);
    return exec;
  };
  auto replay = [&](cudaGraphExec_t exec, const char* what) {
    dc.fill(0xFF);
    for (int r = 0; r < 3; ++r) cuda_ok(cudaGraphLaunch(exec, s), "graph launch");
    cuda_ok(cudaStreamSynchronize(s), "sync");
    EXPECT_EQ(dc.download<uint16_t>(), want) << what;
  };
  const cudaGraphExec_t through_clusters = capture();
  replay(through_clusters, "captured with a cache too small for the split-K scratch");
  gemm(p.da->get<uint16_t>(), M, K, K, p.pw, dc.get<uint16_t>(), p.N, opt, cuda_exec(s));  // grows the cache
  cuda_ok(cudaStreamSynchronize(s), "sync");
  EXPECT_EQ(dc.download<uint16_t>(), want) << "eager call that grew the cache";
  replay(through_clusters, "first graph after the cache grew");
  const cudaGraphExec_t through_ws = capture();
  replay(through_ws, "captured with the split-K scratch");
  cudaGraphExecDestroy(through_clusters);
  cudaGraphExecDestroy(through_ws);
  cudaStreamDestroy(s);
}

TEST(GpuGemm, ValidationRejectsBadArguments) {
  MXFP4_REQUIRE_GPU();
  const Problem p = random_problem(4, 64, 128, 3);
  DeviceBuf dc(4 * 64 * 2);
  // Shapes of the small-M kernel that have no instantiation: 12 warps, 4 warps per slab with
  // 8 slabs, block_n 32.
  for (auto [block_n, warps] : {std::pair{64, 12}, std::pair{128, 32}, std::pair{32, 4}}) {
    GemmConfig bad = forced_cfg(GemmPath::splitk, 1, 4);
    bad.block_n = block_n;
    bad.warps = warps;
    GemmOptions opt;
    opt.config = &bad;
    EXPECT_THROW(gemm(p.da->get<uint16_t>(), 4, 128, 128, p.pw, dc.get<uint16_t>(), 64, opt, cuda_exec()),
                 InvalidArgument)
        << describe(bad);
  }
  PackedWeights wrong = p.pw;
  wrong.version = 99;
  EXPECT_THROW(gemm(p.da->get<uint16_t>(), 4, 128, 128, wrong, dc.get<uint16_t>(), 64, {}, cuda_exec()), TypeMismatch);
  EXPECT_THROW(gemm(p.da->get<uint16_t>(), 4, 96, 128, p.pw, dc.get<uint16_t>(), 64, {}, cuda_exec()), InvalidArgument);
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuGemm, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
