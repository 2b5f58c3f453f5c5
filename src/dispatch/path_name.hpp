// Names of the GEMM paths ("fused", "splitk", "tiled") and the rule for which configurations
// the CUDA kernels instantiate, shared by describe(), the tune cache and the CUDA launcher so
// they can never disagree (internal; defined in dispatch.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {

/// "fused", "splitk" or "tiled".
const char* gemm_path_name(GemmPath p);
/// Inverse of gemm_path_name; nullopt for any other string.
std::optional<GemmPath> parse_gemm_path(std::string_view name);

/// Why the CUDA kernels cannot run `cfg` for M tokens (empty when they can): the small-M
/// kernel (fused/splitk) takes split_k 1..8, block_n 64 or 128, warps = block_n/16 x 1, 2 or 4
/// (4 only with block_n 64), block_m a positive multiple of 8 (unused by the kernel) and
/// M <= 64 * 65535; the tiled kernel block_n = block_m = 128 with 8 warps and
/// M <= 128 * 65535 (both: token CTAs along grid.y).
std::string gemm_config_problem(const GemmConfig& cfg, int64_t M);

/// The configuration gemm() runs where path fp8 was chosen (dispatcher or tune cache) but the
/// weights have no FP8 image: the small-M kernel's rule for M <= 128, else the tiled kernel
/// (128 x 128, 8 warps). Its workspace never exceeds gemm_workspace_bytes of the fp8 choice.
/// Throws InvalidArgument for sizes outside [1, 2^40].
GemmConfig config_without_fp8(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev);

}  // namespace mxfp4
