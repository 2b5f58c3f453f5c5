// mxfp4 bench [--shapes FILE] [--backend auto|cpu|cuda] [--out-dir DIR] [--name STEM] [--replays N]
//             [--seed S] [--no-baselines] [--flagged-weight-rows R] [--wide-activations]
//             [--weights-static] [--out-dtype bf16|f32]
// For each shape: seeded randn bf16 A [M, K] and B [N, K], B quantized by mxfp4::quantize,
// C from the backend, checked against mxfp4::gemm_reference (spec §3 bound), timed.
// CUDA: mxfp4::cuda::bench_gemm (CUDA graph, rotated weights, cuBLAS baselines).
// CPU: wall clock of mxfp4::gemm, median of a few calls.
// Writes <out-dir>/<stem>.json and .md (stem: "cpu", "h200" on an H200, else the GPU name;
// with --flagged-weight-rows R, "-flaggedR" appended; with --wide-activations, "-wide"; with
// --weights-static, "-static"; with --out-dtype f32, "-f32": ours writes fp32 C, checked after
// rounding to bf16).
// Exit code 1 if any shape is incorrect or failed.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench_data.hpp"
#include "bench_report.hpp"
#include "common.hpp"
#include "cuda/bench_gpu.hpp"
#include "mxfp4/format.hpp"

#ifndef MXFP4_SOURCE_DIR
#define MXFP4_SOURCE_DIR "."
#endif

namespace mxfp4cli {

namespace {
struct BenchArgs {
  std::string shapes = std::string(MXFP4_SOURCE_DIR) + "/bench/shapes.txt";
  std::string backend = "auto", out_dir = "bench/results", name;
  int replays = 20;
  uint64_t seed = 0;
  bool no_baselines = false;
  int64_t flagged_weight_rows = 0;  ///< weight rows with a flagged FP8 group (bench_data flag_rows)
  bool wide_activations = false;    ///< every 128-K group of A wide (bench_data widen_groups)
  bool weights_static = false;      ///< ours with GemmOptions::weights_static
  std::string out_dtype = "bf16";   ///< C of ours: "bf16" or "f32" (fp32 sums, ldc = N)
};

constexpr int64_t kRotateBytes = int64_t(256) << 20;

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(" \t", c + 1));
    }
  }
  return "unknown CPU";
}

std::string file_stem(const std::string& backend, const std::string& device) {
  if (backend == "cpu") return "cpu";
  std::string lower;
  for (char c : device) lower += char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("h200") != std::string::npos) return "h200";
  std::string slug;
  for (char c : lower) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += c;
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "gpu" : slug;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times mxfp4::gemm on the CPU: one call (its output is C, bf16 bits; with c_f32 the fp32 C's
// values rounded by fmt::f32_to_bf16), then, unless that took more than 3 s, a few more calls
// (about 2 s in all, 3..7 calls); returns the median in microseconds.
double time_cpu_gemm(const std::vector<uint16_t>& A, int64_t M, int64_t K, const HostMx& B, std::vector<uint16_t>& C,
                     bool c_f32) {
  std::vector<float> c32(c_f32 ? C.size() : 0);
  auto call = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    if (c_f32)
      mxfp4::gemm(A.data(), M, K, K, B.view(), c32.data(), B.rows);
    else
      mxfp4::gemm(A.data(), M, K, K, B.view(), C.data(), B.rows);
    return seconds_since(t0);
  };
  auto finish = [&](double us) {
    for (size_t i = 0; i < c32.size(); ++i) C[i] = mxfp4::fmt::f32_to_bf16(c32[i]);
    return us;
  };
  const double first = call();
  if (first > 3.0) return finish(first * 1e6);
  const int reps = std::clamp(int(2.0 / std::max(first, 1e-9)), 3, 7);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(call());
  return finish(median(t) * 1e6);
}

bench::Row run_shape(const bench::Shape& s, bool cuda, const BenchArgs& a) {
  bench::Row row;
  row.M = s.M;
  row.N = s.N;
  row.K = s.K;
  row.floor_us = bench::floor_us(s.M, s.N, s.K);
  try {
    std::vector<uint16_t> A = bench::randn_bf16(s.M, s.K, a.seed, {0, uint64_t(s.M), uint64_t(s.N), uint64_t(s.K)});
    if (a.wide_activations) bench::widen_groups(A, s.M, s.K);
    HostMx B;
    {
      std::vector<uint16_t> Bd = bench::randn_bf16(s.N, s.K, a.seed, {1, uint64_t(s.M), uint64_t(s.N), uint64_t(s.K)});
      bench::flag_rows(Bd, s.N, s.K, std::min(a.flagged_weight_rows, s.N));
      B = bench::quantize_bf16(Bd, s.N, s.K);
    }
    std::vector<uint16_t> C(size_t(s.M * s.N));
    if (cuda) {
      mxfp4::cuda::BenchResult r = mxfp4::cuda::bench_gemm(A.data(), s.M, s.K, B.view(), std::max(a.replays, 10),
                                                           kRotateBytes, nullptr, !a.no_baselines,
                                                           a.weights_static, a.out_dtype == "f32");
      if (r.C.size() != C.size()) throw mxfp4::Error("bench_gemm returned a C of the wrong size");
      C = std::move(r.C);
      row.ours_us = r.ours_us;
      if (!a.no_baselines) {
        row.cublas_bf16_us = r.cublas_bf16_us;
        row.cublas_fp8_us = r.cublas_fp8_us;
      }
      row.path = mxfp4::describe(r.config, s.M, s.N, s.K);
    } else {
      row.ours_us = time_cpu_gemm(A, s.M, s.K, B, C, a.out_dtype == "f32");
      row.path = "cpu: " + mxfp4::describe(mxfp4::explain_gemm(s.M, s.N, s.K));
    }
    const HostMx Aq = bench::quantize_bf16(A, s.M, s.K);
    const bench::CheckResult chk = bench::check_gemm(Aq, B, C, bench::sample_rows(s.M, s.N, s.K));
    row.correct = chk.correct;
    row.max_err_ratio = chk.max_err_ratio;
    row.rows_checked = chk.rows_checked;
    row.first_failure = chk.first_failure;
  } catch (const std::bad_alloc&) {
    row.error = "out of memory";
  } catch (const std::exception& e) {
    row.error = one_line(e.what());
  }
  return row;
}

int run_bench(const BenchArgs& a) {
  const std::vector<bench::Shape> shapes = bench::read_shapes(a.shapes);
  const int ndev = mxfp4::cuda_device_count();
  std::string backend = a.backend;
  if (backend == "auto") backend = ndev > 0 ? "cuda" : "cpu";
  if (backend == "cuda" && ndev == 0)
    throw CliError(mxfp4::built_with_cuda() ? "--backend cuda: no CUDA device is available"
                                            : "--backend cuda: this mxfp4 was built without the CUDA backend");
  const bool cuda = backend == "cuda";
  if (a.replays < 1) throw CliError("--replays must be at least 1", 2);

  bench::Meta meta;
  meta.backend = backend;
  meta.device = cuda ? mxfp4::cuda_device_info(0).name : cpu_model();
  meta.version = mxfp4::version();
  meta.shapes_file = a.shapes;
  meta.seed = a.seed;
  meta.flagged_weight_rows = a.flagged_weight_rows;
  meta.wide_activations = a.wide_activations;
  meta.weights_static = a.weights_static;
  meta.out_dtype = a.out_dtype;
  meta.replays = cuda ? std::max(a.replays, 10) : 0;
  meta.rotate_bytes = cuda ? kRotateBytes : 0;

  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) throw CliError("--out-dir " + a.out_dir + ": " + ec.message());
  // Flagged weights are a measurement input: their default stem never overwrites the plain
  // bench's (bench/results/h200.md).
  const std::string stem =
      !a.name.empty() ? a.name
                      : file_stem(backend, meta.device) +
                            (a.flagged_weight_rows > 0 ? "-flagged" + std::to_string(a.flagged_weight_rows) : "") +
                            (a.wide_activations ? "-wide" : "") + (a.weights_static ? "-static" : "") +
                            (a.out_dtype == "f32" ? "-f32" : "");
  const std::string json_path = a.out_dir + "/" + stem + ".json", md_path = a.out_dir + "/" + stem + ".md";

  std::printf("mxfp4 %s bench on %s (%s), %zu shapes from %s\n", backend.c_str(), meta.device.c_str(),
              meta.version.c_str(), shapes.size(), a.shapes.c_str());
  std::printf("floor_us, TB/s and TFLOP/s are against the H200's ceilings (%s)\n",
              cuda ? "docs/perf-notes.md" : "on the CPU they only show the shape's size");
  bench::print_table_header();
  std::vector<bench::Row> rows;
  for (const bench::Shape& s : shapes) {
    rows.push_back(run_shape(s, cuda, a));
    bench::print_table_row(rows.back());
    // Rewrite the files after every shape so that an interrupted run keeps its results.
    bench::write_json(json_path, meta, rows);
    bench::write_markdown(md_path, meta, rows);
  }
  const size_t n8 = std::min<size_t>(8, rows.size());
  auto g = [&](std::optional<double> bench::Row::*col) {
    const auto v = bench::geomean_first(rows, n8, col);
    return v ? std::to_string(*v) : std::string("-");
  };
  std::printf("geomean of the first %zu shapes (us): ours %s, cublas_bf16 %s, cublas_fp8 %s\n", n8,
              g(&bench::Row::ours_us).c_str(), g(&bench::Row::cublas_bf16_us).c_str(),
              g(&bench::Row::cublas_fp8_us).c_str());
  std::printf("wrote %s and %s\n", json_path.c_str(), md_path.c_str());
  const auto bad = std::count_if(rows.begin(), rows.end(), [](const bench::Row& r) { return !r.correct || !r.error.empty(); });
  if (bad > 0) throw CliError(std::to_string(bad) + " of " + std::to_string(rows.size()) + " shapes failed (see " + json_path + ")");
  return 0;
}
}  // namespace

Command add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "Benchmark the GEMM on the shapes of a file and check every result");
  sub->add_option("--shapes", a->shapes, "file of 'M N K' lines")->capture_default_str();
  sub->add_option("--backend", a->backend, "auto: cuda when a device is present, else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--out-dir", a->out_dir, "folder for <name>.json and <name>.md")->capture_default_str();
  sub->add_option("--name", a->name,
                  "file name stem (default: cpu, h200, or the GPU name; -flaggedR appended with --flagged-weight-rows R, "
                  "-wide with --wide-activations, -static with --weights-static, -f32 with --out-dtype f32)");
  sub->add_option("--replays", a->replays, "CUDA graph replays per measurement (at least 10 are used)")
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "seed of the random inputs")->capture_default_str();
  sub->add_flag("--no-baselines", a->no_baselines, "skip the cuBLAS baselines (CUDA)");
  sub->add_option("--flagged-weight-rows", a->flagged_weight_rows,
                  "give R weight rows per shape (N if N < R; spread evenly) a 128-K group that path fp8 must "
                  "recompute exactly, to time its fix-up; results go to <stem>-flaggedR (default 0)")
      ->check(CLI::Validator(
          [](const std::string& v) { return !v.empty() && v[0] != '-' ? std::string() : std::string("must be >= 0"); },
          "R >= 0"))
      ->capture_default_str();
  sub->add_flag("--wide-activations", a->wide_activations,
                "scale the first block of every 128-K slice of A by 2^8, so that every group of A is wide on path fp8 "
                "(per-block promotion), to time that case; results go to <stem>-wide");
  sub->add_flag("--weights-static", a->weights_static,
                "GPU: time ours with GemmOptions::weights_static (the weights are read while the previous call "
                "finishes: path gemv loads them before its PDL wait, path splitk's GEMM launches before its "
                "quantizer's wait; the CPU backend ignores it); results go to <stem>-static");
  sub->add_option("--out-dtype", a->out_dtype,
                  "C of ours: bf16, or f32 (the fp32 sums, as tensor-parallel partials use them; checked after "
                  "rounding to bf16; the cuBLAS baselines keep bf16 C); results go to <stem>-f32")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  return {sub, [a] { return run_bench(*a); }};
}

}  // namespace mxfp4cli
