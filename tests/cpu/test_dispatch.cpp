// The dispatcher is a pure function, tested on the CPU: the entry points, the small-M and gemv
// rules, workspaces and sweeps over shapes and SM counts (path fp8's rules: test_dispatch_fp8.cpp).
#include <gtest/gtest.h>

#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include "core/fp8_layout.hpp"
#include "dispatch/path_name.hpp"
#include "common/test_util.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {

using test::h200;

TEST(Dispatch, SmallMUsesClusterSplitKLargeMUsesFp8) {
  const DeviceInfo dev = h200();
  // Path gemv (one launch, S slabs of 16 rows per CTA) for M <= 16 while the quantization of A
  // that every CTA repeats stays small: K chunks <= 112, token rows x K chunks <= 256 per CTA
  // (448 until session 38 for M <= 8, and again since session 40 for M <= 8 where N has >= 256
  // slabs), CTAs x rows x K chunks <= 2^16; S the largest of 4, 2, 1 that leaves
  // >= 88 CTAs on 132 SMs.
  for (int64_t M : {1, 2, 3, 4, 8})  // 180 slabs: S = 2, 90 CTAs
    EXPECT_EQ(describe(choose_gemm_config(M, 2880, 512, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16") << M;
  // M <= 2: S steps down until every SM has a CTA (session 39), to 2 below 64 K chunks, to 1 above.
  EXPECT_EQ(describe(choose_gemm_config(1, 7168, 2048, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(1, 4096, 4096, dev)), "path=gemv block_n=16 block_m=8 split_k=1 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(1, 3584, 2048, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16");
  EXPECT_EQ(describe(choose_gemm_config(1, 14336, 2048, dev)), "path=gemv block_n=64 block_m=8 split_k=1 warps=16");
  EXPECT_EQ(choose_gemm_config(4, 7168, 2048, dev).block_n, 64);  // four rows: the 2/3 rule alone
  EXPECT_EQ(choose_gemm_config(1, 2880, 2880, dev).block_n, 32);
  EXPECT_EQ(choose_gemm_config(1, 2816, 2880, dev).block_n, 32);  // 176 slabs: 88 CTAs
  EXPECT_EQ(choose_gemm_config(1, 2784, 2880, dev).block_n, 16);  // 174 slabs: 87 CTAs at S = 2
  EXPECT_EQ(choose_gemm_config(1, 2112, 4032, dev).warps, 8);   // S = 1, 63 K chunks
  EXPECT_EQ(choose_gemm_config(1, 2112, 4096, dev).warps, 16);  // S = 1, 64 K chunks
  EXPECT_EQ(describe(choose_gemm_config(1, 2112, 7168, dev)), "path=gemv block_n=16 block_m=8 split_k=1 warps=16");
  EXPECT_NE(choose_gemm_config(1, 2112, 7232, dev).path, GemmPath::gemv);   // 113 K chunks
  EXPECT_EQ(choose_gemm_config(2, 7168, 2048, dev).block_n, 32);            // 224 x 2 x 32 = 14336
  EXPECT_EQ(choose_gemm_config(8, 7168, 2048, dev).block_n, 64);            // 112 x 8 x 32 = 28672
  EXPECT_EQ(choose_gemm_config(8, 4096, 1024, dev).block_n, 32);            // 128 x 8 x 16
  EXPECT_EQ(describe(choose_gemm_config(2, 2112, 7168, dev)), "path=gemv block_n=16 block_m=8 split_k=1 warps=16");  // 224
  EXPECT_EQ(describe(choose_gemm_config(4, 2112, 7168, dev)), "path=splitk block_n=64 block_m=8 split_k=8 warps=8");  // 448
  EXPECT_NE(choose_gemm_config(5, 2880, 2880, dev).path, GemmPath::gemv);   // 8 rows x 45 = 360, 180 slabs
  EXPECT_NE(choose_gemm_config(8, 2880, 2880, dev).path, GemmPath::gemv);
  // 256 < rows x K chunks <= 448 with >= 256 slabs (session 40)
  EXPECT_EQ(describe(choose_gemm_config(4, 4096, 5120, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16");  // 320
  EXPECT_NE(choose_gemm_config(4, 4080, 5120, dev).path, GemmPath::gemv);   // 255 slabs
  EXPECT_EQ(describe(choose_gemm_config(4, 7168, 7168, dev)), "path=gemv block_n=64 block_m=8 split_k=1 warps=16");  // 448
  EXPECT_EQ(choose_gemm_config(6, 7168, 2880, dev).path, GemmPath::gemv);   // 8 x 45 = 360
  EXPECT_EQ(choose_gemm_config(8, 7168, 3584, dev).path, GemmPath::gemv);   // 8 x 56 = 448
  EXPECT_NE(choose_gemm_config(8, 7168, 3648, dev).path, GemmPath::gemv);   // 8 x 57 = 456
  EXPECT_NE(choose_gemm_config(16, 4096, 1536, dev).path, GemmPath::gemv);  // two tiles: 16 x 24 = 384, 256 slabs
  EXPECT_EQ(choose_gemm_config(8, 4096, 2048, dev).path, GemmPath::gemv);   // 8 x 32 = 256
  EXPECT_NE(choose_gemm_config(8, 2112, 7168, dev).path, GemmPath::gemv);
  EXPECT_NE(choose_gemm_config(8, 8192, 4096, dev).path, GemmPath::gemv);   // 8 x 64 = 512 per CTA
  EXPECT_EQ(choose_gemm_config(2, int64_t(1) << 21, 64, dev).path, GemmPath::gemv);  // 32768 CTAs x 2 = 2^16
  EXPECT_NE(choose_gemm_config(4, int64_t(1) << 21, 64, dev).path, GemmPath::gemv);  // 2^17
  EXPECT_EQ(config_without_fp8(8, 2112, 7168, dev).path, GemmPath::splitk);  // 14 chunks per CTA
  for (int64_t M : {9, 16})  // two token tiles: 16 rows x 8 K chunks = 128 per CTA
    EXPECT_EQ(describe(choose_gemm_config(M, 2880, 512, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16") << M;
  EXPECT_EQ(choose_gemm_config(12, 7168, 1024, dev).block_n, 64);           // 16 x 16 = 256
  // Two token tiles only where gemv's grid fits the SMs (session 62, ab-g16-call1- and
  // ab-land-call2-session62-h100.txt): past them a second wave runs.
  EXPECT_EQ(describe(choose_gemm_config(16, 4096, 1024, dev)), "path=gemv block_n=32 block_m=8 split_k=1 warps=16");  // 128 CTAs
  EXPECT_EQ(choose_gemm_config(13, 5344, 896, dev).path, GemmPath::splitk);   // S = 2: 167 CTAs
  EXPECT_EQ(choose_gemm_config(13, 2144, 672, dev).path, GemmPath::splitk);   // S = 1: 134 CTAs
  EXPECT_EQ(choose_gemm_config(13, 2112, 672, dev).path, GemmPath::gemv);     // S = 1: 132 CTAs
  EXPECT_EQ(choose_gemm_config(14, 10032, 768, dev).path, GemmPath::splitk);  // S = 4: 157 CTAs
  EXPECT_EQ(choose_gemm_config(4, 5344, 896, dev).path, GemmPath::gemv);      // one tile: 167 CTAs stay
  EXPECT_NE(choose_gemm_config(16, 3072, 1536, dev).path, GemmPath::gemv);  // 16 x 24 = 384
  EXPECT_NE(choose_gemm_config(9, 2880, 2880, dev).path, GemmPath::gemv);   // 16 x 45 = 720
  EXPECT_NE(choose_gemm_config(16, 2112, 7168, dev).path, GemmPath::gemv);
  EXPECT_NE(choose_gemm_config(5, 2112, 7168, dev).path, GemmPath::gemv);   // 8 rows x 112 = 896
  for (int64_t M : {17, 32, 64}) EXPECT_EQ(choose_gemm_config(M, 2880, 512, dev).path, GemmPath::splitk) << M;
  for (int64_t M : {65, 128, 129, 256, 8192}) EXPECT_EQ(choose_gemm_config(M, 7168, 2048, dev).path, GemmPath::fp8) << M;
  // 64 < M <= 128 with short K: path fp8 since session 23 (128x2880x512: 5.86 us on 64 x 64
  // tiles against the small-M kernel's best 6.22; fp8_config_short_k); the small-M kernel
  // without an FP8 image.
  EXPECT_EQ(describe(choose_gemm_config(128, 2880, 512, dev)), "path=fp8 block_n=64 block_m=64 split_k=1 warps=8");
  EXPECT_EQ(config_without_fp8(128, 2880, 512, dev).path, GemmPath::splitk);
  EXPECT_EQ(choose_gemm_config(129, 2880, 512, dev).path, GemmPath::fp8);
  // Long K goes to path fp8, also where the small-M kernel's grid would fit one wave (session
  // 19 tune: 128x2112x7168, 132 CTAs, 23.2 us against path fp8's 22.05).
  EXPECT_EQ(describe(choose_gemm_config(128, 2112, 7168, dev)), "path=fp8 block_n=64 block_m=128 split_k=3 warps=12");
  EXPECT_EQ(choose_gemm_config(128, 2176, 7168, dev).path, GemmPath::fp8);
  EXPECT_EQ(choose_gemm_config(128, 1024, 8192, dev).path, GemmPath::fp8);
  EXPECT_EQ(choose_gemm_config(96, 4096, 4096, dev).path, GemmPath::fp8);
  // Few 64 x 64 tiles go to the small-M kernel at any K (N = 256: 8 tiles x split 8 = 64 CTAs;
  // session 54's H100 tune: 9.39 us against path fp8's best 11.42).
  EXPECT_EQ(choose_gemm_config(128, 256, 7168, dev).path, GemmPath::splitk);
}

// Weights without an FP8 image: the small-M kernel's rule up to M = 128, tiled beyond.
TEST(Dispatch, WithoutFp8ImageSmallMRuleThenTiled) {
  const DeviceInfo dev = h200();
  const GemmConfig c = config_without_fp8(128, 2112, 7168, dev);
  EXPECT_EQ(c.path, GemmPath::splitk);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_EQ(c.warps, 16);
  EXPECT_EQ(config_without_fp8(100, 7168, 2048, dev).path, GemmPath::splitk);
  EXPECT_EQ(describe(config_without_fp8(129, 7168, 2048, dev)), "path=tiled block_n=128 block_m=128 split_k=1 warps=8");
  for (int64_t M : {65, 100, 128, 129, 4096})
    for (int64_t K : {32, 2048, 7168}) {
      const GemmConfig fp8 = choose_gemm_config(M, 2112, K, dev), other = config_without_fp8(M, 2112, K, dev);
      EXPECT_EQ(gemm_config_problem(other, M), "") << describe(other);
      EXPECT_LE(gemm_workspace_bytes(M, K, other), gemm_workspace_bytes(M, K, fp8)) << M << "x" << K;
    }
  EXPECT_THROW(config_without_fp8(0, 16, 16, dev), InvalidArgument);
}

// gemm_workspace_bytes with N adds path splitk's split-K scratch for split_k = 8, K >= 4096 and
// M <= 16 (one int counter per output tile, every rank's fp32 partial tile of
// small_m_tile_rows(M) x block_n) after A's fragments, 256-byte aligned, and nothing for any
// other path, split_k, shorter K, M > 16 or a configuration the kernels cannot run; absurd
// configurations never overflow it.
TEST(Dispatch, WorkspaceWithNHoldsTheSplitKScratch) {
  for (int64_t M : {1, 8, 9, 16, 17, 32, 33, 64, 65, 128, 200}) {
    for (int64_t N : {1, 16, 17, 272, 7168}) {
      for (int64_t K : {32, 512, 4064, 4096, 7168}) {
        for (GemmPath path : {GemmPath::fused, GemmPath::splitk}) {
          for (int split : {1, 2, 3, 8}) {
            for (int block_n : {64, 128}) {
              GemmConfig cfg;
              cfg.path = path, cfg.split_k = split, cfg.block_n = block_n, cfg.warps = block_n / 16;
              const size_t base = gemm_workspace_bytes(M, K, cfg), full = gemm_workspace_bytes(M, N, K, cfg);
              const SplitkScratch sc = splitk_scratch(M, N, K, cfg);
              const std::string what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
                                       describe(cfg);
              ASSERT_EQ(full, sc.end) << what;
              if (path != GemmPath::splitk || split != 8 || K < 4096 || M > 16) {
                EXPECT_FALSE(sc.needed) << what;
                EXPECT_EQ(full, base) << what;
                continue;
              }
              const int64_t rows = M <= 8 ? 8 : M <= 16 ? 16 : M <= 32 ? 32 : 64;
              EXPECT_EQ(small_m_tile_rows(M), rows) << what;
              const int64_t tiles = ((N + 15) / 16 * 16 + block_n - 1) / block_n;
              EXPECT_TRUE(sc.needed) << what;
              EXPECT_EQ(sc.tiles, tiles) << what;
              EXPECT_EQ(sc.tile_floats, rows * block_n) << what;
              EXPECT_EQ(sc.counters_offset % 256, 0u) << what;
              EXPECT_EQ(sc.partials_offset % 256, 0u) << what;
              EXPECT_GE(sc.counters_offset, base) << what;
              EXPECT_GE(sc.partials_offset, sc.counters_offset + size_t(tiles) * 4) << what;
              EXPECT_EQ(sc.end, sc.partials_offset + size_t(tiles * split * rows * block_n * 4)) << what;
            }
          }
        }
      }
    }
  }
  GemmConfig splitk;
  splitk.path = GemmPath::splitk, splitk.split_k = 8, splitk.block_n = 64, splitk.warps = 4;
  for (int64_t N : {int64_t(0), int64_t(-1), (int64_t(1) << 40) + 1})
    EXPECT_THROW(gemm_workspace_bytes(4, N, 4096, splitk), InvalidArgument) << N;
  GemmConfig absurd = splitk;
  absurd.block_n = 1 << 30;
  EXPECT_EQ(gemm_workspace_bytes(64, 1 << 20, 1 << 20, absurd), gemm_workspace_bytes(64, 1 << 20, absurd));
  // The dispatcher's long-K decode shapes (split 8) reduce through the workspace; split 2 and
  // 4, and split 8 over a short K, through clusters.
  for (const auto& [M, N, K, want] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
           {16, 2112, 7168, true}, {8, 2112, 7168, true}, {16, 3072, 1536, false}, {64, 3072, 1536, false},
           {64, 7168, 2048, false}, {32, 4096, 512, false}}) {
    const GemmConfig c = config_without_fp8(M, N, K, h200());  // the small-M kernel's rule (M = 8: not gemv)
    EXPECT_EQ(splitk_scratch(M, N, K, c).needed, want) << M << "x" << N << "x" << K << " " << describe(c);
    // describe with the shape names the reduction (every shape here has split_k > 1).
    ASSERT_GT(c.split_k, 1) << describe(c);
    EXPECT_EQ(describe(c, M, N, K), describe(c) + (want ? " reduce=workspace" : " reduce=clusters"));
  }
  const GemmConfig single = choose_gemm_config(1024, 7168, 2048, h200());
  EXPECT_EQ(describe(single, 1024, 7168, 2048), describe(single)) << "split_k 1 names no reduction";
  const GemmConfig fp8 = choose_gemm_config(256, 7168, 2048, h200());
  ASSERT_EQ(fp8.path, GemmPath::fp8);
  EXPECT_EQ(gemm_workspace_bytes(256, 7168, 2048, fp8), gemm_workspace_bytes(256, 2048, fp8));
}

// gemm() and explain_gemm substitute the bf16 fallback only for a path fp8 choice meeting
// weights without an FP8 image (config_for_weights, the one place of that rule).
TEST(Dispatch, ConfigForWeightsReplacesOnlyFp8WithoutAnImage) {
  const DeviceInfo dev = h200();
  const GemmConfig fp8{GemmPath::fp8, 64, 64, 1, 8};
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{33, 7168, 7168}, {16, 4096, 4096}, {300, 7168, 2048}}) {
    EXPECT_EQ(describe(config_for_weights(fp8, true, M, N, K, dev)), describe(fp8));
    EXPECT_EQ(describe(config_for_weights(fp8, false, M, N, K, dev)), describe(config_without_fp8(M, N, K, dev)));
  }
  for (const GemmConfig& c : {GemmConfig{GemmPath::splitk, 64, 8, 2, 8}, GemmConfig{GemmPath::tiled, 128, 128, 1, 8},
                              GemmConfig{GemmPath::gemv, 64, 8, 1, 16}})
    for (bool image : {true, false}) EXPECT_EQ(describe(config_for_weights(c, image, 64, 7168, 2048, dev)), describe(c));
  EXPECT_THROW(config_for_weights(fp8, false, 0, 8, 64, dev), InvalidArgument);
}

TEST(Dispatch, SmallMFillsTheGpuAndSplitsLongKRangesOverWarps) {
  const DeviceInfo dev = h200();
  // 16 x 2112 x 7168: 33 CTAs of 64 rows; 112 K chunks -> split 8 (264 CTAs), 14 chunks per
  // CTA -> 2 warps per slab.
  GemmConfig c = choose_gemm_config(16, 2112, 7168, dev);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.split_k, 8);
  EXPECT_EQ(c.warps, 8);
  // 64 x 7168 x 2048: 112 CTAs of 64 rows (8 slabs only for M <= 8); M > 16 splits only to
  // one CTA per SM: split 2 (224 CTAs) of 16 chunks, which would take 4 warps per slab, but
  // 224 x 16 warps exceed 16 per SM: two (session 6 tune: 15.42 us against 16.40 for the
  // earlier 8-slab split 4).
  // (Path fp8 runs this shape since session 23; config_without_fp8 gives the small-M rule.)
  c = config_without_fp8(64, 7168, 2048, dev);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.warps, 8);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_EQ(c.path, GemmPath::splitk);
  // 1 x 7168 x 2048: 56 CTAs of 8 slabs, split 4 (224 CTAs, one 8-slab CTA per SM's worth of
  // two 4-slab ones) -> 8 chunks per CTA, but 224 x 16 warps exceed 16 per SM: one warp per
  // slab; 1 x 8 row-chunks of A per CTA: quantized in the GEMM (9.69 us against 10.10 splitk).
  // (Path gemv runs this shape; config_without_fp8 gives the small-M kernel's rule.)
  c = config_without_fp8(1, 7168, 2048, dev);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.split_k, 4);
  EXPECT_EQ(c.warps, 8);
  EXPECT_EQ(c.path, GemmPath::fused);
  // M > 16 splits until one CTA per SM, M <= 16 until two (session 3 tune): 64 x 3072 x 1536
  // split 4 (48 CTAs of 64 rows), 16 x 3072 x 1536 split 8. M > 16 keeps >= 4 K chunks per
  // rank with 2 warps per slab (session 7 tune): K = 512 (8 chunks) splits 2, 8 warps.
  EXPECT_EQ(choose_gemm_config(64, 3072, 1536, dev).split_k, 4);
  EXPECT_EQ(choose_gemm_config(64, 3072, 1536, dev).warps, 8);
  for (auto [M, N] : {std::pair<int64_t, int64_t>{64, 2880}, {32, 4096}}) {
    c = choose_gemm_config(M, N, 512, dev);
    EXPECT_EQ(c.split_k, 2) << M;
    EXPECT_EQ(c.warps, 8) << M;
  }
  EXPECT_EQ(config_without_fp8(16, 3072, 1536, dev).split_k, 8);  // the small-M rule (the dispatcher takes gemv there)
  // The M > 16 cap (K chunks / 4) is rounded down to a power of two: K = 768, 1280, 1536, 1792
  // would otherwise give clusters of 3, 5, 6 or 7 CTAs, which the tune never measured.
  for (int64_t K : {768, 1280, 1536, 1792, 2048})
    for (int64_t N : {512, 1024, 4096}) {
      const int split = choose_gemm_config(32, N, K, dev).split_k;
      EXPECT_EQ(split & (split - 1), 0) << N << " x " << K << ": split_k " << split;
    }
  // A huge K must not overflow the cap's doubling (fuzz_api_args found it under UBSan).
  for (int64_t K : {int64_t(1) << 35, int64_t(1) << 40}) {
    const GemmConfig big = config_without_fp8(32, 4096, K, dev);  // the small-M rule (path fp8 takes it)
    EXPECT_TRUE(big.split_k >= 1 && big.split_k <= 8 && (big.split_k & (big.split_k - 1)) == 0) << big.split_k;
  }
  // 16 x 2112 x 7168 keeps 2 warps per slab: 264 CTAs x 8 warps is exactly 16 per SM.
  EXPECT_EQ(choose_gemm_config(16, 2112, 7168, dev).warps, 8);
  // 4 x 2880 x 512: 45 CTAs, split 8 -> one chunk per CTA: fused.
  c = config_without_fp8(4, 2880, 512, dev);
  EXPECT_EQ(c.split_k, 8);
  EXPECT_EQ(c.path, GemmPath::fused);
  // M = 128 (weights without an FP8 image): two token CTAs along grid.y, 64-row CTAs of 16
  // warps, split 2 (132 CTAs).
  c = config_without_fp8(128, 2112, 7168, dev);
  EXPECT_EQ(c.block_m, 64);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.warps, 16);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_EQ(c.path, GemmPath::splitk);
  // K = 32: one chunk, never split; K = 128: two chunks, split at most 2.
  EXPECT_EQ(config_without_fp8(1, 4096, 32, dev).split_k, 1);
  EXPECT_EQ(config_without_fp8(1, 64, 128, dev).split_k, 2);
  // A GPU with few SMs needs no split for a wide N.
  DeviceInfo small = dev;
  small.sm_count = 8;
  EXPECT_EQ(choose_gemm_config(16, 8192, 4096, small).split_k, 1);
}

// M = 17..64 on the small-M kernel, session 24 tunes (bench/results/logs/tune-small-m-off-,
// tune-small-m-rule24-session24-h200.log): split 2 x 16 warps where its pairs fill one wave
// (N = 4096: 128 CTAs) with >= 16 K chunks per CTA; otherwise four warps per slab only while
// the grid stays within 3/4 of the SMs (clusters of 4 at one CTA per SM ran two waves).
TEST(Dispatch, SmallMOneWaveOfSixteenWarpsFromM17) {
  const DeviceInfo dev = h200();
  for (int64_t M : {20, 40, 48, 56, 64})
    for (int64_t K : {2048, 4096}) {
      const GemmConfig c = config_without_fp8(M, 4096, K, dev);
      EXPECT_EQ(c.path, GemmPath::splitk) << M << "x4096x" << K;
      EXPECT_EQ(c.split_k, 2) << M << "x4096x" << K;
      EXPECT_EQ(c.warps, 16) << M << "x4096x" << K;
    }
  // The dispatcher itself where path fp8 does not take the shape (N x K < 10 Mi at M > 32).
  EXPECT_EQ(choose_gemm_config(40, 4096, 2048, dev).warps, 16);
  EXPECT_EQ(choose_gemm_config(20, 4096, 2048, dev).path, GemmPath::splitk);
  // 12 K chunks per CTA at split 2 (K = 1536): split 4 x 8 warps as before (8.72 against 8.96).
  for (int64_t M : {20, 64}) {
    const GemmConfig c = choose_gemm_config(M, 3072, 1536, dev);
    EXPECT_EQ(c.split_k, 4) << M;
    EXPECT_EQ(c.warps, 8) << M;
  }
  // 2112 x 7168 at M = 20: 33 tiles, split 4 x 8 warps (16.07 us) instead of 16 warps (22.53).
  GemmConfig c = choose_gemm_config(20, 2112, 7168, dev);
  EXPECT_EQ(c.split_k, 4);
  EXPECT_EQ(c.warps, 8);
  // Pairs below 7/8 of the SMs (N = 3584: 112 CTAs, 8.90 us at split 4 x 8 warps against
  // 9.91; session 24 call 4) or above the one-wave limit (N = 7168: 224) keep the old rule;
  // M <= 16 keeps four warps per slab where it had them.
  c = choose_gemm_config(40, 3584, 2048, dev);
  EXPECT_EQ(c.split_k, 4);
  EXPECT_EQ(c.warps, 8);
  EXPECT_NE(config_without_fp8(40, 2880, 4096, dev).warps, 16);
  EXPECT_NE(config_without_fp8(24, 7168, 2048, dev).warps, 16);
  EXPECT_EQ(config_without_fp8(16, 512, 16384, dev).warps, 16);
}

// The edges of the M > 16 one-wave rule (small_m_config): 2 x ceil(N / 64) CTAs from 7/8 of
// the SMs (>= 116 of 132: 58 tiles, N >= 3649) up to fp8_split_grid_limit(2) (128 of 132: 64
// tiles, N <= 4096), >= 32 K chunks (K > 1984), M > 16; the four-warps-per-slab bound of the
// other M > 16 shapes (4 x CTAs <= 3 x SMs: at most 99 CTAs of 132).
TEST(Dispatch, SmallMOneWaveRuleEdges) {
  const DeviceInfo dev = h200();
  auto split_warps = [&](int64_t M, int64_t N, int64_t K, const DeviceInfo& d) {
    const GemmConfig c = config_without_fp8(M, N, K, d);
    EXPECT_EQ(c.path, GemmPath::splitk) << M << "x" << N << "x" << K;
    return std::make_pair(c.split_k, c.warps);
  };
  const std::pair<int, int> rule{2, 16}, split4_w8{4, 8};
  for (int64_t M : {17, 40, 64}) {
    EXPECT_EQ(split_warps(M, 3648, 2048, dev), split4_w8) << M;  // 57 tiles: 114 CTAs < 115.5
    for (int64_t N : {3649, 3712, 3713, 4032, 4096}) EXPECT_EQ(split_warps(M, N, 2048, dev), rule) << M << "x" << N;
    EXPECT_NE(split_warps(M, 4097, 2048, dev), rule) << M;  // 65 tiles: 130 CTAs > 128
    EXPECT_EQ(split_warps(M, 4096, 1984, dev), split4_w8) << M;  // 31 K chunks
    EXPECT_EQ(split_warps(M, 4096, 2016, dev), rule) << M;        // 32 K chunks
  }
  EXPECT_NE(split_warps(16, 4096, 2048, dev), rule);  // M <= 16: the rule of two CTAs per SM
  // Scales with the SM count: 78 SMs -> 70..76 CTAs (N = 2177..2432).
  DeviceInfo small = dev;
  small.sm_count = 78;
  EXPECT_NE(split_warps(40, 2176, 4096, small), rule);
  EXPECT_EQ(split_warps(40, 2177, 4096, small), rule);
  EXPECT_EQ(split_warps(40, 2432, 4096, small), rule);
  EXPECT_NE(split_warps(40, 2433, 4096, small), rule);
  // Four warps per slab for M > 16: 12 tiles x split 8 = 96 CTAs (384 <= 396) keep them, 13 x 8
  // = 104 do not; M <= 16 keeps them at any grid within 16 warps per SM.
  EXPECT_EQ(split_warps(40, 768, 8192, dev), std::make_pair(8, 16));
  EXPECT_EQ(split_warps(40, 769, 8192, dev), std::make_pair(8, 8));
  EXPECT_EQ(split_warps(16, 769, 8192, dev), std::make_pair(8, 16));
}

// M <= 64: more than one warp per slab only while the grid's warps fit 16 per SM (one wave at
// the kernel's 128-register launch bound).
TEST(Dispatch, SmallMWarpsPerSlabKeepTheGridInOneWave) {
  for (int sms : {8, 66, 132}) {
    DeviceInfo dev = h200();
    dev.sm_count = sms;
    for (int64_t M : {1, 8, 16, 32, 64})
      for (int64_t N : {64, 2112, 2880, 7168, 65536})
        for (int64_t K : {512, 2048, 7168, 16384}) {
          // The small-M kernel's rule (the dispatcher's choice for many of these shapes is gemv
          // or fp8; config_without_fp8 gives the small-M rule for every M <= 128).
          const GemmConfig c = config_without_fp8(M, N, K, dev);
          const int slabs = c.block_n / 16;
          const int64_t ctas = (N + c.block_n - 1) / c.block_n * c.split_k;
          if (c.warps > slabs)
            EXPECT_LE(ctas * c.warps, 16 * int64_t(sms)) << M << "x" << N << "x" << K << " " << describe(c);
        }
  }
}

// M > 16 with K <= 512 (8 K chunks): split 2 only while its CTAs fit one per SM (session 42's
// H100 tune: 64x7168x512 split 1 5.77 us against split 2 6.72), so the edge sits at 2 x tiles
// = SMs: N = 4224 (66 tiles) splits on 132 SMs, N = 4288 (67) does not; 64x2880x512 keeps 2.
TEST(Dispatch, SmallMShortKSplitsOnlyWithinOneWave) {
  const DeviceInfo dev = h200();
  for (int64_t M : {17, 32, 64}) {
    EXPECT_EQ(config_without_fp8(M, 2880, 512, dev).split_k, 2) << M;
    EXPECT_EQ(config_without_fp8(M, 4224, 512, dev).split_k, 2) << M;
    EXPECT_EQ(config_without_fp8(M, 4288, 512, dev).split_k, 1) << M;
    EXPECT_EQ(config_without_fp8(M, 7168, 512, dev).split_k, 1) << M;
    EXPECT_EQ(config_without_fp8(M, 7168, 448, dev).split_k, 1) << M;
    // Longer K keeps its split: 9 chunks (K = 576) still split 2 over 112 tiles.
    EXPECT_EQ(config_without_fp8(M, 7168, 576, dev).split_k, 2) << M;
  }
  EXPECT_EQ(describe(choose_gemm_config(64, 7168, 512, dev)), "path=splitk block_n=64 block_m=64 split_k=1 warps=8");
  // M <= 16 keeps its own target (two CTAs per SM) and splits.
  EXPECT_GT(config_without_fp8(16, 7168, 512, dev).split_k, 1);
}

// 64 < M <= 512 (session 61, H100 A/Bs ab-smk4-call1- and ab-land-call2-session61-h100.txt):
// split 8 drops to 4 where split 8's grid would pass the 128-CTA target (>= 17 tiles of 64 x 64)
// and each CTA would get <= 4 K chunks; at 12-16 tiles split 8 (96-128 CTAs) stays, it won there.
TEST(Dispatch, SmallMSplitFourPastTheOneWaveTarget) {
  const DeviceInfo dev = h200();
  const auto split = [&](int64_t M, int64_t N, int64_t K) { return config_without_fp8(M, N, K, dev).split_k; };
  EXPECT_EQ(split(72, 1024, 2048), 4);   // 32 tiles: split 4 reaches 128 CTAs by itself
  EXPECT_EQ(split(72, 576, 2048), 4);    // 18 tiles, 4 chunks per CTA at split 8
  EXPECT_EQ(split(72, 1088, 1024), 4);   // 17 x 2 = 34 tiles, 2 chunks
  EXPECT_EQ(split(100, 544, 1024), 4);   // 9 x 2 = 18 tiles
  EXPECT_EQ(split(100, 512, 1024), 8);   // 16 tiles: 128 CTAs, one wave
  EXPECT_EQ(split(72, 448, 1600), 8);    // 14 tiles
  EXPECT_EQ(split(72, 576, 2112), 8);    // 33 chunks: 5 per CTA at split 8
  EXPECT_EQ(describe(choose_gemm_config(200, 384, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=16");  // M > 128: 24 tiles
  EXPECT_EQ(describe(choose_gemm_config(200, 256, 2048, dev)), "path=splitk block_n=64 block_m=64 split_k=8 warps=8");   // 16 tiles
  // 64 < M <= 128 with < 32 tiles from K = 768 (was 1024), M > 128 from K = 1024 (was 2048).
  EXPECT_EQ(describe(choose_gemm_config(100, 640, 768, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(choose_gemm_config(100, 640, 736, dev).path, GemmPath::fp8);    // K < 768, 20 tiles
  EXPECT_EQ(choose_gemm_config(128, 1024, 768, dev).path, GemmPath::fp8);   // 32 tiles
  EXPECT_EQ(choose_gemm_config(128, 960, 768, dev).path, GemmPath::splitk); // 30 tiles
  EXPECT_EQ(choose_gemm_config(300, 256, 1024, dev).path, GemmPath::splitk);
  EXPECT_EQ(choose_gemm_config(300, 256, 992, dev).path, GemmPath::fp8);
}

TEST(Dispatch, SmallMKernelAgainstPathFp8SplitSixAtMidK) {
  // Session 62 (ab-x5k-call1-session62-h100.txt): few-tile 64 < M <= 128 at 4096 < K < 6144
  // where path fp8 would take 128 x 128 split 6 goes to the small-M kernel.
  const DeviceInfo dev = h200();
  EXPECT_EQ(describe(choose_gemm_config(65, 1568, 4448, dev)), "path=splitk block_n=64 block_m=64 split_k=4 warps=8");
  EXPECT_EQ(choose_gemm_config(114, 1968, 5568, dev).path, GemmPath::splitk);
  EXPECT_EQ(choose_gemm_config(114, 1968, 6144, dev).path, GemmPath::fp8);   // K >= 6144
  EXPECT_EQ(choose_gemm_config(100, 1536, 5120, dev).path, GemmPath::fp8);   // fp8 takes 128 x 64 there
  EXPECT_NE(choose_gemm_config(100, 1536, 5120, dev).block_n, 128);
}

TEST(Dispatch, EveryChoiceIsValidForItsShape) {
  const DeviceInfo dev = h200();
  for (int64_t M : {1, 3, 8, 9, 17, 64, 65, 192, 512, 513, 1000})
    for (int64_t N : {1, 16, 100, 7168})
      for (int64_t K : {32, 96, 1664, 16384}) {
        const GemmConfig c = choose_gemm_config(M, N, K, dev);
        EXPECT_TRUE(c.split_k >= 1 && c.split_k <= 8) << describe(c);
        EXPECT_TRUE(c.warps == 4 || c.warps == 8 || c.warps == 12 || c.warps == 16 || c.warps == 20) << describe(c);
        if (c.path == GemmPath::gemv) {
          EXPECT_LE(M, 16) << describe(c);
          EXPECT_EQ(gemm_config_problem_for_shape(c, M, K), "") << describe(c);
        } else if (c.path != GemmPath::fp8) {
          const int slabs = c.block_n / 16;
          EXPECT_TRUE(slabs == 4 || slabs == 8) << describe(c);
          EXPECT_TRUE(c.warps == slabs || c.warps == 2 * slabs || (c.warps == 16 && slabs == 4)) << describe(c);
          EXPECT_LE(c.split_k, (K + 63) / 64) << describe(c);
        }
        // Path fp8 for M > 64 (the small-M kernel up to M = 512 where 64 x 64 tiles are few); at
        // 32 < M <= 64 only for N x K >= 10 Mi, on 64-row tiles.
        if (M <= 32 || (M <= 64 && N * K < (int64_t(10) << 20))) EXPECT_NE(c.path, GemmPath::fp8) << describe(c);
        // 64 < M <= 512: the small-M kernel where 64 x 64 tiles are few (small_m_kernel_wins).
        const int64_t tiles64 = ((M + 63) / 64) * ((N + 63) / 64);
        const bool few_tiles = (M <= 128 && 8 * tiles64 <= 132) ||
                               (K >= (M <= 128 && tiles64 < 32 ? 768 : 1024) && ((K <= 4096 && tiles64 <= 62) || tiles64 < 32));
        if (M > 512 || (M > 64 && !few_tiles)) EXPECT_EQ(c.path, GemmPath::fp8) << describe(c);
        if (M > 64 && M <= 512 && few_tiles) EXPECT_EQ(c.path, GemmPath::splitk) << describe(c);
        if (M <= 64 && c.path == GemmPath::fp8) EXPECT_EQ(c.block_m, 64) << describe(c);
        EXPECT_EQ(gemm_config_problem(c, M), "") << describe(c);
        EXPECT_EQ(gemm_workspace_bytes(M, K, c) == 0, c.path == GemmPath::fused || c.path == GemmPath::gemv)
            << describe(c);
      }
}

// Every (M, N, K, SM count) the dispatcher answers must be a configuration the kernels run:
// gemm_config_problem empty, split_k at most the number of 64-wide K chunks, block_m a
// positive multiple of 8, and path fused only for M <= 8 with M x (K chunks per CTA) <= 16.
TEST(Dispatch, SweepOfShapesAndSmCountsGivesRunnableConfigs) {
  std::vector<int64_t> Ms, Ns, Ks;
  for (int64_t m = 1; m <= 300; ++m) Ms.push_back(m);
  for (int64_t m : std::initializer_list<int64_t>{511, 4096, 65536, 4194240, 4194241, 8388480}) Ms.push_back(m);
  for (int64_t n : std::initializer_list<int64_t>{1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 2112, 7168, 65536,
                                                  int64_t(1) << 26, int64_t(1) << 32})
    Ns.push_back(n);
  for (int64_t k = 32; k <= 1024; k += 32) Ks.push_back(k);
  for (int64_t k : std::initializer_list<int64_t>{1664, 7168, 16384, int64_t(1) << 32}) Ks.push_back(k);
  int failures = 0;
  for (int sms : {0, 1, 3, 8, 66, 114, 132, 1000, 1 << 30}) {
    DeviceInfo dev = h200();
    dev.sm_count = sms;
    for (int64_t M : Ms)
      for (int64_t N : Ns)
        for (int64_t K : Ks) {
          const GemmConfig c = choose_gemm_config(M, N, K, dev);
          const int64_t chunks = (K + 63) / 64;
          const bool ok = gemm_config_problem_for_shape(c, M, K).empty() && c.split_k >= 1 && c.split_k <= chunks &&
                          c.block_m >= 8 && c.block_m % 8 == 0 &&
                          (c.path != GemmPath::fused || (M <= 8 && M * ((chunks + c.split_k - 1) / c.split_k) <= 16));
          if (!ok && ++failures <= 10)
            ADD_FAILURE() << "M=" << M << " N=" << N << " K=" << K << " sm_count=" << sms << ": " << describe(c)
                          << " problem: " << gemm_config_problem(c, M);
        }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace mxfp4
