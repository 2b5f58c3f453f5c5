#include "common/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace mxfp4::test {

uint16_t f32_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float bf16_to_f32(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f32_to_bf16(x[i]);
  return out;
}

std::vector<float> to_f32(const std::vector<uint16_t>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_f32(x[i]);
  return out;
}

uint64_t Rng::next_u64() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return double(next_u64() >> 11) * 0x1p-53; }

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  return lo + int64_t(next_u64() % uint64_t(hi - lo + 1));
}

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::vector<uint16_t> randn_bf16(size_t n, uint64_t seed, float stddev) {
  Rng rng(seed);
  std::vector<uint16_t> out(n);
  for (auto& v : out) v = f32_to_bf16(float(rng.normal()) * stddev);
  return out;
}

std::vector<float> randn_f32(size_t n, uint64_t seed, float stddev) {
  Rng rng(seed);
  std::vector<float> out(n);
  for (auto& v : out) v = float(rng.normal()) * stddev;
  return out;
}

MxMatrix HostMx::view() const {
  MxMatrix m;
  m.codes = codes.data();
  m.scales = scales.data();
  m.rows = rows;
  m.K = K;
  return m;
}

namespace {
HostMx quantize_dense(const void* x, DType dtype, int64_t rows, int64_t K, ScaleRule rule) {
  HostMx q;
  q.rows = rows;
  q.K = K;
  q.codes.resize(size_t(rows * K / 2));
  q.scales.resize(size_t(rows * K / 32));
  mxfp4::quantize(x, dtype, rows, K, K, q.codes.data(), q.scales.data(), rule);
  return q;
}
}  // namespace

HostMx quantize_bf16(const std::vector<uint16_t>& x, int64_t rows, int64_t K, ScaleRule rule) {
  return quantize_dense(x.data(), DType::bf16, rows, K, rule);
}

HostMx quantize_f32(const std::vector<float>& x, int64_t rows, int64_t K, ScaleRule rule) {
  return quantize_dense(x.data(), DType::fp32, rows, K, rule);
}

HostMx random_mx(int64_t rows, int64_t K, uint64_t seed, float stddev, ScaleRule rule) {
  return quantize_bf16(randn_bf16(size_t(rows * K), seed, stddev), rows, K, rule);
}

std::vector<uint16_t> quantizer_probe_bf16(int64_t M, int64_t K, int64_t lda, uint64_t seed) {
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f, 3.0f};
  Rng rng(seed);
  std::vector<uint16_t> a(size_t(M * lda), uint16_t(0x7FC0));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < K / 32; ++c) {
      const int e = int(rng.uniform_int(-130, 125));
      const bool zero = rng.uniform() < 0.05;
      const int64_t at_max = (m + c) % 32;
      for (int64_t i = 0; i < 32; ++i) {
        const double r = rng.uniform();
        // |v| <= 7.5, and <= 6 at e = 125 (amax 1.5 * 2^127, scale byte 252 under every rule):
        // no block decodes to 2^128, which the GPU's bf16 operands hold as Inf (docs/hardening.md
        // section 3; GpuGemm.DecodedOverflowFollowsIeee), turning a row of C = A * I^T into NaN.
        const double lim = e == 125 ? 6.0 : 7.5;
        float v = i == at_max ? 6.0f : r < 0.4 ? ties[rng.uniform_int(0, 8)] : float(std::clamp(rng.normal() * 2.0, -lim, lim));
        v = std::ldexp(rng.uniform() < 0.5 ? -v : v, e);
        uint16_t h = f32_to_bf16(zero ? 0.0f : v);
        if (r >= 0.25 && r < 0.4 && i != at_max && (h & 0x7FFF) != 0)  // a bf16 neighbour (never NaN)
          h = uint16_t(h + (rng.uniform() < 0.5 ? 1 : -1));
        a[size_t(m * lda + c * 32 + i)] = h;
      }
    }
  return a;
}

std::vector<uint16_t> dense_rows(const std::vector<uint16_t>& a, int64_t M, int64_t K, int64_t lda) {
  std::vector<uint16_t> d(size_t(M * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) d[size_t(m * K + k)] = a[size_t(m * lda + k)];
  return d;
}

void spread_first_blocks(std::vector<uint16_t>& a, int64_t K, int64_t r, int e) {
  for (int64_t k = 0; k < 64; ++k) {
    uint16_t& x = a[size_t(r * K + k)];
    x = f32_to_bf16(std::ldexp(bf16_to_f32(x), k < 32 ? -e : e));
  }
}

void set_first_scales(HostMx& b, int64_t r, int e0, int e1) {
  b.scales[size_t(r * (b.K / 32))] = uint8_t(127 + e0);
  b.scales[size_t(r * (b.K / 32) + 1)] = uint8_t(127 + e1);
}

HostMx identity_mx(int64_t K) {
  std::vector<uint16_t> eye(size_t(K * K), 0);
  for (int64_t n = 0; n < K; ++n) eye[size_t(n * K + n)] = f32_to_bf16(1.0f);
  return quantize_bf16(eye, K, K);
}

std::string ContractReport::str() const {
  std::ostringstream os;
  os.precision(9);
  os << failures << " of " << checked << " elements outside the spec §3 bound (" << nan_mismatches
     << " NaN mismatches)";
  if (worst_m >= 0)
    os << "; worst at (m=" << worst_m << ", n=" << worst_n << "): C=" << worst_c << " ref=" << worst_ref
       << " |C-ref|=" << worst_err << " bound=" << worst_bound << " ratio=" << worst_ratio;
  return os.str();
}

namespace {
// Judges and records one element C = c against ref = r (spec §3): a NaN on one side only fails
// (a NaN mismatch), both NaN pass; with bf16 C (`bf16_c`) an infinite c passes where r of its
// sign lies within `bound` of the bf16 overflow threshold (round-to-nearest overflows there);
// otherwise |c - r| <= bound (with fp32 C an infinite c fails: r is finite).
void check_element(ContractReport& rep, int64_t m, int64_t n, double c, double r, double bound, bool bf16_c) {
  constexpr double kOverflow = 0x1p128 - 0x1p119;  // |x| >= this rounds to Inf in bf16
  bool fail = false;
  double err = 0, ratio = 0;
  if (std::isnan(r) || std::isnan(c)) {
    fail = std::isnan(r) != std::isnan(c);
    if (fail) {
      ++rep.nan_mismatches;
      ratio = INFINITY;
    }
  } else if (bf16_c && std::isinf(c)) {
    fail = !(std::signbit(c) == std::signbit(r) && std::fabs(r) + bound >= kOverflow);
    err = INFINITY;
    ratio = fail ? INFINITY : 0;
  } else {
    err = std::fabs(c - r);
    ratio = err / bound;
    fail = !(err <= bound);
  }
  // Count it and keep the worst (largest ratio, or the first failure when no ratio is larger).
  ++rep.checked;
  if (fail) ++rep.failures;
  if (ratio > rep.worst_ratio || (fail && rep.worst_m < 0)) {
    rep.worst_m = m;
    rep.worst_n = n;
    rep.worst_c = c;
    rep.worst_ref = r;
    rep.worst_err = err;
    rep.worst_bound = bound;
    rep.worst_ratio = ratio;
  }
}
}  // namespace

ContractReport check_gemm_contract(const uint16_t* C, int64_t M, int64_t N, int64_t ldc, const double* ref,
                                   const double* abs_sum) {
  ContractReport rep;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double r = ref[m * N + n];
      const double bound = 0x1p-8 * std::fabs(r) + 0x1p-12 * abs_sum[m * N + n] + kContractAbsSlack;
      check_element(rep, m, n, bf16_to_f32(C[m * ldc + n]), r, bound, /*bf16_c=*/true);
    }
  return rep;
}

ContractReport check_gemm_contract_f32(const float* C, int64_t M, int64_t N, int64_t ldc, const double* ref,
                                       const double* abs_sum) {
  ContractReport rep;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double bound = 0x1p-12 * abs_sum[m * N + n] + 0x1p-133;
      check_element(rep, m, n, C[m * ldc + n], ref[m * N + n], bound, /*bf16_c=*/false);
    }
  return rep;
}

ContractReport check_gemm_contract(const uint16_t* C, int64_t ldc, const MxMatrix& A, const MxMatrix& B) {
  const int64_t M = A.rows, N = B.rows;
  std::vector<uint16_t> c_ref(size_t(M * N));
  std::vector<double> ref(size_t(M * N)), abs_sum(size_t(M * N));
  mxfp4::gemm_reference(A, B, c_ref.data(), N, ref.data(), abs_sum.data());
  return check_gemm_contract(C, M, N, ldc, ref.data(), abs_sum.data());
}

RowsReference reference_rows(const HostMx& aq, const HostMx& b, const std::vector<int64_t>& rows) {
  const int64_t R = int64_t(rows.size()), K = aq.K, N = b.rows;
  if (R == 0) throw std::invalid_argument("reference_rows: no rows");
  HostMx sub;
  sub.rows = R;
  sub.K = K;
  sub.codes.resize(size_t(R * K / 2));
  sub.scales.resize(size_t(R * K / 32));
  for (int64_t i = 0; i < R; ++i) {
    const int64_t r = rows[size_t(i)];
    if (r < 0 || r >= aq.rows)
      throw std::out_of_range("reference_rows: row " + std::to_string(r) + " of " + std::to_string(aq.rows));
    std::copy_n(aq.codes.begin() + r * K / 2, K / 2, sub.codes.begin() + i * K / 2);
    std::copy_n(aq.scales.begin() + r * K / 32, K / 32, sub.scales.begin() + i * K / 32);
  }
  RowsReference ref{rows, N, std::vector<double>(size_t(R * N)), std::vector<double>(size_t(R * N))};
  std::vector<uint16_t> rounded(size_t(R * N));
  mxfp4::gemm_reference(sub.view(), b.view(), rounded.data(), N, ref.sum.data(), ref.abs_sum.data());
  return ref;
}

ContractReport check_rows_contract(const uint16_t* C, int64_t ldc, const RowsReference& ref, int64_t* failed_row) {
  const int64_t N = ref.N;
  const size_t want = ref.rows.size() * size_t(N);
  if (ref.rows.empty() || ref.sum.size() != want || ref.abs_sum.size() != want)
    throw std::invalid_argument("check_rows_contract: a reference of " + std::to_string(ref.rows.size()) +
                                " rows x N = " + std::to_string(N) + " holds " + std::to_string(ref.sum.size()) +
                                " sums");
  ContractReport rep;
  if (failed_row) *failed_row = -1;
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    rep = check_gemm_contract(C + ref.rows[i] * ldc, 1, N, ldc, ref.sum.data() + i * size_t(N),
                              ref.abs_sum.data() + i * size_t(N));
    if (!rep.ok()) {
      if (failed_row) *failed_row = ref.rows[i];
      return rep;
    }
  }
  return rep;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

std::string hex(const std::vector<uint8_t>& v) { return hex(v.data(), v.size()); }

}  // namespace mxfp4::test
