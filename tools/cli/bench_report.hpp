// Results of `mxfp4 bench`: one row per shape, printed as a table, written as JSON and
// Markdown. Floors follow ../shared/spec/hopper-design-notes.md (H200 ceilings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxfp4cli::bench {

/// Measured H200 ceilings used for the floor column (hopper-design-notes "The workload").
inline constexpr double kCopyBytesPerS = 4.27e12;
inline constexpr double kFp8FlopPerS = 1410e12;
inline constexpr double kGraphLaunchUs = 0.57;

/// Bytes one call must move: A bf16 + B e2m1 + B scales + C bf16.
double call_bytes(int64_t M, int64_t N, int64_t K);
/// max(bytes / 4.27 TB/s, 2MNK / 1410 TFLOP/s) + 0.57 us.
double floor_us(int64_t M, int64_t N, int64_t K);

struct Row {
  int64_t M = 0, N = 0, K = 0;
  std::optional<double> ours_us, cublas_bf16_us, cublas_fp8_us;
  double floor_us = 0;
  std::string path;  ///< describe(config)
  bool correct = false;
  double max_err_ratio = 0;
  int64_t rows_checked = 0;
  std::string error;  ///< non-empty when the shape failed to run
  std::string first_failure;  ///< first element outside the bound, when !correct
};

struct Meta {
  std::string backend;     ///< "cpu" or "cuda"
  std::string device;      ///< GPU name, or the CPU model for the CPU backend
  std::string version;     ///< mxfp4::version()
  std::string shapes_file;
  uint64_t seed = 0;
  int64_t flagged_weight_rows = 0;  ///< `--flagged-weight-rows` (0: plain random weights)
  bool wide_activations = false;    ///< `--wide-activations`
  bool weights_static = false;      ///< `--weights-static` (GemmOptions::weights_static for ours)
  std::string out_dtype = "bf16";   ///< `--out-dtype`: ours writes bf16 or fp32 C
  int replays = 0;
  int64_t rotate_bytes = 0;
};

void print_table_header();
void print_table_row(const Row& r);

/// Geometric mean of a column over the first `n` rows (nullopt if any is missing).
std::optional<double> geomean_first(const std::vector<Row>& rows, size_t n, std::optional<double> Row::*col);

void write_json(const std::string& path, const Meta& meta, const std::vector<Row>& rows);
void write_markdown(const std::string& path, const Meta& meta, const std::vector<Row>& rows);

}  // namespace mxfp4cli::bench
