// Alignment on the device (docs/hardening.md §1): misaligned device pointers are rejected with
// InvalidArgument naming the pointer and the alignment it needs, before any work is queued
// (outputs untouched, no CUDA error left behind); pointers aligned exactly as much as the API
// requires work and give the CPU's results.
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <functional>

#include "gpu/gpu_cases.hpp"

namespace mxfp4::test {
namespace {

/// Runs f, which must throw E with every string of `parts` in its message.
template <typename E>
void expect_rejected(const std::function<void()>& f, std::initializer_list<const char*> parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << what << ": message lacks \"" << p << "\": " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong exception type: " << e.what();
  }
}

TEST(GpuAlignment, MisalignedDevicePointersAreRejectedBeforeAnyWork) {
  MXFP4_REQUIRE_GPU();
  const int64_t M = 4, N = 64, K = 128;
  const HostMx b = random_mx(N, K, 31);
  const DevicePacked pk(b);
  DeviceBuf codes(b.codes), scales(b.scales);
  const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 32);
  Guarded da(size_t(M * K * 2) + 16, 0, 33);
  da.fill(0, a.data(), a.size() * 2);
  // Views of this buffer at +1, +4 and +8 stand for misaligned packed weights (the check must
  // fire whatever the bytes are).
  Guarded pk_shift(size_t(packed_bytes(N, K)) + 16, 0, 34);
  Guarded c(size_t(M * N * 2) + 16, 0, 35), out(size_t(packed_bytes(N, K)) + 64, 0, 36);
  Guarded ws(1 << 20, 0, 37);
  const uint16_t* A = da.data<uint16_t>();
  uint16_t* C = c.data<uint16_t>();
  const GemmConfig splitk = forced_cfg(GemmPath::splitk, 2, 4);

  for (int64_t off : {1, 4, 8}) {
    const std::string at = " at +" + std::to_string(off);
    const PackedWeights bad{pk_shift.data() + off, N, K, kPackedLayoutVersion};
    expect_rejected<InvalidArgument>([&] { gemm(A, M, K, K, bad, C, N, {}, cuda_exec()); },
                                     {"mxfp4::gemm: ", "B.data = ", "not aligned to 16 bytes"}, "gemm B.data" + at);
    GemmOptions opt;
    opt.config = &splitk;
    opt.workspace = ws.data() + off;
    opt.workspace_bytes = 4096;
    expect_rejected<InvalidArgument>([&] { gemm(A, M, K, K, pk.pw, C, N, opt, cuda_exec()); },
                                     {"mxfp4::gemm: ", "GemmOptions::workspace = ", "not aligned to 16 bytes"},
                                     "gemm workspace" + at);
    expect_rejected<InvalidArgument>([&] { prepack(MxMatrix{codes.get(), scales.get(), N, K}, out.data() + off, cuda_exec()); },
                                     {"mxfp4::prepack: ", "out = ", "not aligned to 16 bytes"}, "prepack out" + at);
    expect_rejected<InvalidArgument>(
        [&] { prepack_dense(A, DType::bf16, M, K, K, out.data() + off, ws.data(), ScaleRule::aiter, cuda_exec()); },
        {"mxfp4::prepack_dense: ", "out = ", "not aligned to 16 bytes"}, "prepack_dense out" + at);
    expect_rejected<InvalidArgument>([&] { unpack(bad, ws.data(), ws.data() + 8192, cuda_exec()); },
                                     {"mxfp4::unpack: ", "p.data = ", "not aligned to 16 bytes"}, "unpack p.data" + at);
  }
  // Dense elements: A and C at an odd byte, fp32 at +2, bf16/fp16 at +1.
  const auto* a_odd = reinterpret_cast<const uint16_t*>(da.data() + 1);
  expect_rejected<InvalidArgument>([&] { gemm(a_odd, M, K, K, pk.pw, C, N, {}, cuda_exec()); },
                                   {"mxfp4::gemm: ", "A = ", "not aligned to 2 bytes"}, "gemm A at +1");
  expect_rejected<InvalidArgument>(
      [&] { gemm(A, M, K, K, pk.pw, reinterpret_cast<uint16_t*>(c.data() + 1), N, {}, cuda_exec()); },
      {"mxfp4::gemm: ", "C = ", "not aligned to 2 bytes"}, "gemm C at +1");
  expect_rejected<InvalidArgument>(
      [&] { quantize(da.data() + 2, DType::fp32, 1, 32, 32, out.data(), out.data() + 64, ScaleRule::aiter, cuda_exec()); },
      {"mxfp4::quantize: ", "x = ", "not aligned to 4 bytes (fp32 elements)"}, "quantize fp32 x at +2");
  expect_rejected<InvalidArgument>(
      [&] { quantize(da.data() + 1, DType::fp16, 1, 32, 32, out.data(), out.data() + 64, ScaleRule::aiter, cuda_exec()); },
      {"mxfp4::quantize: ", "x = ", "not aligned to 2 bytes (fp16 elements)"}, "quantize fp16 x at +1");
  expect_rejected<InvalidArgument>(
      [&] { dequantize(MxMatrix{codes.get(), scales.get(), N, K}, ws.data() + 2, DType::fp32, K, cuda_exec()); },
      {"mxfp4::dequantize: ", "out = ", "not aligned to 4 bytes (fp32 elements)"}, "dequantize fp32 out at +2");
  expect_rejected<InvalidArgument>(
      [&] { prepack_dense(da.data() + 1, DType::bf16, M, K, K, out.data(), ws.data(), ScaleRule::aiter, cuda_exec()); },
      {"mxfp4::prepack_dense: ", "b = ", "not aligned to 2 bytes"}, "prepack_dense b at +1");
  // A workspace smaller than the path needs.
  GemmOptions small;
  small.config = &splitk;
  small.workspace = ws.data();
  small.workspace_bytes = gemm_workspace_bytes(M, K, splitk) - 16;
  expect_rejected<InvalidArgument>([&] { gemm(A, M, K, K, pk.pw, C, N, small, cuda_exec()); }, {"workspace_bytes"},
                                   "gemm with a workspace 16 bytes too small");

  // Nothing was queued: outputs keep their bytes, no CUDA error is pending, and the context
  // still works.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  cuda_ok(cudaDeviceSynchronize(), "sync");
  EXPECT_EQ(c.changed_anywhere(), "") << "a rejected gemm wrote C";
  EXPECT_EQ(out.changed_anywhere(), "") << "a rejected prepack/quantize wrote its output";
  EXPECT_EQ(ws.changed_anywhere(), "") << "a rejected call wrote the workspace / unpack / dequantize output";
  gemm(A, M, K, K, pk.pw, C, N, {}, cuda_exec());
  const std::vector<uint8_t> cb = c.logical();
  std::vector<uint16_t> got(size_t(M * N));
  std::memcpy(got.data(), cb.data(), got.size() * 2);
  const HostMx aq = quantize_bf16(a, M, K);
  const ContractReport rep = check_gemm_contract(got.data(), N, aq.view(), b.view());
  EXPECT_TRUE(rep.ok()) << "gemm after the rejected calls: " << rep.str();
}

// Element buffers aligned only to their element size (fp32 at 4 mod 16, fp16/bf16 at 2 mod
// 16, odd row strides) and byte buffers at odd addresses work on the device and match the CPU.
TEST(GpuAlignment, MinimallyAlignedPointersWork) {
  MXFP4_REQUIRE_GPU();
  const int64_t rows = 33, K = 192, xs = K + 1;  // odd stride: every row at a new alignment
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
    const size_t eb = dt == DType::fp32 ? 4 : 2;
    // Finite random values of the dtype's width (fp16: small normals, exact in fp16).
    std::vector<uint8_t> xh(size_t(rows * xs) * eb);
    const std::vector<float> v = randn_f32(size_t(rows * xs), 100 + int(dt));
    for (size_t i = 0; i < v.size(); ++i) {
      if (dt == DType::fp32) {
        std::memcpy(&xh[i * 4], &v[i], 4);
      } else if (dt == DType::bf16) {
        const uint16_t h = fmt::f32_to_bf16(v[i]);
        std::memcpy(&xh[i * 2], &h, 2);
      } else {
        const uint16_t h = uint16_t(0x3C00 + (int(v[i] * 256) & 0x3FF) + ((v[i] < 0) << 15));  // +-[1, 2)
        std::memcpy(&xh[i * 2], &h, 2);
      }
    }
    Guarded x(xh.size(), eb, 200 + int(dt)), codes(size_t(rows * K / 2), 3, 1), scales(size_t(rows * K / 32), 7, 2);
    x.fill(0, xh.data(), xh.size());
    std::vector<uint8_t> cq(size_t(rows * K / 2)), cs(size_t(rows * K / 32));
    quantize(xh.data(), dt, rows, K, xs, cq.data(), cs.data());
    quantize(x.data(), dt, rows, K, xs, codes.data(), scales.data(), ScaleRule::aiter, cuda_exec());
    ASSERT_EQ(codes.logical(), cq) << "dtype " << int(dt);
    ASSERT_EQ(scales.logical(), cs) << "dtype " << int(dt);
    // dequantize to fp32 at +4 and bf16 at +2 (dense): exact values.
    const MxMatrix cpu_q{cq.data(), cs.data(), rows, K}, dev_q{codes.data(), scales.data(), rows, K};
    std::vector<float> f_want(size_t(rows * K));
    dequantize(cpu_q, f_want.data(), DType::fp32, K);
    Guarded f(size_t(rows * K * 4), 4, 3);
    dequantize(dev_q, f.data(), DType::fp32, K, cuda_exec());
    ASSERT_EQ(0, std::memcmp(f.logical().data(), f_want.data(), f_want.size() * 4)) << "dtype " << int(dt);
    // prepack_dense from the element buffer at its minimal alignment, tmp at an odd address.
    std::vector<uint8_t> want(size_t(packed_bytes(rows, K)));
    prepack(cpu_q, want.data());
    Guarded p(want.size(), 0, 4), tmp(size_t(rows * K / 2 + rows * K / 32), 5, 5);
    prepack_dense(x.data(), dt, rows, K, xs, p.data(), tmp.data(), ScaleRule::aiter, cuda_exec());
    ASSERT_EQ(p.logical(), want) << "dtype " << int(dt);
  }
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuAlignment, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
