// Shared helpers of the mxfp4 CLI: the error type every subcommand throws for bad input,
// option parsing, loading MXFP4 matrices from .npy files, and the subcommand registry.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"
#include "npy.hpp"

namespace mxfp4cli {

/// A problem the user can fix (bad file, inconsistent shapes, unavailable backend).
/// main() prints "mxfp4 <cmd>: <message>" on one line and exits with `code`.
class CliError : public std::runtime_error {
 public:
  explicit CliError(const std::string& msg, int code = 1) : std::runtime_error(msg), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// A subcommand's body, run after a successful parse; returns the exit code.
using Runner = std::function<int()>;

/// A registered subcommand and its body.
struct Command {
  CLI::App* app = nullptr;
  Runner run;
};

// Registration of each subcommand (one file each).
Command add_quantize(CLI::App& app);
Command add_dequantize(CLI::App& app);
Command add_gemm(CLI::App& app);
Command add_info(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_tune(CLI::App& app);

/// Names accepted by --rule.
inline const std::vector<std::string> kRuleNames = {"aiter", "floor", "rceil"};
mxfp4::ScaleRule parse_rule(const std::string& name);
const char* rule_name(mxfp4::ScaleRule r);

/// Replaces newlines so that a message prints as one line.
std::string one_line(std::string s);

/// Reads a .npy file that must hold a 2-D array of one of `allowed` dtypes; `what` names the
/// role ("--input") in error messages.
npy::Array load_matrix(const std::string& path, const std::string& what, const std::vector<npy::Dtype>& allowed);

/// MXFP4 matrix held in host memory: plain codes [rows, K/2] and scales [rows, K/32].
struct HostMx {
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scales;
  int64_t rows = 0;
  int64_t K = 0;
  mxfp4::MxMatrix view() const;
  /// View of rows [r0, r0 + n).
  mxfp4::MxMatrix rows_view(int64_t r0, int64_t n) const;
};

/// Loads codes (uint8 [rows, K/2]) and scales (uint8 [rows, K/32]) and checks they agree.
HostMx load_mx(const std::string& codes_path, const std::string& scales_path);

/// Writes a uint8 / uint16 / float matrix.
void save_u8(const std::string& path, const std::vector<uint8_t>& v, int64_t rows, int64_t cols);
void save_u16(const std::string& path, const std::vector<uint16_t>& v, int64_t rows, int64_t cols);
void save_f32(const std::string& path, const std::vector<float>& v, int64_t rows, int64_t cols);

}  // namespace mxfp4cli
