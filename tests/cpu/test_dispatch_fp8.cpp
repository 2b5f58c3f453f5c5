// Path fp8's dispatcher rules (src/dispatch/fp8_rules.cpp): tile shape, split-K and cluster
// size for M > 64 (and 32 < M <= 64 with large weights), tested on the CPU. The entry points,
// the small-M and gemv rules and the sweeps are in test_dispatch.cpp.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "common/test_util.hpp"
#include "core/fp8_layout.hpp"
#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {

using test::h200;

// Path fp8 split-K (M <= 128): clusters of 2 to 6 CTAs per 128 x 64 or 128 x 128 tile when
// the tiles leave SMs idle (the tile and split with the most CTAs, 128 x 64 on a tie), each
// CTA at least four 128-K slices, the grid within one wave (pairs: 128 of 132 SMs, larger
// clusters 3/4 of the SMs, or with >= 11 slices per CTA what session 55's cluster_fit held
// resident: 117, 120, 110 and 102 CTAs in clusters of 3 to 6).
TEST(Dispatch, Fp8SplitsKWhenTilesLeaveSmsIdle) {
  const DeviceInfo dev = h200();
  // Session 26 tune, 128x2112x7168: 128 x 64 split 3 (99 CTAs) 17.01 us against 128 x 128
  // split 4 (68) 18.06 and split 5 (85) 17.24. At N = 2176 128 x 64 split 3 is 102 CTAs, past
  // 3/4 of the SMs but within the 117 resident in clusters of 3 (18.7 slices per CTA).
  EXPECT_EQ(describe(choose_gemm_config(128, 2176, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  // With fewer than 11 slices per CTA the grid stays within 3/4 of the SMs: 128x2176x4096 128 x
  // 128 split 5 (85 CTAs), not 128 x 64 split 3 (102, 10.7 slices).
  EXPECT_EQ(describe(choose_gemm_config(128, 2176, 4096, dev)), "path=fp8 block_n=128 block_m=128 split_k=5 warps=12");
  // Session 55's H100 A/B (ab-cw-call2-session55-h100.txt): 128x1792x7168 128 x 64 split 4 (112
  // CTAs) 15.62 us against split 3's 16.30; not 128 x 64 split 5 (72x1344x8192: 105 CTAs 15.65
  // against split 4's 84, 15.39), nor 2% more CTAs (128x3136x7168: 128 x 128 split 4, 100 CTAs,
  // 19.64 against 128 x 64 split 2's 98, 19.54).
  EXPECT_EQ(describe(choose_gemm_config(128, 1792, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(72, 1344, 8192, dev)), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(128, 3136, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  // 39 tiles of 128 x 64 split 3: 117 CTAs, exactly what clusters of 3 held resident (call 2:
  // 17.69 us against 128 x 128 split 4's 18.46); N = 2560 (40 tiles, 120 CTAs) is past it.
  EXPECT_EQ(describe(choose_gemm_config(128, 2496, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(128, 2560, 7168, dev)), "path=fp8 block_n=128 block_m=128 split_k=5 warps=12");
  // 128 x 64 split 2 (128 CTAs) 19.4 us against 128 x 128 split 4 (128 CTAs in clusters of 4) 31.7.
  EXPECT_EQ(describe(choose_gemm_config(96, 4096, 4096, dev)), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  // 16 tiles of 128 x 64: split 6 (96 CTAs) 15.13 us against split 4 (64) 15.48 (session 26;
  // split 5, 80 CTAs, won at 14.73: the most-CTAs rule is within 3% of the winner here).
  EXPECT_EQ(describe(choose_gemm_config(128, 1024, 8192, dev)), "path=fp8 block_n=64 block_m=128 split_k=6 warps=12");
  // 23 tiles of 128 x 128 split 4 (92 CTAs) 16.71 us, the winner, against 45 of 128 x 64 split 2 (90).
  EXPECT_EQ(describe(choose_gemm_config(80, 2880, 6144, dev)), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  // A tie at 96 CTAs goes to 128 x 64 (split 2 14.82 us against 128 x 128 split 4 14.72, the
  // tune's winner by 0.7%).
  EXPECT_EQ(describe(choose_gemm_config(128, 3072, 4096, dev)), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(choose_gemm_config(128, 16384, 2048, dev).split_k, 1); // 128 tiles
  EXPECT_EQ(choose_gemm_config(100, 4096, 8192, dev).split_k, 2);  // 64 tiles of 128 x 64: split 4 would be 2 waves
  // 65 tiles of 128 x 64 in pairs would be 130 CTAs, past the 128 measured in one wave: 128 x 128
  // (33 tiles) split 3 (99 CTAs) instead (96x4096x4096: 16.59 us against split 2's 17.39).
  EXPECT_EQ(describe(choose_gemm_config(96, 4160, 4096, dev)), "path=fp8 block_n=128 block_m=128 split_k=3 warps=12");
  // 4 tiles of 128 x 64 (8 of 64 x 64): the small-M kernel since session 54 (small_m_kernel_wins).
  EXPECT_EQ(choose_gemm_config(100, 256, 8192, dev).path, GemmPath::splitk);
  // 17 tiles of 128 x 64 (34 of 64 x 64, K > 4096): path fp8, split 5 (85 CTAs; 6 would be 102,
  // past 3/4 of the SMs, with 10.7 slices per CTA).
  EXPECT_EQ(describe(choose_gemm_config(128, 1088, 8192, dev)), "path=fp8 block_n=64 block_m=128 split_k=5 warps=12");
  EXPECT_EQ(choose_gemm_config(1024, 7168, 2048, dev).split_k, 1);
  for (int64_t M : {65, 96, 128, 256, 1024})
    for (int64_t N : {64, 256, 1024, 2112, 4096, 4160, 7168})
      for (int64_t K : {128, 1024, 2048, 4096, 16384}) {
        const GemmConfig c = choose_gemm_config(M, N, K, dev);
        if (c.path != GemmPath::fp8) continue;  // few 64 x 64 tiles: the small-M kernel
        // One wave: pairs <= 128 CTAs of 132, larger clusters <= 99, or with >= 11 slices per
        // CTA the measured 117, 120, 110, 102; >= 4 slices per CTA.
        const int64_t tiles = (M + 127) / 128 * ((N + c.block_n - 1) / c.block_n);
        const int64_t resident[] = {0, 0, 128, 117, 120, 110, 102};
        const bool long_k = (K + 127) / 128 >= 11 * c.split_k && (c.block_n == 128 || c.split_k <= 4);
        EXPECT_TRUE(c.split_k == 1 || tiles * c.split_k <= (c.split_k == 2 ? 128 : long_k ? resident[c.split_k] : 99))
            << describe(c);
        EXPECT_TRUE(c.split_k == 1 || (K + 127) / 128 >= 4 * c.split_k) << describe(c);
        EXPECT_TRUE(c.split_k <= 6) << describe(c);
      }
}

// gemm() runs tiled when the dispatcher picks fp8 for weights without an FP8 image, so the
// workspace of an fp8 configuration must also hold the tiled path's fragments.
TEST(Dispatch, Fp8WorkspaceAlsoServesTheTiledFallback) {
  GemmConfig tiled;
  tiled.path = GemmPath::tiled, tiled.block_n = tiled.block_m = 128, tiled.warps = 8;
  for (int64_t M : {129, 256, 1000, 8192})
    for (int64_t K : {32, 96, 512, 2880, 8192}) {
      const GemmConfig fp8 = choose_gemm_config(M, 4096, K, h200());
      ASSERT_EQ(fp8.path, GemmPath::fp8);
      EXPECT_GE(gemm_workspace_bytes(M, K, fp8), gemm_workspace_bytes(M, K, tiled)) << M << "x" << K;
    }
}

// Path fp8 at M > 128: 128 x 128 tiles (two 64 x 128 consumer warpgroups, session 19); when
// fewer than half the SMs would get one, 64-row tiles with 8 warps at K >= 768 (64 x 64 where
// their grid fits the SMs, else 64 x 128; session 47's tune, landed in session 48, bound from
// session 49's A/B, any N since session 52's epilogue; 64 x 64 from K = 256 since session 53)
// and 128 x 64 with 12 warps otherwise.
TEST(Dispatch, Fp8TileNarrowsWhenTheGridIsSmall) {
  const DeviceInfo dev = h200();
  const std::string wide = "path=fp8 block_n=128 block_m=128 split_k=1 warps=12";
  const std::string narrow = "path=fp8 block_n=64 block_m=128 split_k=1 warps=12";
  const std::string rows64 = "path=fp8 block_n=64 block_m=64 split_k=1 warps=8";
  const std::string rows64_wide = "path=fp8 block_n=128 block_m=64 split_k=1 warps=8";
  EXPECT_EQ(describe(choose_gemm_config(1024, 7168, 2048, dev)), wide);
  EXPECT_EQ(describe(choose_gemm_config(256, 7168, 2048, dev)), wide);     // 112 tiles
  EXPECT_EQ(describe(choose_gemm_config(256, 2880, 512, dev)), narrow);    // 46 tiles, K = 512
  // K >= 768: 64-row tiles, 64 wide where 4 x N / 64 CTAs fit the SMs, else 128 wide (a
  // half-empty last 128-column tile lost in session 49, won after session 52's epilogue).
  EXPECT_EQ(describe(choose_gemm_config(256, 3072, 1536, dev)), rows64_wide);
  EXPECT_EQ(describe(choose_gemm_config(256, 2048, 1536, dev)), rows64);
  EXPECT_EQ(describe(choose_gemm_config(192, 3072, 1024, dev)), rows64_wide);
  EXPECT_EQ(describe(choose_gemm_config(256, 3072, 768, dev)), rows64_wide);
  EXPECT_EQ(describe(choose_gemm_config(256, 2048, 768, dev)), rows64);
  EXPECT_EQ(describe(choose_gemm_config(256, 3072, 736, dev)), narrow);    // K just under 768
  EXPECT_EQ(describe(choose_gemm_config(256, 2048, 736, dev)), rows64);    // 64 x 64 fits: from K = 256 (session 53)
  EXPECT_EQ(describe(choose_gemm_config(192, 2048, 512, dev)), rows64);
  EXPECT_EQ(describe(choose_gemm_config(256, 2048, 256, dev)), rows64);
  EXPECT_EQ(describe(choose_gemm_config(256, 2048, 224, dev)), narrow);    // K < 256
  EXPECT_EQ(describe(choose_gemm_config(256, 3072, 640, dev)), narrow);    // 64 x 128 only from K = 768
  EXPECT_EQ(describe(choose_gemm_config(256, 2880, 1024, dev)), rows64_wide);  // 2880 = 22.5 x 128
  EXPECT_EQ(describe(choose_gemm_config(256, 3008, 2048, dev)), rows64_wide);  // 3008 = 23.5 x 128
  EXPECT_EQ(describe(choose_gemm_config(256, 2400, 1024, dev)), rows64_wide);  // 2400 = 18.75 x 128
  EXPECT_EQ(describe(choose_gemm_config(256, 2944, 1024, dev)), rows64_wide);  // 23 x 128
  // The one-wave bound of 64 x 64 on 132 SMs: 4 x 33 = 132 CTAs fit, 4 x 34 = 136 do not.
  EXPECT_EQ(describe(choose_gemm_config(256, 2112, 1536, dev)), rows64);
  EXPECT_EQ(describe(choose_gemm_config(256, 2113, 1536, dev)), narrow);   // N % 8 != 0: every tile stores checked
  EXPECT_EQ(describe(choose_gemm_config(256, 2176, 1536, dev)), rows64_wide);  // 17 x 128
  EXPECT_EQ(describe(choose_gemm_config(200, 2112, 1024, dev)), rows64);
}

// 32 < M <= 64 with N x K >= 10 Mi weights: path fp8 on 64-row tiles (session 23 tune,
// bench/results/logs/tune-m64-fp8-splitk-session23-h200.log: each shape below got the fastest
// fp8 tile of that tune).
TEST(Dispatch, Fp8TakesLargeWeightsFromM33To64) {
  const DeviceInfo dev = h200();
  const std::string s64 = "path=fp8 block_n=64 block_m=64 split_k=1 warps=8";
  for (int64_t M : {33, 40, 48, 64}) EXPECT_EQ(describe(choose_gemm_config(M, 7168, 2048, dev)), s64) << M;
  for (int64_t N : {5120, 6144, 8192}) EXPECT_EQ(describe(choose_gemm_config(64, N, 2048, dev)), s64) << N;
  EXPECT_EQ(describe(choose_gemm_config(64, 14336, 2048, dev)), "path=fp8 block_n=128 block_m=64 split_k=1 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(64, 7168, 4096, dev)), "path=fp8 block_n=128 block_m=64 split_k=2 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(64, 4096, 4096, dev)), "path=fp8 block_n=64 block_m=64 split_k=2 warps=8");
  EXPECT_EQ(describe(choose_gemm_config(64, 3072, 4096, dev)), "path=fp8 block_n=128 block_m=64 split_k=4 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(64, 2112, 7168, dev)), "path=fp8 block_n=128 block_m=64 split_k=4 warps=12");
  // The small-M kernel keeps fewer weights (it won 64x4096x2048, 64x3072x1536, 64x2880x512,
  // 32x4096x512) and M <= 32 (32x4096x4096: 13.43 us against path fp8's 14.98; 16x2112x7168:
  // 10.66 against 15.73; tune-edges-session23-h200.log).
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{64, 4096, 2048}, {64, 3072, 1536}, {64, 2880, 512},
                         {32, 4096, 512}, {32, 4096, 4096}, {32, 7168, 2048}, {16, 2112, 7168}, {64, 5119, 2048}})
    EXPECT_NE(choose_gemm_config(M, N, K, dev).path, GemmPath::fp8) << M << "x" << N << "x" << K;
  EXPECT_EQ(choose_gemm_config(64, 5120, 2048, dev).path, GemmPath::fp8);  // exactly 10 Mi
  // Every choice is a valid configuration, also at the limits of N and K (no overflow in N x K).
  for (auto [N, K] : {std::pair<int64_t, int64_t>{int64_t(1) << 40, int64_t(1) << 40}, {1, int64_t(1) << 40},
                      {int64_t(1) << 40, 32}, {int64_t(1) << 20, 32}})
    for (int64_t M : {33, 64}) {
      const GemmConfig c = choose_gemm_config(M, N, K, dev);
      EXPECT_EQ(c.path, GemmPath::fp8) << describe(c) << " " << N << "x" << K;  // N x K >= 10 Mi
      EXPECT_EQ(gemm_config_problem(c, M), "") << describe(c) << " " << N << "x" << K;
    }
  // The threshold where K does not divide 10 Mi: 3413 x 3072 = 10484736 < 10 Mi <= 3414 x 3072.
  EXPECT_NE(choose_gemm_config(64, 3413, 3072, dev).path, GemmPath::fp8);
  EXPECT_EQ(describe(choose_gemm_config(64, 3414, 3072, dev)), "path=fp8 block_n=64 block_m=64 split_k=2 warps=8");
}

// 128 < M <= 512 with few 64 x 64 tiles from K = 1024 (2048 until session 61): the small-M kernel
// where it splits K 8 ways (< 32 tiles) or, up to K = 4096, where the tiles fill at most 62 of 132
// SMs; else path fp8, which from K = 4096 splits K on 128-row tiles where 64 x 64 tiles would fill
// at most 3/4 of the SMs (session 54's H100 tune, tune-m256-fewtiles-call4-session54-h100.log;
// session 61's A/Bs ab-smk1k-call1- and ab-land-call2-session61-h100.txt).
TEST(Dispatch, FewTilesPastM128TakeTheSmallMKernelOrFp8SplitK) {
  const DeviceInfo dev = h200();
  const auto path = [&](int64_t M, int64_t N, int64_t K) { return describe(choose_gemm_config(M, N, K, dev)); };
  EXPECT_EQ(path(192, 256, 2048), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");   // 12 tiles, 96 CTAs
  EXPECT_EQ(path(192, 256, 7168), "path=splitk block_n=64 block_m=64 split_k=8 warps=16");  // 14 chunks per CTA
  EXPECT_EQ(path(256, 512, 2048), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");   // 32 tiles
  EXPECT_EQ(path(384, 512, 4096), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");   // 48 tiles
  EXPECT_EQ(path(384, 256, 7168), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");   // 24 tiles, 192 CTAs
  // From K = 1024 (session 61; 192x512x1024 on split 8 lost to path fp8 in session 54's tune, 6.81
  // us against 6.54, so past the one-wave target the split is 4: 24 tiles).
  EXPECT_EQ(path(192, 512, 1024), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(path(192, 256, 1024), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");   // 12 tiles, 96 CTAs
  EXPECT_EQ(choose_gemm_config(192, 512, 992, dev).path, GemmPath::fp8);  // K < 1024
  EXPECT_EQ(choose_gemm_config(192, 64, 512, dev).path, GemmPath::fp8);
  EXPECT_EQ(path(448, 256, 7168), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");   // 28 tiles, M <= 512
  EXPECT_EQ(path(512, 256, 2048), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");   // 32 tiles
  EXPECT_EQ(choose_gemm_config(576, 256, 2048, dev).path, GemmPath::fp8);  // M > 512
  EXPECT_EQ(path(256, 1024, 2048), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // 64 tiles > 62
  EXPECT_EQ(path(256, 512, 7168), "path=fp8 block_n=64 block_m=128 split_k=6 warps=12");    // split 4 at K > 4096
  EXPECT_EQ(path(256, 1024, 7168), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  EXPECT_EQ(path(384, 1024, 4096), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");   // 96 tiles
  EXPECT_EQ(path(576, 256, 4096), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");   // 36 tiles, M > 512
  // 132 tiles of 64 x 64, past 3/4 of the SMs: unsplit 64 x 64 up to K = 4096 (call 10's tune:
  // 256x2112x4096 15.73 us against 128 x 64 split 2's 16.40), split-K from K = 6144 (session 55).
  EXPECT_EQ(path(256, 2112, 4096), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(path(256, 2112, 7168), "path=fp8 block_n=128 block_m=128 split_k=3 warps=12");  // 21.59 / 24.46
  // 99 tiles of 64 x 64 against 68 CTAs of 128 x 128 split 2 (the most that fit): unsplit 64 x 64
  // (call 10's tune: 15.60 us against 18.17).
  EXPECT_EQ(path(192, 2112, 4096), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(path(192, 1600, 4096), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");   // 100 CTAs >= 75 tiles
  EXPECT_EQ(choose_gemm_config(256, 1024, 3072, dev).split_k, 1);  // K < 4096
  // Session 55 (tune-fp8-m256-clusterfit-call1-session55-h100.log, tune-fp8-m256-midtiles-call10-
  // session54-h100.log): grids past 3/4 of the SMs in clusters of 3 to 5 at long K, and split-K
  // from K = 6144 where 64 x 64 tiles would fill up to 3/2 of the SMs (since session 58 more too,
  // where N % 8 == 0; below).
  EXPECT_EQ(path(192, 1280, 7168), "path=fp8 block_n=128 block_m=128 split_k=5 warps=12");  // 100 CTAs: 17.81 / 19.25
  EXPECT_EQ(path(192, 2112, 7168), "path=fp8 block_n=128 block_m=128 split_k=3 warps=12");  // 102 CTAs: 20.94 / 64 x 64's 24.35
  // 128 x 128 split 4 (104 CTAs) has less than 9/8 of 128 x 64 split 2's 100: the pairs (19.69 us
  // in call 10's tune against 19.52 and 64 x 64's 24.49).
  EXPECT_EQ(path(256, 1600, 7168), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(320, 1536, 7168), "path=fp8 block_n=128 block_m=128 split_k=3 warps=12");  // 108 CTAs: 22.24 / 25.86
  EXPECT_EQ(path(384, 2112, 7168), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");  // 198 of 64 x 64: 27.48 / 29.57
  // The K bound: 320x1280x6144 splits (call 2: 128 x 64 split 2 20.18 us against 64 x 64's
  // 22.76); below K = 6144 grids of 64 x 64 past 3/4 of the SMs split only on 128 x 64 tiles,
  // from K = 5120 (session 57's A/B: 320x1280x5120 17.97 against 19.69, 792x512x5632 22.09 /
  // 24.31; at K = 4096-4608 mixed, 128 x 128 split 3 lost: 144x2368x4608 18.14 / 16.96), so
  // 256x2112x5120 (whose split would be 128 x 128 split 3) stays unsplit (call 3's tune: 64 x 64
  // 18.54 against split 3's 18.68).
  EXPECT_EQ(path(320, 1280, 6144), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(320, 1280, 5120), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");  // 120 CTAs, 100 of 64 x 64
  EXPECT_EQ(path(792, 512, 5632), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(320, 1280, 4608), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // K < 5120, 120 CTAs
  EXPECT_EQ(path(192, 2368, 5120), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // not 128 x 128 split 3
  EXPECT_EQ(path(320, 1600, 5120), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // 128 x 64 split 2: 150 CTAs
  EXPECT_EQ(path(256, 2112, 5120), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(path(384, 2112, 5120), "path=fp8 block_n=128 block_m=64 split_k=1 warps=8");
  // Session 58: from K = 4608 also where the 128 x 64 split 2 grid has at most 7/8 of the SMs
  // (115 CTAs; ab-mid4608-call2-session58-h100.txt: 24 random shapes faster, 324x1088x5088 17.79
  // us against 19.91; ab-mid4096-call1: 360x1088x4608 16.44 / 18.03, 216x2048x4608 at 128 CTAs
  // 17.18 / 16.92).
  EXPECT_EQ(path(324, 1088, 5088), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(360, 1088, 4608), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(360, 1088, 4576), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // K < 4608
  EXPECT_EQ(path(256, 1792, 4608), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");   // 112 CTAs
  EXPECT_EQ(path(336, 1216, 4608), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");   // 114, the most
  EXPECT_EQ(path(256, 1856, 4608), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // 116
  EXPECT_EQ(path(320, 1280, 5088), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // 120, K < 5120
  EXPECT_EQ(path(216, 2048, 4608), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");     // 128
  // Past 3/2 of the SMs in 64 x 64 tiles too since session 58 (ab-widen-call6-session58-h100.txt:
  // 16 random shapes faster, 203x3728x14144 49.95 us against 64 x 128's 66.51); not below K = 6144.
  EXPECT_EQ(path(384, 2176, 7168), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");  // 204 of 64 x 64
  EXPECT_EQ(path(203, 3728, 14144), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(374, 2576, 6144), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(374, 2576, 6112), "path=fp8 block_n=128 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(path(512, 2048, 8192), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");  // 256 of 64 x 64
  // 128 x 128 pairs up to the SM count since session 59 (ab-pair132-call2-session59-h100.txt:
  // 21 random shapes faster, 603x1600x14880 61.79 us against 64 x 128's 79.21): 65 tiles, 130 CTAs.
  EXPECT_EQ(path(640, 1664, 8192), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(1600, 528, 10368), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(640, 1664, 6112), "path=fp8 block_n=128 block_m=64 split_k=1 warps=8");    // K < 6144
  // Past 3/2 only where N % 8 == 0 (the unsplit tile is then 64 x 128); with N % 8 != 0 it is 128
  // x 64 with 12 warps, not A/B'd against split 2 (review of fa40567).
  EXPECT_EQ(path(374, 2577, 8192), "path=fp8 block_n=64 block_m=128 split_k=1 warps=12");
  // Fewer CTAs than 64 x 64 and no fewer operand bytes per CTA: 128 x 128 split 2 (80 CTAs)
  // lost to 64 x 64's 117 (call 3: 22.39 us against 20.93); 136x2880x7168 split 2 (92 CTAs,
  // 2/3 of 64 x 128's bytes per CTA) won (24.03 against 26.28).
  EXPECT_EQ(path(160, 2496, 6144), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(path(136, 2880, 7168), "path=fp8 block_n=128 block_m=128 split_k=2 warps=12");
  // Session 57: the cluster-wave grid at 21/20 the CTAs where its CTAs get >= 20 slices (18 since session 58)
  // (ab-ratiolong-call2-session57-h100.txt): 128 x 128 split 4 over 128 x 64 split 2 at
  // 552x576x14336 (100 CTAs against 90; 34.87 us against 38.55), not at 552x704x6656 (13 slices;
  // 120 against 110: 23.09 against 22.72 in call 1); 128 x 64 split 4 (100) over 128 x 128 split
  // 6 (90) at 568x320x10752 (24.38 / 25.47).
  EXPECT_EQ(path(552, 576, 14336), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(552, 704, 6656), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(568, 320, 10752), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  // Session 58: below 18 slices the 9/8 comparison counts the 128 x 128 grid's useful CTAs only
  // (N = 320: 90 x 5/6 = 75 against 100): 128 x 64 split 4 at 544x320x7168 (session 57's
  // ab-ratio-call1-session57-h100.txt: 19.02 us against 20.50; 544x320x7680 19.61 / 21.07 in
  // ab-ratio13-call1-session58) and 613x320x7040 (ab-pad98-call2: 19.42 / 20.90),
  // from 44 slices on (split 4's cluster wave, kLongSlices); the wave grid's own count stays
  // raw, so 873x416x9120 keeps 128 x 128 split 4 (112 CTAs; 29.10 against 128 x 64 split 2's
  // 30.84); with N % 128 == 0 nothing changes.
  EXPECT_EQ(path(544, 320, 7168), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(613, 320, 7040), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(600, 320, 5632), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");   // 44 slices
  EXPECT_EQ(path(600, 320, 5504), "path=fp8 block_n=128 block_m=128 split_k=6 warps=12");  // 43
  EXPECT_EQ(path(873, 416, 9120), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(576, 384, 7168), "path=fp8 block_n=64 block_m=128 split_k=4 warps=12");
  // The edges, since session 58 at 18 slices per CTA (ab-ws18-call4-session58-h100.txt: 24 of
  // 24 faster, 609x528x9952 27.74 us against 29.51): 72 slices at split 4 (K = 9216), and 120
  // CTAs against 114 (1.053: past 21/20, short of 9/8; 280x1216x10240 26.08 us against 26.74 in
  // session 57); 71 slices stay on 9/8.
  EXPECT_EQ(path(280, 1216, 10240), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(280, 1216, 9216), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  EXPECT_EQ(path(280, 1216, 9088), "path=fp8 block_n=64 block_m=128 split_k=2 warps=12");
  EXPECT_EQ(path(609, 528, 9952), "path=fp8 block_n=128 block_m=128 split_k=4 warps=12");
  // 18 slices only for a wave grid of split 4 (the measured pair): 128 x 64 split 3 (99 CTAs)
  // stays against 128 x 128 split 5 (110) at 94 slices, 18.8 per CTA; from 100 slices (20) the
  // 21/20 ratio takes it.
  EXPECT_EQ(path(1300, 160, 12000), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  EXPECT_EQ(path(1300, 160, 12800), "path=fp8 block_n=128 block_m=128 split_k=5 warps=12");
}

// 64 < M <= 128 with K < 2048: path fp8 on the smallest tile whose tiles fit one wave (session
// 23 tune, bench/results/logs/tune-mid-short-k-session23-h200.log: each shape below got the
// fastest tile of that tune, or one within 1%). From K = 2048 fp8_config, which keeps unsplit
// 64-row tiles up to K = 2048-5120 (sessions 52-53).
TEST(Dispatch, Fp8TakesShortKFromM65To128) {
  const DeviceInfo dev = h200();
  const std::string s64 = "path=fp8 block_n=64 block_m=64 split_k=1 warps=8";
  const std::string s128 = "path=fp8 block_n=64 block_m=128 split_k=1 warps=12";
  EXPECT_EQ(describe(choose_gemm_config(128, 2880, 512, dev)), s64);   // 90 tiles
  EXPECT_EQ(describe(choose_gemm_config(128, 4096, 1024, dev)), s64);  // 128
  EXPECT_EQ(describe(choose_gemm_config(128, 3072, 1536, dev)), s64);  // 96
  for (int64_t M : {80, 96, 128}) EXPECT_EQ(describe(choose_gemm_config(M, 7168, 1024, dev)), s128) << M;  // 112
  EXPECT_EQ(describe(choose_gemm_config(128, 7168, 1536, dev)), s128);
  EXPECT_EQ(describe(choose_gemm_config(128, 16384, 1024, dev)), "path=fp8 block_n=128 block_m=128 split_k=1 warps=12");
  EXPECT_EQ(describe(choose_gemm_config(128, 2048, 1024, dev)), s64);  // 64 tiles: 6.64 us against 6.84 (session 54)
  // At most one SM in 8 with a 64 x 64 tile: the small-M kernel at any K (100x512x1024: 16
  // tiles, 6.41 us against path fp8's 7.71), and at most 62 of 132 with 1024 <= K <= 4096
  // (session 54: 128x1024x1024, 32 tiles, 6.24 us on split 4 against path fp8's 6.52).
  for (auto [M, N] : {std::pair<int64_t, int64_t>{100, 512}, {65, 64}, {128, 512}})  // <= 16 tiles
    for (int64_t K : {128, 512, 1024, 2048, 7168, 16384})
      EXPECT_EQ(choose_gemm_config(M, N, K, dev).path, GemmPath::splitk) << M << "x" << N << "x" << K;
  EXPECT_EQ(choose_gemm_config(128, 513, 512, dev).path, GemmPath::fp8);  // 18 tiles, K < 1024
  for (int64_t K : {1024, 1536, 2048, 3072, 4096})
    for (auto [M, N] : {std::pair<int64_t, int64_t>{128, 513}, {72, 1024}, {128, 1536}, {65, 1984}})  // 18-62 tiles
      EXPECT_EQ(choose_gemm_config(M, N, K, dev).path, GemmPath::splitk) << M << "x" << N << "x" << K;
  for (int64_t K : {960, 4160, 7168}) EXPECT_EQ(choose_gemm_config(128, 1024, K, dev).path, GemmPath::fp8) << K;
  EXPECT_EQ(choose_gemm_config(128, 2048, 2048, dev).path, GemmPath::fp8);  // 64 tiles > 62
  // The small-M kernel's split there: doubling until the grid reaches 128 CTAs (32 tiles: split
  // 4, not 8's 256 CTAs), 16 warps only where one CTA per SM fits the clusters' wave.
  EXPECT_EQ(describe(choose_gemm_config(128, 1024, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(describe(choose_gemm_config(128, 1984, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(describe(choose_gemm_config(128, 256, 7168, dev)), "path=splitk block_n=64 block_m=64 split_k=8 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(128, 512, 7168, dev)), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");
  // From kFp8MinK = 2048, fp8_config: unsplit 64-row tiles while each CTA's K is short (session
  // 52's H200 tune, tune-fp8-m72-128-grid-call6-session52-h200.log), else split-K on 128-row tiles.
  const std::string r64_wide = "path=fp8 block_n=128 block_m=64 split_k=1 warps=8";
  EXPECT_EQ(describe(choose_gemm_config(128, 7168, 2016, dev)), s128);
  for (int64_t M : {65, 128}) EXPECT_EQ(describe(choose_gemm_config(M, 7168, 2048, dev)), r64_wide) << M;
  EXPECT_EQ(describe(choose_gemm_config(128, 2880, 2048, dev)), s64);       // 90 CTAs
  EXPECT_EQ(describe(choose_gemm_config(96, 2048, 2048, dev)), s64);        // 64 CTAs
  EXPECT_EQ(describe(choose_gemm_config(128, 2112, 2048, dev)), s64);       // 66 CTAs
  EXPECT_EQ(describe(choose_gemm_config(128, 4096, 3072, dev)), s64);       // 128 CTAs
  EXPECT_EQ(describe(choose_gemm_config(128, 2880, 3072, dev)), s64);       // 90 CTAs >= 2/3 of 132 (session 53)
  EXPECT_EQ(describe(choose_gemm_config(128, 2752, 3072, dev)).find("split_k=1"), std::string::npos);  // 86 < 88
  EXPECT_EQ(describe(choose_gemm_config(128, 2880, 3200, dev)).find("split_k=1"), std::string::npos);  // K > 3072
  EXPECT_EQ(describe(choose_gemm_config(128, 2048, 3072, dev)).find("split_k=1"), std::string::npos);
  EXPECT_EQ(describe(choose_gemm_config(128, 7168, 4096, dev)), r64_wide);  // 64 x 64 would need 224 CTAs
  EXPECT_EQ(describe(choose_gemm_config(128, 4096, 4096, dev)).find("split_k=1"), std::string::npos);
  EXPECT_EQ(describe(choose_gemm_config(72, 7168, 5120, dev)), r64_wide);   // up to K = 5120 (session 53)
  // Past those bounds 128 x 128 split 2 unless 128 x 64 (12 warps) has the same CTAs, N % 8 == 0
  // and K <= 5120, or K <= 6656 with >= 3/4 of the SMs (session 62, below).
  const std::string u128 = "path=fp8 block_n=64 block_m=128 split_k=1 warps=12";
  EXPECT_EQ(describe(choose_gemm_config(128, 7168, 5248, dev)), u128);
  EXPECT_EQ(describe(choose_gemm_config(128, 7160, 4096, dev)), r64_wide);  // N % 8 == 0
  EXPECT_EQ(describe(choose_gemm_config(128, 7167, 4096, dev)).find("split_k=1"), std::string::npos);  // N % 8 != 0
  EXPECT_EQ(describe(choose_gemm_config(128, 2884, 2048, dev)).find("split_k=1"), std::string::npos);  // N % 8 != 0
  // 64 x 128 past K = 3072 only where it fills >= 3/4 of the SMs: 2 x 34 = 68 CTAs do not.
  EXPECT_EQ(describe(choose_gemm_config(128, 4352, 4096, dev)), u128);  // 68 CTAs either way, K <= 5120
  EXPECT_EQ(describe(choose_gemm_config(128, 4352, 2048, dev)), r64_wide);  // K = 2048: any count
  EXPECT_EQ(describe(choose_gemm_config(128, 2112, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  // Without an FP8 image: the small-M kernel, 16 warps per 64-row CTA only where the grid fits
  // one CTA per SM and each CTA has >= 8 K chunks (session 23 tunes; 12 until session 54).
  EXPECT_EQ(config_without_fp8(128, 2112, 7168, dev).warps, 16);  // 132 CTAs, 56 chunks
  EXPECT_EQ(config_without_fp8(128, 2112, 1536, dev).warps, 16);  // 132 CTAs, 12 chunks
  EXPECT_EQ(config_without_fp8(128, 7168, 1536, dev).warps, 8);   // 224 CTAs
  // Past split 2 the split target is 128 CTAs (session 54): 128x2048x2048's 64 tiles split 2 on
  // 16 warps (9.27 us against split 4's 12.13 in session 54's H100 tune); the first step keeps
  // the target of 132, so 96x4096x4096's 128 tiles split 2 on 8 warps (20.1-20.4 us against
  // unsplit 16 warps' 24.4-24.6, H200 tunes of sessions 12-19).
  EXPECT_EQ(describe(config_without_fp8(96, 4096, 4096, dev)), "path=splitk block_n=64 block_m=64 split_k=2 warps=8");
  EXPECT_EQ(describe(config_without_fp8(128, 4160, 4096, dev)), "path=splitk block_n=64 block_m=64 split_k=2 warps=8");
  EXPECT_EQ(describe(config_without_fp8(128, 1024, 8192, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");  // 128 CTAs > 3/4 of the SMs in clusters of 4
  EXPECT_EQ(describe(config_without_fp8(128, 2048, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=2 warps=16");
  EXPECT_EQ(describe(config_without_fp8(128, 1984, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(config_without_fp8(100, 512, 1024, dev).warps, 8);    // 2 chunks per CTA
  // 8 K chunks per CTA suffice (session 54): split 8 over 64 CTAs at K = 4096 on 16 warps, K = 3072 on 8.
  EXPECT_EQ(describe(choose_gemm_config(128, 256, 4096, dev)), "path=splitk block_n=64 block_m=64 split_k=8 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(128, 256, 3072, dev)), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");
}

TEST(Dispatch, Fp8UnsplitTallNarrowTileAtEqualCtas) {
  // Session 62 (H100 A/Bs ab-u128-call1- and ab-land-call2-session62-h100.txt): at 64 < M <= 128
  // where split-K would take 128 x 128 split 2 and 128 x 64 tiles give the same CTAs, 128 x 64
  // unsplit (12 warps) for N % 8 == 0 up to K = 5120, and up to K = 6656 where the grid has >= 3/4
  // of the SMs (99 of 132).
  const DeviceInfo dev = h200();
  const std::string u128 = "path=fp8 block_n=64 block_m=128 split_k=1 warps=12";
  const std::string s2 = "path=fp8 block_n=128 block_m=128 split_k=2 warps=12";
  EXPECT_EQ(describe(choose_gemm_config(65, 6272, 2464, dev)), u128);
  EXPECT_EQ(describe(choose_gemm_config(102, 5120, 4128, dev)), u128);   // 80 CTAs, K <= 5120
  EXPECT_EQ(describe(choose_gemm_config(127, 5120, 6240, dev)), s2);     // 80 CTAs past K = 5120
  EXPECT_EQ(describe(choose_gemm_config(108, 5344, 5856, dev)), s2);     // 84 CTAs
  EXPECT_EQ(describe(choose_gemm_config(124, 7296, 6336, dev)), u128);   // 114 CTAs
  EXPECT_EQ(describe(choose_gemm_config(100, 6400, 6336, dev)), u128);   // 50 tiles: 100 CTAs
  EXPECT_EQ(describe(choose_gemm_config(100, 6272, 6336, dev)), s2);     // 49 tiles: 98 CTAs < 99 (a conservative bound: 117x6224x6560 won at 98)
  EXPECT_EQ(describe(choose_gemm_config(124, 7296, 6688, dev)), s2);     // K > 6656
  EXPECT_EQ(describe(choose_gemm_config(104, 6464, 6208, dev)), s2);     // half-empty last tile: 101 against 2 x 51
  EXPECT_EQ(describe(choose_gemm_config(102, 5124, 4128, dev)).find("split_k=1"), std::string::npos);  // N % 8 != 0
}

// The 192 x 128 fp8 tile (16 warps, unsplit) where 4/3 of its rounds of tiles (one per SM)
// are fewer than 128 x 128's (fp8_tall_tile_wins), rounds counted here by hand for 132 SMs.
TEST(Dispatch, Fp8TallTileWhereItTakesFewerRounds) {
  const DeviceInfo dev = h200();
  const std::string tall = "path=fp8 block_n=128 block_m=192 split_k=1 warps=16",
                    square = "path=fp8 block_n=128 block_m=128 split_k=1 warps=12";
  // 8192^3: 43 x 64 tiles = 21 rounds against 64 x 64 = 32; 4096x7168x2048: 22 x 56 = 10
  // against 32 x 56 = 14; 1536x7168: 8 x 56 = 4 against 12 x 56 = 6.
  EXPECT_EQ(describe(choose_gemm_config(8192, 8192, 8192, dev)), tall);
  EXPECT_EQ(describe(choose_gemm_config(4096, 7168, 2048, dev)), tall);
  EXPECT_EQ(describe(choose_gemm_config(1536, 7168, 2048, dev)), tall);
  // 1024x7168x2048: 6 x 56 = 3 rounds against 8 x 56 = 4, a tie (4 x 3 = 3 x 4); 256x7168:
  // one round each; 4096x512: 22 x 4 = 1 round against 32 x 4 = 1.
  EXPECT_EQ(describe(choose_gemm_config(1024, 7168, 2048, dev)), square);
  EXPECT_EQ(describe(choose_gemm_config(256, 7168, 2048, dev)), square);
  EXPECT_EQ(describe(choose_gemm_config(4096, 512, 2048, dev)), square);
  // Fewer SMs, more rounds: 1024x7168 on 66 SMs is 6 x 56 = 6 rounds against 8 x 56 = 7
  // (24 > 21: still 128 x 128); on 8 SMs 42 against 56 (168 = 168: a tie).
  DeviceInfo small = dev;
  small.sm_count = 66;
  EXPECT_EQ(describe(choose_gemm_config(1024, 7168, 2048, small)), square);
  small.sm_count = 8;
  EXPECT_EQ(describe(choose_gemm_config(1024, 7168, 2048, small)), square);
  // The largest shapes (M and N up to 2^40): no overflow, the tall tile.
  EXPECT_EQ(describe(choose_gemm_config(int64_t(1) << 40, int64_t(1) << 40, 2048, dev)), tall);
}

// The 192 x 128 fp8 tile takes any M.
TEST(Dispatch, Fp8TallTileTakesAnyM) {
  const GemmConfig tall{GemmPath::fp8, 128, 192, 1, 16};
  // A last M tile reaching past the A image's rows (padded to 256) repeats the image's last
  // atom there (the producer), so every M is admitted, 1024 and 4096 included.
  for (int64_t M : {int64_t(1), int64_t(192), int64_t(193), int64_t(520), int64_t(1000), int64_t(1024),
                    int64_t(4096), int64_t(8192), int64_t(1) << 40})
    EXPECT_EQ(gemm_config_problem(tall, M), "") << M;
  GemmConfig bad = tall;
  bad.block_n = 64;
  EXPECT_NE(gemm_config_problem(bad, 1536), "");
  bad = tall;
  bad.split_k = 2;
  EXPECT_NE(gemm_config_problem(bad, 1536), "");
  bad = tall;
  bad.warps = 12;
  EXPECT_NE(gemm_config_problem(bad, 1536), "");
}

}  // namespace
}  // namespace mxfp4
