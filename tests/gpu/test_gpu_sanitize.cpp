// Small cases of every kernel, sized for compute-sanitizer (scripts/device-check.sh
// --sanitizers: memcheck, racecheck, initcheck, synccheck run them): the three GEMM paths with
// their cluster splits and split-K through the workspace, one and two weight slabs per warp
// and both C store variants, the activation pre-quantizer (splitk, tiled), quantize,
// dequantize, the AITER layout converters, prepack, prepack_dense and unpack.
// Intermediate buffers are left uninitialised (NoInit) and gaps between strided rows are never
// written, so initcheck reports any read of a byte the library did not write first; results
// are checked against the CPU as in any other test.
#include <gtest/gtest.h>

#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)

#include "cpu/fp8_plan.hpp"
#include "cuda/fp8_kernels.hpp"
#include "gpu/gpu_cases.hpp"

namespace mxfp4::test {
namespace {

/// Uploads rows [rows, cols] of T (dense host) into a device buffer with row stride `ld`
/// elements whose gaps are never written.
template <typename T>
std::unique_ptr<DeviceBuf> strided_upload(const std::vector<T>& host, int64_t rows, int64_t cols, int64_t ld) {
  auto d = std::make_unique<DeviceBuf>(size_t(((rows - 1) * ld + cols) * int64_t(sizeof(T))), NoInit{});
  cuda_ok(cudaMemcpy2D(d->get(), size_t(ld) * sizeof(T), host.data(), size_t(cols) * sizeof(T), size_t(cols) * sizeof(T),
                       size_t(rows), cudaMemcpyHostToDevice),
          "cudaMemcpy2D H2D");
  return d;
}

/// Downloads rows [rows, cols] of T from row stride `ld` (only the written elements).
template <typename T>
std::vector<T> strided_download(const DeviceBuf& d, int64_t rows, int64_t cols, int64_t ld) {
  cuda_ok(cudaDeviceSynchronize(), "sync");
  std::vector<T> out(size_t(rows * cols));
  cuda_ok(cudaMemcpy2D(out.data(), size_t(cols) * sizeof(T), d.get(), size_t(ld) * sizeof(T), size_t(cols) * sizeof(T),
                       size_t(rows), cudaMemcpyDeviceToHost),
          "cudaMemcpy2D D2H");
  return out;
}

/// Runs gemm on A (bf16 [M, K], row stride lda, on the device) and pw into a fresh C (row
/// stride ldc) with configuration `cfg` (nullptr: the dispatcher's) and checks C against the
/// exact product of aq and b (spec §3).
ContractReport gemm_within_contract(const DeviceBuf& da, int64_t M, int64_t K, int64_t lda, const PackedWeights& pw,
                                    int64_t ldc, const GemmConfig* cfg, const HostMx& aq, const HostMx& b) {
  const int64_t N = pw.N;
  DeviceBuf dc(size_t(((M - 1) * ldc + N) * 2), NoInit{});
  GemmOptions opt;
  opt.config = cfg;
  gemm(da.get<uint16_t>(), M, K, lda, pw, dc.get<uint16_t>(), ldc, opt, cuda_exec());
  const std::vector<uint16_t> C = strided_download<uint16_t>(dc, M, N, ldc);
  return check_gemm_contract(C.data(), N, aq.view(), b.view());
}

TEST(GpuSanitize, GemmEveryPathSmall) {
  MXFP4_REQUIRE_GPU();
  const int64_t N = 200, K = 320;  // N tail in the last tile, K = 5 chunks of 64
  HostMx b = random_mx(N, K, 8101);
  set_first_scales(b, 7, -20, 20);  // row 7: a group spanning 40 binades (wide in path fp8)
  // Row 11: a flagged group (block exponents 60 and -60, outside [-47, 49]: path fp8's exact
  // fix-up; crossed with A's flagged row 5 below so that no product leaves fp32's range).
  set_first_scales(b, 11, 60, -60);
  {
    const fp8::GroupPlan plan = fp8::plan_groups(b.view());
    ASSERT_TRUE(plan.exact[size_t(7 * plan.slices)] && plan.wide[size_t(7 * plan.slices)]) << "row 7 wide";
    ASSERT_FALSE(plan.exact[size_t(11 * plan.slices)]) << "row 11 flagged";
  }
  DeviceBuf codes(b.codes), scales(b.scales), packed(size_t(packed_bytes(N, K)), NoInit{});
  DeviceBuf image(size_t(fp8_weights_bytes(N, K)), NoInit{});
  PackedWeights pw = prepack(MxMatrix{codes.get(), scales.get(), N, K}, packed.get(), cuda_exec());
  pw = prepack_fp8(pw, image.get(), cuda_exec());
  struct Run { int64_t M; std::vector<GemmConfig> cfgs; };
  const Run runs[] = {
      {5, {forced_cfg(GemmPath::fused, 1, 4), forced_cfg(GemmPath::fused, 4, 8, 2), GemmConfig{GemmPath::gemv, 16, 8, 1, 4},
           GemmConfig{GemmPath::gemv, 16, 8, 1, 16}}},
      {13, {GemmConfig{GemmPath::gemv, 16, 8, 1, 4}, GemmConfig{GemmPath::gemv, 32, 8, 1, 8},  // two token tiles
            // path splitk's 16-token kernel: the bulk copy at split 4 and 5, push at split 8
            forced_cfg(GemmPath::splitk, 4, 8), forced_cfg(GemmPath::splitk, 5, 4, 2), forced_cfg(GemmPath::splitk, 8, 4)}},
      {40, {forced_cfg(GemmPath::splitk, 2, 4, 2), forced_cfg(GemmPath::splitk, 8, 8),  // split 8 > 5 chunks
            forced_cfg(GemmPath::splitk, 3, 8, 2), fp8_cfg(64, 64)}},  // path fp8 at 32 < M <= 64 (session 23)
      {130, {forced_cfg(GemmPath::tiled), forced_cfg(GemmPath::splitk, 2, 4, 1), fp8_cfg(128, 128), fp8_cfg(64, 64), fp8_cfg(64, 128),
             fp8_cfg(256, 128),  // the 2-CTA pair: multicast B, remote releases
             fp8_cfg(128, 64, false, 3),  // split-K: ranks store 43 or 42 of 128 rows
             GemmConfig{GemmPath::fp8, 128, 192, 1, 16}}},  // 192 x 128: three consumer warpgroups
      {2200, {fp8_cfg(64, 64)}}};  // path fp8's flagged lines under 140 tiles: CTAs store several
  for (const Run& run : runs) {
    const int64_t M = run.M, lda = K + 32;
    std::vector<uint16_t> a = randn_bf16(size_t(M * K), uint64_t(8200 + M));
    // Row 3: blocks scaled 2^-10 and 2^10 (a wide group); row 5: 2^-60 and 2^60 (flagged: the
    // fix-up's activation-row pass, crossed with B's row 11).
    spread_first_blocks(a, K, 3, 10);
    if (M > 5) spread_first_blocks(a, K, 5, 60);
    const HostMx aq = quantize_bf16(a, M, K);
    {
      const fp8::GroupPlan plan = fp8::plan_groups(aq.view());
      ASSERT_TRUE(plan.exact[size_t(3 * plan.slices)] && plan.wide[size_t(3 * plan.slices)]) << "A row 3 wide";
      if (M > 5) ASSERT_FALSE(plan.exact[size_t(5 * plan.slices)]) << "A row 5 flagged";
    }
    const auto da = strided_upload(a, M, K, lda);
    std::vector<const GemmConfig*> cfgs{nullptr};
    for (const GemmConfig& c : run.cfgs) cfgs.push_back(&c);
    for (const GemmConfig* cfg : cfgs) {
      // ldc = N (16-byte aligned rows: vector stores where a path has them) and N + 3.
      for (int64_t ldc : {N, N + 3}) {
        const ContractReport rep = gemm_within_contract(*da, M, K, lda, pw, ldc, cfg, aq, b);
        EXPECT_TRUE(rep.ok()) << "M=" << M << " ldc=" << ldc << " " << cfg_name(cfg) << ": " << rep.str();
      }
    }
  }
}

// Path fp8's chains over several chain chunks (K = 2304: chunks of 8, 8 and 2 slices), with
// chains broken mid-chunk in some rows (a slice scaled 2^-3, a wide block): the image kernel's
// chunks and the GEMM's chained stages under every tool, on three tile shapes and split-K 2, 3, 5.
TEST(GpuSanitize, Fp8ChainsOverSeveralChunks) {
  MXFP4_REQUIRE_GPU();
  const int64_t M = 130, N = 128, K = 2304;
  const HostMx b = random_mx(N, K, 8121);
  DeviceBuf codes(b.codes), scales(b.scales), packed(size_t(packed_bytes(N, K)), NoInit{});
  DeviceBuf image(size_t(fp8_weights_bytes(N, K)), NoInit{});
  PackedWeights pw = prepack(MxMatrix{codes.get(), scales.get(), N, K}, packed.get(), cuda_exec());
  pw = prepack_fp8(pw, image.get(), cuda_exec());
  std::vector<uint16_t> a = randn_bf16(size_t(M * K), 8122);
  for (int64_t r = 0; r < M; r += 3)
    for (int64_t k = 3 * 128; k < 4 * 128; ++k) a[size_t(r * K + k)] = fmt::f32_to_bf16(fmt::bf16_to_f32(a[size_t(r * K + k)]) * 0.125f);
  for (int64_t r = 1; r < M; r += 5)
    for (int64_t k = 10 * 128; k < 10 * 128 + 32; ++k) a[size_t(r * K + k)] = fmt::f32_to_bf16(fmt::bf16_to_f32(a[size_t(r * K + k)]) * 256.f);
  const HostMx aq = quantize_bf16(a, M, K);
  const auto da = strided_upload(a, M, K, K);
  // Split 3 and 5: the reduction's 128 rows shared unevenly (42/43/43, 25/26/25/26/26); the
  // 20-warp kernel at split 5 loads 2 ranks per batch (three batches), the others 3.
  for (const GemmConfig& cfg : {fp8_cfg(128, 128), fp8_cfg(64, 64), fp8_cfg(128, 64, false, 2), fp8_cfg(128, 64, false, 3),
                                fp8_cfg(128, 128, false, 5), fp8_cfg(128, 128, true, 5)}) {
    const ContractReport rep = gemm_within_contract(*da, M, K, K, pw, N, &cfg, aq, b);
    EXPECT_TRUE(rep.ok()) << describe(cfg) << ": " << rep.str();
  }
  // Every image kernel, forced (the GEMMs above ran the automatic choice), against the oracle.
  std::vector<uint8_t> cpu(size_t(fp8::ImageGeometry::of(M, K).total_bytes()));
  fp8::build_image(aq.view(), cpu.data());
  for (const auto kernel : cuda::kEveryImageKernel) {
    DeviceBuf img(cpu.size(), NoInit{});
    cuda::fp8_image_from_bf16(da->get<uint16_t>(), M, K, K, ScaleRule::aiter, img.get(), nullptr, kernel);
    EXPECT_EQ(img.download<uint8_t>(), cpu) << "image kernel " << int(kernel);
  }
}

// Path splitk's split-K through the workspace (split 8, K >= 4096: splitk_scratch), small
// enough for every tool: memcheck and initcheck see the global partial tiles and tile
// counters (racecheck only shared memory: the reduction tile the partials come from).
TEST(GpuSanitize, GemmSplitkThroughWorkspaceSmall) {
  MXFP4_REQUIRE_GPU();
  const int64_t N = 40, K = 4096;
  HostMx b = random_mx(N, K, 8111);
  DeviceBuf codes(b.codes), scales(b.scales), packed(size_t(packed_bytes(N, K)), NoInit{});
  const PackedWeights pw = prepack(MxMatrix{codes.get(), scales.get(), N, K}, packed.get(), cuda_exec());
  for (int64_t M : {3, 16}) {
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), uint64_t(8300 + M));
    const HostMx aq = quantize_bf16(a, M, K);
    const auto da = strided_upload(a, M, K, K);
    for (const GemmConfig& cfg : {forced_cfg(GemmPath::splitk, 8, 4, 2), forced_cfg(GemmPath::splitk, 8, 8, 1)}) {
      ASSERT_TRUE(splitk_scratch(M, N, K, cfg).needed) << describe(cfg);
      const ContractReport rep = gemm_within_contract(*da, M, K, K, pw, N, &cfg, aq, b);
      EXPECT_TRUE(rep.ok()) << "M=" << M << " " << describe(cfg) << ": " << rep.str();
    }
  }
}

TEST(GpuSanitize, QuantizeLayoutsPrepackSmall) {
  MXFP4_REQUIRE_GPU();
  const int64_t rows = 48, K = 320, kb = K / 32, xs = K + 32;
  const std::vector<uint16_t> x = randn_bf16(size_t(rows * K), 8301);
  const HostMx q = quantize_bf16(x, rows, K);
  const auto dx = strided_upload(x, rows, K, xs);

  DeviceBuf codes(size_t(rows * K / 2), NoInit{}), scales(size_t(rows * kb), NoInit{});
  DeviceBuf sh_scales(size_t(shuffled_scales_bytes(rows, kb)), NoInit{});  // padding never written
  quantize(dx->get(), DType::bf16, rows, K, xs, codes.get(), scales.get(), ScaleRule::aiter, cuda_exec());
  quantize(dx->get(), DType::bf16, rows, K, xs, codes.get(), sh_scales.get(), ScaleRule::aiter, cuda_exec(),
           ScaleLayout::aiter_shuffled);
  ASSERT_EQ(codes.download<uint8_t>(), q.codes);
  ASSERT_EQ(scales.download<uint8_t>(), q.scales);

  // fp32 input under the rceil rule.
  const std::vector<float> xf = randn_f32(size_t(rows * K), 8302, 3.0f);
  std::vector<uint8_t> cq(size_t(rows * K / 2)), cs(size_t(rows * kb));
  quantize(xf.data(), DType::fp32, rows, K, K, cq.data(), cs.data(), ScaleRule::rceil);
  const auto dxf = strided_upload(xf, rows, K, K + 7);
  DeviceBuf fq(cq.size(), NoInit{}), fs(cs.size(), NoInit{});
  quantize(dxf->get(), DType::fp32, rows, K, K + 7, fq.get(), fs.get(), ScaleRule::rceil, cuda_exec());
  ASSERT_EQ(fq.download<uint8_t>(), cq);
  ASSERT_EQ(fs.download<uint8_t>(), cs);

  // dequantize (fp32 dense, bf16 strided).
  const MxMatrix dq{codes.get(), scales.get(), rows, K};
  std::vector<float> f_want(size_t(rows * K));
  std::vector<uint16_t> h_want(size_t(rows * K));
  dequantize(q.view(), f_want.data(), DType::fp32, K);
  dequantize(q.view(), h_want.data(), DType::bf16, K);
  DeviceBuf f_out(f_want.size() * 4, NoInit{}), h_out(size_t(((rows - 1) * (K + 5) + K) * 2), NoInit{});
  dequantize(dq, f_out.get(), DType::fp32, K, cuda_exec());
  dequantize(dq, h_out.get(), DType::bf16, K + 5, cuda_exec());
  const auto f_got = f_out.download<float>();
  ASSERT_EQ(0, std::memcmp(f_got.data(), f_want.data(), f_want.size() * 4));
  ASSERT_EQ(strided_download<uint16_t>(h_out, rows, K, K + 5), h_want);

  // Layouts: unshuffle reads only the logical bytes of the shuffled scales.
  DeviceBuf back_scales(size_t(rows * kb), NoInit{}), sh_codes(size_t(rows * K / 2), NoInit{});
  DeviceBuf back_codes(size_t(rows * K / 2), NoInit{}), sh2(size_t(shuffled_scales_bytes(rows, kb)), NoInit{});
  unshuffle_scales(sh_scales.get(), rows, kb, back_scales.get(), cuda_exec());
  shuffle_weight(codes.get(), rows, K, sh_codes.get(), cuda_exec());
  unshuffle_weight(sh_codes.get(), rows, K, back_codes.get(), cuda_exec());
  shuffle_scales(scales.get(), rows, kb, sh2.get(), cuda_exec());
  ASSERT_EQ(back_scales.download<uint8_t>(), q.scales);
  ASSERT_EQ(back_codes.download<uint8_t>(), q.codes);

  // prepack from the shuffled layouts (scale padding uninitialised), from plain, and from
  // dense bf16 with unwritten gaps; unpack.
  std::vector<uint8_t> want(size_t(packed_bytes(rows, K)));
  prepack(q.view(), want.data());
  DeviceBuf p1(want.size(), NoInit{}), p2(want.size(), NoInit{}), p3(want.size(), NoInit{});
  DeviceBuf tmp(size_t(rows * K / 2 + rows * kb), NoInit{});
  prepack(MxMatrix{sh_codes.get(), sh2.get(), rows, K, CodeLayout::aiter_shuffled, ScaleLayout::aiter_shuffled},
          p1.get(), cuda_exec());
  const PackedWeights pw = prepack(dq, p2.get(), cuda_exec());
  prepack_dense(dx->get(), DType::bf16, rows, K, xs, p3.get(), tmp.get(), ScaleRule::aiter, cuda_exec());
  ASSERT_EQ(p1.download<uint8_t>(), want);
  ASSERT_EQ(p2.download<uint8_t>(), want);
  ASSERT_EQ(p3.download<uint8_t>(), want);
  DeviceBuf u_codes(size_t(rows * K / 2), NoInit{}), u_scales(size_t(rows * kb), NoInit{});
  unpack(pw, u_codes.get(), u_scales.get(), cuda_exec());
  ASSERT_EQ(u_codes.download<uint8_t>(), q.codes);
  ASSERT_EQ(u_scales.download<uint8_t>(), q.scales);
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuSanitize, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
