// Names of the GEMM paths ("fused", "splitk", "tiled", "fp8", "gemv") and the rule for which configurations
// the CUDA kernels instantiate, shared by describe(), the tune cache and the CUDA launcher so
// they can never disagree (internal; defined in dispatch.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {

/// "fused", "splitk", "tiled", "fp8" or "gemv" ("?" for a value that is no enumerator).
const char* gemm_path_name(GemmPath p);
/// True when `p` is one of the GemmPath enumerators (a GemmConfig from a cast or a file may hold
/// any int).
bool is_gemm_path(GemmPath p);
/// Inverse of gemm_path_name; nullopt for any other string.
std::optional<GemmPath> parse_gemm_path(std::string_view name);

/// Why the CUDA kernels cannot run `cfg` for M tokens (empty when they can): the small-M
/// kernel (fused/splitk) takes split_k 1..8, block_n 64 or 128, warps = block_n/16 x 1, 2 or 4
/// (4 only with block_n 64), block_m a positive multiple of 8 (unused by the kernel) and
/// M <= 64 * 65535; the tiled kernel block_n = block_m = 128 with 8 warps and
/// M <= 128 * 65535 (both: token CTAs along grid.y); path fp8 its tiles (see the message);
/// path gemv block_n 16, 32 or 64 (slabs of 16 rows per CTA), block_m 8, split_k 1, warps 4, 8
/// or 16, at least one per slab, and M <= 16 (its shared
/// memory, which depends on K, is gemm_config_problem_for_shape's check).
std::string gemm_config_problem(const GemmConfig& cfg, int64_t M);

/// Path gemv (src/cuda/gemm_gemv.cu): token rows it keeps in shared memory for M <= 16
/// tokens (1, 2, 4, 8 or 16), its token tiles of 8 (1 for M <= 8, else 2: the kernel
/// instantiation) and its dynamic shared memory in bytes: A's bf16 mma fragments
/// (rows x round_up(K, 64) x 2) plus the cross-warp reduction (warps x 16 x 8 fp32 per token
/// tile).
/// kGemvSmemLimit is the sm_90 opt-in limit per CTA (227 KiB); gemm_config_problem_for_shape
/// rejects a gemv configuration beyond it.
int gemv_tile_rows(int64_t M);
int gemv_token_tiles(int64_t M);
size_t gemv_smem_bytes(int64_t M, int64_t K, int warps);
constexpr size_t kGemvSmemLimit = 227 * 1024;

/// gemm_config_problem plus what depends on K: path gemv's shared memory (gemv_smem_bytes
/// <= kGemvSmemLimit). Empty when the CUDA kernels can run `cfg` for (M, K).
std::string gemm_config_problem_for_shape(const GemmConfig& cfg, int64_t M, int64_t K);

/// Token rows of the small-M kernel's CTA tile for M tokens: 8 * N8 with N8 = 1, 2, 4 or 8
/// (src/cuda/gemm_fused.cu dispatch_n8).
int small_m_tile_rows(int64_t M);

/// Where path splitk's split-K scratch lies in its workspace (gemm_workspace_bytes with N):
/// A's fragments first, then one int counter per output tile, then the fp32 partial tiles
/// [weight tile][rank][small_m_tile_rows(M)][block_n]; offsets in bytes, 256-byte aligned.
/// `needed` is false (`end` then gemm_workspace_bytes(M, K, cfg), the other fields 0) unless
/// path splitk with split_k = 8, K >= 4096 (512 per rank), M <= 16 (one token tile) and a
/// configuration the kernels run (gemm_config_problem): only there is the workspace reduction
/// faster than clusters. Throws InvalidArgument for M, N or K outside [1, 2^40] or
/// M * K > 2^60.
struct SplitkScratch {
  bool needed = false;
  int64_t tiles = 0;            ///< output tiles: ceil(round_up(N, 16) / block_n)
  int64_t tile_floats = 0;      ///< floats of one rank's partial tile
  size_t counters_offset = 0;
  size_t partials_offset = 0;
  size_t end = 0;               ///< bytes of the whole workspace
};
SplitkScratch splitk_scratch(int64_t M, int64_t N, int64_t K, const GemmConfig& cfg);

}  // namespace mxfp4
