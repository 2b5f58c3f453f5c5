// Path "gemv" (docs/dispatch.md): the decode GEMM for M <= 16 tokens, one launch.
//
// At small M the other small-M paths spend most of a call on fixed latencies (a quantizer
// launch, a stage ring, a split-K reduction across CTAs) while the work is a stream of weight
// bytes. This kernel has none of them:
//   - one CTA per S = block_n / 16 consecutive 16-row weight slabs of the packed layout
//     (docs/packed-layout.md), all of K; of the CTA's W warps, warp w takes slab w % S and its
//     64-wide K chunks w / S, w / S + W / S, ..., loading each lane's 16-byte mma fragment
//     straight into registers, kBatch chunks in flight per warp (two register sets: batch
//     b + 1 is loaded while batch b is multiplied);
//   - it is launched with PDL: before griddepcontrol.wait a CTA only asks for an L2 prefetch
//     of its weights (no load that returns data: docs/dispatch.md, "Stream order"), unless
//     the caller set GemmOptions::weights_static (kernel <kTiles, true>: the first two
//     batches of every warp load into registers and the next chunks are bulk-copied into
//     shared memory before the wait);
//   - every CTA quantizes all of A (M <= 16 rows; spec §2, bit-identical to
//     fmt::quantize_block through quantize_kernels.cuh) into shared memory as the bf16 B
//     fragments of mma.sync.m16n8k16, token 8j + g of n8 tile j in lane group g (tokens >= M
//     hold zeros, rows past the rounded-up M are not stored at all);
//   - the K loop is the tensor-core step of the other bf16 paths: decode a code word into the
//     A fragment e2m1 * 2^s (exact, common.cuh decode_weight_fragment) and one m16n8k16 MMA
//     per K16 step and token tile into fp32 accumulators (one tile: two chains, even and odd
//     K16 steps; two tiles, M > 8: one chain per tile);
//   - the W / S warps' partial 16 x 8 (x 2 tiles) tiles of a slab are summed through shared
//     memory in warp order, so the result does not depend on timing (deterministic).
// Semantics at the edges are those of the other bf16 paths (docs/hardening.md section 3).
#include <algorithm>
#include <string>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"
#include "dispatch/path_name.hpp"

namespace mxfp4::cuda {
namespace {

constexpr int kBatch = 2;  // K chunks per warp whose loads are in flight, per register set

// Measurements only (docs/perf-notes.md, session 15), wrong results: -DMXFP4_EXP_GEMV=1 skips
// the L2 prefetch, 2 also A's quantization (shared memory left as it is), 3 also the decode
// and the MMAs (the loaded words are only folded into the accumulators).
#ifndef MXFP4_EXP_GEMV
#define MXFP4_EXP_GEMV 0
#endif
constexpr int kExpGemv = MXFP4_EXP_GEMV;
#ifndef MXFP4_EXP_GEMV_WFIRST
#define MXFP4_EXP_GEMV_WFIRST 0
#endif

struct GemvArgs {
  const uint16_t* A;  // bf16 [M, K], row stride lda
  int64_t M, K, lda;
  int rows;           // token rows in shared memory: gemv_tile_rows(M)
  int slabs_per_cta;  // S = block_n / 16: 1, 2 or 4 (a power of 2 dividing the warp count)
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;  // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
  ScaleRule rule;
  // GemmOptions::weights_static (kernel <kTiles, true> only): chunks [static_first,
  // static_first + static_chunks) of every slab are bulk-copied into shared memory before
  // griddepcontrol.wait (the two register sets' chunks below static_first load before it too).
  int static_first, static_chunks;
};

// GemmOptions::weights_static: the shared memory a CTA may use in all (A, the reduction and
// the copied weights), so that two CTAs fit on an SM and the next call's CTAs can be resident,
// copying their weights, while this call runs (docs/perf-notes.md, session 37).
constexpr size_t kGemvStaticBudget = 100 * 1024;
constexpr int kChunkBytes = 512 + 32;  // one slab's 64-wide K chunk: codes and scale word

/// u32 index in the shared A buffer of the B-fragment word `word` (0..3: K16 step 2u register
/// 0 and 1, then step 2u + 1 register 0 and 1) of lane (g, t) for the 32-wide K block u, with
/// `rows` token rows: each lane reads a block's 4 words with one 16-byte load.
__device__ __forceinline__ int a_word_index(int u, int g, int t, int word, int rows) {
  return (u * rows + g) * 16 + 4 * t + word;
}

/// 16 bytes of the packed weights, read once: no L1 allocation (PTX ld.global.nc.L1::no_allocate).
__device__ __forceinline__ uint4 load_stream16(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t load_stream4(const uint8_t* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
/// 16 bytes of shared memory at the 32-bit shared-window address `at` (one register for the
/// whole K loop: a generic pointer made the compiler rebuild the window base every chunk).
__device__ __forceinline__ uint4 load_shared16(uint32_t at) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(at));
  return v;
}

/// Quantizes A's rows 0 .. rows-1 (rows >= M and columns >= K as zeros) into `sa`. A round is
/// 8 consecutive 32-element blocks of one row, 4 lanes per block (one quarter each); each warp
/// loads up to kRounds rounds before it quantizes them. `between` runs once per warp, after
/// the warp's first A loads are issued (or at once when it has none): A's loads go out first,
/// since A's quantization, not the weights, is the longer path to the first MMA
/// (docs/perf-notes.md, session 15).
template <class Between>
__device__ __forceinline__ void quantize_a_to_shared(const GemvArgs& p, uint32_t* sa, int warp, int warps, int lane,
                                                     Between&& between) {
  constexpr int kRounds = 4;
  const int blocks = int(p.geo.k_padded / 32), per_row = (blocks + 7) / 8;
  const int rounds = p.rows * per_row;
  const int q = lane % 4;
  // Round i: row r and this lane's block c.
  auto round_at = [&](int i, int& r, int& c) { r = i / per_row, c = 8 * (i % per_row) + lane / 4; };
  for (int first = warp; first < rounds; first += kRounds * warps) {  // uniform per warp
    uint32_t w[kRounds][4] = {};
#pragma unroll
    for (int j = 0; j < kRounds; ++j) {
      int r, c;
      round_at(first + j * warps, r, c);
      if (first + j * warps < rounds) load_quarter_bf16(p.A, p.M, p.K, p.lda, r, c, q, w[j]);  // zeros for r >= M, past K
    }
    if (first == warp) between();
#pragma unroll
    for (int j = 0; j < kRounds; ++j) {
      if (first + j * warps >= rounds) break;  // uniform per warp
      int r, c;
      round_at(first + j * warps, r, c);
      uint32_t words[4];
      quantize_quarter_words(w[j], p.rule, words);  // all 32 lanes
      // Word t of quarter q: elements 8q + 2t, 8q + 2t + 1 of block c, i.e. K16 step q / 2,
      // register q % 2 of lane (r, t): B-fragment word q.
      if (c < blocks) {
#pragma unroll
        for (int t = 0; t < 4; ++t) sa[a_word_index(c, r, t, q, p.rows)] = words[t];
      }
    }
  }
  if (warp >= rounds) between();
}

/// The chunk's 4 K16 steps: the lane's code words `wc` decoded with the chunk's scale factors
/// (FUSED: every scale byte of the warp's chunk <= 128), times A's B fragments `b0[j]` (block
/// 2kc) and `b1[j]` (block 2kc + 1) of token tile j. One tile: acc[step % 2] (two chains);
/// two tiles: acc[j] (one chain per tile, one decode for both MMAs).
template <bool FUSED, int kTiles>
__device__ __forceinline__ void chunk_mma(const uint4& wc, uint32_t sc, const uint4 (&b0)[kTiles],
                                          const uint4 (&b1)[kTiles], float (&acc)[2][4]) {
  uint32_t f[2][2];
  chunk_scale_factors<FUSED>(sc, f);
  const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
#pragma unroll
  for (int step = 0; step < 4; ++step) {
    uint32_t a[4];
    decode_weight_fragment(words[step], f, FUSED, step, a);
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const uint4& b = step < 2 ? b0[j] : b1[j];
      const uint32_t lo = step % 2 == 0 ? b.x : b.z, hi = step % 2 == 0 ? b.y : b.w;
      mma_bf16_16816(acc[kTiles == 1 ? step % 2 : j], a, lo, hi);
    }
  }
}

/// kTiles token tiles of 8 (M <= 8: 1; 9 <= M <= 16: 2). kStatic (GemmOptions::weights_static):
/// before griddepcontrol.wait each warp loads its first two batches (both register sets,
/// chunks < p.static_first = 2 * kBatch * kws) and thread 0 bulk-copies the next
/// p.static_chunks chunks of each of the CTA's slabs into shared memory (codes
/// [slab][chunk][512], then scales [slab][chunk][32], then their mbarrier); the K loop reads
/// those from there and any later chunks from global memory (L2-prefetched).
/// kStatic with one token tile: at most 64 registers (two tiles would spill), so that two CTAs
/// of 512 threads fit on an SM: the next call's CTAs, which copy their weights before their
/// wait, are resident while this call runs.
template <int kTiles, bool kStatic>
__global__ void __launch_bounds__(512, kStatic && kTiles == 1 ? 2 : 0) gemv_kernel(const GemvArgs p) {
  extern __shared__ __align__(16) uint32_t smem[];
  const int warps = int(blockDim.x / 32), warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  uint32_t* sa = smem;                                                  // A's B fragments
  float* red = reinterpret_cast<float*>(smem + p.rows * p.geo.k_padded / 2);  // [warps][16 rows][8 kTiles tokens]
  uint8_t* wcodes = reinterpret_cast<uint8_t*>(red + warps * 128 * kTiles);      // kStatic
  uint8_t* wscales = wcodes + p.slabs_per_cta * p.static_chunks * 512;
  uint64_t* wbar = reinterpret_cast<uint64_t*>(wscales + p.slabs_per_cta * p.static_chunks * 32);
  // Warp w multiplies slab first + w % S over its K chunks kw, kw + kws, ... (kw = w / S). Slabs
  // past the weights (in the grid's last CTA) have no chunks: their warps only take part in
  // A's quantization.
  const int64_t all_slabs = p.geo.rows_padded / 16, first_slab = int64_t(blockIdx.x) * p.slabs_per_cta;
  // x / S and x % S. S is a power of 2: kStatic shifts and masks (with a division's registers it
  // spilled, 64 at most), the default kernel divides (with shifts ptxas rebuilt the weight
  // pointers in the K loop).
  const int s_shift = __ffs(p.slabs_per_cta) - 1;
  auto div_s = [&](int x) { return kStatic ? x >> s_shift : x / p.slabs_per_cta; };
  auto mod_s = [&](int x) { return kStatic ? x & (p.slabs_per_cta - 1) : x % p.slabs_per_cta; };
  const int64_t slab = first_slab + mod_s(warp);
  const int kw = div_s(warp), kws = div_s(warps);
  // K chunks in int: A's copy in shared memory caps K near 2^17 (gemv_smem_bytes).
  const int kcs = slab < all_slabs ? int(p.geo.k_chunks) : 0;
  const uint8_t* codes = p.packed + slab * kcs * 512 + lane * 16;
  const uint8_t* scales = p.packed + p.geo.code_bytes + slab * kcs * 32 + 4 * g;

  // The grid is ceil(slabs / S) CTAs, so every CTA has at least one slab.
  const int64_t cta_slabs = min(int64_t(p.slabs_per_cta), all_slabs - first_slab);
  if (kStatic && threadIdx.x == 0) {
    // The caller promised that no kernel still running writes the weights, so they may be read
    // before the wait: one bulk copy per slab for the codes and one for the scales (16 KB copies
    // stream best, and a bulk copy costs ~120-200 ns to issue: docs/perf-notes.md sessions 5-6;
    // 16-byte cp.async from every thread here delayed A's loads after the wait: session 37),
    // all issued before the L2 prefetch of the chunks past them.
    const int64_t sf = p.static_first, end = sf + p.static_chunks;
    if (p.static_chunks > 0) {
      mbarrier_init(wbar, 1);
      fence_mbarrier_init();
      const uint32_t cb = uint32_t(p.static_chunks) * 512, sb = uint32_t(p.static_chunks) * 32;
      mbarrier_arrive_expect_tx(wbar, uint32_t(cta_slabs) * (cb + sb));
      for (int i = 0; i < int(cta_slabs); ++i) {
        const int64_t at = (first_slab + i) * p.geo.k_chunks + sf;
        bulk_copy_g2s(wcodes + i * cb, p.packed + at * 512, cb, wbar);
        bulk_copy_g2s(wscales + i * sb, p.packed + p.geo.code_bytes + at * 32, sb, wbar);
      }
    }
    if (end < p.geo.k_chunks) {
      for (int i = 0; i < int(cta_slabs); ++i) {
        const int64_t at = (first_slab + i) * p.geo.k_chunks + end, rest = p.geo.k_chunks - end;
        prefetch_l2(p.packed + at * 512, uint32_t(rest * 512));
        prefetch_l2(p.packed + p.geo.code_bytes + at * 32, uint32_t(rest * 32));
      }
    }
  } else if (kExpGemv < 1 && threadIdx.x == 0) {  // this CTA's weights: < 4 MiB (A's copy in shared memory caps K)
    const int64_t chunks = cta_slabs * p.geo.k_chunks;
    prefetch_l2(p.packed + first_slab * p.geo.k_chunks * 512, uint32_t(chunks * 512));
    prefetch_l2(p.packed + p.geo.code_bytes + first_slab * p.geo.k_chunks * 32, uint32_t(chunks * 32));
  }
  // This warp's chunks kc = kw + kws * i of its slab in batches of kBatch; two named register sets so
  // that nothing is indexed at run time.
  uint4 wc0[kBatch], wc1[kBatch];
  uint32_t sc0[kBatch], sc1[kBatch];
  const int ls = mod_s(warp);  // kStatic: the slab's place in shared memory
  auto load_batch = [&](uint4 (&wc)[kBatch], uint32_t (&sc)[kBatch], int first) {
    // kStatic: batches 2.. (first >= 2 * step = p.static_first) may read the copies: wait for
    // them (uniform per warp; a completed phase returns at once).
    if (kStatic && first >= p.static_first && p.static_chunks > 0) mbarrier_wait(wbar, 0u);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int kc = first + u * kws;
      if (kStatic && kc < kcs && kc >= p.static_first && kc < p.static_first + p.static_chunks) {  // copied
        const int at = ls * p.static_chunks + kc - p.static_first;
        wc[u] = *reinterpret_cast<const uint4*>(wcodes + at * 512 + lane * 16);
        sc[u] = *reinterpret_cast<const uint32_t*>(wscales + at * 32 + 4 * g);
      } else if (kc < kcs) {
        wc[u] = load_stream16(codes + uint32_t(kc) * 512u);  // unsigned: no sign extension per address
        sc[u] = load_stream4(scales + uint32_t(kc) * 32u);
      } else {
        sc[u] = 0x7F7F7F7Fu;  // a neutral word for the warp's vote on scale bytes
      }
    }
  };
  const int step = kBatch * kws;
  if constexpr (kStatic) {  // chunks below p.static_first, from global memory (L2 or HBM)
    load_batch(wc0, sc0, kw);
    if (kw + step < kcs) load_batch(wc1, sc1, kw + step);
  }
  // The trigger comes right after the wait (docs/perf-notes.md): before it (session 16),
  // 4x2880x512 and 1x2880x2880 ran 50% slower in the benchmark's graphs; without it (the next
  // kernel launching as this grid exits, session 23) 15-25% slower on the three gemv shapes.
  grid_dependency_wait();  // the previous kernel may write A, C (and B unless kStatic)
  grid_dependents_launch();

  // -DMXFP4_EXP_GEMV_WFIRST=1 (a measurement only, docs/perf-notes.md session 36 and plan item u):
  // a warp whose chunks all fit in batch 0 issues them before A's loads; 2: every warp. =1 ran
  // 4x2880x512 0.2 us faster than =2, which executes the same instructions there: a code-layout
  // effect under study, not an improvement to land as it is (=1 costs the M = 1 shapes).
  const bool wfirst = MXFP4_EXP_GEMV_WFIRST == 2 || (MXFP4_EXP_GEMV_WFIRST == 1 && kcs <= kw + step);
  if (kStatic) {
    quantize_a_to_shared(p, sa, warp, warps, lane, [] {});
  } else if (kExpGemv < 2 && wfirst) {
    load_batch(wc0, sc0, kw);
    quantize_a_to_shared(p, sa, warp, warps, lane, [] {});
  } else if (kExpGemv < 2) {
    quantize_a_to_shared(p, sa, warp, warps, lane, [&] { load_batch(wc0, sc0, kw); });
  } else {
    load_batch(wc0, sc0, kw);
  }
  __syncthreads();

  float acc[2][4] = {};
  // A's B fragments of lane (g, t): token row g (+ 8j in tile j) at a_lane + 2 kc a_block
  // (block 2kc) and + a_block (block 2kc + 1), in bytes of the shared window. Lanes with
  // g >= p.rows (one tile with rows 1, 2 or 4, i.e. M <= 4) read row 0 instead of zeros: their
  // token columns of the MMA are never stored (m >= p.M below), and no lane branches.
  const uint32_t a_block = uint32_t(p.rows) * 64u;  // one 32-wide K block of every token row
  const uint32_t a_lane = smem_addr(sa) + uint32_t(((g < p.rows ? g : 0) * 16 + 4 * t) * 4);
  // Chunk kc of this warp's slab: code words wc, scale word sc (`fused`: the batch's vote that
  // every scale byte of its chunks is <= 128, multiply_batch), times A's fragments.
  auto multiply_chunk = [&](const uint4& wc, uint32_t sc, bool fused, int kc) {
    uint4 b0[kTiles], b1[kTiles];
    const uint32_t at = a_lane + uint32_t(kc) * 2u * a_block;
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      b0[j] = load_shared16(at + 512u * j);
      b1[j] = load_shared16(at + a_block + 512u * j);
    }
    if (kExpGemv >= 3) {
      acc[0][0] += __uint_as_float((wc.x ^ wc.y ^ wc.z ^ wc.w ^ sc ^ b0[0].x ^ b1[0].y) & 0x3F000000u);
    } else if (fused) {
      chunk_mma<true, kTiles>(wc, sc, b0, b1, acc);
    } else {
      chunk_mma<false, kTiles>(wc, sc, b0, b1, acc);
    }
  };
  // One vote per batch (every lane, outside the branches below): its chunks take the fused
  // decode when every scale byte of both is <= 128 (the other decode gives the same bits).
  auto multiply_batch = [&](const uint4 (&wc)[kBatch], const uint32_t (&sc)[kBatch], int first) {
    bool fuse = true;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) fuse = fuse && packed::scale_bytes_fuse(sc[u]);
    const bool fused = __all_sync(0xFFFFFFFFu, fuse);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int kc = first + u * kws;
      if (kc < kcs) multiply_chunk(wc[u], sc[u], fused, kc);  // uniform per warp
    }
  };
  for (int first = kw; first < kcs; first += 2 * step) {
    if (first + step < kcs && (!kStatic || first != kw)) load_batch(wc1, sc1, first + step);
    multiply_batch(wc0, sc0, first);
    if (first + step >= kcs) break;
    if (first + 2 * step < kcs) load_batch(wc0, sc0, first + 2 * step);
    multiply_batch(wc1, sc1, first + step);
  }

  // D fragment: d0, d1 = row g, tokens 2t, 2t + 1; d2, d3 = row g + 8 (token tile j: tokens
  // + 8j). Each slab's warps in order: warp kw * S + s holds the kw-th partial tile of slab s.
  constexpr int kTile = 128 * kTiles, kCols = 8 * kTiles;  // floats per partial tile, tokens per row
  float* mine = red + warp * kTile;
  if constexpr (kTiles == 1) {
    mine[g * 8 + 2 * t] = acc[0][0] + acc[1][0];
    mine[g * 8 + 2 * t + 1] = acc[0][1] + acc[1][1];
    mine[(g + 8) * 8 + 2 * t] = acc[0][2] + acc[1][2];
    mine[(g + 8) * 8 + 2 * t + 1] = acc[0][3] + acc[1][3];
  } else {
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      mine[g * kCols + 8 * j + 2 * t] = acc[j][0];
      mine[g * kCols + 8 * j + 2 * t + 1] = acc[j][1];
      mine[(g + 8) * kCols + 8 * j + 2 * t] = acc[j][2];
      mine[(g + 8) * kCols + 8 * j + 2 * t + 1] = acc[j][3];
    }
  }
  __syncthreads();
  for (int i = int(threadIdx.x); i < kTile * p.slabs_per_cta; i += int(blockDim.x)) {
    const int s = i / kTile, j = i % kTile, r = j / kCols, m = j % kCols;
    const int64_t n = (int64_t(blockIdx.x) * p.slabs_per_cta + s) * 16 + r;  // recomputed: fewer live registers
    if (m >= p.M || n >= p.N) continue;
    float v = red[s * kTile + j];
    for (int w = 1; w < kws; ++w) v += red[(w * p.slabs_per_cta + s) * kTile + j];
    if (p.c_f32) {
      static_cast<float*>(p.C)[m * p.ldc + n] = v;
    } else {
      static_cast<uint16_t*>(p.C)[m * p.ldc + n] = fmt::f32_to_bf16(v);
    }
  }
}

}  // namespace

void gemm_gemv(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
               int64_t ldc, const GemmConfig& cfg, ScaleRule rule, bool weights_static, cudaStream_t stream) {
  GemvArgs args{A,    M, K, lda, gemv_tile_rows(M), cfg.block_n / 16, B.data, PackedGeometry::of(B.N, B.K),
                B.N,  C, c_f32, ldc, rule, /*static_first=*/0, /*static_chunks=*/0};
  size_t smem = gemv_smem_bytes(M, K, cfg.warps);
  if (weights_static) {  // past the register sets, as many chunks as fit in kGemvStaticBudget
    const size_t per_chunk = size_t(args.slabs_per_cta) * kChunkBytes;
    args.static_first = 2 * kBatch * (cfg.warps / args.slabs_per_cta);
    const size_t room = smem + 16 < kGemvStaticBudget ? kGemvStaticBudget - smem - 16 : 0;
    args.static_chunks = int(std::clamp<int64_t>(args.geo.k_chunks - args.static_first, 0, int64_t(room / per_chunk)));
    if (args.static_chunks > 0) smem += size_t(args.static_chunks) * per_chunk + 16;
  }
  auto* kernel = gemv_token_tiles(M) == 2 ? (weights_static ? gemv_kernel<2, true> : gemv_kernel<2, false>)
                                          : (weights_static ? gemv_kernel<1, true> : gemv_kernel<1, false>);
  // The largest need of any accepted shape (gemm_config_problem_for_shape; the copied weights
  // stay within kGemvStaticBudget <= it), the same for every call, so concurrent host threads
  // never lower it under another's launch. Not a stream operation, so also legal during graph
  // capture.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kGemvSmemLimit)),
        "cudaFuncSetAttribute(gemv_kernel)");
  const int64_t ctas = ceil_div(args.geo.rows_padded / 16, int64_t(args.slabs_per_cta));
  launch_pdl_smem(kernel, dim3(unsigned(ctas)), dim3(unsigned(32 * cfg.warps)), smem,
                  stream, "gemv_kernel", args);
}

}  // namespace mxfp4::cuda
