// 64-bit indexing on the device (docs/hardening.md §6): tensors and offsets past 2^31
// elements and 2^32 bytes. Inputs repeat a random pattern of a prime number of rows (built
// on the device by doubling copies), so every output row can be checked against the CPU at
// memcmp speed while an index that wraps at 2^31 or 2^32 still lands on a different pattern
// row. Each test needs several GB of GPU memory and skips (saying so) without it. Select them
// with --gtest_filter='Gpu64Bit.*' (or exclude them with '-Gpu64Bit.*').
#include <gtest/gtest.h>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <algorithm>
#include <cmath>

#include "gpu/gpu_cases.hpp"

namespace mxfp4::test {
namespace {

/// Makes row r of d (rows x row_bytes) equal to row r % period, given the first `period` rows.
void replicate_rows(uint8_t* d, int64_t rows, int64_t period, int64_t row_bytes) {
  for (int64_t have = period; have < rows;) {
    const int64_t n = std::min(have, rows - have);  // `have` stays a multiple of period until the last copy
    cuda_ok(cudaMemcpy(d + have * row_bytes, d, size_t(n * row_bytes), cudaMemcpyDeviceToDevice), "replicate rows");
    have += n;
  }
  cuda_ok(cudaDeviceSynchronize(), "sync");
}

/// `rows` bf16 rows of K values: normals with a row-dependent scale (2^-40..2^40, some rows
/// subnormal), a NaN in some rows and an Inf in others.
std::vector<uint16_t> pattern_bf16(int64_t rows, int64_t K, uint64_t seed) {
  const std::vector<float> v = randn_f32(size_t(rows * K), seed);
  std::vector<uint16_t> out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int e = r % 11 == 7 ? -130 : int(r * 37 % 81) - 40;
    for (int64_t k = 0; k < K; ++k) out[r * K + k] = fmt::f32_to_bf16(std::ldexp(v[r * K + k], e));
    if (r % 97 == 5) out[r * K + (r * 13) % K] = 0x7FC0;
    if (r % 101 == 6) out[r * K + (r * 29) % K] = 0xFF80;
  }
  return out;
}

/// Compares a device matrix [rows, row_bytes] (dense) row by row with want[r % period],
/// downloading it in chunks. Returns "" or the first bad row, the count, and how many bad rows
/// lie at or past `boundary_row`.
std::string compare_periodic(const uint8_t* d, int64_t rows, int64_t row_bytes, const std::vector<uint8_t>& want,
                             int64_t period, int64_t boundary_row) {
  const int64_t chunk = std::max<int64_t>(1, (256 << 20) / row_bytes);
  std::vector<uint8_t> host(size_t(std::min(chunk, rows) * row_bytes));
  int64_t bad = 0, bad_past = 0, first = -1;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    cuda_ok(cudaMemcpy(host.data(), d + r0 * row_bytes, size_t(n * row_bytes), cudaMemcpyDeviceToHost), "D2H");
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = r0 + i;
      if (std::memcmp(&host[i * row_bytes], &want[(r % period) * row_bytes], size_t(row_bytes)) == 0) continue;
      if (first < 0) first = r;
      ++bad, bad_past += r >= boundary_row;
    }
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(rows) + " rows differ (" + std::to_string(bad_past) +
         " at or past row " + std::to_string(boundary_row) + "), first row " + std::to_string(first);
}

// bf16 x [65537, 32768]: 2^31 + 32768 elements, 2^32 + 65536 bytes; the last row starts at
// element 2^31 (byte 2^32). quantize to codes/scales, then dequantize back to bf16 [65537,
// 32768]; every row bit for bit against the CPU on the pattern rows.
TEST(Gpu64Bit, QuantizeAndDequantizeBf16PastTwoTo31Elements) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t rows = 65537, K = 32768, P = 1021;  // 65536 % 1021 != 0: a wrap shows
  const int64_t x_bytes = rows * K * 2;
  MXFP4_REQUIRE_GPU_MEMORY(size_t(2 * x_bytes + rows * K / 2 + rows * K / 32));
  const std::vector<uint16_t> pat = pattern_bf16(P, K, 640001);
  HostMx want = quantize_bf16(pat, P, K);
  std::vector<uint8_t> want_deq(size_t(P * K * 2));
  dequantize(want.view(), want_deq.data(), DType::bf16, K);

  DeviceBuf x(size_t(x_bytes), NoInit{}), codes(size_t(rows * K / 2)), scales(size_t(rows * K / 32));
  x.upload(0, pat.data(), pat.size() * 2);
  replicate_rows(x.get(), rows, P, K * 2);
  quantize(x.get(), DType::bf16, rows, K, K, codes.get(), scales.get(), ScaleRule::aiter, cuda_exec());
  cuda_ok(cudaDeviceSynchronize(), "quantize");
  EXPECT_EQ(compare_periodic(codes.get(), rows, K / 2, want.codes, P, rows - 1), "") << "quantize: codes";
  EXPECT_EQ(compare_periodic(scales.get(), rows, K / 32, want.scales, P, rows - 1), "") << "quantize: scales";

  {
    DeviceBuf out(size_t(x_bytes), 0xFF);
    dequantize(MxMatrix{codes.get(), scales.get(), rows, K}, out.get(), DType::bf16, K, cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "dequantize");
    EXPECT_EQ(compare_periodic(out.get(), rows, K * 2, want_deq, P, rows - 1), "") << "dequantize to bf16";
  }
  // x was only read.
  EXPECT_EQ(compare_periodic(x.get(), rows, K * 2,
                             std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(pat.data()),
                                                  reinterpret_cast<const uint8_t*>(pat.data() + pat.size())),
                             P, rows - 1),
            "")
      << "quantize wrote its input";
}

/// Spec §3 reference of every (pattern row of A, pattern row of B) pair.
struct PeriodicRef {
  int64_t pa, pb;  // A rows [pa], B rows [pb]
  std::vector<double> ref, abs;
  PeriodicRef(const HostMx& aq, const HostMx& bq) : pa(aq.rows), pb(bq.rows), ref(size_t(pa * pb)), abs(size_t(pa * pb)) {
    std::vector<uint16_t> c(size_t(pa * pb));
    gemm_reference(aq.view(), bq.view(), c.data(), pb, ref.data(), abs.data());
  }
  /// Contract check of n consecutive C values of A pattern row `ra`, starting at B pattern row 0.
  bool ok(const uint16_t* c, int64_t ra, int64_t n) const {
    return check_gemm_contract(c, 1, n, n, &ref[size_t(ra * pb)], &abs[size_t(ra * pb)]).ok();
  }
};

/// Checks a device C [M, N] (dense) whose A rows repeat with period ref.pa and B rows with
/// period ref.pb (one of them 1 when it does not repeat). Row r, column block j: the values
/// equal the pattern block checked against the reference (memcmp), or are checked themselves.
/// Returns "" or the first bad element and counts.
std::string check_periodic_c(const uint16_t* dC, int64_t M, int64_t N, const PeriodicRef& ref) {
  const int64_t rows_per_chunk = std::max<int64_t>(1, (128 << 20) / (N * 2));
  std::vector<uint16_t> host(size_t(std::min(rows_per_chunk, M) * N));
  std::vector<std::vector<uint16_t>> checked(size_t(ref.pa));  // checked values of each A pattern row
  int64_t bad_rows = 0, first_row = -1, slow = 0;
  for (int64_t r0 = 0; r0 < M; r0 += rows_per_chunk) {
    const int64_t n = std::min(rows_per_chunk, M - r0);
    cuda_ok(cudaMemcpy(host.data(), dC + r0 * N, size_t(n * N * 2), cudaMemcpyDeviceToHost), "D2H");
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = r0 + i, ra = r % ref.pa;
      const uint16_t* row = &host[size_t(i * N)];
      bool row_ok = true;
      for (int64_t j = 0; j < N && row_ok; j += ref.pb) {
        const int64_t w = std::min(ref.pb, N - j);
        std::vector<uint16_t>& twin = checked[size_t(ra)];
        if (!twin.empty() && std::memcmp(row + j, twin.data(), size_t(w) * 2) == 0) continue;
        ++slow;
        row_ok = ref.ok(row + j, ra, w);
        if (row_ok && twin.empty() && w == std::min(ref.pb, N)) twin.assign(row + j, row + j + w);
      }
      if (!row_ok && bad_rows++ == 0) first_row = r;
    }
  }
  if (bad_rows == 0) return "";
  return std::to_string(bad_rows) + " of " + std::to_string(M) + " rows outside the spec section 3 bound, first row " +
         std::to_string(first_row) + " (" + std::to_string(slow) + " blocks checked element by element)";
}

/// A [rows, K] bf16 on the device repeating `pat` (period pat_rows).
std::unique_ptr<DeviceBuf> periodic_a(const std::vector<uint16_t>& pat, int64_t pat_rows, int64_t rows, int64_t K) {
  auto a = std::make_unique<DeviceBuf>(size_t(rows * K * 2), NoInit{});
  a->upload(0, pat.data(), pat.size() * 2);
  replicate_rows(a->get(), rows, pat_rows, K * 2);
  return a;
}

// Tiled and fp8 paths, M * N = 65600 * 32768 > 2^31 output elements (C is 4.3 GB): every row of C.
TEST(Gpu64Bit, TiledGemmPastTwoTo31OutputElements) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 65600, N = 32768, K = 128, P = 61;  // 65536 % 61 != 0
  MXFP4_REQUIRE_GPU_MEMORY(size_t(M * N * 2 + M * K * 4));
  const std::vector<uint16_t> pat = randn_bf16(size_t(P * K), 650001);
  const HostMx b = random_mx(N, K, 650002);
  const PeriodicRef ref(quantize_bf16(pat, P, K), b);
  const auto a = periodic_a(pat, P, M, K);
  const DevicePacked pk(b);
  DeviceBuf c(size_t(M * N * 2), NoInit{});
  const GemmConfig tiled = forced_cfg(GemmPath::tiled), fp8 = fp8_cfg(128, 128);
  for (const GemmConfig* cfg : {static_cast<const GemmConfig*>(nullptr), &tiled, &fp8}) {
    c.fill(0xFF);
    GemmOptions opt;
    opt.config = cfg;
    gemm(a->get<uint16_t>(), M, K, K, pk.pw, c.get<uint16_t>(), N, opt, cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "gemm");
    EXPECT_EQ(check_periodic_c(c.get<uint16_t>(), M, N, ref), "") << cfg_name(cfg);
  }
}

// The small-M paths (fused, splitk, their cluster splits, gemv) and tiled with N = 2^26 + 48:
// M * N > 2^31 output elements, the packed weights 2.3 GB (offsets past 2^31 bytes).
TEST(Gpu64Bit, EveryPathPastTwoTo31OutputElementsWithHugeN) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 33, N = (int64_t(1) << 26) + 48, K = 64, P = 509;  // 2^26 % 509 != 0
  MXFP4_REQUIRE_GPU_MEMORY(size_t(M * N * 2 + packed_bytes(N, K) + N * K / 2 + N * K / 32));
  const HostMx bp = random_mx(P, K, 660001);
  const std::vector<uint16_t> a_host = randn_bf16(size_t(M * K), 660002);
  const PeriodicRef ref(quantize_bf16(a_host, M, K), bp);
  DeviceBuf a(a_host), packed(size_t(packed_bytes(N, K)), NoInit{});
  PackedWeights pw;
  {
    DeviceBuf codes(size_t(N * K / 2), NoInit{}), scales(size_t(N * K / 32), NoInit{});
    codes.upload(0, bp.codes.data(), bp.codes.size());
    scales.upload(0, bp.scales.data(), bp.scales.size());
    replicate_rows(codes.get(), N, P, K / 2);
    replicate_rows(scales.get(), N, P, K / 32);
    pw = prepack(MxMatrix{codes.get(), scales.get(), N, K}, packed.get(), cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "prepack");
  }
  DeviceBuf c(size_t(M * N * 2), NoInit{});
  const GemmConfig cfgs[] = {forced_cfg(GemmPath::fused, 1, 4), forced_cfg(GemmPath::fused, 4, 8, 2),
                             forced_cfg(GemmPath::splitk, 3, 8), forced_cfg(GemmPath::splitk, 2, 4, 4),
                             forced_cfg(GemmPath::tiled)};
  std::vector<const GemmConfig*> runs{nullptr};
  for (const GemmConfig& cfg : cfgs) runs.push_back(&cfg);
  for (const GemmConfig* cfg : runs) {
    c.fill(0xFF);
    GemmOptions opt;
    opt.config = cfg;
    gemm(a.get<uint16_t>(), M, K, K, pw, c.get<uint16_t>(), N, opt, cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "gemm");
    EXPECT_EQ(check_periodic_c(c.get<uint16_t>(), M, N, ref), "") << cfg_name(cfg);
  }
  // Path gemv (M <= 8) on the first 8 rows of A: weight offsets past 2^31 bytes, 2^22 CTAs.
  for (int warps : {4, 16}) {
    const GemmConfig gemv{GemmPath::gemv, 16, 8, 1, warps};
    c.fill(0xFF);
    GemmOptions opt;
    opt.config = &gemv;
    gemm(a.get<uint16_t>(), 8, K, K, pw, c.get<uint16_t>(), N, opt, cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "gemm");
    EXPECT_EQ(check_periodic_c(c.get<uint16_t>(), 8, N, ref), "") << describe(gemv);
  }
}

// Every path with lda = ldc = 2^26 + 64: the last rows of A and C start past byte 2^32. The
// gaps of A hold NaN (0xFFFF); C's 64 values after each row must stay poisoned.
TEST(Gpu64Bit, EveryPathWithRowStridesPastTwoTo32Bytes) {
  MXFP4_REQUIRE_GPU();
  constexpr int64_t M = 64, N = 256, K = 512, ld = (int64_t(1) << 26) + 64, tail = 64;
  const int64_t a_span = ((M - 1) * ld + K + tail) * 2, c_span = ((M - 1) * ld + N + tail) * 2;
  MXFP4_REQUIRE_GPU_MEMORY(size_t(a_span + c_span));
  const std::vector<uint16_t> a_host = randn_bf16(size_t(M * K), 670001);
  const HostMx aq = quantize_bf16(a_host, M, K), b = random_mx(N, K, 670002);
  const DevicePacked pk(b);
  DeviceBuf a(size_t(a_span), 0xFF), c(size_t(c_span), NoInit{});
  cuda_ok(cudaMemcpy2D(a.get(), size_t(ld * 2), a_host.data(), size_t(K * 2), size_t(K * 2), size_t(M),
                       cudaMemcpyHostToDevice), "upload A rows");
  std::vector<const GemmConfig*> runs{nullptr};
  const std::vector<GemmConfig> cfgs = path_configs(M, K);
  for (const GemmConfig& cfg : cfgs) runs.push_back(&cfg);
  std::vector<uint16_t> win(size_t(M * (N + tail)));
  for (const GemmConfig* cfg : runs) {
    c.fill(0xFF);
    GemmOptions opt;
    opt.config = cfg;
    gemm(a.get<uint16_t>(), M, K, ld, pk.pw, c.get<uint16_t>(), ld, opt, cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "gemm");
    cuda_ok(cudaMemcpy2D(win.data(), size_t((N + tail) * 2), c.get(), size_t(ld * 2), size_t((N + tail) * 2),
                         size_t(M), cudaMemcpyDeviceToHost), "download C rows");
    for (int64_t m = 0; m < M; ++m) {
      const MxMatrix arow{aq.codes.data() + m * K / 2, aq.scales.data() + m * K / 32, 1, K};
      const ContractReport rep = check_gemm_contract(&win[size_t(m * (N + tail))], N + tail, arow, b.view());
      ASSERT_TRUE(rep.ok()) << cfg_name(cfg) << " row " << m << ": " << rep.str();
      for (int64_t j = N; j < N + tail; ++j)
        ASSERT_EQ(win[size_t(m * (N + tail) + j)], 0xFFFF) << cfg_name(cfg) << " wrote C(" << m << ", " << j << ")";
    }
  }
  // A's rows and the start of each gap are unchanged.
  std::vector<uint16_t> a_win(size_t(M * (K + tail)));
  cuda_ok(cudaMemcpy2D(a_win.data(), size_t((K + tail) * 2), a.get(), size_t(ld * 2), size_t((K + tail) * 2), size_t(M),
                       cudaMemcpyDeviceToHost), "download A rows");
  for (int64_t m = 0; m < M; ++m) {
    ASSERT_EQ(0, std::memcmp(&a_win[size_t(m * (K + tail))], &a_host[size_t(m * K)], size_t(K * 2))) << "A row " << m;
    for (int64_t j = K; j < K + tail; ++j) ASSERT_EQ(a_win[size_t(m * (K + tail) + j)], 0xFFFF) << "A gap of row " << m;
  }
}

}  // namespace
}  // namespace mxfp4::test
#else
TEST(Gpu64Bit, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }
#endif
