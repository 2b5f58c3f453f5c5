// Internal to the dispatcher (src/dispatch): the path fp8 rules (fp8_rules.cpp) that the
// entry points and the small-M rules (dispatch.cpp) call. Pure functions of the shape and the
// SM count, no CUDA; docs/dispatch.md describes the rules.
#pragma once

#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::rules {

/// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A path fp8 split-K grid (CTAs, clusters of `split` CTAs of ~200 KB shared memory each) that
/// the rules tuned before session 55 treat as one wave: pairs up to the SM count less 1/32 of it,
/// larger clusters up to 3/4 of it (fp8_config's comment has the measurements). Rules outside
/// fp8_split_config also use it as a plain bound on the grid (3/4 of the SMs).
inline int64_t fp8_split_grid_limit(int split, int64_t sms) {
  return split == 2 ? sms - sms / 32 : sms * 3 / 4;
}

/// The most CTAs of path fp8 split-K clusters of `split` (~210 KB CTAs, one per SM) resident at
/// once, from tools/dev/probes/cluster_fit.cu on a 132-SM GH100 (session 55, H100,
/// bench/results/logs/cluster-fit-call1-session55-h100.txt; session 26's H200 run held the same
/// for clusters of 3, 5 and 6): pairs 128 CTAs (session 23), clusters of 3: 117, 4: 120, 5: 110,
/// 6: 102. A cluster takes that many free SMs of one GPC, so the bound is below the SM count;
/// other SM counts get the same fraction (not measured). Splits past 6 get 3/4 of the SMs.
inline int64_t fp8_cluster_wave(int split, int64_t sms) {
  constexpr int64_t kResident132[] = {132, 132, 128, 117, 120, 110, 102};  // by split, of 132 SMs
  return split >= 0 && split <= 6 ? sms * kResident132[split] / 132 : sms * 3 / 4;
}

/// 64 < M <= 128 from this K on: fp8_config (128-row tiles, or for few tiles unsplit 64-row
/// tiles up to K = 2048-5120 and split-K beyond); below it fp8_config_short_k.
constexpr int64_t kFp8MinK = 2048;

/// 32 < M <= 64: path fp8 where the weights have at least this many elements (N x K).
constexpr int64_t kFp8SmallMMinWeights = int64_t(10) << 20;

/// Path fp8 for M > 64 where the small-M kernel does not take the shape (fp8_rules.cpp has the
/// rules and their measurements); `dev.sm_count` < 1 counts as 1.
GemmConfig fp8_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev);

/// Path fp8 for 64 < M <= 128 with K < kFp8MinK where the small-M kernel does not take the shape.
GemmConfig fp8_config_short_k(int64_t M, int64_t N, const DeviceInfo& dev);

/// Path fp8 for 32 < M <= 64 with N x K >= kFp8SmallMMinWeights, on 64-row tiles.
GemmConfig fp8_config_small_m(int64_t N, int64_t K, const DeviceInfo& dev);

}  // namespace mxfp4::rules
