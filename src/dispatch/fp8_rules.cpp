// The dispatcher's path fp8 rules (src/dispatch/rules.hpp; docs/dispatch.md, docs/fp8-path.md):
// tile shape, split-K and cluster size of the FP8 wgmma path from (M, N, K) and the SM count.
// No CUDA calls here, so it is unit-tested on the CPU (tests/cpu/test_dispatch_fp8.cpp).
#include <algorithm>
#include <cmath>

#include "dispatch/rules.hpp"

namespace mxfp4::rules {
namespace {
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
/// Session 55: a grid past 3/4 of the SMs, up to what the cluster measurement holds resident
/// (fp8_cluster_wave: 117 of 132 SMs in clusters of 3, 120 of 4, 110 of 5, 102 of 6), where each
/// CTA gets at least kLongSlices slices, not on 128 x 64 tiles past split 4, and only with at
/// least 9/8 the CTAs of the best grid within 3/4. H100 A/B (call 2,
/// bench/results/logs/ab-cw-call2-session55-h100.txt; new against 3/4): 128x2176x7168 128 x 64
/// split 3 (102 CTAs) 16.42 us against 128 x 128 split 5's (85) 17.40, 128x1600x7168 128 x 64
/// split 4 (100) 15.24 / 128 x 128 split 6's 16.71, 128x4352x4608 128 x 128 split 3 (102)
/// 18.30 / split 2's 19.39, 192x1280x7168 128 x 128 split 5 (100) 17.92 / 128 x 64 split 2's
/// 19.31; 128 x 64
/// split 5 lost (72x1344x8192 105 CTAs 15.65 against split 4's 15.39, 192x704x7168 110 CTAs 15.32
/// / 14.83) and 2% more CTAs did not pay (128x3136x7168 128 x 128 split 4, 100 CTAs, 19.64
/// against 128 x 64 split 2's 98, 19.54). Tunes (tune-fp8-m256-clusterfit-call1-session55-h100,
/// tune-fp8-m256-midtiles-call10-session54-h100): shorter K per CTA lost or gained little
/// (192x1600x4096 split 4, 8 slices: 15.66 against 15.09; 256x1280x6144 split 5, 9.6 slices:
/// 17.92 / 17.77).
/// Session 57: where the wave grid's CTAs get at least kLongWaveSlices slices, 21/20 the CTAs
/// suffice (H100 A/B, bench/results/logs/ab-ratiolong-call2-session57-h100.txt, 30 shapes drawn
/// from the 1,456 this changes: all faster, by 0.20-3.68 us; 128 x 128 split 4 against 128 x 64
/// split 2 at 5-11% more CTAs, 552x576x14336 34.87 against 38.55, and 128 x 64 split 4 against 128
/// x 128 split 6 at N = 320, 568x320x10752 24.38 / 25.47). At 13-17 slices per CTA the same pair
/// was mixed (call 1, ab-ratio-call1-session57-h100.txt: 552x704x6656 -0.37 us, 640x576x7680
/// +0.70). Session 58 moved the bound from 20 to 18 slices for a wave grid of split 4
/// (kLongWaveSlicesSplit4; H100 A/Bs, random shapes: at 18-19 slices 128 x 128 split 4 over 128 x
/// 64 split 2 faster on all 7 of ab-ratio13-call1-session58-h100.txt, by 0.04-1.14 us, and on all
/// 24 of ab-ws18-call4-session58-h100.txt, by 0.19-1.77, 609x528x9952 27.74 against 29.51; at
/// 13-17 slices 7 of 15 slower, -0.07..-0.31). Only split 4 was measured there: at 18 slices the
/// same bound would also move 128 x 64 split 3 to 128 x 128 split 5 (132 SMs: M = 1281-1408, N =
/// 129-192) and, at 78 SMs, to split 6 (review of a582615), so other splits keep 20.
/// Session 58: below that, the grid within 3/4 counts only its useful CTAs where its 128-column
/// tiles reach past N (CTAs x the share of those columns inside N, in 64-column units), so that
/// 128 x 64 split 4 takes over from 128 x 128 split 6 at N = 257-320 (at 132 SMs M = 513-640, K =
/// 5505-9088, where the 21/20 rule gives the same from K = 9089; at 144 SMs also 128 x 128 split 5
/// -> 128 x 64 split 3 at M = 257-384, N = 769-832, K = 4097-6784, a class not measured on any GPU) (H100 A/Bs, random shapes at N = 272-320:
/// ab-ratio13-call1-session58-h100.txt, all 6 faster by 0.38-1.62 us, 576x320x7168 19.15
/// against 20.77; ab-pad98-call2-session58-h100.txt, all 12 faster by 0.36-1.47, 613x320x7040
/// 19.42 / 20.90). The wave grid keeps its raw count: weighting it too moved N = 400-448 from
/// 128 x 128 split 4 to 128 x 64 split 2, which lost 9 of 12 (873x416x9120 30.84 against 29.10).
constexpr int64_t kLongSlices = 11;
constexpr int64_t kLongWaveSlices = 20;
constexpr int64_t kLongWaveSlicesSplit4 = 18;
GemmConfig fp8_split_config(int64_t tiles64, int64_t tiles128, int64_t slices, int64_t sms) {
  // The split with the most CTAs within each candidate's limit (128 x 64 first: it keeps ties).
  auto most_ctas = [&](bool cluster_wave, int64_t& best_ctas) {
    GemmConfig best{GemmPath::fp8, 64, 128, 1, 12};
    best_ctas = 0;
    for (const int block_n : {64, 128})
      for (int split = 2; split <= 6; ++split) {
        const int64_t ctas = (block_n == 64 ? tiles64 : tiles128) * split;
        const bool wave = cluster_wave && slices >= kLongSlices * split && (block_n == 128 || split <= 4);
        // Session 59 (H100): pairs of 128 x 128 tiles up to the SM count, past the 128 of 132
        // that fp8_split_grid_limit and fp8_cluster_wave keep for pairs (65 tiles: 130 CTAs ran
        // in one wave). A/B ab-pair132-call2-session59-h100.txt, 21 random shapes of the class
        // (64 x 128 unsplit -> 128 x 128 split 2 at M 513-640 x N 1537-1664 and the transpose,
        // K >= 6144): all faster by 0.92-17.42 us, 603x1600x14880 61.79 against 79.21,
        // 625x1664x7104 29.92 / 30.84. Only 128 x 128: the other pair grids were not measured.
        const int64_t limit = block_n == 128 && split == 2 ? sms
                              : wave                       ? fp8_cluster_wave(split, sms)
                                                           : fp8_split_grid_limit(split, sms);
        if (ctas <= limit && slices >= 4 * int64_t(split) && ctas > best_ctas)
          best = GemmConfig{GemmPath::fp8, block_n, 128, split, 12}, best_ctas = ctas;
      }
    return best;
  };
  int64_t ctas = 0, wave_ctas = 0;
  const GemmConfig within = most_ctas(false, ctas), wave = most_ctas(true, wave_ctas);
  const int64_t long_slices = wave.split_k == 4 ? kLongWaveSlicesSplit4 : kLongWaveSlices;
  if (slices >= long_slices * int64_t(wave.split_k)) return 20 * wave_ctas >= 21 * ctas ? wave : within;
  if (within.block_n == 64) return 8 * wave_ctas >= 9 * ctas ? wave : within;
  // 8 wave_ctas >= 9 ctas x tiles64 / (2 tiles128), in double: with SM counts up to 2^31 the
  // products would overflow int64_t. They are exact below 2^53; above, the two sides differ
  // relatively by at least 1 / (96 ceil(N / 128)) (no reachable input makes them equal), far more
  // than the rounding (review of 196f0d2: 386M inputs at 1-1024 SMs agree with the int128 form).
  return 16.0 * double(wave_ctas) * double(tiles128) >= 9.0 * double(ctas) * double(tiles64) ? wave : within;
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

/// M > 128 with few tiles: split-K from this K on also where 64 x 64 tiles would fill more than
/// 3/4 of the SMs, or where the split has fewer CTAs but streams fewer bytes per CTA (session 55;
/// fp8_config).
constexpr int64_t kFp8LongK = 6144;

/// M > 128 with few tiles: from this K on (below kFp8LongK) 128 x 64 split-K also where 64 x 64
/// tiles would fill more than 3/4 of the SMs, up to one wave (session 57; fp8_config).
constexpr int64_t kFp8MidK = 5120;

/// M > 128 with few tiles: from this K on (below kFp8MidK) the same where the split grid has at
/// most 7/8 of the SMs (session 58; fp8_config).
constexpr int64_t kFp8MidKFewCtas = 4608;
}  // namespace


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
/// largest pair grid measured in one wave; since session 59 the SM count for 128 x 128 pairs),
/// <= 3/4 of it for larger clusters (~200 KB CTAs: a
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
    // Session 55 (H100 tunes tune-fp8-m256-clusterfit-call1-session55-h100.log and call 10's above):
    // from K = 6144 split-K also where 64 x 64 tiles would fill more of the SMs, up to the most tuned
    // (198 CTAs of 64 x 64, 3/2 of the SMs): 256x1600x7168 128 x 64 split 2 19.69 us against 64 x
    // 64's 24.49, 256x2112x7168 128 x 128 split 3 21.59 / 24.46, 320x1536x7168 split 3 22.24 / 25.86,
    // 384x2112x7168 split 2 27.48 against 128 x 64's 29.57; at K = 4096 64 x 64 still won
    // (256x2112x4096 15.73 against 128 x 64 split 2's 16.40, 128 x 128 split 3's 17.23). A/B (call 2,
    // ab-cw-call2-session55-h100.txt): 256x2112x7168 21.52 against 24.73, 320x1280x6144 128 x 64
    // split 2 20.18 / 22.76, 384x1600x7168 128 x 128 split 3 23.87 / 28.18. There a split with fewer
    // CTAs than the unsplit grid is taken only where each CTA streams at most 4/5 of the unsplit
    // CTA's operand bytes ((rows + columns) x K / split, against 64 x 64's 128 x K or 64 x 128's 192
    // x K): call 3 (ab-cw2-call3-session55-h100.txt) had 160x2496x6144 128 x 128 split 2 (80 CTAs,
    // the same bytes per CTA as 64 x 64's 117) at 22.39 us against 20.93, while 256x2112x7168 (split
    // 3 in 102 CTAs against 132, 2/3 of the bytes) won.
    // Session 57 (H100): at kFp8MidK <= K < kFp8LongK also where 64 x 64 tiles fill more than 3/4
    // of the SMs but fit one wave, and only on 128 x 64 tiles (the K = 5120 tune,
    // tune-fp8-m256-k5120-call1-session57-h100.log: 320x1280x5120 128 x 64 split 2 17.89 us
    // against 64 x 64's 19.41). A/B of split-K wherever 64 x 64 fits, at 4096 <= K < 6144
    // (ab-fits64-call2-session57-h100.txt, 30 drawn shapes and the tune's three): 128 x 64 split
    // 2 won all 13 at K >= 5120 by 0.72-2.22 us (792x512x5632 22.09 against 24.31) and was mixed
    // at K = 4096-4608 (-0.46..+1.15); 128 x 128 split 3 (M = 144-192, two 128-row tiles) lost
    // 7 of 8 (144x2368x4608 18.14 against 16.96).
    const bool long_k = K >= kFp8LongK;
    const bool limit4 = ctas64 <= fp8_split_grid_limit(4, sms);
    // Session 58 (H100): from kFp8MidKFewCtas also where the split grid has at most 7/8 of the
    // SMs (A/Bs bench/results/logs/ab-mid4096-call1-session58-h100.txt and ab-mid4608-call2-
    // session58-h100.txt, random shapes): at K = 4608-5088 with <= 115 CTAs all 31 faster, by
    // 0.20-2.12 us (324x1088x5088 17.79 against 19.91), session 57's three at K = 4608 as well;
    // above 115 CTAs 8 of 10 at K = 4608 slower (216x2048x4608 128 CTAs -0.26); at K = 4096 slower
    // on 4 of 9 with <= 114 (200x1792x4096 112 CTAs -0.23, 208x1728x4096 108 CTAs -0.15).
    const bool mid_k_wave = K >= kFp8MidKFewCtas && !long_k && fits64 && !limit4;
    // Session 58 (H100): from kFp8LongK at any 64 x 64 grid, past session 55's 3/2 of the SMs too
    // (tune-fp8-random-call5-session58-h100.log: 374x2576x15168 128 x 128 split 2 54.89 us against
    // 64 x 128's 73.34; A/B of 16 random shapes, ab-widen-call6-session58-h100.txt, all faster
    // by 0.72-16.56 us, 203x3728x14144 49.95 against 66.51, 463x1840x7104 27.93 / 28.65: there
    // 128 x 128 split 2 has as many CTAs as 64 x 128 unsplit and 2/3 of its bytes per CTA). Past
    // 3/2 only where N % 8 == 0: otherwise the unsplit tile is 128 x 64 (12 warps), which the tune
    // had within 1% of split 2 at K = 6432 (238x3232x6432 27.21 against 27.52), not A/B'd.
    const bool long_k_wide = long_k && (2 * ctas64 <= 3 * sms || N % 8 == 0);
    if (K >= 4096 && (limit4 || mid_k_wave || long_k_wide)) {
      const GemmConfig split = fp8_split_config(tiles_of(64), tiles, slices, sms);
      const int64_t split_ctas = (split.block_n == 64 ? tiles_of(64) : tiles) * split.split_k;
      const int64_t unsplit_edge = fits64 ? 64 + 64 : 64 + 128;
      const bool shorter_stream = 5 * (128 + int64_t(split.block_n)) <= 4 * int64_t(split.split_k) * unsplit_edge;
      const bool mid_k_split = split.block_n == 64 && (K >= kFp8MidK || 8 * split_ctas <= 7 * sms);
      if (split.split_k > 1 && (!mid_k_wave || mid_k_split) &&
          (split_ctas >= ctas64 || (long_k && shorter_stream)))
        return split;
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
  // Beyond those bounds split-K, but where it would take 128 x 128 split 2 and 128 x 64 tiles
  // (12 warps) give the same CTAs, those unsplit for N % 8 == 0 up to K = 5120, and up to K = 6656
  // where the grid holds >= 3/4 of the SMs. Session 62 (H100 A/Bs, bench/results/logs/ab-u128-
  // call1- and ab-land-call2-session62-h100.txt): faster on all 26 such random shapes, by 0.35-3.60
  // us (119x6128x2080 12.93 against 16.53, 124x7296x6336 27.69 / 30.74, 102x5120x4128 18.80 /
  // 19.15). Past K = 5120 with 80-88 CTAs the split won 3 of 5 (127x5120x6240 24.44 against
  // 25.83, 108x5344x5856 23.41 / 24.40, 94x5328x5888 23.64 / 24.37), tied one (78x5616x5408,
  // 128 x 64 0.05 us slower) and lost one (90x5376x6016 by 0.27); the bound at 3/4 of the SMs (99
  // of 132) leaves out 98 CTAs, where 117x6224x6560 also won (by 1.08 us): nothing between 88 and
  // 98 was measured.
  // Grids of at most 62/132 of the SMs in 64 x 64 tiles up to K = 4096 (and of 1/8 at any K)
  // never reach here: the small-M kernel takes them (small_m_kernel_wins, session 54), so K =
  // 2048 (the only K < 2049 that reaches here) has no lower bound on CTAs (session 53's 15/32
  // bound is implied).
  const int64_t ctas64 = ceil_div(M, 64) * ceil_div(N, 64), ctas64x128 = ceil_div(M, 64) * ceil_div(N, 128);
  const bool fits64 = ctas64 <= sms;
  if (N % 8 == 0 && (K <= 2048 || (K <= 3072 && fits64 && 3 * ctas64 >= 2 * sms) ||
                     (K <= 5120 && !fits64 && 4 * ctas64x128 >= 3 * sms)))
    return fits64 ? GemmConfig{GemmPath::fp8, 64, 64, 1, 8} : GemmConfig{GemmPath::fp8, 128, 64, 1, 8};
  const GemmConfig split = fp8_split_config(tiles_of(64), tiles, slices, sms);
  if (split.block_n == 128 && split.split_k == 2 && tiles_of(64) == 2 * tiles && N % 8 == 0 && K <= 6656 &&
      (K <= 5120 || 8 * tiles >= 3 * sms))
    return GemmConfig{GemmPath::fp8, 64, 128, 1, 12};  // session 62, above
  return split;
}

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
/// (small_m_kernel_wins: 128x1024x1024 on split 4, 6.24 us against 64 x 64's 6.52 on an H100),
/// and since session 61 those with fewer than 32 such tiles from K = 768 (80x640x928 5.25
/// against 6.49, bench/results/logs/ab-land-call2-session61-h100.txt).
GemmConfig fp8_config_short_k(int64_t M, int64_t N, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t n64 = ceil_div(N, 64), tiles64 = ceil_div(M, 64) * n64;
  if (tiles64 <= sms) return GemmConfig{GemmPath::fp8, 64, 64, 1, 8};
  if (ceil_div(M, 128) * n64 <= sms) return GemmConfig{GemmPath::fp8, 64, 128, 1, 12};
  return GemmConfig{GemmPath::fp8, 128, 128, 1, 12};
}


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

}  // namespace mxfp4::rules
