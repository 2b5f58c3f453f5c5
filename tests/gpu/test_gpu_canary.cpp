// Device-side canaries (docs/hardening.md §6): every GPU entry point writes only the logical
// elements of its outputs, never its inputs, and never the gaps, padding or guard bytes
// around them. Buffers sit inside larger allocations filled with fresh random bytes, at
// offsets that are only as aligned as the API requires (A and C at 2 bytes, byte buffers at
// odd addresses), with row strides that leave gaps.
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include "gpu/gpu_cases.hpp"

namespace mxfp4::test {
namespace {

/// bf16 A [M, K] with row stride lda (elements) inside a guarded buffer at byte `shift`;
/// the gaps between rows hold bf16 NaN (0x7FC0), so a kernel that reads them makes NaN.
struct GuardedA {
  std::vector<uint16_t> dense;
  HostMx q;
  int64_t lda;
  Guarded buf;
  GuardedA(int64_t M, int64_t K, int64_t lda_, size_t shift, uint64_t seed)
      : dense(randn_bf16(size_t(M * K), seed)), q(quantize_bf16(dense, M, K)), lda(lda_),
        buf(size_t(((M - 1) * lda_ + K) * 2), shift, seed + 1) {
    std::vector<uint16_t> span(size_t((M - 1) * lda + K), 0x7FC0);
    for (int64_t m = 0; m < M; ++m)
      std::copy(dense.begin() + m * K, dense.begin() + (m + 1) * K, span.begin() + m * lda);
    buf.fill(0, span.data(), span.size() * 2);
  }
};

/// The logical C [M, N] (row stride ldc) of a guarded buffer, checked against the reference on
/// `rows`; returns the bf16 values (row stride ldc) for bitwise comparisons.
std::vector<uint16_t> checked_c(const Guarded& c, int64_t M, int64_t ldc, const HostMx& aq, const HostMx& b,
                                const std::string& what) {
  const std::vector<uint8_t> bytes = c.logical();
  std::vector<uint16_t> C(bytes.size() / 2);
  std::memcpy(C.data(), bytes.data(), C.size() * 2);
  const int64_t K = b.K;
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < M; r += (M <= 48 ? 1 : 7)) rows.push_back(r);
  rows.push_back(M - 1);
  for (int64_t r : rows) {
    const MxMatrix arow{aq.codes.data() + r * K / 2, aq.scales.data() + r * K / 32, 1, K};
    const ContractReport rep = check_gemm_contract(C.data() + r * ldc, ldc, arow, b.view());
    EXPECT_TRUE(rep.ok()) << what << " row " << r << ": " << rep.str();
    if (!rep.ok()) break;
  }
  return C;
}

// Every GEMM path, C at a 16-byte-aligned address with ldc % 8 == 0 (the tiled path's vector
// stores) and at a 2-byte-aligned one with an odd ldc; A at 2 bytes with an odd lda and NaN
// in its gaps; the workspace passed explicitly with slack beyond the size the library needs.
// 9x72x4096 on path splitk with split 8 reduces split-K through the workspace's scratch. N =
// 261 (N % 8 != 0 with ldc % 8 == 0): path fp8's 16-byte-store epilogue meets a lane whose 8
// columns straddle N (session 49's review).
TEST(GpuCanary, GemmEveryPathWritesOnlyInsideC) {
  MXFP4_REQUIRE_GPU();
  struct Shape { int64_t M, N, K; };
  uint64_t seed = 9000;
  for (const Shape& s : {Shape{3, 40, 96}, Shape{40, 264, 1664}, Shape{129, 264, 160}, Shape{9, 72, 4096},
                        Shape{129, 261, 160}, Shape{40, 261, 1664}}) {
    const HostMx b = random_mx(s.N, s.K, ++seed);
    Guarded packed(size_t(packed_bytes(s.N, s.K)), 0, ++seed), image(size_t(fp8_weights_bytes(s.N, s.K)), 0, ++seed);
    {
      DeviceBuf dc(b.codes), ds(b.scales);
      prepack(MxMatrix{dc.get(), ds.get(), s.N, s.K}, packed.data(), cuda_exec());
      prepack_fp8(PackedWeights{packed.data(), s.N, s.K}, image.data(), cuda_exec());
      cuda_ok(cudaDeviceSynchronize(), "prepack");
    }
    ASSERT_EQ(image.changed_outside([](int64_t) { return true; }), "") << "prepack_fp8 wrote outside its buffer";
    packed.snapshot();
    image.snapshot();
    const PackedWeights pw{packed.data(), s.N, s.K, kPackedLayoutVersion, image.data()};
    GuardedA a(s.M, s.K, s.K + 3, 2, ++seed);

    std::vector<const GemmConfig*> cfgs{nullptr};
    const std::vector<GemmConfig> forced = path_configs(s.M, s.K);
    for (const GemmConfig& c : forced) cfgs.push_back(&c);
    for (const GemmConfig* cfg : cfgs) {
      const GemmConfig eff = cfg ? *cfg : explain_gemm(s.M, s.N, s.K, cuda_exec());
      const std::pair<size_t, int64_t> c_layouts[] = {{0, (s.N + 7) / 8 * 8 + 8}, {2, s.N + 5}};
      for (const auto& [shift, ldc] : c_layouts) {
        // The first layout gets exactly gemm_workspace_bytes(M, K) (path splitk then reduces
        // through clusters), the second gemm_workspace_bytes(M, N, K) and 4 KiB more (split-K
        // through the workspace); neither may write past its size.
        const bool with_n = shift != 0;
        const size_t need = with_n ? gemm_workspace_bytes(s.M, s.N, s.K, eff) : gemm_workspace_bytes(s.M, s.K, eff);
        const size_t slack = with_n || need == 0 ? 4096 : 0;
        const std::string what = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " " +
                                 cfg_name(cfg) + " C shift " + std::to_string(shift) + " ldc " + std::to_string(ldc);
        const StridedRegion c_region{s.M, s.N * 2, ldc * 2};
        Guarded c1(size_t(c_region.span()), shift, ++seed), c2(size_t(c_region.span()), shift, ++seed);
        Guarded ws(need + slack, 0, ++seed);
        GemmOptions opt;
        opt.config = cfg;
        opt.workspace = ws.data();
        opt.workspace_bytes = need + slack;
        gemm(a.buf.data<uint16_t>(), s.M, s.K, a.lda, pw, c1.data<uint16_t>(), ldc, opt, cuda_exec());
        GemmOptions cached;
        cached.config = cfg;
        gemm(a.buf.data<uint16_t>(), s.M, s.K, a.lda, pw, c2.data<uint16_t>(), ldc, cached, cuda_exec());
        cuda_ok(cudaDeviceSynchronize(), "sync");
        const std::string out1 = c1.changed_outside(c_region), out2 = c2.changed_outside(c_region);
        ASSERT_EQ(out1, "") << what << " (explicit workspace)";
        ASSERT_EQ(out2, "") << what << " (cached workspace)";
        const std::string ws_out = ws.changed_outside([&](int64_t rel) { return rel < int64_t(need); });
        ASSERT_EQ(ws_out, "") << what << ": workspace bytes beyond the " << need << " it needs changed";
        const auto C1 = checked_c(c1, s.M, ldc, a.q, b, what);
        const auto C2 = checked_c(c2, s.M, ldc, a.q, b, what);
        for (int64_t m = 0; m < s.M; ++m)
          ASSERT_EQ(0, std::memcmp(&C1[m * ldc], &C2[m * ldc], size_t(s.N) * 2))
              << what << ": explicit and cached workspace give different bits in row " << m;
      }
    }
    EXPECT_EQ(a.buf.changed_anywhere(), "") << "A (with its gaps) was written";
    EXPECT_EQ(packed.changed_anywhere(), "") << "packed weights were written";
    EXPECT_EQ(image.changed_anywhere(), "") << "the FP8 image was written";
  }
}

/// Host copy of a strided region of `rows` rows of `row_elems` T, `stride` T apart.
template <typename T>
std::vector<T> rows_of(const std::vector<uint8_t>& bytes, int64_t rows, int64_t row_elems, int64_t stride) {
  std::vector<T> out(size_t(rows * row_elems));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[r * row_elems], &bytes[r * stride * sizeof(T)], row_elems * sizeof(T));
  return out;
}

// quantize (plain and shuffled scales), dequantize (fp32, bf16, strided), the four AITER
// layout converters, prepack (from plain and shuffled), prepack_dense and unpack, all with
// byte outputs at odd addresses (16 bytes for packed data, as the API requires on CUDA).
TEST(GpuCanary, QuantizeLayoutsPrepackWriteOnlyTheirOutputs) {
  MXFP4_REQUIRE_GPU();
  const int64_t rows = 48, K = 320, kb = K / 32, xs = K + 32;  // kb = 10: shuffle padding both ways
  const int64_t sh_bytes = shuffled_scales_bytes(rows, kb), pk_bytes = packed_bytes(rows, K);
  const auto all = [](int64_t) { return true; };
  // x: bf16 with NaN in the gaps between rows, at a 2-byte-aligned address.
  const std::vector<uint16_t> dense = randn_bf16(size_t(rows * K), 4242);
  std::vector<uint16_t> xh(size_t((rows - 1) * xs + K), 0x7FC0);
  for (int64_t r = 0; r < rows; ++r) std::copy(dense.begin() + r * K, dense.begin() + (r + 1) * K, xh.begin() + r * xs);
  Guarded x(xh.size() * 2, 2, 1);
  x.fill(0, xh.data(), xh.size() * 2);
  const HostMx q = quantize_bf16(dense, rows, K);

  // quantize -> plain codes (+1) and scales (+3); shuffled scales (+5), padding untouched.
  Guarded codes(size_t(rows * K / 2), 1, 2), scales(size_t(rows * kb), 3, 3), sscales(size_t(sh_bytes), 5, 4);
  quantize(x.data(), DType::bf16, rows, K, xs, codes.data(), scales.data(), ScaleRule::aiter, cuda_exec());
  quantize(x.data(), DType::bf16, rows, K, xs, codes.data(), sscales.data(), ScaleRule::aiter, cuda_exec(),
           ScaleLayout::aiter_shuffled);
  std::vector<uint8_t> sh_want = sscales.initial_logical(), c_tmp(size_t(rows * K / 2));
  quantize(xh.data(), DType::bf16, rows, K, xs, c_tmp.data(), sh_want.data(), ScaleRule::aiter, Exec{},
           ScaleLayout::aiter_shuffled);
  ASSERT_EQ(codes.logical(), q.codes);
  ASSERT_EQ(scales.logical(), q.scales);
  ASSERT_EQ(sscales.logical(), sh_want) << "shuffled scales or their padding differ from the CPU's";
  ASSERT_EQ(codes.changed_outside(all), "");
  ASSERT_EQ(scales.changed_outside(all), "");
  ASSERT_EQ(sscales.changed_outside(all), "");
  codes.snapshot(), scales.snapshot(), sscales.snapshot();
  const MxMatrix dq{codes.data(), scales.data(), rows, K};

  // dequantize: fp32 (+4, stride K + 7) and bf16 (+2, stride K + 3); gaps keep their bytes.
  std::vector<float> f32_want(size_t(rows * K));
  std::vector<uint16_t> b16_want(size_t(rows * K));
  dequantize(q.view(), f32_want.data(), DType::fp32, K);
  dequantize(q.view(), b16_want.data(), DType::bf16, K);
  const StridedRegion f32_reg{rows, K * 4, (K + 7) * 4}, b16_reg{rows, K * 2, (K + 3) * 2};
  Guarded f32(size_t(f32_reg.span()), 4, 5), b16(size_t(b16_reg.span()), 2, 6);
  dequantize(dq, f32.data(), DType::fp32, K + 7, cuda_exec());
  dequantize(dq, b16.data(), DType::bf16, K + 3, cuda_exec());
  const auto f32_got = rows_of<float>(f32.logical(), rows, K, K + 7);
  ASSERT_EQ(0, std::memcmp(f32_got.data(), f32_want.data(), f32_want.size() * 4));
  ASSERT_EQ(rows_of<uint16_t>(b16.logical(), rows, K, K + 3), b16_want);
  ASSERT_EQ(f32.changed_outside(f32_reg), "");
  ASSERT_EQ(b16.changed_outside(b16_reg), "");

  // AITER layouts: shuffle (+7, +11) and back (+9, +13); shuffled padding keeps its bytes.
  Guarded s_sh(size_t(sh_bytes), 7, 7), w_sh(size_t(rows * K / 2), 11, 8);
  Guarded s_back(size_t(rows * kb), 9, 9), w_back(size_t(rows * K / 2), 13, 10);
  shuffle_scales(scales.data(), rows, kb, s_sh.data(), cuda_exec());
  shuffle_weight(codes.data(), rows, K, w_sh.data(), cuda_exec());
  std::vector<uint8_t> s_sh_want = s_sh.initial_logical(), w_sh_want(size_t(rows * K / 2));
  shuffle_scales(q.scales.data(), rows, kb, s_sh_want.data());
  shuffle_weight(q.codes.data(), rows, K, w_sh_want.data());
  ASSERT_EQ(s_sh.logical(), s_sh_want);
  ASSERT_EQ(w_sh.logical(), w_sh_want);
  ASSERT_EQ(s_sh.changed_outside(all), "");
  ASSERT_EQ(w_sh.changed_outside(all), "");
  s_sh.snapshot(), w_sh.snapshot();
  unshuffle_scales(s_sh.data(), rows, kb, s_back.data(), cuda_exec());
  unshuffle_weight(w_sh.data(), rows, K, w_back.data(), cuda_exec());
  ASSERT_EQ(s_back.logical(), q.scales);
  ASSERT_EQ(w_back.logical(), q.codes);
  ASSERT_EQ(s_back.changed_outside(all), "");
  ASSERT_EQ(w_back.changed_outside(all), "");

  // prepack from plain and from shuffled inputs, prepack_dense (tmp: exactly its bytes).
  std::vector<uint8_t> pk_want(static_cast<size_t>(pk_bytes));
  prepack(q.view(), pk_want.data());
  Guarded p1(size_t(pk_bytes), 0, 11), p2(size_t(pk_bytes), 16, 12), p3(size_t(pk_bytes), 0, 13);
  Guarded tmp(size_t(rows * K / 2 + rows * kb), 1, 14);
  const PackedWeights pw = prepack(dq, p1.data(), cuda_exec());
  prepack(MxMatrix{w_sh.data(), s_sh.data(), rows, K, CodeLayout::aiter_shuffled, ScaleLayout::aiter_shuffled},
          p2.data(), cuda_exec());
  prepack_dense(x.data(), DType::bf16, rows, K, xs, p3.data(), tmp.data(), ScaleRule::aiter, cuda_exec());
  for (const Guarded* p : {&p1, &p2, &p3}) {
    ASSERT_EQ(p->logical(), pk_want);
    ASSERT_EQ(p->changed_outside(all), "");
  }
  ASSERT_EQ(tmp.changed_outside(all), "") << "prepack_dense wrote beyond N*K/2 + N*K/32 bytes of tmp";
  p1.snapshot();

  // unpack into odd addresses.
  Guarded u_codes(size_t(rows * K / 2), 15, 15), u_scales(size_t(rows * kb), 17, 16);
  unpack(pw, u_codes.data(), u_scales.data(), cuda_exec());
  ASSERT_EQ(u_codes.logical(), q.codes);
  ASSERT_EQ(u_scales.logical(), q.scales);
  ASSERT_EQ(u_codes.changed_outside(all), "");
  ASSERT_EQ(u_scales.changed_outside(all), "");

  // No call wrote any of its inputs.
  const std::pair<const char*, const Guarded*> inputs[] = {{"x", &x},         {"codes", &codes}, {"scales", &scales},
                                                           {"shuffled scales", &sscales}, {"s_sh", &s_sh},
                                                           {"w_sh", &w_sh},  {"packed", &p1}};
  for (const auto& [name, g] : inputs)
    EXPECT_EQ(g->changed_anywhere(), "") << name << " (an input) was written";
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuCanary, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
