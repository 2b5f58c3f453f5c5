// Names of the GEMM paths ("fused", "splitk", "tiled"), shared by describe() and the tune
// cache so the two can never disagree (internal; defined in dispatch.cpp).
#pragma once

#include <optional>
#include <string_view>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {

/// "fused", "splitk" or "tiled".
const char* gemm_path_name(GemmPath p);
/// Inverse of gemm_path_name; nullopt for any other string.
std::optional<GemmPath> parse_gemm_path(std::string_view name);

}  // namespace mxfp4
