// Configuration names, validation and workspace sizes: what a GemmConfig means independent of
// how the dispatcher chose it (gemm_path_name, gemm_config_problem, describe,
// gemm_workspace_bytes, splitk_scratch; docs/dispatch.md). No CUDA calls: unit-tested on the CPU.
#include <algorithm>
#include <sstream>
#include <string>

#include "core/fp8_layout.hpp"
#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* gemm_path_name(GemmPath p) {
  switch (p) {
    case GemmPath::fused: return "fused";
    case GemmPath::splitk: return "splitk";
    case GemmPath::tiled: return "tiled";
    case GemmPath::fp8: return "fp8";
    case GemmPath::gemv: return "gemv";
  }
  return "?";
}

bool is_gemm_path(GemmPath p) { return std::string_view(gemm_path_name(p)) != "?"; }

std::optional<GemmPath> parse_gemm_path(std::string_view name) {
  for (GemmPath p : {GemmPath::fused, GemmPath::splitk, GemmPath::tiled, GemmPath::fp8, GemmPath::gemv})
    if (name == gemm_path_name(p)) return p;
  return std::nullopt;
}

std::string gemm_config_problem(const GemmConfig& cfg, int64_t M) {
  if (cfg.path == GemmPath::tiled) {
    if (cfg.block_n != 128 || cfg.block_m != 128 || cfg.warps != 8 || cfg.split_k != 1)
      return "path tiled: block_n = block_m = 128, warps = 8, split_k = 1";
    // 128-token CTAs along grid.y, which holds at most 65535 (src/cuda/gemm_tiled.cu).
    if (M > int64_t(128) * 65535) return "path tiled: M <= 8388480";
    return {};
  }
  if (cfg.path == GemmPath::fp8) {
    // warps = 4 x (consumer warpgroups + 1): one consumer warpgroup per 64 tokens (each all of
    // block_n), or, for block_n = 128, one per 64 x 64 sub-tile (src/cuda/gemm_fp8_kernel.cuh).
    const bool pair = cfg.block_m == 256 && cfg.block_n == 128 && cfg.warps == 12;
    // 192 x 128 (three 64 x 128 consumer warpgroups, unsplit), for any M: a last M tile that
    // reaches past the A image (rows padded to 256) repeats the image's last atom there.
    const bool tall = cfg.block_m == 192 && cfg.block_n == 128 && cfg.warps == 16 && cfg.split_k == 1;
    if (tall) return {};
    const bool tile_ok = (cfg.block_n == 64 || cfg.block_n == 128) && (cfg.block_m == 64 || cfg.block_m == 128);
    // int64: a forced or cached configuration may hold any int (fuzz_api_args found the overflow).
    const int64_t wide = 4 * (int64_t(cfg.block_m) / 64 + 1),
                  split = 4 * (int64_t(cfg.block_m) / 64 * (int64_t(cfg.block_n) / 64) + 1);
    const bool single = tile_ok && (cfg.warps == wide || cfg.warps == split);
    // Split-K: a cluster of split_k CTAs per tile (at most 8, the portable cluster size).
    const bool split_ok = cfg.split_k == 1 || (single && cfg.split_k >= 2 && cfg.split_k <= 8);
    if (!split_ok || !(pair || single))
      return "path fp8: block_m x block_n 64 or 128 x 64 or 128 with warps = 4 * (block_m / 64 + 1) or "
             "4 * (block_m / 64 * block_n / 64 + 1) and split_k 1 to 8, or 256 x 128 (a 2-CTA cluster) with "
             "warps = 12 and split_k 1, or 192 x 128 with warps = 16 and split_k 1";
    return {};  // the launcher checks the grid (one CTA per tile along grid.x, < 2^31)
  }
  if (cfg.path == GemmPath::gemv) {
    // block_n / 16 slabs per CTA, each with warps / (block_n / 16) warps (src/cuda/gemm_gemv.cu).
    const bool bn_ok = cfg.block_n == 16 || cfg.block_n == 32 || cfg.block_n == 64;
    const bool warps_ok = (cfg.warps == 4 || cfg.warps == 8 || cfg.warps == 16) && cfg.warps >= cfg.block_n / 16;
    if (!bn_ok || !warps_ok || cfg.block_m != 8 || cfg.split_k != 1)
      return "path gemv: block_n = 16, 32 or 64, block_m = 8, split_k = 1, warps 4, 8 or 16";
    if (M > 16) return "path gemv: M <= 16";
    return {};
  }
  if (cfg.path != GemmPath::fused && cfg.path != GemmPath::splitk) return "unknown path";
  const int slabs = cfg.block_n / 16, per_slab = slabs > 0 ? cfg.warps / slabs : 0;
  const bool shape_ok = (cfg.block_n == 64 || cfg.block_n == 128) && cfg.warps == slabs * per_slab &&
                        (per_slab == 1 || per_slab == 2 || (per_slab == 4 && slabs == 4));
  if (cfg.split_k < 1 || cfg.split_k > 8 || !shape_ok)
    return "paths fused/splitk: split_k 1..8, block_n 64 or 128, warps = block_n/16 times 1, 2 or 4 (4 only with "
           "block_n 64)";
  // The kernel picks its token tiles from M and ignores block_m, but gemm() validates every
  // field (require_config): a value it rejects must not pass here (e.g. from the tune cache).
  if (cfg.block_m < 8 || cfg.block_m % 8 != 0) return "paths fused/splitk: block_m a positive multiple of 8";
  if (M > int64_t(64) * 65535) return "paths fused/splitk: M <= 4194240";
  return {};
}

int gemv_tile_rows(int64_t M) { return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : M <= 8 ? 8 : 16; }

int gemv_token_tiles(int64_t M) { return M <= 8 ? 1 : 2; }

size_t gemv_smem_bytes(int64_t M, int64_t K, int warps) {
  const size_t rows = size_t(gemv_tile_rows(M));
  return rows * size_t(ceil_div(K, 64) * 64) * 2 + size_t(warps) * 16 * 8 * size_t(gemv_token_tiles(M)) * 4;
}

std::string gemm_config_problem_for_shape(const GemmConfig& cfg, int64_t M, int64_t K) {
  std::string problem = gemm_config_problem(cfg, M);
  if (!problem.empty() || cfg.path != GemmPath::gemv) return problem;
  const size_t smem = gemv_smem_bytes(M, K, cfg.warps);
  if (smem <= kGemvSmemLimit) return {};
  return "path gemv: M = " + std::to_string(M) + ", K = " + std::to_string(K) + " needs " + std::to_string(smem) +
         " bytes of shared memory, more than " + std::to_string(kGemvSmemLimit);
}

std::string describe(const GemmConfig& cfg) {
  std::ostringstream os;
  os << "path=" << gemm_path_name(cfg.path) << " block_n=" << cfg.block_n << " block_m=" << cfg.block_m
     << " split_k=" << cfg.split_k << " warps=" << cfg.warps;
  return os.str();
}

std::string describe(const GemmConfig& cfg, int64_t M, int64_t N, int64_t K) {
  const bool via_workspace = splitk_scratch(M, N, K, cfg).needed;  // also validates M, N, K
  std::string s = describe(cfg);
  if (cfg.split_k > 1 && cfg.path != GemmPath::tiled) s += via_workspace ? " reduce=workspace" : " reduce=clusters";
  return s;
}

/// splitk and tiled paths: activation fragments, round_up(M, 8) x round_up(K, 64) bf16 values;
/// fp8: A's 8-bit image (core/fp8_layout.hpp, about 1.065 * M * K bytes), or the fragments when
/// larger: gemm() runs config_without_fp8 (splitk or tiled) when the weights have no FP8 image, and
/// the workspace sized for the chosen config must serve that call too.
size_t gemm_workspace_bytes(int64_t M, int64_t K, const GemmConfig& cfg) {
  constexpr int64_t kMax = int64_t(1) << 40;
  if (M < 1 || K < 1 || M > kMax || K > kMax || M > (int64_t(1) << 60) / K) {
    throw InvalidArgument("mxfp4::gemm_workspace_bytes: M = " + std::to_string(M) + ", K = " + std::to_string(K) +
                          " out of range");
  }
  if (!is_gemm_path(cfg.path))
    throw InvalidArgument("mxfp4::gemm_workspace_bytes: unknown GemmPath value " + std::to_string(int(cfg.path)));
  if (cfg.path == GemmPath::fused || cfg.path == GemmPath::gemv) return 0;
  const int64_t fragments = ceil_div(M, 8) * 8 * ceil_div(K, 64) * 64 * 2;
  if (cfg.path == GemmPath::fp8) return size_t(std::max(fp8::ImageGeometry::of(M, K).total_bytes(), fragments));
  return size_t(fragments);
}

int small_m_tile_rows(int64_t M) { return M <= 8 ? 8 : M <= 16 ? 16 : M <= 32 ? 32 : 64; }

SplitkScratch splitk_scratch(int64_t M, int64_t N, int64_t K, const GemmConfig& cfg) {
  constexpr int64_t kMax = int64_t(1) << 40;
  if (N < 1 || N > kMax)
    throw InvalidArgument("mxfp4::gemm_workspace_bytes: N = " + std::to_string(N) + " out of range");
  SplitkScratch s;
  s.end = gemm_workspace_bytes(M, K, cfg);
  // Only path splitk with split_k = 8 over at least 512 of K per rank, on one token tile of at
  // most 16 rows (M <= 16: the scratch is at most 16 x N x 8 floats). There a cluster of 8
  // CTAs costs more than the workspace's extra round trips: the cluster scheduler places
  // clusters of 8 on 124 of the H200's 132 SMs, so some SMs run three CTAs of long K ranges.
  // Everywhere else the cluster reduction is faster (session 9, docs/perf-notes.md: 1.2-2 us
  // slower through the workspace at split 2 and 4 or short K; for M > 16 the dispatcher picks
  // split 8 only with few tiles of 64 or more rows, where session 54 measured the clusters). A
  // configuration the kernels cannot run gets none (gemm() rejects it).
  if (cfg.path != GemmPath::splitk || cfg.split_k != 8 || K < 512 * int64_t(cfg.split_k) || M > 16 ||
      !gemm_config_problem(cfg, M).empty())
    return s;
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  s.needed = true;
  s.tiles = ceil_div(ceil_div(N, 16) * 16, cfg.block_n);
  s.tile_floats = int64_t(small_m_tile_rows(M)) * cfg.block_n;
  s.counters_offset = align(s.end);
  s.partials_offset = s.counters_offset + align(size_t(s.tiles) * 4);
  s.end = s.partials_offset + size_t(s.tiles) * size_t(cfg.split_k) * size_t(s.tile_floats) * 4;
  return s;
}

size_t gemm_workspace_bytes(int64_t M, int64_t N, int64_t K, const GemmConfig& cfg) {
  return splitk_scratch(M, N, K, cfg).end;
}

}  // namespace mxfp4
