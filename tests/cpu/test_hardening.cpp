// Hardening of the CPU paths (docs/hardening.md):
//   - canaries: every API call writes only its outputs' logical elements: poisoned bytes
//     before and after every output, in the gaps of strided outputs (ldc > N, out_stride > K),
//     in the padding of AITER-shuffled scale buffers, and extra rows after C stay intact;
//   - inputs are never written: A, B, x, codes, scales and packed buffers are byte-identical
//     after every call, and what lies between strided input rows is never read (it holds
//     NaN patterns that would show in the results);
//   - determinism: the CPU GEMM gives the same bits for every Exec::threads and every call;
//   - concurrency: the same packed weights (and the same inputs) used from several host
//     threads at once give results identical to serial runs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {
namespace {

uint8_t canary(size_t i) { return uint8_t(0xA5 ^ (i * 0x3B)); }

/// A byte buffer with `front` and `back` poisoned guard bytes around a payload of `n` bytes
/// (the payload starts 64-byte aligned). The payload may be poisoned too, to catch elements
/// an output should not touch.
class Guarded {
 public:
  Guarded(size_t n, size_t front = 64, size_t back = 64) : n_(n), front_(front), back_(back) {
    buf_.resize(front + n + back + 64);
    off_ = (64 - reinterpret_cast<uintptr_t>(buf_.data() + front) % 64) % 64;
    for (size_t i = 0; i < buf_.size(); ++i) buf_[i] = canary(i);
  }
  uint8_t* data() { return buf_.data() + off_ + front_; }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data());
  }
  size_t size() const { return n_; }
  /// True when the guard bytes (and payload bytes not listed by `written`) hold the canary.
  bool guards_intact() const {
    for (size_t i = 0; i < off_ + front_; ++i)
      if (buf_[i] != canary(i)) return false;
    for (size_t i = off_ + front_ + n_; i < buf_.size(); ++i)
      if (buf_[i] != canary(i)) return false;
    return true;
  }
  /// Byte i of the payload still holds its canary.
  bool untouched(size_t i) const { return buf_[off_ + front_ + i] == canary(off_ + front_ + i); }
  std::vector<uint8_t> payload() const {
    return std::vector<uint8_t>(buf_.begin() + long(off_ + front_), buf_.begin() + long(off_ + front_ + n_));
  }

 private:
  std::vector<uint8_t> buf_;
  size_t n_, front_, back_, off_ = 0;
};

/// Bytes of a vector, for before/after comparisons.
template <class T>
std::vector<uint8_t> bytes_of(const T* p, size_t n) {
  std::vector<uint8_t> out(n * sizeof(T));
  std::memcpy(out.data(), p, out.size());
  return out;
}

/// bf16 A [M, K] dense values, and a strided copy with NaN bit patterns between the rows.
struct StridedBf16 {
  std::vector<uint16_t> dense;
  std::vector<uint16_t> strided;
  int64_t ld = 0;
  StridedBf16(int64_t M, int64_t K, int64_t pad, uint64_t seed) : dense(randn_bf16(size_t(M * K), seed)), ld(K + pad) {
    strided.assign(size_t(M * ld), 0x7FC1);  // NaN between the rows: must never be read
    for (int64_t m = 0; m < M; ++m) std::memcpy(&strided[size_t(m * ld)], &dense[size_t(m * K)], size_t(K) * 2);
  }
};

// ---------------------------------------------------------------------------------------
// Quantize / dequantize
// ---------------------------------------------------------------------------------------

TEST(Hardening, QuantizeWritesOnlyItsOutputsAndNeverReadsRowGaps) {
  for (DType dt : {DType::bf16, DType::fp16, DType::fp32})
    for (ScaleLayout sl : {ScaleLayout::plain, ScaleLayout::aiter_shuffled})
      for (int threads : {1, 3}) {
        const int64_t rows = 37, K = 96, pad = 13, kb = K / 32, eb = dt == DType::fp32 ? 4 : 2;
        // Dense and strided inputs holding the same values; NaN patterns in the gaps.
        std::vector<float> vals = randn_f32(size_t(rows * K), 11, 3.0f);
        std::vector<uint8_t> dense(size_t(rows * K * eb)), strided(size_t(rows * (K + pad) * eb), 0xFF);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < K; ++k) {
            const float v = vals[size_t(r * K + k)];
            uint8_t e[4];
            if (dt == DType::fp32) {
              std::memcpy(e, &v, 4);
            } else {
              const uint16_t h = dt == DType::bf16 ? f32_to_bf16(v) : uint16_t(0x3C00 | (r * 7 + k) % 0x3FF);
              std::memcpy(e, &h, 2);
            }
            std::memcpy(&dense[size_t((r * K + k) * eb)], e, size_t(eb));
            std::memcpy(&strided[size_t((r * (K + pad) + k) * eb)], e, size_t(eb));
          }
        const std::vector<uint8_t> strided_before = strided;
        const int64_t sbytes = sl == ScaleLayout::plain ? rows * kb : shuffled_scales_bytes(rows, kb);
        Exec ex;
        ex.threads = threads;
        // Reference: dense input, plain buffers.
        std::vector<uint8_t> rc(size_t(rows * K / 2)), rs(size_t(sbytes), 0);
        quantize(dense.data(), dt, rows, K, K, rc.data(), rs.data(), ScaleRule::aiter, ex, sl);
        Guarded codes(static_cast<size_t>(rows * K / 2)), scales(static_cast<size_t>(sbytes));
        quantize(strided.data(), dt, rows, K, K + pad, codes.data(), scales.data(), ScaleRule::aiter, ex, sl);
        SCOPED_TRACE(testing::Message() << "dtype " << int(dt) << " layout " << int(sl) << " threads " << threads);
        EXPECT_EQ(strided, strided_before) << "quantize wrote to x";
        EXPECT_TRUE(codes.guards_intact() && scales.guards_intact()) << "write outside codes/scales";
        EXPECT_EQ(codes.payload(), rc) << "a row gap was read (NaN) or codes differ";
        if (sl == ScaleLayout::plain) {
          EXPECT_EQ(scales.payload(), rs);
        } else {
          // Shuffled: logical bytes match, padding keeps its canary (never written).
          std::vector<bool> real(size_t(sbytes), false);
          const int64_t sn = (kb + 7) / 8 * 8;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < kb; ++c) {
              const int64_t o = fmt::aiter_scale_offset(r, c, sn);
              real[size_t(o)] = true;
              EXPECT_EQ(scales.payload()[size_t(o)], rs[size_t(o)]);
            }
          for (int64_t i = 0; i < sbytes; ++i)
            if (!real[size_t(i)]) ASSERT_TRUE(scales.untouched(size_t(i))) << "padding byte " << i << " written";
        }
      }
}

TEST(Hardening, DequantizeWritesOnlyItsRows) {
  const int64_t rows = 33, K = 160, kb = K / 32, ostride = K + 9;
  const HostMx q = random_mx(rows, K, 21);
  // Shuffled scale copy with 0xFF (NaN) in the padding: must never be read.
  std::vector<uint8_t> sh(size_t(shuffled_scales_bytes(rows, kb)), 0xFF);
  shuffle_scales(q.scales.data(), rows, kb, sh.data());
  for (DType dt : {DType::fp32, DType::bf16})
    for (bool shuffled : {false, true}) {
      const int64_t eb = dt == DType::fp32 ? 4 : 2;
      MxMatrix m = q.view();
      if (shuffled) {
        m.scales = sh.data();
        m.scale_layout = ScaleLayout::aiter_shuffled;
      }
      const auto codes_before = q.codes, scales_before = q.scales, sh_before = sh;
      Guarded out(static_cast<size_t>(((rows - 1) * ostride + K) * eb));
      dequantize(m, out.data(), dt, ostride);
      EXPECT_TRUE(out.guards_intact());
      EXPECT_EQ(q.codes, codes_before);
      EXPECT_EQ(q.scales, scales_before);
      EXPECT_EQ(sh, sh_before);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = K; k < ostride && r < rows - 1; ++k)
          for (int64_t b = 0; b < eb; ++b)
            ASSERT_TRUE(out.untouched(size_t((r * ostride + k) * eb + b))) << "gap of row " << r << " written";
      // No NaN leaked from the poisoned padding: all scales are finite here.
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < K; ++k) {
          const float v = dt == DType::fp32 ? out.as<float>()[r * ostride + k]
                                            : bf16_to_f32(out.as<uint16_t>()[r * ostride + k]);
          ASSERT_FALSE(std::isnan(v)) << r << "," << k;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Layout converters, prepack, unpack
// ---------------------------------------------------------------------------------------

TEST(Hardening, LayoutConvertersWriteOnlyTheirOutputs) {
  for (int threads : {1, 4}) {
    Exec ex;
    ex.threads = threads;
    const int64_t rows = 300, kb = 11, N = 48, K = 192;
    const HostMx q = random_mx(rows, 32 * kb, 31);
    const auto scales_before = q.scales;
    Guarded sh(static_cast<size_t>(shuffled_scales_bytes(rows, kb)));
    shuffle_scales(q.scales.data(), rows, kb, sh.data(), ex);
    EXPECT_EQ(q.scales, scales_before);
    EXPECT_TRUE(sh.guards_intact());
    const auto sh_before = sh.payload();
    Guarded back(static_cast<size_t>(rows * kb));
    unshuffle_scales(sh.data(), rows, kb, back.data(), ex);
    EXPECT_EQ(sh.payload(), sh_before);
    EXPECT_TRUE(back.guards_intact());
    EXPECT_EQ(back.payload(), q.scales);

    const HostMx w = random_mx(N, K, 32);
    Guarded wsh(static_cast<size_t>(N * K / 2));
    shuffle_weight(w.codes.data(), N, K, wsh.data(), ex);
    EXPECT_TRUE(wsh.guards_intact());
    Guarded wback(static_cast<size_t>(N * K / 2));
    unshuffle_weight(wsh.data(), N, K, wback.data(), ex);
    EXPECT_TRUE(wback.guards_intact());
    EXPECT_EQ(wback.payload(), w.codes);
  }
}

TEST(Hardening, PrepackUnpackWriteOnlyTheirOutputs) {
  for (int64_t N : {1, 15, 17, 40})
    for (int64_t K : {32, 96, 160}) {
      const HostMx b = random_mx(N, K, uint64_t(N * 1000 + K));
      const auto codes_before = b.codes, scales_before = b.scales;
      const int64_t pb = packed_bytes(N, K);
      Guarded out(static_cast<size_t>(pb));  // payload poisoned: every byte must be written (padding zero)
      const PackedWeights P = prepack(b.view(), out.data());
      EXPECT_TRUE(out.guards_intact()) << N << " " << K;
      EXPECT_EQ(b.codes, codes_before);
      EXPECT_EQ(b.scales, scales_before);
      std::vector<uint8_t> zeroed(size_t(pb), 0);
      const PackedWeights Z = prepack(b.view(), zeroed.data());
      EXPECT_EQ(out.payload(), zeroed) << "prepack left a byte unwritten (N " << N << ", K " << K << ")";
      (void)Z;
      const auto packed_before = out.payload();
      Guarded uc(static_cast<size_t>(N * K / 2)), us(static_cast<size_t>(N * K / 32));
      unpack(P, uc.data(), us.data());
      EXPECT_EQ(out.payload(), packed_before);
      EXPECT_TRUE(uc.guards_intact() && us.guards_intact());
      EXPECT_EQ(uc.payload(), b.codes);
      EXPECT_EQ(us.payload(), b.scales);

      // prepack_dense: b (strided, NaN in the gaps) untouched; tmp used only within its size.
      const StridedBf16 w(N, K, 7, uint64_t(N + K));
      const auto w_before = w.strided;
      Guarded out2(static_cast<size_t>(pb)), tmp(static_cast<size_t>(N * K / 2 + N * K / 32));
      prepack_dense(w.strided.data(), DType::bf16, N, K, w.ld, out2.data(), tmp.data());
      EXPECT_EQ(w.strided, w_before);
      EXPECT_TRUE(out2.guards_intact() && tmp.guards_intact());
      std::vector<uint8_t> ref(static_cast<size_t>(pb)), tmp2(tmp.size());
      prepack_dense(w.dense.data(), DType::bf16, N, K, K, ref.data(), tmp2.data());
      EXPECT_EQ(out2.payload(), ref) << "a row gap of b was read";
    }
}

// ---------------------------------------------------------------------------------------
// GEMM variants: C slack, strided A with NaN gaps, inputs unchanged
// ---------------------------------------------------------------------------------------

struct GemmCase {
  int64_t M, N, K;
};

class HardeningGemm : public testing::TestWithParam<GemmCase> {};

TEST_P(HardeningGemm, WritesOnlyMxNAndNeverTouchesInputs) {
  const auto [M, N, K] = GetParam();
  const int64_t ldc = N + 5, lda_pad = 11, kb = K / 32;
  const StridedBf16 a(M, K, lda_pad, uint64_t(M * 7 + N * 3 + K));
  const auto a_before = a.strided;
  const HostMx b = random_mx(N, K, uint64_t(N + 5 * K));
  const auto b_codes_before = b.codes, b_scales_before = b.scales;
  // B in AITER layouts too (when the shuffled weight layout can take N), with NaN scale padding.
  std::vector<uint8_t> b_sh_scales(size_t(shuffled_scales_bytes(N, kb)), 0xFF);
  shuffle_scales(b.scales.data(), N, kb, b_sh_scales.data());
  std::vector<uint8_t> b_sh_codes(b.codes.size());
  const bool code_sh = N % 16 == 0 && K % 64 == 0;
  if (code_sh) shuffle_weight(b.codes.data(), N, K, b_sh_codes.data());
  MxMatrix b_aiter{code_sh ? b_sh_codes.data() : b.codes.data(), b_sh_scales.data(), N, K,
                   code_sh ? CodeLayout::aiter_shuffled : CodeLayout::plain, ScaleLayout::aiter_shuffled};
  std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
  const PackedWeights P = prepack(b.view(), pbuf.data());
  const auto pbuf_before = pbuf;
  const auto b_sh_scales_before = b_sh_scales, b_sh_codes_before = b_sh_codes;

  // Reference: dense A, dense C.
  std::vector<uint16_t> want(size_t(M * N));
  gemm(a.dense.data(), M, K, K, b.view(), want.data(), N);

  // C: ldc > N, plus 3 guard rows after and 64 guard bytes before.
  const size_t c_bytes = size_t((M + 3) * ldc * 2);
  auto check = [&](Guarded& c, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(c.guards_intact()) << "write before C or after its guard rows";
    for (int64_t m = 0; m < M + 3; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        const size_t byte = size_t((m * ldc + n) * 2);
        if (m < M && n < N) {
          ASSERT_EQ(c.as<uint16_t>()[m * ldc + n], want[size_t(m * N + n)]) << m << "," << n;
        } else {
          ASSERT_TRUE(c.untouched(byte) && c.untouched(byte + 1)) << "C written outside [M, N] at " << m << "," << n;
        }
      }
    EXPECT_EQ(a.strided, a_before) << "A was written";
    EXPECT_EQ(b.codes, b_codes_before);
    EXPECT_EQ(b.scales, b_scales_before);
    EXPECT_EQ(b_sh_scales, b_sh_scales_before);
    EXPECT_EQ(b_sh_codes, b_sh_codes_before);
    EXPECT_EQ(pbuf, pbuf_before) << "packed B was written";
  };
  for (int threads : {1, 3}) {
    Exec ex;
    ex.threads = threads;
    {
      Guarded c(c_bytes);
      gemm(a.strided.data(), M, K, a.ld, b.view(), c.as<uint16_t>(), ldc, {}, ex);
      check(c, "gemm(MxMatrix plain)");
    }
    {
      Guarded c(c_bytes);
      gemm(a.strided.data(), M, K, a.ld, b_aiter, c.as<uint16_t>(), ldc, {}, ex);
      check(c, "gemm(MxMatrix AITER layouts)");
    }
    {
      Guarded c(c_bytes);
      gemm(a.strided.data(), M, K, a.ld, P, c.as<uint16_t>(), ldc, {}, ex);
      check(c, "gemm(PackedWeights)");
    }
    {
      const HostMx aq = quantize_bf16(a.dense, M, K);
      const auto aq_before = aq.codes;
      Guarded c(c_bytes);
      gemm_quantized(aq.view(), b_aiter, c.as<uint16_t>(), ldc, ex);
      check(c, "gemm_quantized");
      EXPECT_EQ(aq.codes, aq_before);
      Guarded c2(c_bytes), f64(static_cast<size_t>(M * N * 8)), abs(static_cast<size_t>(M * N * 8));
      gemm_reference(aq.view(), b.view(), c2.as<uint16_t>(), ldc, f64.as<double>(), abs.as<double>());
      EXPECT_TRUE(c2.guards_intact() && f64.guards_intact() && abs.guards_intact()) << "gemm_reference";
      // gemm_reference is the oracle, not bit-identical to the fast path: only slack is checked.
      for (int64_t m = 0; m < M + 3; ++m)
        for (int64_t n = 0; n < ldc; ++n)
          if (m >= M || n >= N)
            ASSERT_TRUE(c2.untouched(size_t((m * ldc + n) * 2))) << "gemm_reference wrote C at " << m << "," << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hardening, HardeningGemm,
                         testing::Values(GemmCase{1, 1, 32}, GemmCase{1, 17, 64}, GemmCase{3, 16, 96},
                                         GemmCase{17, 40, 160}, GemmCase{65, 64, 128}, GemmCase{8, 257, 64},
                                         GemmCase{130, 33, 32}),
                         [](const testing::TestParamInfo<GemmCase>& i) {
                           return "M" + std::to_string(i.param.M) + "_N" + std::to_string(i.param.N) + "_K" +
                                  std::to_string(i.param.K);
                         });

// ---------------------------------------------------------------------------------------
// Determinism and concurrency
// ---------------------------------------------------------------------------------------

// Extreme scales force the exact fp64 path (fp32 could overflow): determinism there too.
HostMx extreme_mx(int64_t rows, int64_t K, uint64_t seed) {
  HostMx m = random_mx(rows, K, seed);
  for (size_t i = 0; i < m.scales.size(); ++i) m.scales[i] = uint8_t(i % 3 == 0 ? 250 : 3 + i % 200);
  return m;
}

TEST(Hardening, CpuGemmIsBitwiseDeterministicForEveryThreadCount) {
  const int64_t M = 37, N = 300, K = 1024;
  const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 41);
  for (bool extreme : {false, true}) {
    const HostMx b = extreme ? extreme_mx(N, K, 42) : random_mx(N, K, 42);
    std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
    const PackedWeights P = prepack(b.view(), pbuf.data());
    std::vector<uint16_t> first(size_t(M * N));
    gemm(a.data(), M, K, K, P, first.data(), N);
    for (int threads : {1, 2, 3, 8, 0})
      for (int rep = 0; rep < 2; ++rep) {
        Exec ex;
        ex.threads = threads;
        std::vector<uint16_t> c(size_t(M * N)), c2(size_t(M * N));
        gemm(a.data(), M, K, K, P, c.data(), N, {}, ex);
        gemm(a.data(), M, K, K, b.view(), c2.data(), N, {}, ex);
        ASSERT_EQ(c, first) << "packed, threads " << threads << " extreme " << extreme;
        ASSERT_EQ(c2, first) << "MxMatrix, threads " << threads << " extreme " << extreme;
      }
  }
}

TEST(Hardening, SharedPackedWeightsFromConcurrentHostThreads) {
  const int64_t N = 256, K = 512;
  const HostMx b = random_mx(N, K, 51);
  std::vector<uint8_t> pbuf(size_t(packed_bytes(N, K)));
  const PackedWeights P = prepack(b.view(), pbuf.data());
  const auto pbuf_before = pbuf;
  // Per host thread: its own A (different M) and C; serial results first.
  constexpr int kThreads = 4;
  const int64_t Ms[kThreads] = {1, 7, 33, 64};
  std::vector<std::vector<uint16_t>> A(kThreads), want(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    A[size_t(t)] = randn_bf16(size_t(Ms[t] * K), uint64_t(60 + t));
    want[size_t(t)].resize(size_t(Ms[t] * N));
    gemm(A[size_t(t)].data(), Ms[t], K, K, P, want[size_t(t)].data(), N);
  }
  // The same A shared by all threads too (inputs are read-only, so sharing is fine).
  const std::vector<uint16_t> shared_a = randn_bf16(size_t(16 * K), 70);
  std::vector<uint16_t> shared_want(size_t(16 * N));
  gemm(shared_a.data(), 16, K, K, P, shared_want.data(), N);

  std::atomic<int> mismatches{0}, go{0};
  auto worker = [&](int t) {
    while (go.load() == 0) std::this_thread::yield();
    Exec ex;
    ex.threads = 1 + t % 2;  // library worker threads inside each host thread as well
    for (int iter = 0; iter < 12; ++iter) {
      std::vector<uint16_t> c(size_t(Ms[t] * N)), cs(size_t(16 * N));
      gemm(A[size_t(t)].data(), Ms[t], K, K, P, c.data(), N, {}, ex);
      gemm(shared_a.data(), 16, K, K, P, cs.data(), N, {}, ex);
      if (c != want[size_t(t)] || cs != shared_want) mismatches.fetch_add(1);
      // Unpack and re-pack the shared weights concurrently (read-only on P).
      std::vector<uint8_t> uc(size_t(N * K / 2)), us(size_t(N * K / 32)), re(pbuf.size());
      unpack(P, uc.data(), us.data(), ex);
      prepack(MxMatrix{uc.data(), us.data(), N, K}, re.data(), ex);
      if (uc != b.codes || us != b.scales || re != pbuf_before) mismatches.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) pool.emplace_back(worker, t);
  go.store(1);
  for (auto& th : pool) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(pbuf, pbuf_before);
}

TEST(Hardening, ConcurrentQuantizeOfOneInput) {
  const int64_t rows = 64, K = 256;
  const std::vector<uint16_t> x = randn_bf16(size_t(rows * K), 80);
  const HostMx want = quantize_bf16(x, rows, K);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      Exec ex;
      ex.threads = 1 + t;
      for (int iter = 0; iter < 20; ++iter) {
        std::vector<uint8_t> c(want.codes.size()), s(want.scales.size());
        quantize(x.data(), DType::bf16, rows, K, K, c.data(), s.data(), ScaleRule::aiter, ex);
        if (c != want.codes || s != want.scales) mismatches.fetch_add(1);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace mxfp4::test
