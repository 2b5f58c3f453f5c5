// The GEMM dispatcher: a pure function of (M, N, K, device) -> kernel path and tile
// configuration (docs/dispatch.md). No CUDA calls here, so it is unit-tested on the CPU.
#include <algorithm>
#include <sstream>

#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

/// Small M (<= 64): the cluster split-K kernel (src/cuda/gemm_fused.cu). The grid should
/// hold about two CTAs per SM (the weight stream needs many bytes in flight), and each CTA
/// reads A for its K range from L2, so larger M prefers taller CTAs (more weight rows share
/// one copy of A): block_n starts at 64 (M <= 16), 128 (M <= 32) or 256 rows (M <= 64) and is
/// halved while even split_k = 8 could not fill the GPU; split_k then doubles up to 8 until
/// the grid reaches two CTAs per SM, keeping at least one 64-wide K chunk per CTA. M <= 8
/// quantizes A inside the GEMM (fused, one launch); 8 < M <= 64 quantizes it once first
/// (splitk). Larger M: the tiled kernel (128 x 128 tiles).
GemmConfig choose_gemm_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  constexpr int64_t kMax = int64_t(1) << 40;  // far beyond any matrix that fits a GPU
  if (M < 1 || N < 1 || K < 1 || M > kMax || N > kMax || K > kMax) {
    throw InvalidArgument("mxfp4::choose_gemm_config: M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                          ", K = " + std::to_string(K) + " must each be in [1, 2^40]");
  }
  GemmConfig cfg;
  if (M <= 64) {
    const int64_t chunks = ceil_div(K, 64);
    const int64_t target = 2 * int64_t(std::max(dev.sm_count, 1));
    const int64_t max_split = std::min<int64_t>(8, chunks);
    int block_n = M <= 16 ? 64 : M <= 32 ? 128 : 256;
    while (block_n > 64 && ceil_div(N, block_n) * max_split < target) block_n /= 2;
    cfg.block_n = block_n;
    cfg.warps = block_n == 64 ? 4 : 8;
    cfg.block_m = int(std::min<int64_t>(64, ceil_div(M, 8) * 8));
    const int64_t tiles = ceil_div(N, block_n);
    int split = 1;
    while (split < max_split && tiles * split < target) split *= 2;
    cfg.split_k = std::min<int>(split, int(max_split));
    cfg.path = M <= 8 ? GemmPath::fused : GemmPath::splitk;
    return cfg;
  }
  cfg.path = GemmPath::tiled;
  cfg.block_n = 128;
  cfg.block_m = 128;
  cfg.split_k = 1;
  cfg.warps = 8;
  return cfg;
}

const char* gemm_path_name(GemmPath p) {
  switch (p) {
    case GemmPath::fused: return "fused";
    case GemmPath::splitk: return "splitk";
    case GemmPath::tiled: return "tiled";
  }
  return "?";
}

std::optional<GemmPath> parse_gemm_path(std::string_view name) {
  for (GemmPath p : {GemmPath::fused, GemmPath::splitk, GemmPath::tiled})
    if (name == gemm_path_name(p)) return p;
  return std::nullopt;
}

std::string describe(const GemmConfig& cfg) {
  std::ostringstream os;
  os << "path=" << gemm_path_name(cfg.path) << " block_n=" << cfg.block_n << " block_m=" << cfg.block_m
     << " split_k=" << cfg.split_k << " warps=" << cfg.warps;
  return os.str();
}

/// splitk and tiled paths: activation fragments, round_up(M, 8) x round_up(K, 64) bf16 values.
size_t gemm_workspace_bytes(int64_t M, int64_t K, const GemmConfig& cfg) {
  if (cfg.path == GemmPath::fused) return 0;
  constexpr int64_t kMax = int64_t(1) << 40;
  if (M < 1 || K < 1 || M > kMax || K > kMax || M > (int64_t(1) << 60) / K) {
    throw InvalidArgument("mxfp4::gemm_workspace_bytes: M = " + std::to_string(M) + ", K = " + std::to_string(K) +
                          " out of range");
  }
  return size_t(ceil_div(M, 8) * 8 * ceil_div(K, 64) * 64 * 2);
}

}  // namespace mxfp4
