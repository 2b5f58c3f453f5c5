// The GEMM dispatcher: a pure function of (M, N, K, device) -> kernel path and tile
// configuration (docs/dispatch.md). No CUDA calls here, so it is unit-tested on the CPU. This
// file has the entry points and the small-M and gemv rules; fp8_rules.cpp has path fp8's.
#include <algorithm>
#include <cmath>
#include <optional>

#include "dispatch/path_name.hpp"
#include "dispatch/rules.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4 {
using namespace rules;
namespace {
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
///   - M > 64: 64-row CTAs, split_k doubling until the grid reaches 128 of 132 SMs, but split 4
///     rather than 8 where split 8 would pass that target (>= 17 tiles at 132 SMs) and give each
///     CTA <= 4 K chunks (session 61, H100 A/Bs bench/results/logs/ab-smk4-call1- and
///     ab-land-call2-session61-h100.txt: at 17-31 tiles split 4 faster on all 16 by 0.29-1.10
///     us, 101x592x1632 6.09 against 6.98, 413x208x2048 7.99 / 9.08; at 12-16 tiles, where split 8
///     is one wave, split 8 won 5 of 12, 72x336x1600 5.46 against 5.99); 16 warps where the grid
///     fits one CTA per SM (3/4 of the SMs for clusters of 4 and 8) and each CTA has >= 8 K
///     chunks, else 8.
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
    const int64_t target = fp8_split_grid_limit(2, sms);  // past split 1 (128 of 132 SMs)
    int split = 1;
    while (split < max_split && tiles * split < (split == 1 ? sms : target)) split *= 2;
    cfg.split_k = std::min<int>(split, int(max_split));
    // Split 8 -> 4 where split 8 passes the target with <= 4 K chunks per CTA (session 61; the
    // function comment has the A/Bs).
    if (cfg.split_k == 8 && tiles * 8 > target && ceil_div(chunks, 8) <= 4) cfg.split_k = 4;
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
///   - M <= 128 with K >= 1024 (K >= 768 with < 32 tiles) where they give at most 62 of 132 SMs
///     a tile up to K = 4096, or where small_m_config splits K 8 ways (4 x tiles below its
///     128-CTA target: < 32 tiles) at any longer K;
///   - 128 < M <= 512 (the largest M tuned) on the same two grids from K = 1024;
///   - M <= 128 with at most 62 of 132 SMs a tile at 4096 < K < 6144 where path fp8 would take
///     128 x 128 split-K clusters of 5 or more (only split 6 occurs at 132 SMs). Session 62's H100
///     A/B (bench/results/logs/ab-x5k-call1-session62-h100.txt, 18 random shapes): all faster by
///     0.67-2.31 us (65x1568x4448 11.85 against 14.16, 114x1968x5568 15.56 / 16.23); session 61's
///     smk5k A/B had the small-M kernel mixed against path fp8's 128 x 64 split 3-6 there.
/// Session 61 (H100 A/Bs against path fp8, random shapes, bench/results/logs/ab-smk1k-call1-,
/// ab-smk768-call1- and ab-land-call2-session61-h100.txt): M > 128 at K = 1024-2047 faster on
/// all 36 by 0.40-3.17 us (295x64x1888 6.23 against 9.40, 151x32x1376 5.15 / 7.60); M <= 128 at
/// K = 768-1023 with 17-31 tiles faster on all 23 by 0.12-1.24 (78x784x928 5.35 against 6.58;
/// at 32 tiles even in session 54's tune, 128x1024x768 5.96 / 5.90).
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
/// `small` is small_m_config's configuration for the shape (its split_k tells the 8-way split).
bool small_m_kernel_wins(int64_t M, int64_t N, int64_t K, const GemmConfig& small, const DeviceInfo& dev) {
  const int64_t sms = std::max(dev.sm_count, 1);
  const int64_t n64 = ceil_div(N, 64);
  if (M > 512 || n64 >= sms) return false;  // N up to 2^40: no overflow below
  const int64_t tiles64 = ceil_div(M, 64) * n64;
  const bool few = 132 * tiles64 <= 62 * sms;
  if (M <= 128 && 8 * tiles64 <= sms) return true;
  if (M <= 128 && few && K > 4096 && K < 6144) {  // session 62: against 128 x 128 split >= 5
    const GemmConfig fp8 = fp8_config(M, N, K, dev);
    if (fp8.block_n == 128 && fp8.split_k >= 5) return true;
  }
  return K >= (M <= 128 && tiles64 < 32 ? 768 : 1024) && (small.split_k == 8 || (few && K <= 4096));
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
/// Session 62 (H100 A/Bs, bench/results/logs/ab-g16-call1- and ab-land-call2-session62-h100.txt):
/// with two token tiles (9 <= M <= 16) only where the grid fits the SMs. Past them a second wave
/// runs (8- and 16-warp CTAs alike), and the small-M kernel won all 21 such random shapes by 1.12-4.01 us
/// (13x5344x896 5.80 against gemv's 9.81, S = 2 in 167 CTAs; 14x10032x768 7.04 / 10.08, S = 4 in
/// 157). Within one wave the two were mixed (-2.10 to +0.95 us), so gemv stays there. With one
/// token tile the same bound was mixed (ab-g8-call2-session62-h100.txt: the small-M kernel ahead
/// by 0.2-2.8 us on 6 of 14, behind by 0.2-2.6 on 8, all 4 at N > 8448 among them): not taken.
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
  const int64_t ctas = ceil_div(slabs, per_cta);
  if (ctas * rounds > (int64_t(1) << 16)) return std::nullopt;  // N <= 2^40: no overflow
  if (rows == 16 && ctas > std::max<int64_t>(dev.sm_count, 1)) return std::nullopt;  // two waves (session 62)
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
  if (M > 64 && M <= 512) {
    const GemmConfig small = small_m_config(M, N, K, dev);
    if (small_m_kernel_wins(M, N, K, small, dev)) return small;
  }
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
