// Configuration validation, names and the tune cache (src/dispatch/config.cpp,
// src/dispatch/tune_cache.cpp): pure functions, tested on the CPU.
#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <limits>
#include <tuple>
#include <vector>

#include "dispatch/path_name.hpp"
#include "dispatch/tune_cache.hpp"
#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {

using test::h200;

// gemm() validates every field of a configuration (require_config: block_m a positive
// multiple of 8), so gemm_config_problem, which the tune cache trusts, must reject what it
// rejects.
TEST(Dispatch, ConfigProblemRejectsWhatGemmRejects) {
  GemmConfig small;
  small.path = GemmPath::splitk;
  for (int bm : {0, -8, 12}) {
    GemmConfig c = small;
    c.block_m = bm;
    EXPECT_NE(gemm_config_problem(c, 16), "") << bm;
  }
}

// Both kernels put token CTAs along grid.y (at most 65535): 64 tokens each on the small-M
// kernel, 128 on the tiled one. A larger M has no kernel, and gemm() must say so with
// InvalidArgument before any launch (cuda::gemm checks gemm_config_problem first), not with
// a CUDA launch error after the quantizer has run.
TEST(Dispatch, ConfigProblemBoundsMOfEveryPath) {
  GemmConfig tiled;
  tiled.path = GemmPath::tiled;
  tiled.block_n = tiled.block_m = 128;
  tiled.warps = 8;
  EXPECT_EQ(gemm_config_problem(tiled, int64_t(128) * 65535), "");
  EXPECT_NE(gemm_config_problem(tiled, int64_t(128) * 65535 + 1), "");
  GemmConfig small;
  small.path = GemmPath::splitk;
  EXPECT_EQ(gemm_config_problem(small, int64_t(64) * 65535), "");
  EXPECT_NE(gemm_config_problem(small, int64_t(64) * 65535 + 1), "");
  // The dispatcher's choice past that limit is path fp8, whose grid runs along x (gemm()
  // falls back to tiled, and then throws, only for weights without an FP8 image).
  const GemmConfig c = choose_gemm_config(int64_t(128) * 65535 + 1, 4096, 64, h200());
  EXPECT_EQ(c.path, GemmPath::fp8);
  EXPECT_EQ(gemm_config_problem(c, int64_t(128) * 65535 + 1), "");
  GemmConfig fp8 = c;
  for (const auto& [bm, bn, warps] :
       {std::tuple{128, 128, 12}, {128, 128, 20}, {64, 64, 8}, {64, 128, 8}, {64, 128, 12}, {128, 64, 12},
        {256, 128, 12}}) {
    fp8.block_m = bm, fp8.block_n = bn, fp8.warps = warps;
    EXPECT_EQ(gemm_config_problem(fp8, 1000), "") << describe(fp8);
  }
  for (const auto& [bm, bn, warps] :
       {std::tuple{128, 128, 8}, {128, 128, 16}, {128, 64, 20}, {64, 64, 12}, {256, 128, 20}, {256, 64, 12},
        {64, 256, 8}, {128, 96, 12}}) {
    fp8.block_m = bm, fp8.block_n = bn, fp8.warps = warps;
    EXPECT_NE(gemm_config_problem(fp8, 1000), "") << describe(fp8);
  }
  // Split-K clusters of 2 to 8 CTAs on the single-CTA tiles; never 9, never on the 256 x 128
  // pair or the 192 x 128 tile.
  for (const auto& [bm, bn, warps] : {std::tuple{128, 128, 12}, {128, 128, 20}, {128, 64, 12}, {64, 64, 8}}) {
    fp8.block_m = bm, fp8.block_n = bn, fp8.warps = warps;
    for (int split = 2; split <= 8; ++split) {
      fp8.split_k = split;
      EXPECT_EQ(gemm_config_problem(fp8, 1000), "") << describe(fp8);
    }
    fp8.split_k = 9;
    EXPECT_NE(gemm_config_problem(fp8, 1000), "") << describe(fp8);
  }
  for (const auto& [bm, bn, warps] : {std::tuple{256, 128, 12}, {192, 128, 16}})
    for (int split : {2, 3, 8}) {
      fp8.block_m = bm, fp8.block_n = bn, fp8.warps = warps, fp8.split_k = split;
      EXPECT_NE(gemm_config_problem(fp8, 1000), "") << describe(fp8);
    }
}

// Path gemv: block_n 16, 32 or 64 (1, 2 or 4 slabs per CTA), block_m 8, split_k 1, warps 4, 8
// or 16 (at least one per slab), M <= 8, and A's bf16 copy
// in shared memory (M rounded up to 1, 2, 4 or 8 rows x round_up(K, 64) x 2 bytes, plus
// 512 bytes per warp) within the 227 KiB opt-in limit; the tune cache and gemm() reject
// anything else before a launch.
TEST(Dispatch, GemvConfigProblem) {
  const GemmConfig ok{GemmPath::gemv, 16, 8, 1, 16};
  for (int64_t M = 1; M <= 16; ++M) EXPECT_EQ(gemm_config_problem(ok, M), "") << M;
  EXPECT_NE(gemm_config_problem(ok, 17), "");
  for (const GemmConfig& also : {GemmConfig{GemmPath::gemv, 32, 8, 1, 4}, GemmConfig{GemmPath::gemv, 64, 8, 1, 4},
                                 GemmConfig{GemmPath::gemv, 64, 8, 1, 16}})
    EXPECT_EQ(gemm_config_problem(also, 8), "") << describe(also);
  for (const GemmConfig& bad : {GemmConfig{GemmPath::gemv, 48, 8, 1, 8}, GemmConfig{GemmPath::gemv, 128, 8, 1, 16},
                                GemmConfig{GemmPath::gemv, 8, 8, 1, 8}, GemmConfig{GemmPath::gemv, 16, 16, 1, 8},
                                GemmConfig{GemmPath::gemv, 16, 8, 2, 8}, GemmConfig{GemmPath::gemv, 16, 8, 1, 12},
                                GemmConfig{GemmPath::gemv, 16, 8, 1, 32}})
    EXPECT_NE(gemm_config_problem(bad, 1), "") << describe(bad);
  EXPECT_EQ(gemv_tile_rows(1), 1);
  EXPECT_EQ(gemv_tile_rows(3), 4);
  EXPECT_EQ(gemv_tile_rows(5), 8);
  EXPECT_EQ(gemv_tile_rows(9), 16);
  EXPECT_EQ(gemv_smem_bytes(9, 64, 4), size_t(16 * 64 * 2 + 4 * 1024));  // two token tiles: 1 KiB per warp
  EXPECT_EQ(gemv_smem_bytes(3, 96, 4), size_t(4 * 128 * 2 + 4 * 512));
  EXPECT_EQ(gemm_config_problem_for_shape(ok, 8, 14016), "");  // 219 KiB + 8 KiB: the limit
  const std::string big = gemm_config_problem_for_shape(ok, 8, 14080);
  EXPECT_NE(big.find("M = 8, K = 14080 needs 233472 bytes of shared memory"), std::string::npos) << big;
  EXPECT_EQ(gemm_config_problem_for_shape(ok, 1, 65536), "");
  EXPECT_NE(gemm_config_problem_for_shape(ok, 1, 131072), "");
  EXPECT_EQ(gemm_workspace_bytes(4, 7168, ok), 0u);
  EXPECT_EQ(gemm_path_name(GemmPath::gemv), std::string("gemv"));
  EXPECT_EQ(parse_gemm_path("gemv"), GemmPath::gemv);
}

// A forced or cached configuration may hold any int: the checks must not overflow (fuzz_api_args
// found 4 * (block_m / 64 * block_n / 64 + 1) overflowing int for block_m = block_n = 58265216).
TEST(Dispatch, ConfigProblemOfHugeFieldsIsARejection) {
  for (GemmPath path : {GemmPath::fp8, GemmPath::fused, GemmPath::splitk, GemmPath::tiled, GemmPath::gemv})
    for (int v : {58265216, std::numeric_limits<int>::max(), std::numeric_limits<int>::min(), -16}) {
      const GemmConfig c{path, v, v, 1, v};
      EXPECT_NE(gemm_config_problem(c, 16), "") << describe(c);
      EXPECT_NE(gemm_config_problem_for_shape(c, 16, 4096), "") << describe(c);
    }
}

TEST(Dispatch, DescribeNamesEveryField) {
  GemmConfig c;
  c.path = GemmPath::splitk;
  c.split_k = 4;
  EXPECT_EQ(describe(c), "path=splitk block_n=64 block_m=16 split_k=4 warps=4");
}

// Review, session 12: sizes inside [1, 2^40] whose products overflow int64, and range checks
// that an early return skipped.
TEST(Dispatch, HugeSizesAndBadArgumentsAreHandled) {
  const DeviceInfo dev = h200();
  const int64_t big = int64_t(1) << 40;
  // (The 192 x 128 tile: fp8_tall_tile_wins counts the rounds in double.)
  EXPECT_EQ(describe(choose_gemm_config(big, big, 4096, dev)), "path=fp8 block_n=128 block_m=192 split_k=1 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(int64_t(1) << 36, int64_t(1) << 36, 1 << 20, dev)),
            "path=fp8 block_n=128 block_m=192 split_k=1 warps=16");
  GemmConfig fused;
  fused.path = GemmPath::fused;
  EXPECT_THROW(gemm_workspace_bytes(-5, -5, fused), InvalidArgument);
  EXPECT_THROW(gemm_workspace_bytes(16, 0, fused), InvalidArgument);
  EXPECT_EQ(gemm_workspace_bytes(16, 64, fused), 0u);
  GemmConfig bad = fused;
  bad.path = static_cast<GemmPath>(7);
  EXPECT_THROW(gemm_workspace_bytes(16, 64, bad), InvalidArgument);
  EXPECT_THROW(describe(GemmConfig{}, -1, -1, -1), InvalidArgument);
  GemmConfig tiled;
  tiled.path = GemmPath::tiled, tiled.split_k = 2;
  EXPECT_THROW(describe(tiled, -1, 0, int64_t(1) << 50), InvalidArgument);
  EXPECT_EQ(describe(fused, 4, 64, 64), describe(fused));
}

TEST(TuneCache, StoresAndReadsBackAndRejectsInvalidEntries) {
  const std::string file = ::testing::TempDir() + "/mxfp4_tune_test.json";
  std::remove(file.c_str());
  setenv("MXFP4_TUNE_CACHE", file.c_str(), 1);
  GemmConfig c;
  c.path = GemmPath::splitk;
  c.split_k = 2;
  c.block_m = 16;
  tune_cache::store("GPU X", 16, 2112, 7168, c);
  const auto got = tune_cache::lookup("GPU X", 16, 2112, 7168);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(describe(*got), describe(c));
  EXPECT_FALSE(tune_cache::lookup("GPU X", 16, 2112, 4096).has_value());
  EXPECT_FALSE(tune_cache::lookup("GPU Y", 16, 2112, 7168).has_value());
  GemmConfig bad = c;  // 12 warps over 4 slabs: no such kernel, never returned
  bad.warps = 12;
  tune_cache::store("GPU X", 128, 2112, 7168, bad);
  EXPECT_FALSE(tune_cache::lookup("GPU X", 128, 2112, 7168).has_value());
  GemmConfig tiled_bad;  // the tiled kernel has one tile shape
  tiled_bad.path = GemmPath::tiled;
  tune_cache::store("GPU X", 256, 2112, 7168, tiled_bad);
  EXPECT_FALSE(tune_cache::lookup("GPU X", 256, 2112, 7168).has_value());
  // block_m is checked by gemm()'s require_config: an entry it would reject (so that every
  // call of the shape threw InvalidArgument) is no entry, as any other invalid one.
  for (int bm : {0, 12}) {
    GemmConfig bad_m = c;
    bad_m.block_m = bm;
    tune_cache::store("GPU X", 16, 4096, 7168, bad_m);
    EXPECT_FALSE(tune_cache::lookup("GPU X", 16, 4096, 7168).has_value()) << bm;
  }
  unsetenv("MXFP4_TUNE_CACHE");
}

// A cache whose entry for a GPU is not an object (hand-edited) is no entry for lookup, and
// store replaces it rather than failing with a JSON type error (mxfp4 tune would lose the
// shapes it had already timed).
TEST(TuneCache, StoreReplacesAGpuEntryThatIsNotAnObject) {
  const std::string file = ::testing::TempDir() + "/mxfp4_tune_test_bad_gpu.json";
  {
    std::ofstream out(file);
    out << R"({"GPU X": 5, "GPU Y": {"16x2112x7168": 7}})";
  }
  setenv("MXFP4_TUNE_CACHE", file.c_str(), 1);  // another file than the last test's: read anew
  EXPECT_FALSE(tune_cache::lookup("GPU X", 16, 2112, 7168).has_value());
  EXPECT_FALSE(tune_cache::lookup("GPU Y", 16, 2112, 7168).has_value());
  GemmConfig c;
  c.path = GemmPath::splitk;
  EXPECT_NO_THROW(tune_cache::store("GPU X", 16, 2112, 7168, c));
  EXPECT_NO_THROW(tune_cache::store("GPU Y", 16, 2112, 7168, c));
  const auto got = tune_cache::lookup("GPU X", 16, 2112, 7168);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(describe(*got), describe(c));
  EXPECT_TRUE(tune_cache::lookup("GPU Y", 16, 2112, 7168).has_value());
  unsetenv("MXFP4_TUNE_CACHE");
}

}  // namespace
}  // namespace mxfp4
