// Inputs and correctness check of `mxfp4 bench`: the shapes file, seeded random bf16
// matrices, and the comparison of a GEMM result against mxfp4::gemm_reference with the
// per-element bound of spec §3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"

namespace mxfp4cli::bench {

struct Shape {
  int64_t M = 0, N = 0, K = 0;
};

/// Reads "M N K" lines ('#' starts a comment; blank lines ignored). Throws CliError naming
/// the file and line for anything else (K must be a positive multiple of 32).
std::vector<Shape> read_shapes(const std::string& path);

/// `rows * cols` bf16 bit patterns of standard-normal samples (std::mt19937_64 +
/// std::normal_distribution<float>, rounded to bf16 to nearest even). Deterministic for
/// (seed, tag): generated in fixed chunks of 2^20 elements, each with its own generator
/// seeded from (seed, tag, chunk), filled in parallel.
std::vector<uint16_t> randn_bf16(int64_t rows, int64_t cols, uint64_t seed, const std::vector<uint64_t>& tag);

/// Makes `count` rows of a dense bf16 matrix [rows, K] (K >= 64; rows r * rows / count,
/// spread evenly) carry one flagged group of path fp8's image: their first two 32-element
/// blocks are scaled by 2^-60 and 2^60, past the block exponents [-47, 49] that the image
/// holds (docs/fp8-path.md): the fix-up recomputes those columns of C. A measurement input (`mxfp4 bench --flagged-weight-rows`). Throws
/// CliError when count is not in [0, rows] or K < 64.
void flag_rows(std::vector<uint16_t>& x, int64_t rows, int64_t K, int64_t count);

/// Makes every 128-K group of a dense bf16 matrix [rows, K] (K >= 64) wide for path fp8's
/// image (docs/fp8-path.md): the first 32-element block of each 128-K slice is scaled by 2^8,
/// so the group's block exponents span more than 3 binades (one exponent per block, per-block
/// promotion in the GEMM) while staying far inside [-47, 49] (never flagged) for values of
/// ordinary size. A measurement input (`mxfp4 bench --wide-activations`). Throws CliError
/// when K < 64.
void widen_groups(std::vector<uint16_t>& x, int64_t rows, int64_t K);

/// Quantizes a dense bf16 matrix [rows, K] with mxfp4::quantize (aiter rule, CPU).
HostMx quantize_bf16(const std::vector<uint16_t>& x, int64_t rows, int64_t K);

/// Rows of C that are checked: every row when M*N*K is small, else 16 rows spread over
/// [0, M) including the first and the last.
std::vector<int64_t> sample_rows(int64_t M, int64_t N, int64_t K);

struct CheckResult {
  bool correct = true;
  double max_err_ratio = 0;  ///< max |C - ref| / bound over checked elements (inf if bound 0 and err > 0)
  int64_t rows_checked = 0;
  std::string first_failure;  ///< "C[m, n] = ..., ref = ..., bound = ..." for the first bad element
};

/// gemm_reference(Aq, B) on rows `rows` of C (ascending, each in [0, Aq.rows)), computed once
/// so that many results of one shape (`mxfp4 tune`'s candidates) are checked against it.
struct Reference {
  std::vector<int64_t> rows;
  int64_t N = 0;
  std::vector<uint16_t> cref;     ///< [rows.size()][N] the reference rounded to bf16
  std::vector<double> f64, sabs;  ///< [rows.size()][N] exact sum and sum_k |a_k b_k|
};
Reference reference_rows(const HostMx& Aq, const HostMx& B, const std::vector<int64_t>& rows);

/// Checks C [M, N] (bf16 bits) against `ref` on its rows:
/// |C - ref| <= 2^-8 |ref| + 2^-12 sum_k |a_k b_k|, NaN exactly where ref is NaN, and an
/// infinite C only where the rounded reference is the same infinity.
CheckResult check_gemm(const Reference& ref, const std::vector<uint16_t>& C);

/// check_gemm(reference_rows(Aq, B, rows), C).
CheckResult check_gemm(const HostMx& Aq, const HostMx& B, const std::vector<uint16_t>& C,
                       const std::vector<int64_t>& rows);

}  // namespace mxfp4cli::bench
