// Concurrency on one GPU (docs/hardening.md §4): the same packed weights used at once from two
// host threads (each with its own stream, or both on the default stream) and from two streams
// of one thread, over every kernel path; every result must equal the serial run bit for bit.
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <algorithm>
#include <optional>
#include <tuple>
#include <thread>

#include "gpu/gpu_cases.hpp"

namespace mxfp4::test {
namespace {

/// One GEMM of the workload: its own A, a configuration (none: the dispatcher's) and the
/// serial result.
struct Case {
  int64_t M;
  std::optional<GemmConfig> cfg;
  std::unique_ptr<DeviceBuf> a;
  std::vector<uint16_t> ref;
};

/// Shared packed weights B [N, K] and cases over every path: M = 1, 5, 16, 40, 64 (fused,
/// splitk, their cluster splits) and 300 (tiled), each with the default and forced configs.
struct Workload {
  static constexpr int64_t N = 1024, K = 2048;
  HostMx b = random_mx(N, K, 7001);
  DevicePacked pk{b};
  std::vector<Case> cases;

  Workload() {
    uint64_t seed = 7100;
    for (int64_t M : {1, 5, 16, 40, 64, 300}) {
      std::vector<std::optional<GemmConfig>> cfgs{std::nullopt};
      for (const GemmConfig& c : path_configs(M, K)) cfgs.emplace_back(c);
      for (const auto& cfg : cfgs) {
        const std::vector<uint16_t> a = randn_bf16(size_t(M * K), ++seed);
        Case c{M, cfg, std::make_unique<DeviceBuf>(a), {}};
        DeviceBuf out(size_t(M * N * 2), 0xFF);
        run(c, out.get<uint16_t>(), nullptr);
        c.ref = out.download<uint16_t>();
        // The serial result itself is right (spec §3) on its first, middle and last rows.
        const HostMx aq = quantize_bf16(a, M, K);
        for (int64_t r : {int64_t(0), M / 2, M - 1}) {
          const MxMatrix arow{aq.codes.data() + r * K / 2, aq.scales.data() + r * K / 32, 1, K};
          const ContractReport rep = check_gemm_contract(c.ref.data() + r * N, N, arow, b.view());
          EXPECT_TRUE(rep.ok()) << "serial M=" << M << " " << cfg_name(cfg ? &*cfg : nullptr) << " row " << r << ": "
                                << rep.str();
        }
        cases.push_back(std::move(c));
      }
    }
  }

  void run(const Case& c, uint16_t* C, cudaStream_t s) const {
    GemmOptions opt;
    opt.config = c.cfg ? &*c.cfg : nullptr;
    gemm(c.a->get<uint16_t>(), c.M, K, K, pk.pw, C, N, opt, cuda_exec(s));
  }

  /// One C buffer per case.
  std::vector<std::unique_ptr<DeviceBuf>> outputs() const {
    std::vector<std::unique_ptr<DeviceBuf>> v;
    for (const Case& c : cases) v.push_back(std::make_unique<DeviceBuf>(size_t(c.M * N * 2)));
    return v;
  }

  /// `iters` rounds of every case on stream s (poisoned C first), in forward or reverse order,
  /// each round checked against the serial results. Returns "" or the first difference.
  /// Runs on any host thread; never throws.
  std::string loop(cudaStream_t s, bool reverse, int iters, const std::vector<std::unique_ptr<DeviceBuf>>& outs) const {
    try {
      const size_t n = cases.size();
      for (int it = 0; it < iters; ++it) {
        for (size_t j = 0; j < n; ++j) {
          const size_t i = reverse ? n - 1 - j : j;
          cuda_ok(cudaMemsetAsync(outs[i]->get(), 0xFF, outs[i]->bytes(), s), "cudaMemsetAsync");
          run(cases[i], outs[i]->get<uint16_t>(), s);
        }
        cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        for (size_t i = 0; i < n; ++i) {
          std::vector<uint16_t> got(cases[i].ref.size());
          cuda_ok(cudaMemcpyAsync(got.data(), outs[i]->get(), got.size() * 2, cudaMemcpyDeviceToHost, s), "D2H");
          cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
          if (got != cases[i].ref) {
            size_t k = 0;
            while (got[k] == cases[i].ref[k]) ++k;
            return "round " + std::to_string(it) + ", M=" + std::to_string(cases[i].M) + " " +
                   cfg_name(cases[i].cfg ? &*cases[i].cfg : nullptr) + ": element " + std::to_string(k) + " is " +
                   std::to_string(got[k]) + ", serially " + std::to_string(cases[i].ref[k]);
          }
        }
      }
      return "";
    } catch (const std::exception& e) {
      return std::string("exception: ") + e.what();
    }
  }
};

/// Runs loop() on two host threads with streams s0 and s1 (they may be equal) and returns
/// both results.
std::pair<std::string, std::string> two_threads(const Workload& w, cudaStream_t s0, cudaStream_t s1, int iters) {
  const auto o0 = w.outputs(), o1 = w.outputs();
  std::string r0, r1;
  std::thread t0([&] { r0 = w.loop(s0, false, iters, o0); });
  std::thread t1([&] { r1 = w.loop(s1, true, iters, o1); });
  t0.join();
  t1.join();
  return {r0, r1};
}

TEST(GpuConcurrency, TwoHostThreadsWithTheirOwnStreamsMatchSerial) {
  MXFP4_REQUIRE_GPU();
  const Workload w;
  cudaStream_t s0, s1;
  cuda_ok(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), "stream");
  cuda_ok(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
  const auto [r0, r1] = two_threads(w, s0, s1, 12);
  EXPECT_EQ(r0, "") << "thread 0";
  EXPECT_EQ(r1, "") << "thread 1";
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
}

// Both threads on the (legacy) default stream: the library's calls from the two threads
// interleave on one stream, so nothing a call leaves in per-stream state (the cached
// workspace of the splitk and tiled paths) may be used by the other thread's call.
TEST(GpuConcurrency, TwoHostThreadsOnTheDefaultStreamMatchSerial) {
  MXFP4_REQUIRE_GPU();
  const Workload w;
  const auto [r0, r1] = two_threads(w, nullptr, nullptr, 12);
  EXPECT_EQ(r0, "") << "thread 0";
  EXPECT_EQ(r1, "") << "thread 1";
}

// One host thread alternating two streams over every path (K14 in test_gpu_gemm.cpp covers
// the default configuration only).
TEST(GpuConcurrency, TwoStreamsOfOneThreadEveryPathMatchSerial) {
  MXFP4_REQUIRE_GPU();
  const Workload w;
  cudaStream_t s[2];
  for (auto& st : s) cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  const auto outs0 = w.outputs(), outs1 = w.outputs();
  const std::vector<std::unique_ptr<DeviceBuf>>* outs[2] = {&outs0, &outs1};
  const size_t n = w.cases.size();
  for (int it = 0; it < 8; ++it) {
    for (size_t j = 0; j < n; ++j) {
      for (int k = 0; k < 2; ++k) {
        const size_t i = k == 0 ? j : n - 1 - j;  // the two streams run different paths at once
        const DeviceBuf& c = *(*outs[k])[i];
        cuda_ok(cudaMemsetAsync(c.get(), 0xFF, c.bytes(), s[k]), "cudaMemsetAsync");
        w.run(w.cases[i], c.get<uint16_t>(), s[k]);
      }
    }
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ((*outs[k])[i]->download<uint16_t>(), w.cases[i].ref)
            << "round " << it << " stream " << k << " M=" << w.cases[i].M << " "
            << cfg_name(w.cases[i].cfg ? &*w.cases[i].cfg : nullptr);
  }
  for (auto& st : s) cudaStreamDestroy(st);
}

// Two host threads launching one kernel instantiation with different shared-memory plans (K
// 7168 vs 256 give different ring depths): the launcher's per-function shared-memory limit
// must never be lowered by one thread under the other's launch.
TEST(GpuConcurrency, TwoThreadsOneKernelDifferentKMatchSerial) {
  MXFP4_REQUIRE_GPU();
  const GemmConfig cfg = forced_cfg(GemmPath::splitk, 2, 4, 4);
  constexpr int64_t M = 128, N = 512;
  struct Job {
    int64_t K;
    HostMx b;
    std::unique_ptr<DevicePacked> pk;
    std::unique_ptr<DeviceBuf> a;
    std::vector<uint16_t> ref;
  };
  Job jobs[2] = {{7168, random_mx(N, 7168, 7301), nullptr, nullptr, {}}, {256, random_mx(N, 256, 7302), nullptr, nullptr, {}}};
  GemmOptions opt;
  opt.config = &cfg;
  for (Job& j : jobs) {
    j.pk = std::make_unique<DevicePacked>(j.b);
    j.a = std::make_unique<DeviceBuf>(randn_bf16(size_t(M * j.K), 7300 + uint64_t(j.K)));
    DeviceBuf out(size_t(M * N * 2), 0xFF);
    gemm(j.a->get<uint16_t>(), M, j.K, j.K, j.pk->pw, out.get<uint16_t>(), N, opt, cuda_exec());
    j.ref = out.download<uint16_t>();
  }
  std::string err[2];
  auto work = [&](int t) {
    try {
      cudaStream_t s;
      cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
      DeviceBuf out(size_t(M * N * 2), 0xFF);
      const Job& j = jobs[t];
      for (int it = 0; it < 200 && err[t].empty(); ++it) {
        gemm(j.a->get<uint16_t>(), M, j.K, j.K, j.pk->pw, out.get<uint16_t>(), N, opt, cuda_exec(s));
        if (it % 50 == 49) {
          cuda_ok(cudaStreamSynchronize(s), "sync");
          if (out.download<uint16_t>() != j.ref) err[t] = "K=" + std::to_string(j.K) + " differs at round " + std::to_string(it);
        }
      }
      cuda_ok(cudaStreamSynchronize(s), "sync");
      cudaStreamDestroy(s);
    } catch (const std::exception& e) {
      err[t] = std::string("exception: ") + e.what();
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(err[0], "");
  EXPECT_EQ(err[1], "");
}

// Stream order across programmatic dependent launch (docs/dispatch.md): every call's first
// kernel may start while the previous kernel finishes, and the weights may be streamed before
// a kernel's own wait. Library kernels that write A (dequantize), the packed weights (prepack)
// and their FP8 image (prepack_fp8) are queued right before each GEMM on one stream, with no
// host synchronization, twice with different inputs over buffers that first held garbage:
// both results must equal those of the same calls made with every input settled.
TEST(GpuConcurrency, KernelsWritingInputsRightBeforeTheGemmAreWaitedFor) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t N = 1024, K = 2048;
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  const HostMx b[2] = {random_mx(N, K, 7401), random_mx(N, K, 7402, 4.0f)};
  std::unique_ptr<DeviceBuf> bc[2], bs[2];
  for (int i = 0; i < 2; ++i) bc[i] = std::make_unique<DeviceBuf>(b[i].codes), bs[i] = std::make_unique<DeviceBuf>(b[i].scales);
  for (int64_t M : {1, 16, 64, 300}) {
    std::vector<std::optional<GemmConfig>> cfgs{std::nullopt};
    for (const GemmConfig& c : path_configs(M, K)) cfgs.emplace_back(c);
    const HostMx a[2] = {random_mx(M, K, 7410 + uint64_t(M)), random_mx(M, K, 7420 + uint64_t(M), 0.25f)};
    std::unique_ptr<DeviceBuf> ac[2], as[2];
    for (int i = 0; i < 2; ++i) ac[i] = std::make_unique<DeviceBuf>(a[i].codes), as[i] = std::make_unique<DeviceBuf>(a[i].scales);
    for (const auto& cfg : cfgs) {
      const std::string what = "M=" + std::to_string(M) + " " + cfg_name(cfg ? &*cfg : nullptr);
      GemmOptions opt;
      opt.config = cfg ? &*cfg : nullptr;
      // Inputs written by kernels on stream s; the GEMM follows at once.
      DeviceBuf A(size_t(M * K * 2), NoInit{}), packed(size_t(packed_bytes(N, K)), NoInit{}),
          image(size_t(fp8_weights_bytes(N, K)), NoInit{});
      auto queue_inputs = [&](int i) {
        dequantize(MxMatrix{ac[i]->get(), as[i]->get(), M, K}, A.get(), DType::bf16, K, cuda_exec(s));
        PackedWeights pw = prepack(MxMatrix{bc[i]->get(), bs[i]->get(), N, K}, packed.get(), cuda_exec(s));
        return prepack_fp8(pw, image.get(), cuda_exec(s));
      };
      std::vector<uint16_t> settled[2], raced[2];
      for (int i = 0; i < 2; ++i) {  // reference: every input settled before the GEMM
        const PackedWeights pw = queue_inputs(i);
        DeviceBuf C(size_t(M * N * 2), 0xFF);
        cuda_ok(cudaDeviceSynchronize(), "sync");  // the inputs queued on s have landed
        gemm(A.get<uint16_t>(), M, K, K, pw, C.get<uint16_t>(), N, opt, cuda_exec(s));
        cuda_ok(cudaStreamSynchronize(s), "sync");
        settled[i] = C.download<uint16_t>();
      }
      ASSERT_NE(settled[0], settled[1]) << what << ": the two inputs must give different results";
      DeviceBuf C0(size_t(M * N * 2), 0xFF), C1(size_t(M * N * 2), 0xFF);
      DeviceBuf* Cs[2] = {&C0, &C1};
      // Garbage in every input, C poisoned, nothing pending (fill waits for the device).
      for (DeviceBuf* buf : {&A, &packed, &image}) buf->fill(0x7F);
      for (int i = 0; i < 2; ++i) {
        const PackedWeights pw = queue_inputs(i);
        gemm(A.get<uint16_t>(), M, K, K, pw, Cs[i]->get<uint16_t>(), N, opt, cuda_exec(s));
      }
      cuda_ok(cudaStreamSynchronize(s), "sync");
      for (int i = 0; i < 2; ++i) raced[i] = Cs[i]->download<uint16_t>();
      EXPECT_EQ(raced[0], settled[0]) << what << ": first GEMM saw stale inputs";
      EXPECT_EQ(raced[1], settled[1]) << what << ": second GEMM saw stale inputs";
    }
  }
  cudaStreamDestroy(s);
}

// Calls that depend on each other through memory, back to back on one stream (docs/dispatch.md,
// "Stream order": the splitk and gemv GEMMs let the next kernel launch right after their own
// wait, session 28): call 1 writes C1 = A1 * B1^T, call 2 reads C1 as its A (C2 = C1 * B2^T)
// and call 3 overwrites C1 from another A (C1' = A3 * B1^T) while nothing synchronises.
// C1 and C2 start as NaN poison, so a call 2 that read C1 early would see NaN blocks, and a
// call 3 that wrote C1 under call 2 would change C2. Every path for call 1 with the default
// call 2 and 3, and the default call 1 with every path for call 2; eagerly and as a replayed
// CUDA graph. Each result must equal the same calls with a stream synchronisation between them.
// Every pair runs again with
// GemmOptions::weights_static: the weights were written and synchronised before, so the
// promise holds; path gemv reads B before its wait, and path splitk's quantizer lets its GEMM
// launch (and stream B) before the quantizer's own wait, while A (the previous call's C), the
// workspace and C must still be touched only after the waits.
TEST(GpuConcurrency, DependentCallsOnOneStreamSeeEachOthersResults) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t N1 = 512, N2 = 768, K2 = N1;
  const HostMx b2 = random_mx(N2, K2, 7502);
  const DevicePacked p2{b2};
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  // K1 = 4096 at M = 8 and 16 adds path splitk's split-K through the workspace (split 8, K >=
  // 4096, M <= 16: its partials and the tile counters that the next call's quantizer zeroes).
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1024}, {4, 1024}, {16, 1024}, {40, 1024}, {64, 1024},
                                                {300, 1024}, {8, 4096}, {16, 4096}};
  for (const auto& shape : shapes) {
    const int64_t M = shape.first, K1 = shape.second;  // named variables: lambdas below capture them
    const HostMx b1 = random_mx(N1, K1, 7501 + uint64_t(K1));
    const DevicePacked p1{b1};
    const DeviceBuf a1(randn_bf16(size_t(M * K1), 7510 + uint64_t(M))), a3(randn_bf16(size_t(M * K1), 7520 + uint64_t(M)));
    std::vector<std::optional<GemmConfig>> first{std::nullopt}, second{std::nullopt};
    if (K1 >= 4096) first.emplace_back(forced_cfg(GemmPath::splitk, 8, 4, 2));
    for (const GemmConfig& c : path_configs(M, K1)) first.emplace_back(c);
    for (const GemmConfig& c : path_configs(M, K2)) second.emplace_back(c);
    std::vector<std::tuple<std::optional<GemmConfig>, std::optional<GemmConfig>, bool>> runs;
    for (const bool ws : {false, true}) {
      for (const auto& c : first) runs.emplace_back(c, std::nullopt, ws);
      for (size_t i = 1; i < second.size(); ++i) runs.emplace_back(std::nullopt, second[i], ws);
    }
    for (const auto& [c1, c2, ws] : runs) {
      const std::string what = "M=" + std::to_string(M) + " K1=" + std::to_string(K1) + " call 1 " +
                               cfg_name(c1 ? &*c1 : nullptr) + ", call 2 " + cfg_name(c2 ? &*c2 : nullptr) +
                               (ws ? ", weights_static" : "");
      GemmOptions o1, o2;
      o1.config = c1 ? &*c1 : nullptr;
      o2.config = c2 ? &*c2 : nullptr;
      o1.weights_static = o2.weights_static = ws;
      DeviceBuf C1(size_t(M * N1 * 2), 0xFF), C2(size_t(M * N2 * 2), 0xFF);
      auto call1 = [&](const DeviceBuf& a) { gemm(a.get<uint16_t>(), M, K1, K1, p1.pw, C1.get<uint16_t>(), N1, o1, cuda_exec(s)); };
      auto call2 = [&] { gemm(C1.get<uint16_t>(), M, K2, N1, p2.pw, C2.get<uint16_t>(), N2, o2, cuda_exec(s)); };
      // Settled (also grows the stream's cached workspace, so nothing below allocates).
      call1(a1);
      cuda_ok(cudaStreamSynchronize(s), "sync");
      call2();
      cuda_ok(cudaStreamSynchronize(s), "sync");
      const std::vector<uint16_t> ref2 = C2.download<uint16_t>();
      call1(a3);
      cuda_ok(cudaStreamSynchronize(s), "sync");
      const std::vector<uint16_t> ref3 = C1.download<uint16_t>();
      ASSERT_NE(std::count_if(ref2.begin(), ref2.end(), [](uint16_t v) { return (v & 0x7F80u) == 0x7F80u; }), int64_t(ref2.size()))
          << what << ": the settled C2 is all Inf/NaN";
      auto chain = [&] {
        cuda_ok(cudaMemsetAsync(C1.get(), 0xFF, C1.bytes(), s), "cudaMemsetAsync");
        cuda_ok(cudaMemsetAsync(C2.get(), 0xFF, C2.bytes(), s), "cudaMemsetAsync");
        call1(a1);
        call2();
        call1(a3);
      };
      for (int it = 0; it < 3; ++it) {
        chain();
        cuda_ok(cudaStreamSynchronize(s), "sync");
        ASSERT_EQ(C2.download<uint16_t>(), ref2) << what << ", eager round " << it << ": call 2 did not see call 1's C";
        ASSERT_EQ(C1.download<uint16_t>(), ref3) << what << ", eager round " << it << ": call 3's C1";
      }
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      chain();
      cuda_ok(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
      cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
      for (int it = 0; it < 3; ++it) {
        cuda_ok(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
        cuda_ok(cudaStreamSynchronize(s), "sync");
        EXPECT_EQ(C2.download<uint16_t>(), ref2) << what << ", graph replay " << it << ": call 2 did not see call 1's C";
        EXPECT_EQ(C1.download<uint16_t>(), ref3) << what << ", graph replay " << it << ": call 3's C1";
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(GpuConcurrency, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
