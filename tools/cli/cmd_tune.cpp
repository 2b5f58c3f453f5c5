// mxfp4 tune: times candidate GEMM configurations of each workload shape on the GPU (the
// benchmark's method: CUDA graph, weights rotated past L2, median) and stores the fastest
// correct one in the tune cache (src/dispatch/tune_cache.hpp), keyed by GPU name and shape.
// --weights-static times every candidate with GemmOptions::weights_static and stores nothing
// (the cache and the dispatcher have no input for the option; session 38 found no shape whose
// best path changes with it).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "bench_data.hpp"
#include "common.hpp"
#include "cuda/bench_gpu.hpp"
#include "dispatch/path_name.hpp"
#include "dispatch/tune_cache.hpp"

#ifndef MXFP4_SOURCE_DIR
#define MXFP4_SOURCE_DIR "."
#endif

namespace mxfp4cli {
using namespace bench;
namespace {

/// Candidates: every warps / block_n / path combination of the small-M kernel with split_k 1,
/// 2, 4 or 8 (docs/dispatch.md; the dispatcher may also pick 3, 5, 6 or 7 when K has fewer
/// than 8 chunks) for M <= 128 (and up to M = 512 where its 64 x 64 tiles number at most 64),
/// plus for M > 64 the tiled kernel (no variants) and path fp8:
/// block_m and block_n 64 or 128, block_n 128 also with one consumer warpgroup per 64 x 64
/// sub-tile, the 256 x 128 cluster pair, and split-K clusters of 2 to 6 and 8 on the 128 x 64
/// and 128 x 128 tiles (2, 4 and 8 with four 64 x 64 warpgroups); for M <= 64 path fp8's 64 x 64 and 64 x 128 (two
/// 64 x 64 warpgroups) tiles with split_k 1, 2, 4 and 8 (the benchmark builds the FP8 image);
/// for M <= 16 path gemv with 1, 2 or 4 slabs per CTA (block_n 16, 32, 64) and 4, 8 and 16 warps
/// where its shared memory fits (K).
std::vector<mxfp4::GemmConfig> candidates(int64_t M, int64_t N, int64_t K) {
  std::vector<mxfp4::GemmConfig> v;
  for (int block_n : {16, 32, 64})
    for (int warps : {4, 8, 16}) {
      const mxfp4::GemmConfig c{mxfp4::GemmPath::gemv, block_n, 8, 1, warps};
      if (mxfp4::gemm_config_problem_for_shape(c, M, K).empty()) v.push_back(c);
    }
  if (M > 64) {
    mxfp4::GemmConfig c;
    c.path = mxfp4::GemmPath::tiled;
    c.block_n = c.block_m = 128;
    c.warps = 8;
    v.push_back(c);
    for (int bm : {64, 128})
      for (int bn : {64, 128}) {
        v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, bn, bm, 1, 4 * (bm / 64 + 1)});
        if (bn == 128) v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, bn, bm, 1, 4 * (bm / 64 * 2 + 1)});
      }
    v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 128, 192, 1, 16});  // three 64 x 128 warpgroups
    v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 128, 256, 1, 12});  // 2-CTA cluster sharing B
    for (int split : {2, 3, 4, 5, 6, 8}) {
      v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 64, 128, split, 12});
      v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 128, 128, split, 12});
      if (split % 2 == 0 && split != 6) v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 128, 128, split, 20});
    }
  } else {
    // M <= 64: path fp8 on 64-token tiles (one consumer warpgroup per 64 x 64), unsplit and
    // split-K clusters of 2, 4 and 8, to see whether the FP8 image (twice the weight bytes,
    // no decode) beats the small-M kernel anywhere (docs/perf-notes.md, session 13 plan).
    for (int split : {1, 2, 4, 8}) {
      v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 64, 64, split, 8});
      v.push_back(mxfp4::GemmConfig{mxfp4::GemmPath::fp8, 128, 64, split, 12});
    }
  }
  // The small-M kernel re-reads the weights for every 64 tokens; past M = 128 path fp8 won
  // every shape of the session 3 tune (bench/results/logs/fp8-v1-tune-large-m-h200.log), and
  // again in session 34 at M = 256 (tune-m256-splitk-session34-h200.log: 256x2880x512 splitk
  // 7.08 us against fp8 6.49, 256x3072x1536 14.11 against 10.16, 256x7168x2048 27.97 against
  // 13.91). Up to M = 512 it stays a candidate where its 64 x 64 tiles are few (at most 64, e.g.
  // N <= 1024 at M = 256): at M <= 128 it beat path fp8 there by 5-57% (session 54).
  if (M > 512 || (M > 128 && (M + 63) / 64 * ((N + 63) / 64) > 64)) return v;
  const std::pair<int, int> shapes[] = {{4, 1}, {4, 2}, {4, 4}, {8, 1}, {8, 2}};  // slabs, warps per slab
  for (mxfp4::GemmPath path : {mxfp4::GemmPath::fused, mxfp4::GemmPath::splitk})
    for (int split : {1, 2, 4, 8})
      for (auto [slabs, per_slab] : shapes) {
        mxfp4::GemmConfig c;
        c.path = path;
        c.split_k = split;
        c.block_n = 16 * slabs;
        c.warps = slabs * per_slab;
        c.block_m = int(std::min<int64_t>(64, (M + 7) / 8 * 8));
        v.push_back(c);
      }
  return v;
}

}  // namespace

Command add_tune(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("tune", "Time GEMM configurations on the GPU and store the winners");
  auto shapes = std::make_shared<std::string>(std::string(MXFP4_SOURCE_DIR) + "/bench/shapes.txt");
  auto replays = std::make_shared<int>(10);
  auto verbose = std::make_shared<bool>(false);
  auto paths = std::make_shared<std::vector<std::string>>();
  auto weights_static = std::make_shared<bool>(false);
  sub->add_option("--shapes", *shapes, "workload file of 'M N K' lines");
  sub->add_option("--paths", *paths, "only these paths' candidates, comma-separated (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"fused", "splitk", "tiled", "fp8", "gemv"}));
  sub->add_option("--replays", *replays, "graph replays per configuration (median)")->check(CLI::Range(3, 1000));
  sub->add_flag("--verbose", *verbose, "print every candidate's time, not only the winner");
  sub->add_flag("--weights-static", *weights_static,
                "time every candidate with GemmOptions::weights_static; nothing is stored (the tune cache "
                "and the dispatcher have no input for the option)");
  return {sub, [shapes, replays, verbose, paths, weights_static]() -> int {
            if (!mxfp4::built_with_cuda() || mxfp4::cuda_device_count() == 0)
              throw CliError("tune needs the CUDA backend and a GPU", 2);
            const mxfp4::DeviceInfo dev = mxfp4::cuda_device_info(0);
            const std::string gpu = dev.name;
            for (const Shape& s : read_shapes(*shapes)) {
              const auto a = randn_bf16(s.M, s.K, 0, {1, uint64_t(s.M), uint64_t(s.K)});
              const auto bd = randn_bf16(s.N, s.K, 0, {2, uint64_t(s.N), uint64_t(s.K)});
              const HostMx aq = quantize_bf16(a, s.M, s.K), b = quantize_bf16(bd, s.N, s.K);
              const Reference ref = reference_rows(aq, b, sample_rows(s.M, s.N, s.K));  // once per shape
              double best = std::numeric_limits<double>::infinity();
              mxfp4::GemmConfig best_cfg;
              auto wanted = [&](const mxfp4::GemmConfig& c) {
                return paths->empty() ||
                       std::find(paths->begin(), paths->end(), mxfp4::gemm_path_name(c.path)) != paths->end();
              };
              std::vector<mxfp4::GemmConfig> run;
              for (const mxfp4::GemmConfig& c : candidates(s.M, s.N, s.K))
                if (wanted(c)) run.push_back(c);
              // The dispatcher's own choice is always timed (it may lie outside the candidate
              // grid, e.g. split_k 3, or outside --paths), so that the line after the winner
              // shows how far it is; it competes for the cache only when its path is wanted.
              const mxfp4::GemmConfig chosen = mxfp4::choose_gemm_config(s.M, s.N, s.K, dev);
              const std::string chosen_name = mxfp4::describe(chosen);
              double chosen_us = -1;
              if (!run.empty() &&
                  std::none_of(run.begin(), run.end(), [&](const mxfp4::GemmConfig& c) { return mxfp4::describe(c) == chosen_name; }))
                run.push_back(chosen);
              if (run.empty()) {  // e.g. --paths gemv at M > 16: nothing to time, nothing stored
                std::printf("%6lld %6lld %6lld  skipped: no candidate of the given paths at this M\n", (long long)s.M,
                            (long long)s.N, (long long)s.K);
                continue;
              }
              for (const mxfp4::GemmConfig& c : run) {
                const auto r = mxfp4::cuda::bench_gemm(a.data(), s.M, s.K, b.view(), *replays, int64_t(256) << 20, &c,
                                                       false, *weights_static);
                const bool correct = check_gemm(ref, r.C).correct;
                if (*verbose)
                  std::printf("  %6lld %6lld %6lld %9.2f us  %s%s\n", (long long)s.M, (long long)s.N, (long long)s.K,
                              r.ours_us, mxfp4::describe(c).c_str(), correct ? "" : "  WRONG");
                if (!correct) continue;  // never store a wrong configuration
                if (mxfp4::describe(c) == chosen_name) chosen_us = r.ours_us;
                if (r.ours_us < best && wanted(c)) best = r.ours_us, best_cfg = c;
              }
              if (best == std::numeric_limits<double>::infinity())
                throw CliError("no correct configuration for " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                               std::to_string(s.K));
              if (!*weights_static) mxfp4::tune_cache::store(gpu, s.M, s.N, s.K, best_cfg);
              std::printf("%6lld %6lld %6lld %9.2f us  %s\n", (long long)s.M, (long long)s.N, (long long)s.K, best,
                          mxfp4::describe(best_cfg).c_str());
              if (chosen_us > 0)
                std::printf("        dispatcher's choice %9.2f us (%.2fx the winner)  %s\n", chosen_us, chosen_us / best,
                            chosen_name.c_str());
            }
            if (*weights_static)
              std::printf("--weights-static: nothing stored in the tune cache\n");
            else
              std::printf("tune cache: %s\n", mxfp4::tune_cache::path().c_str());
            return 0;
          }};
}

}  // namespace mxfp4cli
