// The GEMM dispatcher: a pure function of (M, N, K, device) -> kernel path and tile
// configuration (docs/dispatch.md). No CUDA calls here, so it is unit-tested on the CPU.
#include <algorithm>
#include <cmath>

#include "core/fp8_layout.hpp"
#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The largest path fp8 split-K grid (CTAs) that runs in one wave, clusters of `split` CTAs of
/// ~200 KB shared memory each (fp8_config's comment has the measurements).
int64_t fp8_split_grid_limit(int split, int64_t sms) { return split == 2 ? sms - sms / 32 : sms * 3 / 4; }

/// Path fp8's split-K for `tiles` tiles (at most a few times `sms`) of `slices` 128-K slices:
/// the larger of 2 and 4 whose grid runs in one wave (fp8_split_grid_limit) with >= 4 slices
/// per CTA, else 1 (fp8_config's comment has the measurements).
int fp8_split_for(int64_t tiles, int64_t slices, int64_t sms) {
  int split = 1;
  for (int s : {2, 4})
    if (tiles * s <= fp8_split_grid_limit(s, sms) && slices >= 4 * int64_t(s)) split = s;
  return split;
}

/// Path fp8's split-K for 64 < M <= 128 and, from K = 4096, few-tile M > 128 (fp8_config),
/// given its tile counts of 128 x 64 and 128 x 128 tiles: of splits 2 to 6 with >= 4 slices per CTA
/// whose grid runs in one wave (fp8_split_grid_limit), the tile and split with the most CTAs, 128 x
/// 64 on a tie (twice the CTAs for the same K per CTA); split 1 on 128 x 64 tiles where none fits.
/// Session 26 tune (bench/results/logs/tune-fp8-split-any-session26-h200.log, --paths fp8; this
/// rule's choice first, us): 128x2112x7168 128 x 64 split 3 (99 CTAs) 17.01 against session 25's
/// 128 x 128 split 4 (68) 18.06 and 128 x 128 split 5 17.24; 112x2048x4096 128 x 64 split 3 13.36
/// against 128 x 128 split 4 13.84; 128x1024x8192 128 x 64 split 6 15.13 against split 4 15.48
/// (split 5 14.73); 128x1536x8192 128 x 64 split 4 15.70 (the winner); 80x2880x6144 128 x 128
/// split 4 16.71 (the winner); 96x4096x4096 128 x 64 split 2 (128 CTAs) 15.44 (the winner, 128 x 128
/// split 3 16.59); 128x3072x4096 a tie at 96 CTAs: 128 x 64 split 2 14.82 against 128 x 128
/// split 4 14.72 (so the rule is within 3% of the tune's winner, not always it: 128x1024x8192's
/// split 5 was faster too). Splits 7 and 8 are left to the tune: at the tuned shapes they ran a
/// second wave or lost (cluster_fit: 15 clusters of 8 such CTAs resident; 128x1024x8192 128 x 128
/// split 8, 64 CTAs, 15.60), and no shape with so few tiles was tuned.
GemmConfig fp8_split_config(int64_t tiles64, int64_t tiles128, int64_t slices, int64_t sms) {
  GemmConfig best{GemmPath::fp8, 64, 128, 1, 12};
  int64_t best_ctas = 0;
  for (const int block_n : {64, 128})
    for (int split = 2; split <= 6; ++split) {
      const int64_t ctas = (block_n == 64 ? tiles64 : tiles128) * split;
      if (ctas <= fp8_split_grid_limit(split, sms) && slices >= 4 * int64_t(split) && ctas > best_ctas)
        best = GemmConfig{GemmPath::fp8, block_n, 128, split, 12}, best_ctas = ctas;
    }
  return best;
}

/// Whether 192 x 128 fp8 tiles (three 64 x 128 consumer warpgroups, 16 warps) beat 128 x 128
/// ones for an M x N output on `sms` SMs. Both grids are persistent (one CTA per SM walks the
/// tiles), so a call takes rounds = ceil(tiles / sms) tile times, and a 192-row tile takes ~4/3
/// of a 128-row one (1.5x the MACs with 17% fewer ring bytes per MAC; session 25's call_split,
/// GEMM kernel alone, per round: 1.32x at 8192^3, 1.33x at 4096x7168x2048, 1.39x at
/// 1024x7168x2048). So 192 x 128 wins when 4/3 of its rounds are fewer than 128 x 128's:
/// 8192^3 21 against 32 rounds (GEMM 776 against 897 us), 4096x7168x2048 10 against 14 (104.5
/// against 110.0); 1024x7168x2048 ties (3 against 4 rounds: 33.5 against 32.2 us) and keeps
/// 128 x 128. Rounds in double: M and N go up to 2^40 each (check_shape).
bool fp8_tall_tile_wins(int64_t M, int64_t N, int64_t sms) {
  const double nt = double(ceil_div(N, 128));
  auto rounds = [&](int64_t block_m) { return std::ceil(double(ceil_div(M, block_m)) * nt / double(sms)); };
  return 4 * rounds(192) < 3 * rounds(128);
}

/// M > 128 with few 128-row tiles (fp8_config): 64-row tiles from this K on (session 49's H100
/// A/B; 128 x 64 still won K = 512 in session 47's tune); from K = 256 where 64 x 64 fits one
/// wave (session 53).
constexpr int64_t kFp8Row64MinK = 768;

/// Path fp8 (M > 64 where the small-M kernel does not take the shape, and for 64 < M <= 128 with
/// K >= 2048: choose_gemm_config), persistent (one
/// CTA per SM walks the tiles): 128 x 128 tiles as two 64 x 128 consumer warpgroups (12 warps)
/// when they give at least half the SMs a tile, or 192 x 128 (16 warps) where it takes fewer
/// rounds (fp8_tall_tile_wins: 8192^3, 4096x7168x2048; since session 25); else, for M > 128,
/// 64-row tiles with K >= 768, 64 x 64 from K = 256 (session 47's tune, landed in session 48;
/// session 49's bound and N rule, session 53's, below) and 128 x 64 tiles (two consumer
/// warpgroups, 12 warps) otherwise; for 64 < M <= 128 with few tiles, unsplit 64-row tiles for
/// short K, else split-K (sessions 52-53, below). H200 tunes
/// (bench/results/logs/fp8-v2-tune-large-m-h200.log, fp8-v5-tune-h200.log,
/// tune-fp8-large-session13-h200.log, tune-fp8-large-session19-h200.log):
///   - 128 x 128 won 256x7168x2048 (112 tiles) and every M >= 1024 shape. Until session 18
///     four 64 x 64 warpgroups (20 warps) beat two 64 x 128 ones by 2-4% (1024x7168x2048 79.5
///     against 81.1 us); with chains (session 19) two win by 7-15%: 1024x7168x2048 62.6
///     against 66.9 us, 4096x7168x2048 201.1 against 223.8, 8192^3 1540 against 1764;
///   - 128 x 64 won 256x3072x1536 (13.9 us, 128 x 128 18.8) and 256x2880x512 (8.4, 10.2 split 2).
/// M <= 128 with fewer tiles: unsplit 64-row tiles while each CTA's K is short (session 52,
/// below), else split-K clusters (fp8_split_config since session 26: 2 to 6
/// CTAs per tile, the most CTAs in one wave; until then 2 or 4, whichever tile reached the
/// larger split). A split needs >= 4 slices per CTA and a grid in one wave: for pairs at most the
/// SM count less 1/32 of it (128 of 132: pairs need two SMs of one GPC, and 128 CTAs is the
/// largest pair grid measured in one wave), <= 3/4 of it for larger clusters (~200 KB CTAs: a
/// cluster needs that many free SMs of one GPC; 128-132 CTAs in clusters of 4 ran in two waves,
/// and session 26's cluster_fit held 102-117 CTAs of clusters of 3, 5 and 6 resident).
/// Split 8 never won. Session 13 tune
/// (tune-mid-m-session13-h200.log, --paths fp8; session 12's choice first):
///   - 96x4096x4096: 128 x 128 s4 (128 CTAs in 4s) 31.7 us -> 128 x 64 s2 (128 CTAs) 19.4;
///   - 128x1024x8192: 128 x 128 s4 (32 CTAs) 27.0 (session 12) -> 128 x 64 s4 (64) 20.6;
///   - 128x2176x7168 (like 128x2112x7168): 128 x 128 s4 (68 CTAs) 25.4 stays (128 x 64 s2
///     26.6, s4 in 132 CTAs 30.1); session 19, 128x2112x7168: 128 x 128 s4 with 12 warps 22.05
///     against 20 warps 22.67 (s2 30.3 against 32.3);
///   - 128x2880x512: the small-M kernel 6.2 us (session 12), the best fp8 tile 7.1 (since
///     session 23 short K at 64 < M <= 128 goes to fp8_config_short_k instead: 5.86 on 64 x 64).
/// Here (M > 128, or K >= 2048) 64-row tiles and the 2-CTA pair (block_m 256) never won in those
/// H200 tunes (64-row tiles at 64 < M <= 128 with K <= 4096 did in session 52's, on later kernels; K <= 5120 in session 53's A/B); session 47's H100 tune has 64-row tiles winning at M > 128 with few tiles from K =
/// 1024 on, session 49's from K = 768 on (64 x 128 where N is a multiple of 128 until session 52's
/// epilogue kept tiles past N on its 16-byte stores; since then where N % 8 == 0).
GemmConfig fp8_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  // Tiles of 128 rows x block_n, capped at the SM count (M and N up to 2^40 each: the product
  // would overflow, and every decision below only asks whether tiles reach a fraction of the SMs).
  const int64_t mt = ceil_div(M, 128), slices = ceil_div(K, 128);
  auto tiles_of = [&](int64_t block_n) {
    const int64_t nt = ceil_div(N, block_n);
    return mt >= sms || nt >= sms ? sms : mt * nt;
  };
  const int64_t tiles = tiles_of(128);
  if (2 * tiles >= sms) {
    if (fp8_tall_tile_wins(M, N, sms)) return GemmConfig{GemmPath::fp8, 128, 192, 1, 16};
    return GemmConfig{GemmPath::fp8, 128, 128, 1, 12};
  }
  if (M > 128) {
    // Few 128-row tiles: with K >= kFp8Row64MinK, 64-row tiles (one 64-row consumer warpgroup,
    // 8 warps), 64 x 64 where their grid fits one wave, else 64 x 128 (session 47's H100 tunes,
    // bench/results/logs/tune-fp8-m256-call2-session47-h100.log: 256x2048x1536 8.55 against
    // 128 x 64's 9.73 us, 256x3072x1536 9.59 against 9.85, 256x3072x1024 7.71 / 7.98,
    // 256x3072x2048 11.10 / 11.56; at K = 512 128 x 64 wins, tune-fp8-call1-session47-h100.log:
    // 256x2880x512 6.21 against 7.38 and 7.82).
    // Session 49 (H100, bench/results/logs/*session49-h100*): from K = 768 on (A/B of call 2:
    // 256x2048x768 6.39 against 6.90 us, 256x3072x768 7.11 / 7.25), and 64 x 128 only where N
    // fills whole 128-column tiles: with a half-empty last tile it lost (A/B of call 3:
    // 256x2880x1024 9.46 against 8.17, 256x2880x2048 12.40 / 11.33; tune of call 4:
    // 256x3008x1024 9.52 / 8.39, 256x2400x1024 9.38 / 8.85), 256x2944x1024 won (7.94 / 8.21).
    // Session 52's epilogue (tiles past N on the predicated 16-byte stores) removed that loss:
    // its tune (tune-m256-ntail-epilogue-v4-call1-session52-h100.log) has 64 x 128 winning at
    // 256x2880x1024 7.69 against 7.93, 256x3008x1024 8.01 / 8.21, 256x2240x2048 10.85 / 11.44,
    // and on an H200 (session 52 call 2, ab-row64-anyn-call2-session52-h200.txt) -0.25 to -0.65
    // us on seven such shapes, but +2.74 at 256x2113x1536: with N % 8 != 0 (and ldc = N, as
    // the bench has it) every tile takes the epilogue's checked store path, twice as many
    // stores per thread on 64 x 128 (8 warps) as on 128 x 64 (12). So 64 x 128 where N % 8 == 0 (A/B of call 4,
    // ab-row64-n8-call4-session52-h200.txt: -0.28 to -0.69 us, 256x2113x1536 and the N % 128 ==
    // 0 controls unchanged).
    // Session 53 (H100): 64 x 64 from K = 256 where its grid fits one wave (A/Bs of calls 9-10,
    // ab-r64s-call9-session53-h100.txt: 256x2048x512 5.69 against 128 x 64's 6.09 us,
    // 192x2048x512 5.17 / 5.76, 256x1024x512 5.11 / 5.67; ab-r64k256-call10-session53-h100.txt:
    // 192x2048x256 4.24 / 4.72, 256x2048x384 5.27 / 5.70); 64 x 128 below K = 768 lost (call 8,
    // ab-row64k512-call8-session53-h100.txt: 256x3072x640 7.06 / 6.82, 192x2880x512 5.94 / 5.87).
    // 64 x 64 tiles: fewer than 4 x sms / 2 here (tiles of 128 x 128 < sms / 2), so no overflow.
    const int64_t ctas64 = ceil_div(M, 64) * ceil_div(N, 64);
    const bool fits64 = ctas64 <= sms;
    // Session 54 (H100 tune, bench/results/logs/tune-m256-fewtiles-call4-session54-h100.log): from
    // K = 4096, where 64 x 64 tiles would fill at most 3/4 of the SMs (the most tuned: 96 of
    // 132), split-K on 128-row tiles as for M <= 128 (fp8_split_config): 256x1024x7168 split 3
    // 16.65 us against 64 x 64's 24.07, 256x512x7168 split 6 14.69 / 23.73, 384x1024x4096 split
    // 2 15.24 / 16.39; A/B (ab-fewt-call6-session54-h100.txt): 256x512x7168 14.77 against 23.98,
    // 384x1024x7168 split 2 21.24 / 25.73, 384x1024x4096 15.50 / 16.44. At K = 2048 64 x 64
    // still won (256x1024x2048 9.63 against split 3 10.28); K = 3072 was mixed (call 7's tune:
    // 256x1024x3072 split 3 6% ahead, 384x1024x3072 64 x 64 best).
    // Only where the split grid has at least as many CTAs as the 64 x 64 one (call 10's tune,
    // tune-fp8-m256-midtiles-call10-session54-h100.log: 192x2112x4096, 99 tiles of 64 x 64, ran
    // 128 x 128 split 2 in 68 CTAs 18.17 us against 64 x 64's 15.60; 192x2112x7168 24.85 /
    // 24.35, though 128 x 128 split 3 in 102 CTAs, past the 99 that fp8_split_grid_limit allows
    // clusters of 3, took 20.94).
    if (K >= 4096 && ctas64 <= fp8_split_grid_limit(4, sms)) {
      const GemmConfig split = fp8_split_config(tiles_of(64), tiles, slices, sms);
      const int64_t split_ctas = (split.block_n == 64 ? tiles_of(64) : tiles) * split.split_k;
      if (split.split_k > 1 && split_ctas >= ctas64) return split;
    }
    if (K >= kFp8Row64MinK || (K >= 256 && fits64)) {
      if (fits64) return GemmConfig{GemmPath::fp8, 64, 64, 1, 8};
      if (N % 8 == 0) return GemmConfig{GemmPath::fp8, 128, 64, 1, 8};
    }
    return GemmConfig{GemmPath::fp8, 64, 128, 1, 12};
  }
  // 64 < M <= 128: unsplit 64-row tiles (8 warps) while each CTA's K stays short enough, else
  // split-K on 128-row tiles. Session 52's H200 tune (bench/results/logs/tune-fp8-m72-128-grid-
  // call6-session52-h200.log, M = 72, 96, 128 x N = 2048-7168 x K = 2048-7168): unsplit won
  // every K = 2048 shape by 6-29% (128x2880x2048 64 x 64 9.92 against split 4 12.36,
  // 128x7168x2048 64 x 128 11.72 against split 2 14.92); at K = 3072 where 64 x 64 fills >= 3/4
  // of the SMs (N = 4096: 4%; N = 2880, 90 CTAs, tied with 128 x 64 split 2; N = 2048 lost
  // 13%); up to K = 4096 where 64 x 64 would not fit one wave and 64 x 128 fills >= 3/4 of the
  // SMs (N = 7168, 112 CTAs: 7-14%; 128x4096x4096's 64 CTAs of 64 x 128 lost 11%); K = 7168
  // split. Only N % 8 == 0, the only N tuned (with N % 8 != 0 and ldc = N every tile takes the
  // epilogue's checked stores). Session 53 widened both bounds (H100 tune
  // tune-fp8-grid2-call1-session53-h100.log, A/B ab-m128v2-call7-session53-h100.txt): 64 x 64
  // from 2/3 of the SMs at K <= 3072 (N = 2880: 72x2880x2560 11.43 us against split 4's 13.50,
  // 96x2880x3072 12.63 / 14.12; 128x3072x3072 12.65 / 13.07), 64 x 128 up to K = 5120
  // (72x7168x5120 22.00 / 24.91, 128x7168x4608 20.70 / 23.88; at K = 6144 the H100 tune still
  // had unsplit 9-12% ahead, session 52's H200 tune at K = 7168 split 7% ahead).
  // Grids of at most 62/132 of the SMs in 64 x 64 tiles up to K = 4096 (and of 1/8 at any K)
  // never reach here: the small-M kernel takes them (small_m_kernel_wins, session 54), so K =
  // 2048 (the only K < 2049 that reaches here) has no lower bound on CTAs (session 53's 15/32
  // bound is implied).
  const int64_t ctas64 = ceil_div(M, 64) * ceil_div(N, 64), ctas64x128 = ceil_div(M, 64) * ceil_div(N, 128);
  const bool fits64 = ctas64 <= sms;
  if (N % 8 == 0 && (K <= 2048 || (K <= 3072 && fits64 && 3 * ctas64 >= 2 * sms) ||
                     (K <= 5120 && !fits64 && 4 * ctas64x128 >= 3 * sms)))
    return fits64 ? GemmConfig{GemmPath::fp8, 64, 64, 1, 8} : GemmConfig{GemmPath::fp8, 128, 64, 1, 8};
  return fp8_split_config(tiles_of(64), tiles, slices, sms);
}

/// 64 < M <= 128 from this K on: fp8_config (128-row tiles, or for few tiles unsplit 64-row
/// tiles up to K = 2048-5120 and split-K beyond); below it fp8_config_short_k.
constexpr int64_t kFp8MinK = 2048;

/// Path fp8 for 64 < M <= 128 with K < kFp8MinK (choose_gemm_config) where the small-M kernel
/// does not take the shape (small_m_kernel_wins): the smallest tile whose tiles fit one wave,
/// unsplit: 64 x 64 (8 warps), else 128 x 64 (12 warps), else the persistent 128 x 128. H200
/// tune of session 23 (bench/results/logs/tune-mid-short-k-session23-h200.log; us; the small-M
/// kernel's best candidate and the small-M rule's own choice, which that tune found 1.7-2x slower
/// than the best): 128x2880x512 64 x 64 5.86 (small-M best 6.22, rule 10.98), 128x4096x1024 64 x 64
/// 8.10 (9.26, 13.40), 128x3072x1536 64 x 64 9.33 (10.79, 16.07), 128x7168x1536 128 x 64 11.24
/// (15.25, 21.98), 96x7168x1024 128 x 64 9.29 (11.73, 16.25), 80x7168x1024 128 x 64 9.37 (best fp8
/// 9.36; 11.72, 16.10). Edges (tune-mid-edges-session23-h200.log): 128x1024x1024 (32 tiles) 7.15,
/// 128x2048x512 6.03, 128x8192x1024 128 x 64 9.63, 128x16384x1024 128 x 128 12.58: each the fastest
/// of the tune; 128x2112x1536 9.22 (small-M best 9.15), 72x2880x512 6.63 (6.27), 100x512x1024 (16
/// tiles) 7.71 (6.00; the small-M rule's choice there: 10.47). Until session 23 the small-M
/// kernel took these shapes (session 12: 128x2880x512 6.2 us against path fp8's 7.1). Since
/// session 54 it takes those with at most 62/132 of the SMs in 64 x 64 tiles from K = 1024 again
/// (small_m_kernel_wins: 128x1024x1024 on split 4, 6.24 us against 64 x 64's 6.52 on an H100).
GemmConfig fp8_config_short_k(int64_t M, int64_t N, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t n64 = ceil_div(N, 64), tiles64 = ceil_div(M, 64) * n64;
  if (tiles64 <= sms) return GemmConfig{GemmPath::fp8, 64, 64, 1, 8};
  if (ceil_div(M, 128) * n64 <= sms) return GemmConfig{GemmPath::fp8, 64, 128, 1, 12};
  return GemmConfig{GemmPath::fp8, 128, 128, 1, 12};
}

/// 32 < M <= 64: path fp8 where the weights have at least this many elements (N x K).
constexpr int64_t kFp8SmallMMinWeights = int64_t(10) << 20;

/// Path fp8 for 32 < M <= 64 (choose_gemm_config), on 64-row tiles: 64 x 64 (one consumer
/// warpgroup, 8 warps) or 64 x 128 (two 64 x 64 warpgroups, 12 warps). H200 tune of session 23
/// (bench/results/logs/tune-m64-fp8-splitk-session23-h200.log, every fp8 tile at split 1, 2,
/// 4 and 8 against the small-M kernel's best):
///   - up to one tile per SM and fewer than 32 slices (K <= 3968): 64 x 64 unsplit, once its tiles give
///     half the SMs one (64x7168x2048 10.95 us against the small-M kernel's 13.07; 5120, 6144
///     and 8192 x 2048 likewise; M = 40, 48 at 7168x2048 11.62, 11.15 against 12.60, 12.78);
///   - more 64 x 64 tiles than SMs: 64 x 128 unsplit (64x14336x2048 15.19 against 16.94 for
///     64 x 64 and the small-M kernel's 18.72);
///   - otherwise (long K or few tiles) fp8_split_for (split 2 or 4; fp8_split_config's 2..6 is
///     tuned for 64 < M <= 128 only) on both tiles, 64 x 64 on a tie: 64x7168x4096 64 x 128 s2
///     16.36 (small-M 19.94), 64x4096x4096 64 x 64 s2 14.96 (15.41), 64x3072x4096 64 x 128 s4
///     12.83 (13.28), 64x2112x7168 64 x 128 s4 15.90 (18.07).
/// Below 10 Mi weights the small-M kernel won: 64x4096x2048 (10.29 against 10.74),
/// 64x3072x1536, 64x2880x512, 32x4096x512 (8.68, 5.97, 5.56 against 9.14, 6.56, 5.93), except
/// 64x7168x1024 (8.50 against 9.32, left out of the rule). At M <= 32 the 64-row tile is half
/// empty: M = 32 won 7168x2048 and 2112x7168 (11.06 against 11.96, 15.74 against 16.20) but
/// lost 5120x2048 and 4096x4096 (10.76 against 10.43, 14.98 against 13.43; tune-edges-
/// session23-h200.log); M = 24 and 17 at 7168x2048 were even (11.26 / 11.55 against 11.58 /
/// 11.53); M = 16 lost by 35-50% (16x2112x7168 15.73 against 10.66). So M > 32 only.
GemmConfig fp8_config_small_m(int64_t N, int64_t K, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t slices = ceil_div(K, 128), t64 = ceil_div(N, 64), t128 = ceil_div(N, 128);
  if (t64 > sms) return GemmConfig{GemmPath::fp8, 128, 64, 1, 12};
  if (slices < 32 && 2 * t64 >= sms) return GemmConfig{GemmPath::fp8, 64, 64, 1, 8};
  const int split64 = fp8_split_for(t64, slices, sms), split128 = fp8_split_for(t128, slices, sms);
  if (split128 > split64) return GemmConfig{GemmPath::fp8, 128, 64, split128, 12};
  return GemmConfig{GemmPath::fp8, 64, 64, split64, 8};
}

void check_shape(int64_t M, int64_t N, int64_t K, const char* fn) {
  constexpr int64_t kMax = int64_t(1) << 40;  // far beyond any matrix that fits a GPU
  if (M < 1 || N < 1 || K < 1 || M > kMax || N > kMax || K > kMax) {
    throw InvalidArgument(std::string("mxfp4::") + fn + ": M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                          ", K = " + std::to_string(K) + " must each be in [1, 2^40]");
  }
}

/// Small and medium M (<= 128, and up to 512 with few tiles: small_m_kernel_wins): the
/// weight-streaming kernel (src/cuda/gemm_fused_kernel.cuh), tokens in CTAs of 64 along grid.y. It
/// is bound by latency (docs/perf-notes.md), so the grid should hold one to two CTAs per SM and
/// every SM many warps, in one wave:
///   - M <= 64: block_n 128 (8 slabs) when M <= 8 and N is wide enough to fill the GPU, else
///     64; split_k doubles up to 8 (at most one per 64-wide K chunk) until the grid reaches
///     two 4-slab CTAs per SM (one 8-slab CTA) for M <= 16, half that for M > 16 (the cluster
///     reduction of a 32- or 64-token tile costs more than the extra CTAs gain); 2 (or, with
///     4 slabs, 4) warps per slab when each CTA still has >= 8 (>= 16) K chunks (M > 16: split
///     halved until each rank has >= 4 K chunks (and with <= 8 K chunks split 2 only while its
///     CTAs fit one per SM), 2 warps per slab from 4 chunks, 4 only while
///     the grid stays within 3/4 of the SMs), halved while the grid's warps exceed 16 per SM
///     (launch bounds cap a thread at 128 registers, so 16 warps per SM always fit: more would
///     run a second, mostly idle wave); but for M > 16 split 2 with 16 warps where its pairs
///     fill 7/8 of the SMs to one wave and each CTA has >= 16 K chunks (at 132 SMs: N =
///     3649..4096 and K > 1984, e.g. N = 4096, K >= 2048);
///   - M > 64: 64-row CTAs, split_k doubling until the grid reaches 128 of 132 SMs; 16 warps
///     where the grid fits one CTA per SM (3/4 of the SMs for clusters of 4 and 8) and each CTA
///     has >= 8 K chunks, else 8.
/// Path fused (A quantized inside the GEMM, one launch) when M <= 8 and a CTA quantizes at
/// most 16 row-chunks of A (M x K chunks per CTA); else A is quantized once first (splitk).
GemmConfig small_m_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  GemmConfig cfg;
  const int64_t chunks = ceil_div(K, 64);
  const int64_t m_tiles = ceil_div(M, 64);
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t max_split = std::min<int64_t>(8, chunks);
  // split_k doubles (at most one CTA per 64-wide K chunk) until `tiles` CTAs x split reach `target`.
  auto split_for = [&](int64_t tiles, int64_t target) {
    int split = 1;
    while (split < max_split && tiles * split < target) split *= 2;
    return std::min<int>(split, int(max_split));
  };
  if (m_tiles > 1) {
    // Two token CTAs per weight tile: 64-row CTAs, about one CTA per SM (measured best for 128
    // x 2112 x 7168: split 2, 32 us against 49 us for split 8). 16 warps (4 per slab) only
    // when the grid fits one CTA per SM and each CTA has >= 12 K chunks (8 since session 54,
    // below), else 8. Session 23 tunes (tune-mid-short-k-, tune-mid-edges-session23-h200.log;
    // session 13's tune-m128-session13-h200.log), 16 against 8 warps at the rule's split: 128x2112x7168
    // 23.38 against 30.67 us, 128x2112x1536 9.15 / 10.54 (132 CTAs); 128x7168x1536 21.98 /
    // 15.46, 128x2880x512 10.98 / 7.09, 96x4096x4096 27.81 / 20.30 (more CTAs than SMs: 16
    // warps per SM at 128 registers is the whole register file, so a second CTA waits);
    // 100x512x1024 10.47 / 6.41 (2 K chunks per CTA).
    // Session 54 (H100 tunes, bench/results/logs/tune-m128-*-session54-h100.log, 64 < M <= 128
    // with 8-62 tiles, K = 1024-7168): past split 2 the target is 128 of 132 SMs, the largest
    // pair grid measured in one wave (fp8_split_grid_limit), not all 132: 32 tiles split 4 (128
    // CTAs) against split 8 (256, two per SM) at 128x1024x2048 7.67 / 8.14 us, 128x1024x3072
    // 9.29 / 11.97, 128x1024x4096 10.82 / 13.24; 64 tiles split 2 (128 CTAs, 16 warps) against
    // split 4 (256) at 128x2048x2048 9.27 / 12.13. The first step (split 1 -> 2) keeps the
    // target of 132: with 128-131 tiles split 2 (two 8-warp CTAs per SM) ran 20.1-20.4 us at
    // 96x4096x4096 against unsplit 16-warp CTAs' 24.4-24.6 (H200 tunes of sessions 12-19). 16
    // warps (one CTA per SM) only where the grid fits one wave of its clusters (split 4 and 8: 3/4
    // of the SMs, fp8_split_grid_limit's measurement for ~200 KB CTAs): 128x512x7168 split 8 (128
    // CTAs) 11.01 us on 8 warps against 16.51 on 16, 128x1024x4096 split 4 (128) 10.82 / 16.40;
    // 128x256x7168 split 8 (64) 9.39 on 16 warps against 10.63. From 8 K chunks per CTA (was 12;
    // A/B of call 7, ab-w16-call7-session54-h100.txt: 128x256x4096 split 8, 64 CTAs, 6.98 us
    // against 7.74 on 8 warps, 128x256x5120 8.10 / 8.96, 192x256x4096 7.87 / 8.35, -0.33 to -0.86
    // on 6 shapes; at 6 chunks the tunes were split: 72x256x3072 5.97 on 8 warps against 6.47,
    // 128x256x3072 7.01 against 6.59 on 16).
    cfg.block_n = 64;
    const int64_t tiles = ceil_div(N, 64) * m_tiles;
    int split = 1;
    while (split < max_split && tiles * split < (split == 1 ? sms : fp8_split_grid_limit(2, sms))) split *= 2;
    cfg.split_k = std::min<int>(split, int(max_split));
    const int64_t ctas = tiles * cfg.split_k;
    const bool one_per_sm_fits = cfg.split_k >= 4 ? ctas <= fp8_split_grid_limit(4, sms) : ctas <= sms;
    cfg.warps = one_per_sm_fits && ceil_div(chunks, cfg.split_k) >= 8 ? 16 : 8;
  } else {
    // Measured on H200 (session 3, docs/perf-notes.md; tune times of old -> new choice):
    //   - split target one CTA per SM for M > 16: 64x2880x512 split 8 -> 4: 9.07 -> 7.75 us,
    //     64x3072x1536 8 -> 4: 12.57 -> 11.50, 32x4096x512 8 -> 4: 7.88 -> 7.19; M = 16 keeps
    //     two per SM (16x3072x1536: split 8 7.80, split 4 8.16-8.52);
    //   - at most 16 warps per SM: 1x7168x2048 (448 CTAs) 8 -> 4 warps: 14.13 -> 10.82 us,
    //     64x7168x2048 (224 CTAs of 8 slabs, 8 chunks each) 16 -> 8 warps: 23.95 -> 17.86.
    // Session 6 (cp.async weights, tune-small-m-session6-h200.log): 8 slabs only for M <= 8
    // (1x7168x2048 fused 128 s4 w8 9.69 us against 64 s4 w4 10.76; 64x7168x2048 64 s2 w8
    // 15.42 against 128 s4 w8 16.40), and their split target is half the CTAs (same warps).
    // Session 7 (M > 16 on the wgmma K loop, tune-small-m-m64-session7-h200.log): at least 4
    // K chunks per rank, and 2 warps per slab from 4 chunks per CTA (64x2880x512 s4 w4 7.34 ->
    // s2 w8 7.00 us, 32x4096x512 s4 w4 7.18 -> s2 w8 7.01; 64x3072x1536 keeps s4).
    cfg.block_n = M <= 8 && ceil_div(N, 128) * max_split >= 2 * sms ? 128 : 64;
    const int64_t target = (M > 16 ? sms : 2 * sms) * 64 / cfg.block_n;
    const int64_t n_tiles = ceil_div(N, cfg.block_n);
    // M > 16 (the wgmma K loop): one CTA of 16 warps per SM where split 2's pairs fill one
    // wave (7/8 of the SMs up to fp8_split_grid_limit) with >= 16 K chunks per CTA. Session 24
    // tunes (tune-small-m-off-, tune-small-m-rule24-session24-h200.log; session 23's
    // tune-small-m-, tune-edges-): N = 4096 (128 CTAs), K = 2048 at M = 20, 40, 48, 56, 64:
    // split 2 x 16 warps 8.76, 9.90, 10.11, 10.45, 10.29 us against split 4 x 8 warps (two
    // CTAs per SM) 9.97, 14.24, 14.61, 14.51, ~14.5; 24x4096x7168 20.00 against 27.21;
    // 32x4096x4096 13.43 (best of its tune). With fewer CTAs the 8-warp pairs per SM win:
    // 40x3584x2048 (112 CTAs) 9.91 against 8.90, 64x3072x1536 (96, 12 chunks) 8.96 against 8.72.
    // At 132 SMs: 116..128 CTAs, i.e. 58..64 tiles of 64 rows (N = 3649..4096), and chunks >= 32
    // (K > 1984). Only N = 4096 was measured inside that range (N = 3649..4032 follows the bound).
    const int64_t pairs = 2 * n_tiles;
    if (M > 16 && pairs <= fp8_split_grid_limit(2, sms) && 8 * pairs >= 7 * sms && chunks >= 32) {
      cfg.split_k = 2, cfg.warps = 16;
    } else {
      cfg.split_k = split_for(n_tiles, target);
      // M > 16: halve until every rank has >= 4 K chunks. The result is a power of two:
      // split_for doubles from 1 and caps at a non-power of two only for chunks < 8, where this
      // loop ends at 1.
      while (M > 16 && cfg.split_k > 1 && 4 * int64_t(cfg.split_k) > chunks) cfg.split_k /= 2;
      // M > 16 with <= 8 K chunks (split <= 2 here): split 2 only while its CTAs fit one per SM.
      // Session 42 tune on an H100 (tune-splitk-k512-call3-session42-h100.log): 64x7168x512
      // (112 tiles) split 1 5.77 us against split 2 6.72; 64x2880x512 (45) split 2 best, 5.35;
      // 32x4096x512 (64, 128 CTAs) split 1 4.85 against 5.00, kept at 2 (session 29's H200 tune).
      if (M > 16 && chunks <= 8 && n_tiles * cfg.split_k > sms) cfg.split_k = 1;
      const int64_t chunks_per_cta = ceil_div(chunks, cfg.split_k);
      const int slabs = cfg.block_n / 16;
      const int64_t two_per_slab = M > 16 ? 4 : 8;  // K chunks per CTA for 2 warps per slab
      // Four warps per slab for M > 16 only while the grid stays within 3/4 of the SMs: the
      // 16-warp CTA of 32 or 64 tokens holds its SM alone, and 132 CTAs in clusters of 4 ran
      // in two waves (20x2112x7168: split 4 x 16 warps 22.53 us against 8 warps 16.07, session
      // 24 tune; fp8_split_grid_limit has the cluster measurements).
      const bool four_fit = M <= 16 || 4 * n_tiles * cfg.split_k <= 3 * sms;
      int per_slab = chunks_per_cta >= 16 && slabs == 4 && four_fit ? 4 : chunks_per_cta >= two_per_slab ? 2 : 1;
      while (per_slab > 1 && n_tiles * cfg.split_k * slabs * per_slab > 16 * sms) per_slab /= 2;
      cfg.warps = slabs * per_slab;
    }
  }
  cfg.block_m = int(std::min<int64_t>(64, ceil_div(M, 8) * 8));
  // In-kernel quantization only while it is a small share of each CTA's work: otherwise the
  // separate quantizer (overlapped with the weight stream by PDL) measured faster. Session 6
  // tune: 1x7168x2048 (8 chunks per CTA) fused 9.69 us against splitk 10.10, 1x2880x2880 (6)
  // 7.87 against 7.89, 4x2880x512 (1) 5.23 against 5.98; 8x2112x7168 (14) 15.87 against 12.21.
  cfg.path = M <= 8 && M * ceil_div(chunks, cfg.split_k) <= 16 ? GemmPath::fused : GemmPath::splitk;
  return cfg;
}

/// 64 < M <= 512 with few 64 x 64 tiles (ceil(M / 64) x ceil(N / 64)): the small-M kernel
/// (small_m_config, split-K over 64-row CTAs) rather than path fp8:
///   - M <= 128 where the tiles give at most one SM in 8 a tile (any K; session 23:
///     100x512x1024 6.41 us against path fp8's 7.71);
///   - M <= 128 with K >= 1024 where they give at most 62 of 132 SMs a tile up to K = 4096, or
///     where small_m_config splits K 8 ways (4 x tiles below its 128-CTA target: < 32 tiles) at
///     any longer K;
///   - 128 < M <= 512 (the largest M tuned) on the same two grids from K = 2048.
/// Session 54's H100 tunes (bench/results/logs/tune-m128-k2048-smalln-call1-, tune-m128-smalln-
/// call2-, tune-m128-edges-call3-, tune-m256-fewtiles-call4- and tune-m128-longk-call4-
/// session54-h100.log; M = 72-384, N = 256-2048, paths fp8 and splitk), the small-M kernel's
/// best against path fp8's best, us: 8 tiles (N = 256) 5.36 / 8.01 at 72x256x2048, 9.39 / 11.42
/// at 128x256x7168; 16 tiles 8.12 / 10.23 at 128x512x4096; 32 tiles 7.67 / 9.05 at
/// 128x1024x2048, 10.82 / 11.21 at 128x1024x4096, 5.79 / 6.44 at 72x1024x1024; 48 tiles 8.90 /
/// 10.81 at 72x1536x3072; 62 tiles (N = 1984) 8.75 / 9.43 at 128x1984x2048, 12.09 / 12.93 at
/// 128x1984x4096; split 8 at long K: 30 tiles 11.04 / 13.26 at 72x960x7168, 24 tiles 9.94 /
/// 11.48 at 128x768x5120; M > 128: 192x256x7168 10.16 / 12.33, 256x256x4096 9.02 / 10.76,
/// 384x256x7168 13.55 / 15.05, 384x512x4096 12.05 / 12.97, 256x512x2048 7.82 / 9.47. Path fp8
/// won with split 4 (32-62 tiles) at K >= 6144 (128x1024x7168 15.71 / 13.82, 128x1024x6144
/// 14.20 / 12.83, 256x512x7168 16.52 / 14.10), at 64 tiles (128x2048x1024 6.84 / 6.64) and was
/// even at K = 512-768 (128x1024x768 5.96 / 5.90) and, for M > 128, at K = 1024 (192x512x1024
/// this rule's split 8 6.81 / 6.54). The A/B of the first two clauses
/// (ab-midsm-call3-session54-h100.txt, against path fp8's choices of then): -0.69 to -3.05 us
/// on 14 shapes (72x256x2048 5.50 against 8.55, 100x640x4096 8.35 / 10.75, 128x1984x4096 12.41
/// / 14.62), 128x1536x1024 +0.03; of the rest (ab-fewt-call6-session54-h100.txt): -0.79 to
/// -13.27 us on 13 shapes (192x256x7168 10.33 against path fp8's 64 x 64 23.60); M = 385-512
/// (ab-m512-call8-session54-h100.txt, against M <= 384): -1.29 to -2.61 on 5 shapes (448x256x7168
/// 15.14 / 16.43, 416x128x6144 11.28 / 13.88).
bool small_m_kernel_wins(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t n64 = ceil_div(N, 64);
  if (M > 512 || n64 >= sms) return false;  // N up to 2^40: no overflow below
  const int64_t tiles64 = ceil_div(M, 64) * n64;
  const bool split8 = 4 * tiles64 < fp8_split_grid_limit(2, sms);  // small_m_config's split target
  const bool few = 132 * tiles64 <= 62 * sms;
  if (M <= 128 && 8 * tiles64 <= sms) return true;
  return K >= (M <= 128 ? 1024 : 2048) && (split8 || (few && K <= 4096));
}

/// Path gemv (src/cuda/gemm_gemv.cu) for M <= 16 while the quantization of A that every CTA
/// repeats stays small: K chunks <= 112 (K <= 7168, the longest measured); per CTA, rows x K
/// chunks <= 256, rows = the token rows it quantizes (gemv_tile_rows: 1, 2, 4, 8 or 16), or
/// <= 448 with one token tile (rows <= 8) where N has >= 256 slabs of 16 rows (session 40); over
/// the grid CTAs x rows x K chunks <= 2^16; and where its shared memory fits. Slabs of 16 rows per CTA S (block_n =
/// 16 S): the largest of 4, 2, 1 that leaves at least 2/3 of the SMs a CTA; 16 warps, or 8 for
/// S = 1 with fewer than 64 K chunks. Session 16 tunes (bench/results/logs/
/// tune-gemv-slabs-session16-h200.log, then with the bf16x2 quantizer
/// tune-decode-qdq-session16-h200.log and tune-gemv-m16-session16-h200.log; us, the best gemv
/// configuration; CTAs x rows x K chunks in brackets):
///   - one tile: gemv won 1x7168x2048 (S 4, 3584; 6.24, session 15's S = 1: 7.21), 2x7168x2048
///     (S 4, 7168; 6.56 vs fused 8.74), 4x7168x2048 (S 4, 14336; 6.87 vs fused 9.22),
///     8x7168x2048 (S 4, 28672; 8.26 vs splitk 9.42), 8x4096x1024 (S 2, 16384; 4.23 vs splitk
///     5.88), 4x2112x7168 (S 1, rows x K chunks 448, 59136; 9.91 vs splitk 10.50), 1x2880x2880
///     (S 2), 2x2880x2880, 4x2880x512 and 8x2880x512 (S 2), 1x2112x7168 (S 1, 14784; 6.43), and
///     lost 8x2112x7168 (896 per CTA, 118272; 14.22 vs splitk 10.45);
///   - two tiles: gemv won 16x2880x512 (128 per CTA; 4.27), 16x4096x1024 (256; 5.95) and
///     12x7168x1024 (256; 6.91), and lost 16x3072x1536 (384; 7.84 vs splitk 6.36),
///     16x2112x1536 (384; 6.90 vs 5.83) and 9x2880x2880 (720; 11.63 vs 8.11).
/// Fewer CTAs than 2/3 of the SMs lost every time (1x2112x7168 at S 2: 9.17). Longer K than
/// 7168 was not measured.
/// Session 38 (H100 tunes, bench/results/logs/tune-gemv-*-session38-h100.log; the small-M
/// kernel had gained ~1.5 us since session 16): with one token tile the limit went 448 -> 256.
/// Of the shapes between, the small-M kernel's choice won 4x2112x7168 (9.01 against gemv's
/// 9.69), 3x2880x7168 (10.75 / 11.89), 8x2880x2880 (7.04 / 8.01), 6x7168x2880 (10.18 /
/// 10.36) and 8x7168x3584 (11.55 / 12.30), and lost 4x4096x5120 (10.96 / 9.55), 8x4096x3072
/// (8.54 / 8.35) and 4x7168x7168 (17.52 / 17.32): geomean 2.6% faster. Two token tiles stay at
/// 256: there the small-M kernel's choice lost 16x4096x1024 (7.97 against gemv's 6.00) and won
/// 12x7168x1024 (6.52 / 6.88). Not measured on an H200; `mxfp4 tune` overrides per GPU.
/// Session 39 (H100, bench/results/logs/tune-gemv-m1-call7-session39-h100.log): at M <= 2 the
/// K loop is bound by its decode and MMAs (docs/perf-notes.md), so fewer slabs per CTA win
/// where S leaves SMs idle: for one or two token rows S steps down further until every SM
/// has a CTA, to 2 below 64 K chunks and to 1 above. Measured against the 2/3 rule:
/// 1x7168x2048 6.08 against 6.90 (S 2 against 4), 1x8192x2048 6.29 / 7.22, 2x7168x2048 6.44 /
/// 7.15, 1x4096x4096 6.50 / 7.47 (S 1 against 2), 2x4096x4096 7.27 / 7.56; unchanged and best
/// at 1x2112x7168, 1x14336x2048, 1x3584x2048 (S 1 would take 4.29 against 4.07: the floor of
/// 2 below 64 chunks), 1x5120x5120 and 1x2880x2880; 1x4096x1024 3.33 (best 3.21). Not
/// measured on an H200 (session 16 had 1x7168x2048 at 6.24 with S 4 and 6.37 with S 2 there,
/// with the code of then).
/// Session 40 (H100, bench/results/logs/tune-gemv-limit-call2-session40-h100.log; gemv's K
/// loop had lost ~20 instructions per chunk, 6-7% off its calls): between 256 and 448 per CTA,
/// gemv against the small-M kernel's best won where N has >= 256 slabs: 4x7168x7168 15.91 /
/// 17.38, 4x4096x5120 9.00 / 11.00, 6x7168x2880 9.79 / 10.11, 8x4096x3072 8.11 / 8.43, and
/// tied 8x7168x3584 (11.46 / 11.46); it lost where N has fewer (S 1 or 2 leaves CTAs of all K
/// on fewer SMs): 4x2112x7168 9.08 / 8.98, 3x2880x7168 10.93 / 10.80, 8x2880x2880 7.72 / 6.94.
/// No shape between 180 and 256 slabs was measured, so the threshold's place there is a
/// choice. Measured on 132-SM GPUs only; `mxfp4 tune` overrides per GPU.
std::optional<GemmConfig> gemv_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  const int64_t chunks = ceil_div(K, 64), slabs = ceil_div(N, 16);
  if (M > 16 || chunks > 112) return std::nullopt;
  const int64_t rows = gemv_tile_rows(M), rounds = rows * chunks;  // A's quantization per CTA
  if (rounds > (rows <= 8 && slabs >= 256 ? 448 : 256)) return std::nullopt;  // session 40
  const int64_t min_ctas = std::max<int64_t>(2 * int64_t(dev.sm_count) / 3, 1);
  int per_cta = 4;
  while (per_cta > 1 && ceil_div(slabs, per_cta) < min_ctas) per_cta /= 2;
  if (rows <= 2) {  // every SM a CTA where it can (session 39), S = 1 only for K >= 4096
    while (per_cta > (chunks < 64 ? 2 : 1) && ceil_div(slabs, per_cta) < int64_t(dev.sm_count)) per_cta /= 2;
  }
  if (ceil_div(slabs, per_cta) * rounds > (int64_t(1) << 16)) return std::nullopt;  // N <= 2^40: no overflow
  const GemmConfig c{GemmPath::gemv, 16 * per_cta, 8, 1, per_cta > 1 || chunks >= 64 ? 16 : 8};
  if (!gemm_config_problem_for_shape(c, M, K).empty()) return std::nullopt;
  return c;
}
}  // namespace

/// M <= 16 where A's quantization in every CTA stays small: path gemv (gemv_config). 32 < M <=
/// 64 with N x K >= 10 Mi weights: the FP8 wgmma path on 64-row tiles (fp8_config_small_m,
/// session 23). Other M <= 64: the small-M kernel (small_m_config above). 64 < M <= 128: the
/// small-M kernel where its 64 x 64 tiles are few (small_m_kernel_wins, session 54); else with K
/// < 2048 path fp8 on the smallest tile that fits one wave (fp8_config_short_k, session 23),
/// with longer K the FP8 wgmma path (fp8_config). gemm() runs config_without_fp8 instead of
/// path fp8 when the weights have no FP8 image.
/// Until session 18 the small-M kernel kept 64 < M <= 128 where its grid was one full wave
/// (session 12: 128x2112x7168, 132 CTAs, 23.5 us against path fp8's 26.3); with chains and
/// 12-warp 128 x 128 tiles path fp8 wins there too (session 19 tune, bench/results/logs/
/// tune-fp8-mid-session19-h200.log: 22.05 us against the small-M kernel's 23.2), as it did
/// where the small-M grid spills into a second wave: 128x1024x8192 (256 CTAs) 20.6 us against
/// 28.6, 96x4096x4096 (256) 19.4 against 27.9 (session 13).
GemmConfig choose_gemm_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  check_shape(M, N, K, "choose_gemm_config");
  if (M > 64 && small_m_kernel_wins(M, N, K, dev)) return small_m_config(M, N, K, dev);
  if (M > 128) return fp8_config(M, N, K, dev);
  if (const auto gemv = gemv_config(M, N, K, dev)) return *gemv;
  if (M <= 64) {
    const bool fp8 = M > 32 && N >= ceil_div(kFp8SmallMMinWeights, K);  // N x K >= 10 Mi, no overflow
    return fp8 ? fp8_config_small_m(N, K, dev) : small_m_config(M, N, K, dev);
  }
  return K >= kFp8MinK ? fp8_config(M, N, K, dev) : fp8_config_short_k(M, N, dev);
}

GemmConfig config_without_fp8(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev) {
  check_shape(M, N, K, "config_without_fp8");
  return M > 128 ? GemmConfig{GemmPath::tiled, 128, 128, 1, 8} : small_m_config(M, N, K, dev);
}

GemmConfig config_for_weights(const GemmConfig& chosen, bool fp8_image, int64_t M, int64_t N, int64_t K,
                              const DeviceInfo& dev) {
  return chosen.path == GemmPath::fp8 && !fp8_image ? config_without_fp8(M, N, K, dev) : chosen;
}

}  // namespace mxfp4
