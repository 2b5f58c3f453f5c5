// Results of `mxfp4 bench` (see bench_report.hpp).
#include "bench_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "common.hpp"

namespace mxfp4cli::bench {

namespace {
constexpr size_t kHeadlineShapes = 8;  // the amd-mxfp4-mm benchmark rows of bench/shapes.txt

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fmt(std::optional<double> v, const char* f = "%.2f") {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

nlohmann::json opt_json(std::optional<double> v) { return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(); }

std::optional<double> tbps(const Row& r) {
  if (!r.ours_us || *r.ours_us <= 0) return std::nullopt;
  return call_bytes(r.M, r.N, r.K) / (*r.ours_us * 1e-6) / 1e12;
}
std::optional<double> tflops(const Row& r) {
  if (!r.ours_us || *r.ours_us <= 0) return std::nullopt;
  return 2.0 * double(r.M) * double(r.N) * double(r.K) / (*r.ours_us * 1e-6) / 1e12;
}
std::string correct_str(const Row& r) { return r.error.empty() ? (r.correct ? "yes" : "NO") : "ERROR"; }
}  // namespace

double call_bytes(int64_t M, int64_t N, int64_t K) {
  const double m = double(M), n = double(N), k = double(K);
  return 2 * m * k + n * k / 2 + n * k / 32 + 2 * m * n;
}

double floor_us(int64_t M, int64_t N, int64_t K) {
  const double flops = 2.0 * double(M) * double(N) * double(K);
  return std::max(call_bytes(M, N, K) / kCopyBytesPerS, flops / kFp8FlopPerS) * 1e6 + kGraphLaunchUs;
}

void print_table_header() {
  std::printf("%6s %6s %6s %11s %11s %11s %9s %7s %8s %7s  %s\n", "M", "N", "K", "ours_us", "cublas_bf16",
              "cublas_fp8", "floor_us", "TB/s", "TFLOP/s", "correct", "path");
  std::fflush(stdout);
}

void print_table_row(const Row& r) {
  std::printf("%6lld %6lld %6lld %11s %11s %11s %9.2f %7s %8s %7s  %s\n", (long long)r.M, (long long)r.N,
              (long long)r.K, fmt(r.ours_us).c_str(), fmt(r.cublas_bf16_us).c_str(), fmt(r.cublas_fp8_us).c_str(),
              r.floor_us, fmt(tbps(r), "%.3g").c_str(), fmt(tflops(r), "%.3g").c_str(), correct_str(r).c_str(),
              r.error.empty() ? r.path.c_str() : r.error.c_str());
  if (!r.first_failure.empty()) std::printf("       first element outside the bound: %s\n", r.first_failure.c_str());
  std::fflush(stdout);
}

std::optional<double> geomean_first(const std::vector<Row>& rows, size_t n, std::optional<double> Row::*col) {
  n = std::min(n, rows.size());
  if (n == 0) return std::nullopt;
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<double>& v = rows[i].*col;
    if (!v || !(*v > 0)) return std::nullopt;
    s += std::log(*v);
  }
  return std::exp(s / double(n));
}

void write_json(const std::string& path, const Meta& meta, const std::vector<Row>& rows) {
  nlohmann::json j;
  j["gpu"] = meta.backend == "cuda" ? nlohmann::json(meta.device) : nlohmann::json();
  j["cpu"] = meta.backend == "cpu" ? nlohmann::json(meta.device) : nlohmann::json();
  j["backend"] = meta.backend;
  j["version"] = meta.version;
  j["date_utc"] = utc_now();
  j["shapes_file"] = meta.shapes_file;
  j["seed"] = meta.seed;
  j["flagged_weight_rows"] = meta.flagged_weight_rows;
  j["wide_activations"] = meta.wide_activations;
  j["weights_static"] = meta.weights_static;
  j["out_dtype"] = meta.out_dtype;
  j["replays"] = meta.replays;
  j["rotate_bytes"] = meta.rotate_bytes;
  j["floor_model"] = "max(bytes/4.27e12, 2MNK/1410e12)*1e6 + 0.57 us; bytes = 2MK + NK/2 + NK/32 + 2MN";
  j["rows"] = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json o;
    o["M"] = r.M;
    o["N"] = r.N;
    o["K"] = r.K;
    o["ours_us"] = opt_json(r.ours_us);
    o["cublas_bf16_us"] = opt_json(r.cublas_bf16_us);
    o["cublas_fp8_us"] = opt_json(r.cublas_fp8_us);
    o["floor_us"] = r.floor_us;
    o["tbps"] = opt_json(tbps(r));
    o["tflops"] = opt_json(tflops(r));
    o["path"] = r.path;
    o["correct"] = r.correct && r.error.empty();
    o["max_err_ratio"] = opt_json(r.max_err_ratio);
    o["rows_checked"] = r.rows_checked;
    if (!r.error.empty()) o["error"] = r.error;
    if (!r.first_failure.empty()) o["first_failure"] = r.first_failure;
    j["rows"].push_back(o);
  }
  const size_t n = std::min(kHeadlineShapes, rows.size());
  j["geomean_shapes"] = n;
  j["geomean_first8_us"] = opt_json(geomean_first(rows, n, &Row::ours_us));
  j["geomean_first8_cublas_bf16_us"] = opt_json(geomean_first(rows, n, &Row::cublas_bf16_us));
  j["geomean_first8_cublas_fp8_us"] = opt_json(geomean_first(rows, n, &Row::cublas_fp8_us));
  std::vector<Row> floors = rows;
  for (Row& r : floors) r.ours_us = r.floor_us;
  j["geomean_first8_floor_us"] = opt_json(geomean_first(floors, n, &Row::ours_us));
  j["all_correct"] = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.correct && r.error.empty(); });

  std::ofstream f(path, std::ios::trunc);
  if (!f) throw CliError(path + ": cannot open for writing");
  f << j.dump(2) << "\n";
  if (!f) throw CliError(path + ": write error");
}

void write_markdown(const std::string& path, const Meta& meta, const std::vector<Row>& rows) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) throw CliError(path + ": cannot open for writing");
  f << "# mxfp4 bench: " << meta.backend << " (" << meta.device << ")\n\n";
  f << "mxfp4 " << meta.version << ", " << utc_now() << ", shapes " << meta.shapes_file << ", seed " << meta.seed;
  if (meta.flagged_weight_rows > 0)
    f << ", " << meta.flagged_weight_rows << " weight rows per shape (N if fewer) with a flagged FP8 group";
  if (meta.wide_activations) f << ", activations with a wide path-fp8 group in every 128-K slice";
  if (meta.weights_static)
    f << ", ours with GemmOptions::weights_static (B read before the previous kernel has finished"
      << (meta.backend == "cpu" ? "; the CPU backend ignores it)" : ")");
  if (meta.out_dtype == "f32") f << ", ours writing fp32 C (checked after rounding to bf16; cuBLAS with bf16 C)";
  if (meta.backend == "cuda")
    f << ", median of " << meta.replays << " CUDA-graph replays, weights rotated over " << (meta.rotate_bytes >> 20)
      << " MiB";
  else
    f << ", wall clock of mxfp4::gemm, median of a few calls";
  f << ". Times in microseconds per call. floor = max(bytes / 4.27 TB/s, 2MNK / 1410 TFLOP/s) + 0.57 us "
       "(H200 ceilings). correct: spec §3 bound on the checked rows.\n\n";
  f << "| M | N | K | ours_us | cublas_bf16_us | cublas_fp8_us | floor_us | TB/s | TFLOP/s | path | correct |\n";
  f << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    f << "| " << r.M << " | " << r.N << " | " << r.K << " | " << fmt(r.ours_us) << " | " << fmt(r.cublas_bf16_us)
      << " | " << fmt(r.cublas_fp8_us) << " | " << fmt(r.floor_us) << " | " << fmt(tbps(r), "%.3g") << " | "
      << fmt(tflops(r), "%.3g") << " | " << (r.error.empty() ? r.path : "error: " + r.error) << " | " << correct_str(r)
      << " |\n";
  }
  const size_t n = std::min(kHeadlineShapes, rows.size());
  std::vector<Row> floors = rows;
  for (Row& r : floors) r.ours_us = r.floor_us;
  f << "| geomean of first " << n << " | | | " << fmt(geomean_first(rows, n, &Row::ours_us)) << " | "
    << fmt(geomean_first(rows, n, &Row::cublas_bf16_us)) << " | " << fmt(geomean_first(rows, n, &Row::cublas_fp8_us))
    << " | " << fmt(geomean_first(floors, n, &Row::ours_us)) << " | | | | |\n";
  if (!f) throw CliError(path + ": write error");
}

}  // namespace mxfp4cli::bench
