// Shared helpers for the CPU and GPU GoogleTest suites (host code only, no CUDA):
// reproducible random data, fp32 <-> bf16 conversions, host MXFP4 matrices, and the
// per-element GEMM accuracy contract of spec §3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {

/// fp32 -> bf16 bits, round to nearest even (NaN stays NaN).
uint16_t f32_to_bf16(float x);
/// bf16 bits -> fp32 (exact).
float bf16_to_f32(uint16_t b);
/// Converts a vector elementwise.
std::vector<uint16_t> to_bf16(const std::vector<float>& x);
std::vector<float> to_f32(const std::vector<uint16_t>& x);

/// Deterministic generator (splitmix64), identical on every platform and compiler.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform integer in [lo, hi].
  int64_t uniform_int(int64_t lo, int64_t hi);
  /// Standard normal (Box-Muller on uniform()).
  double normal();

 private:
  uint64_t state_;
};

/// n values of stddev * N(0, 1), rounded to bf16 (nearest even); reproducible for a seed.
std::vector<uint16_t> randn_bf16(size_t n, uint64_t seed, float stddev = 1.0f);
/// n values of stddev * N(0, 1) as fp32.
std::vector<float> randn_f32(size_t n, uint64_t seed, float stddev = 1.0f);

/// An owning host MXFP4 matrix in plain layouts (codes [rows, K/2], scales [rows, K/32]).
struct HostMx {
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scales;
  int64_t rows = 0;
  int64_t K = 0;
  /// Non-owning view for the API (plain layouts).
  MxMatrix view() const;
};

/// Quantizes dense bf16 x [rows, K] (row stride K) on the CPU with the library's quantizer.
HostMx quantize_bf16(const std::vector<uint16_t>& x, int64_t rows, int64_t K, ScaleRule rule = ScaleRule::aiter);
/// The same for dense fp32 x [rows, K].
HostMx quantize_f32(const std::vector<float>& x, int64_t rows, int64_t K, ScaleRule rule = ScaleRule::aiter);
/// Random MXFP4 matrix: randn bf16 quantized with `rule` (realistic scales).
HostMx random_mx(int64_t rows, int64_t K, uint64_t seed, float stddev = 1.0f, ScaleRule rule = ScaleRule::aiter);

/// Activations that probe the quantizer (spec §2) through a GEMM: bf16 [M, K] with row stride
/// lda >= K, the columns K .. lda-1 set to NaN (never to be read). Each 32-element block holds
/// +-6 * 2^e (its scale is 2^e under every rule unless a random element exceeds it or
/// e < -127), the ties of the e2m1 grid times 2^e, their bf16 neighbours and random values,
/// for e from -130 to 125, all finite and no block decoding to 2^128 (random values within
/// +-7.5 * 2^e, +-6 * 2^e at e = 125); about one block in
/// 20 is zero. Reproducible for a seed.
std::vector<uint16_t> quantizer_probe_bf16(int64_t M, int64_t K, int64_t lda, uint64_t seed);
/// The same rows without the stride padding (dense [M, K]).
std::vector<uint16_t> dense_rows(const std::vector<uint16_t>& a, int64_t M, int64_t K, int64_t lda);
/// Scales the first two 32-element blocks of row r of bf16 a [rows, K] (dense, K >= 64) by 2^-e
/// and 2^e (exact for normal values): a scaling group whose blocks lie 2e binades apart (path
/// fp8: a wide group for small e, a flagged one for e = 60; fp8_layout.hpp).
void spread_first_blocks(std::vector<uint16_t>& a, int64_t K, int64_t r, int e);
/// Sets the scale bytes of row r's first two blocks of b (K >= 64) to 127 + e0 and 127 + e1.
void set_first_scales(HostMx& b, int64_t r, int e0, int e1);
/// Identity weights [K, K] in MXFP4 (1.0 on the diagonal, exact): C = A * I^T is A's
/// quantized value, exact in bf16 (at most two significant bits).
HostMx identity_mx(int64_t K);

/// Result of check_gemm_contract() and check_gemm_contract_f32().
struct ContractReport {
  int64_t checked = 0;         ///< elements compared
  int64_t failures = 0;        ///< elements outside the bound (NaN mismatches included)
  int64_t nan_mismatches = 0;  ///< NaN in exactly one of C and ref
  // Worst element: the largest |C - ref| / bound (or the first NaN mismatch).
  int64_t worst_m = -1, worst_n = -1;
  double worst_c = 0, worst_ref = 0, worst_err = 0, worst_bound = 0, worst_ratio = 0;
  bool ok() const { return failures == 0; }
  /// One line: counts and the worst element, for test failure messages.
  std::string str() const;
};

/// The constant absolute slack of the contract check: half an ulp of the smallest bf16
/// subnormal, 2^-134. A result that is exact up to the final rounding to bf16 can still be
/// 2^-134 away from a ref in the subnormal range (where the relative term vanishes), so the
/// bound used is |C - ref| <= 2^-8 |ref| + 2^-12 sum_k |a_k b_k| + 2^-134.
inline constexpr double kContractAbsSlack = 0x1p-134;

/// Per-element spec §3 contract on a bf16 result C [M, N] (row stride ldc) against the
/// unrounded reference sums `ref` [M, N] and `abs_sum` [M, N] = sum_k |a_k b_k| (dense, as
/// gemm_reference's out_f64 / out_abs): |C - ref| <= 2^-8 |ref| + 2^-12 abs_sum + 2^-134;
/// NaN exactly where ref is NaN; C = +-Inf accepted only where ref has that sign and
/// |ref| + bound reaches the bf16 overflow threshold (2^128 - 2^119).
ContractReport check_gemm_contract(const uint16_t* C, int64_t M, int64_t N, int64_t ldc, const double* ref,
                                   const double* abs_sum);

/// The fp32-output contract (spec §3 without the final rounding, as the `float* C` overloads
/// of mxfp4::gemm promise) on C [M, N] (row stride ldc): |C - ref| <= 2^-12 abs_sum + 2^-133
/// (the absolute term: K <= 2^16 products each losing at most 2^-150 below fp32's normal
/// range, plus half an fp32 subnormal ulp), NaN exactly where ref is NaN; ref and abs_sum as
/// for check_gemm_contract.
ContractReport check_gemm_contract_f32(const float* C, int64_t M, int64_t N, int64_t ldc, const double* ref,
                                       const double* abs_sum);

/// Convenience: runs mxfp4::gemm_reference on host A, B and checks C against it.
ContractReport check_gemm_contract(const uint16_t* C, int64_t ldc, const MxMatrix& A, const MxMatrix& B);

/// The exact reference of some rows of C = A_q B^T: rows[i]'s unrounded sums and sum |a b| at
/// [i * N, (i + 1) * N) of `sum` and `abs_sum`.
struct RowsReference {
  std::vector<int64_t> rows;
  int64_t N = 0;  ///< columns per row (b.rows)
  std::vector<double> sum, abs_sum;
};

/// One gemm_reference over rows `rows` of aq (plain layouts) against b, so B is decoded once
/// for all of them (checking row by row decoded B per row: most of the GPU suite's time,
/// session 42). Throws std::out_of_range for a row outside [0, aq.rows), std::invalid_argument
/// for no rows (a check of nothing).
RowsReference reference_rows(const HostMx& aq, const HostMx& b, const std::vector<int64_t>& rows);

/// check_gemm_contract on rows ref.rows of C (row stride ldc, ref.N columns); the report of the
/// first failing row, or of the last row when all pass. `failed_row` gets the failing row (-1
/// when none). Throws std::invalid_argument for a reference of no rows or without ref.N sums
/// per row (one not made by reference_rows).
ContractReport check_rows_contract(const uint16_t* C, int64_t ldc, const RowsReference& ref,
                                   int64_t* failed_row = nullptr);

/// The device the dispatcher's rules were tuned on (an H200: 132 SMs), for its CPU tests.
inline DeviceInfo h200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  return d;
}

/// Hex string of bytes, e.g. "67 24 20 8e" (for failure messages).
std::string hex(const uint8_t* p, size_t n);
std::string hex(const std::vector<uint8_t>& v);

}  // namespace mxfp4::test
