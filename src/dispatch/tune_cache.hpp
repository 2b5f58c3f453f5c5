// Tune cache: winners of `mxfp4 tune`, a JSON file keyed by GPU name and shape:
//   { "NVIDIA H200": { "64x7168x2048": {"path": "splitk", "block_n": 64, "block_m": 64,
//                                        "split_k": 4, "warps": 4}, ... }, ... }
// Location: $MXFP4_TUNE_CACHE, else $HOME/.cache/mxfp4/tune.json. Read lazily, once per
// path (pointing MXFP4_TUNE_CACHE at another file reads that one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::tune_cache {

/// Path of the cache file in use.
std::string path();
/// Entry for (gpu, M, N, K), if the cache has one. A missing or unreadable file is no entry.
std::optional<GemmConfig> lookup(const std::string& gpu, int64_t M, int64_t N, int64_t K);
/// Adds or replaces the entry and rewrites the file (throws Error if it cannot be written).
void store(const std::string& gpu, int64_t M, int64_t N, int64_t K, const GemmConfig& cfg);

}  // namespace mxfp4::tune_cache
