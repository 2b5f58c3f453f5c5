#pragma once
// Path "fp8"'s GEMM kernel: its producer threads and the kernel template (its arguments,
// shared-memory plan and output side are in gemm_fp8_common.cuh). Included only by gemm_fp8.cu,
// which holds the launcher and the explicit list of instantiations (the anonymous namespace
// keeps them in that one unit).
//
// Path "fp8": the prefill GEMM on Hopper's 8-bit tensor cores (issue 6; design in
// docs/fp8-path.md). Both operands are 8-bit images (src/core/fp8_layout.hpp: s8 codes, E8M0
// exponents per block): the weights' from prepack_fp8, the activations' built per call. One CTA
// computes a BM x BN tile of C (BM = 64 tokens per consumer warpgroup, BN = 64 or 128 weight
// rows):
//   - four producer threads (B's atoms, B's metadata, A's atoms, A's metadata) stream, per
//     128-K slice, the A and B atoms and their metadata blocks (scales, exponent words and
//     records of 64 rows each: 4 bulk copies per stage) into a ring of shared-memory stages
//     with 1-D bulk copies (TMA engine), signalling `full` mbarriers by transaction bytes;
//     consumers release a stage on its `empty` mbarrier. The kernel is launched with PDL after the A image kernel: B's
//     first stages are requested before griddepcontrol.wait, A's after it;
//   - each consumer warpgroup (64 rows x WN columns: one m64n64k32 or m64n128k32 per k32
//     step) runs s8 x s8 -> s32 wgmma, whose integer sums are exact. When every group of its
//     rows and columns in the slice is narrow (the wide bytes of its atoms' records are zero)
//     the slice's four k32 steps chain in the tensor core. While the records' break bytes are
//     zero too (every row keeps its R into the next slice, within a chain chunk of
//     fp8::kChainSlices slices), the next slice adds into the same integer sums (issued while
//     the previous slice's wgmmas still run; that stage is released when they are done); at a
//     chain's end they are promoted once: acc += float(S) * 2^Ra * 2^Rb, one FFMA per element
//     (S < 2^24 converts exactly; the add rounds). Otherwise (a wide group: one exponent per
//     block) each k32 step is promoted with its block's exponents.
// Groups the image flagged carry zero codes here; the elements of C whose rows or columns have
// one are recomputed exactly (gemm_fp8_exact.cuh): at the end of the kernel by the CTA that
// stored them in the FIX instantiations, else by fp8_fixup_kernel after it. (Sessions 3-16 used
// e4m3 codes, whose MMA adds with a truncating 13-fraction-bit accumulator and so needed one
// promotion per k32 step everywhere: docs/perf-notes.md.)
#include "core/fp8_layout.hpp"
#include "cuda/common.cuh"
#include "cuda/gemm_fp8_common.cuh"
#include "cuda/gemm_fp8_exact.cuh"
#include "cuda/wgmma.cuh"

namespace mxfp4::cuda {
namespace {

#ifndef MXFP4_EXP_FP8_NOWAIT  // a measurement only (docs/perf-notes.md plan): wrong results
#define MXFP4_EXP_FP8_NOWAIT 0
#endif
/// -DMXFP4_EXP_FP8_NOWAIT=1: the GEMM does not wait for the A image kernel (it reads whatever
/// image is there), to time what serialising the image and the GEMM costs. Never a default.
constexpr bool kExpNoWait = MXFP4_EXP_FP8_NOWAIT != 0;

#ifndef MXFP4_EXP_FP8_DATA_ONLY  // a measurement only (docs/perf-notes.md plan): wrong results
#define MXFP4_EXP_FP8_DATA_ONLY 0
#endif
/// -DMXFP4_EXP_FP8_DATA_ONLY=1: the consumers wait for each stage and release it at once, with
/// no wgmma and no promotion, to time the ring's data path alone (C is zero). Never a default.
constexpr bool kExpDataOnly = MXFP4_EXP_FP8_DATA_ONLY != 0;

#ifndef MXFP4_EXP_FP8_MMA_ONLY  // a measurement only (docs/perf-notes.md, session 24): wrong results
#define MXFP4_EXP_FP8_MMA_ONLY 0
#endif
/// -DMXFP4_EXP_FP8_MMA_ONLY=1: nothing is copied; the consumers run their slices on the ring's
/// resident (stale) stages without waiting or releasing, with zeroed metadata (every slice
/// narrow, one chain per tile), to time the consumers alone. Never a default.
constexpr bool kExpMmaOnly = MXFP4_EXP_FP8_MMA_ONLY != 0;

/// 2^(e - 127) as fp32 for byte b of exponent word w (fp8::exp2_of_exponent_byte).
__device__ __forceinline__ float exp2_byte(uint32_t w, int b) { return fp8::exp2_of_exponent_byte(uint8_t(w >> (8 * b))); }

/// PDL: waits for the A image kernel (complete, writes visible). A kernel that fixes its own
/// tiles (FIX) signals no early launch of its dependents: they launch as its CTAs exit
/// (session 44: with the signal, the next call's image kernel took SM slots while the GEMM
/// still ran, 0.3-2.7 us per call on 6 of 7 path fp8 shapes; session 22 found the same). Else it lets fp8_fixup_kernel
/// start now: that kernel reads A's flags before its own wait, so no thread may signal before
/// its wait.
template <bool FIX>
__device__ __forceinline__ void wait_for_image() {
  if constexpr (!kExpNoWait) grid_dependency_wait();
  if constexpr (!FIX) grid_dependents_launch();
}

/// A 192-row tile reaching past the A image (its rows are padded to 256 only), part `atoms`
/// (A's atoms) or A's metadata blocks: the atoms inside the image, then the slice's last atom
/// again for each one past it, so that the stage holds real bytes (the full barrier's count,
/// no uninitialised shared memory); the rows they feed lie past M, and nothing stores them.
__device__ __forceinline__ void copy_a_past_image(const Fp8Params& p, uint8_t* tile, uint32_t* meta, uint64_t* full,
                                               int64_t r0, int j, bool atoms, int n_atoms, int block_words) {
  const fp8::ImageGeometry g{p.a_rows, p.slices};
  const int64_t inside = (p.a_rows - r0) / 64, last = p.a_rows / 64 - 1;
  for (int a = 0; a < n_atoms; ++a) {
    const int64_t atom = a < inside ? r0 / 64 + a : last;
    if (atoms)
      bulk_copy_g2s(tile + a * fp8::kAtomBytes, p.a_img + (j * (p.a_rows / 64) + atom) * fp8::kAtomBytes,
                    fp8::kAtomBytes, full);
    else
      bulk_copy_g2s(meta + a * block_words, p.a_img + g.meta_block(atom, j), fp8::kMetaBlockBytes, full);
  }
}

/// The four parts of a stage, one per producer thread (lane 0 of producer warp `part`).
enum Part : int { kBAtoms = 0, kBMeta = 1, kAAtoms = 2, kAMeta = 3 };
constexpr int kProducerThreads = 4;

/// Producer thread for one Part of every stage: walks the CTA's (tile, slice) sequence, waits
/// for the stage's slot, arrives on its full barrier with the part's bytes and issues the
/// part's bulk copy (atoms, or the atoms' metadata blocks: one copy each, fp8_layout.hpp).
/// Four threads in four warps instead of one for all copies (8 under layout 3): session 20's
/// timeline (bench/results/logs/fp8-timeline-session20-h200.log) had the lone thread at ~0.6 us
/// per stage, longer than the consumers' ~0.5, and four took 1024x7168x2048's GEMM from 43.0
/// to 39.9 us (two: 42.4). The weight parts issue their first kStages stages before the PDL
/// wait (the weights never depend on the previous kernel); the activation parts wait first.
template <int BM, int BN, int WN, bool PAIR, bool FIX>
__device__ __forceinline__ void produce_part(const Fp8Params& p, uint8_t* tiles, uint32_t* metas, uint64_t* full,
                                             uint64_t* empty, uint32_t rank, int first, int clusters, int j0, int j1,
                                             int tiles_total, Part part) {
  using P = Plan<BM, BN, WN>;
  constexpr int kCtas = PAIR ? 2 : 1;
  constexpr int kBMetaBytes = (BN / 64) * fp8::kMetaBlockBytes, kAMetaBytes = P::kAAtoms * fp8::kMetaBlockBytes;
  static_assert(P::kTileBytes + 4 * P::kMetaWords == P::kABytes + P::kBBytes + kAMetaBytes + kBMetaBytes,
                "the four parts make up the stage");
  const bool weights = part == kBAtoms || part == kBMeta;
  const uint32_t bytes = part == kBAtoms   ? P::kBBytes
                         : part == kBMeta  ? kBMetaBytes
                         : part == kAAtoms ? P::kABytes
                                           : kAMetaBytes;
  // Metadata of the part's image: its rows and where this CTA's rows start in them.
  const uint8_t* img = weights ? p.b_img : p.a_img;
  const fp8::ImageGeometry g{weights ? p.b_rows : p.a_rows, p.slices};
  int id = j0 < j1 ? first : tiles_total, j = j0;  // a split-K rank without slices (slices < split) has nothing
  int64_t r0 = 0;  // the CTA tile's first row of the part's image
  auto locate = [&] {
    int mt, nt;
    raster(id, p.m_tiles, p.n_tiles, mt, nt);
    r0 = weights ? int64_t(nt) * BN : (int64_t(mt) * kCtas + rank) * P::kBM;
  };
  if (id < tiles_total) locate();
  bool waited = !weights;
  if (waited) wait_for_image<FIX>();
  for (int it = 0; id < tiles_total; ++it) {
    if (!waited && it == P::kStages) wait_for_image<FIX>(), waited = true;
    const int s = it % P::kStages;
    if (it >= P::kStages) mbarrier_wait(&empty[s], uint32_t((it / P::kStages) - 1) & 1u);
    mbarrier_arrive_expect_tx(&full[s], bytes);
    uint8_t* tile = tiles + s * P::kTileBytes;
    uint32_t* meta = metas + s * P::kMetaWords;
    if (part == kBAtoms) {
      const uint8_t* src = p.b_img + (j * (p.b_rows / 64) + r0 / 64) * fp8::kAtomBytes;
      if constexpr (PAIR) {  // this CTA's half of B, to both CTAs
        constexpr int kHalf = P::kBBytes / 2;
        bulk_copy_g2s_multicast(tile + P::kABytes + rank * kHalf, src + rank * kHalf, kHalf, &full[s], 0x3);
      } else {
        bulk_copy_g2s(tile + P::kABytes, src, P::kBBytes, &full[s]);
      }
    } else if (!weights && P::kBM == 192 && r0 + P::kBM > p.a_rows) {
      copy_a_past_image(p, tile, meta, &full[s], r0, j, part == kAAtoms, P::kAAtoms, P::kBlockWords);
    } else if (part == kAAtoms) {
      bulk_copy_g2s(tile, p.a_img + (j * (p.a_rows / 64) + r0 / 64) * fp8::kAtomBytes, P::kABytes, &full[s]);
    } else {  // metadata: the blocks of the part's 64-row atoms (one copy), A's first, then B's
      bulk_copy_g2s(meta + (weights ? P::kAAtoms * P::kBlockWords : 0), img + g.meta_block(r0 / 64, j), bytes, &full[s]);
    }
    if (++j == j1) {
      j = j0, id += clusters;
      if (id < tiles_total) locate();
    }
  }
  if (!waited) wait_for_image<FIX>();
}

/// Rows [m0, m1) x columns [n0, n1) of C (clipped to M and N; empty when m0 >= m1).
struct Region {
  int64_t m0, m1, n0, n1;
};

/// The one region of C this CTA stores in a kernel that fixes its own tiles (FIX: one tile per
/// CTA or pair, never split-K: gemm_fp8.cu's launch): its tile (PAIR: its half of the pair's
/// rows). Computed afresh from %ctaid.x and %cluster_ctarank (asm volatile: not reused from
/// before the K loops) so that nothing stays live across them (values kept for after the loops
/// spilled in the 152-register consumers' epilogue, session 44).
template <int BM, int BN, int WN, bool PAIR>
__device__ __forceinline__ Region stored_region(const Fp8Params& p) {
  using P = Plan<BM, BN, WN>;
  uint32_t cta;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(cta));
  const uint32_t crank = cluster_rank();
  int mt, nt;
  raster(int(cta) / (PAIR ? 2 : 1), p.m_tiles, p.n_tiles, mt, nt);
  const int64_t m0 = (int64_t(mt) * (PAIR ? 2 : 1) + (PAIR ? crank : 0)) * P::kBM, m1 = m0 + P::kBM;
  const int64_t n0 = int64_t(nt) * BN;
  return {m0, min(m1, p.M), n0, min(n0 + BN, p.N)};
}

/// Threads that scan the flags: the producer warpgroup, after its copies (scan_stored_flags).
constexpr int kScanThreads = 128;
static_assert(kScanQuarters * kScanSlices == kScanThreads, "a (quarter, slice phase) per thread");

/// Run by the producer warpgroup of a FIX kernel once its copies are issued: ORs the flag
/// bytes of the region this CTA stores (A's rows, B's columns; fp8_layout.hpp) into *flagged
/// (shared memory) and arrives on `scan_bar`, which the consumers wait for before deciding on
/// the fix-up. A's flags are complete: the caller has passed griddepcontrol.wait.
template <int BM, int BN, int WN, bool PAIR>
__device__ __forceinline__ void scan_stored_flags(const Fp8Params& p, uint32_t* flagged, uint64_t* scan_bar) {
  static_assert(Plan<BM, BN, WN>::kBM <= 16 * kScanQuarters && BN <= 16 * kScanQuarters, "a quarter per thread");
  const Region r = stored_region<BM, BN, WN, PAIR>(p);
  const int t = int(threadIdx.x) % 128;
  uint32_t any = 0;
  if (r.m0 < r.m1)
    any = flags_of_rows(p.a_img, fp8::ImageGeometry{p.a_rows, p.slices}, r.m0, r.m1, t) |
          flags_of_rows(p.b_img, fp8::ImageGeometry{p.b_rows, p.slices}, r.n0, r.n1, t);
  if (any != 0u) atomicOr(flagged, 1u);
  mbarrier_arrive(scan_bar);  // releases the OR above (CTA scope)
}

/// Persistent kernel: CTAs (PAIR: clusters of 2 CTAs) take tiles id = cluster, cluster +
/// clusters, ...; the stage ring and its mbarrier phases run on across tiles, so the producer
/// loads the next tile while the consumers store the last. PAIR: the two CTAs of a cluster
/// compute vertically adjacent tiles of one N tile and each bulk-copies half of the shared B
/// tile to both (multicast), halving B's L2 traffic; a stage is refilled only after the
/// consumers of both CTAs released it. Split-K (p.split > 1, not PAIR; one tile per cluster, not
/// persistent): the `split` CTAs of a cluster take contiguous shares of the tile's slices, store
/// their fp32 partial tiles in their own (drained) stage ring and sum them through distributed
/// shared memory in rank order 0..split-1 (deterministic), each CTA storing 1/split of the
/// tile's rows.
template <int BM, int BN, int WN, bool PAIR, bool FIX>
__global__ void __launch_bounds__(Plan<BM, BN, WN>::kThreads, 1) gemm_fp8_kernel(const Fp8Params p) {
  using P = Plan<BM, BN, WN>;
  constexpr int kCons = P::kCons;
  constexpr int kCtas = PAIR ? 2 : 1;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* tiles = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);  // swizzle atoms: 1024-aligned
  uint32_t* metas = reinterpret_cast<uint32_t*>(tiles + P::kStages * P::kTileBytes);  // per stage: kMetaWords
  uint64_t* full = reinterpret_cast<uint64_t*>(metas + P::kStages * P::kMetaWords);
  uint64_t* empty = full + P::kStages;
  __shared__ uint64_t scan_bar;   // FIX: scan_stored_flags is done
  __shared__ uint32_t flagged;    // FIX: the region this CTA stores has a flagged group

  const int wg = int(threadIdx.x) / 128;
  const uint32_t rank = PAIR ? cluster_rank() : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < P::kStages; ++s) {
      mbarrier_init(&full[s], kProducerThreads);  // one arrival (with its part's bytes) per producer thread
      mbarrier_init(&empty[s], kCtas * kCons * 128);  // one arrival per consumer thread of the cluster
    }
    if constexpr (FIX) {
      mbarrier_init(&scan_bar, kScanThreads);
      flagged = 0u;
    }
    fence_mbarrier_init();
  }
  if constexpr (kExpMmaOnly) {
    for (int i = int(threadIdx.x); i < P::kStages * P::kMetaWords; i += P::kThreads) metas[i] = 0u;
  }
  if constexpr (PAIR) {
    cluster_sync_acq_rel();  // the peer's barriers exist before any multicast or remote arrival
  } else {
    __syncthreads();
  }
  // Split-K: this CTA's rank in the cluster takes slices [j0, j1) of its tile. FIX kernels
  // (gemm_fp8.cu's launch), pairs and 192 x 128 tiles (gemm_config_problem) never run split-K,
  // so they compile it out.
  constexpr bool kNeverSplit = FIX || PAIR || BM == 192;
  const bool split = !kNeverSplit && p.split > 1;
  const int kparts = kNeverSplit ? 1 : p.split;
  const uint32_t krank = split ? cluster_rank() : 0;
  const int j0 = int(int64_t(p.slices) * krank / kparts), j1 = int(int64_t(p.slices) * (krank + 1) / kparts);
  const int ctas = PAIR ? 2 : kparts;  // CTAs per cluster
  const int clusters = int(gridDim.x) / ctas, first = int(blockIdx.x) / ctas;
  const int tiles_total = p.m_tiles * p.n_tiles;

  // Registers (65536 per SM, one CTA): WN = 128 consumers need ~210 per thread (s32 sums,
  // accumulator and scale products of 64 x 128), the producer ~30; the launch gives 168 (384
  // threads). Four 64 x 64 consumer warpgroups need ~100 each; the launch gives 96 (640 threads).
  // Three 64 x 128 consumer warpgroups (192 x 128, 512 threads) get 152 each, the producer 56
  // (ptxas allocates each region to its setmaxnreg value; with the wide branch's k32 steps in a
  // rolled loop the consumer fits 152, and the producer's copies past the A image need more
  // than 32: no spills at 152 / 56, session 24).
  constexpr bool kRebalance = kCons >= 2 && (WN == 128 || kCons == 4);
  // The CTA's pool is what the launch gave: (65536 / threads) rounded down to a multiple of 8.
  constexpr int kConsumerRegs = WN == 128 ? (kCons == 3 ? 152 : 232) : 112,
                kProducerRegs = WN == 128 ? (kCons == 3 ? 56 : 40) : 32;
  static_assert(!kRebalance || kCons * kConsumerRegs + kProducerRegs <= 65536 / P::kThreads / 8 * 8 * (kCons + 1),
                "register rebalance exceeds the CTA's pool");
  // The cluster's closing steps, run by both warpgroup kinds (in FIX kernels in their own
  // branches, before the consumers' fix-up: code after the branches is compiled to the
  // producer's register cap): the split-K reduction (`stores`: this thread stores rows; plain
  // kernels only) and, PAIR, the barrier that keeps every CTA alive while its peer may still
  // multicast into it or arrive on its barriers (release: the remote arrivals before it are
  // ordered before the barrier).
  auto close_cluster = [&](bool stores) {
    if (split) fp8_splitk_reduce<BM, BN, WN>(p, tiles, krank, stores, first);
    if constexpr (PAIR) {
      __syncwarp();  // the barrier is .aligned: reconverge the producer warp first
      cluster_sync_acq_rel();
    }
  };
  if (wg == kCons) {  // producer warpgroup: lane 0 of each warp issues one part of every stage
    if constexpr (kRebalance) setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x % 32 == 0 && !kExpMmaOnly) {
      produce_part<BM, BN, WN, PAIR, FIX>(p, tiles, metas, full, empty, rank, first, clusters, j0, j1, tiles_total,
                                     Part(int(threadIdx.x) / 32 - 4 * kCons));
    } else {
      wait_for_image<FIX>();
    }
    // The whole warpgroup scans the flags once its copies are issued: the consumers still
    // have up to kStages stages to run. (Session 22, and this session's first fold: lanes
    // 1-31 scanning while lane 0 issued copies held up lane 0, +2 to +17 us per call.)
    if constexpr (FIX) {
      __syncwarp();
      scan_stored_flags<BM, BN, WN, PAIR>(p, &flagged, &scan_bar);
      close_cluster(false);
    }
  } else {
    // Consumer warpgroup `wg`: tokens tb*64 .. tb*64+63 of the CTA's tile, weight rows
    // wb*WN .. wb*WN+WN-1.
    if constexpr (kRebalance) setmaxnreg_inc<kConsumerRegs>();
    wait_for_image<FIX>();  // C is written below
    const int tb = wg / P::kWeightBlocks, wb = wg % P::kWeightBlocks;
    const int warp = (int(threadIdx.x) % 128) / 32, lane = int(threadIdx.x) % 32;
    const int row0 = tb * 64 + warp * 16 + lane / 4;  // rows row0 and row0 + 8 of the tile
    float acc[WN / 2];
    // s32 sums of the two 64-column blocks of the warpgroup's tile (WN = 64: sum0 only): of a
    // chain of narrow slices, or of one k32 step (wide tiles).
    uint32_t sum0[32], sum1[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) sum0[i] = sum1[i] = 0u;
    int it = 0;
    for (int id = first; id < tiles_total; id += clusters) {
      int mt, nt;
      raster(id, p.m_tiles, p.n_tiles, mt, nt);
#pragma unroll
      for (int i = 0; i < WN / 2; ++i) acc[i] = 0.f;
      bool chained = false;  // the previous slice left its sums for this one to add to
      // Inside a chain the tensor core does not drain between slices: a slice's wgmmas are
      // issued before the previous slice's have finished, and the previous stage iteration's
      // stage (`held`) is released once they have. Session 20: 1024x7168x2048's
      // GEMM 39.9 -> 36.6 us (one slice at a time: 0.47 us of consumer time per 128 x 128 x
      // 128 stage against ~0.29 us of s8 MMA).
      bool held = false;
      for (int j = j0; j < j1; ++j, ++it) {
        const int s = it % P::kStages;
        // The stage of stage iteration rit (tiles and metadata) is no longer read by this
        // thread. Every thread arrives: an arrival releases only its own thread's reads (PTX
        // memory model), and compute-sanitizer's racecheck flagged the ring's reuse when one
        // lane arrived for its warp after __syncwarp (session 9).
        auto release_stage = [&](int rit) {
          const int rs = rit % P::kStages;
          if constexpr (!kExpMmaOnly) {
#pragma unroll
            for (int c = 0; c < kCtas; ++c) {
              if constexpr (PAIR) {
                mbarrier_arrive_cluster(&empty[rs], uint32_t(c));
              } else {
                mbarrier_arrive(&empty[rs]);
              }
            }
          }
        };
        if constexpr (!kExpMmaOnly) mbarrier_wait(&full[s], uint32_t(it / P::kStages) & 1u);
        __syncwarp();  // reconverge before the .aligned wgmma instructions
        const uint8_t* a_tile = tiles + s * P::kTileBytes + tb * 64 * fp8::kSliceK;
        const uint8_t* b_tile = tiles + s * P::kTileBytes + P::kABytes + wb * WN * fp8::kSliceK;
        const uint64_t da = smem_desc_sw128(a_tile), db = smem_desc_sw128(b_tile);
        // The stage's metadata (fp8_layout.hpp): one block (64 scales, 64 exponent words, the
        // record) per 64-row atom, A's atoms first, then B's. This thread's rows are row0 and
        // row0 + 8 (in A's atom tb), its columns 8 jn + 2 (lane % 4) + c of the warpgroup's WN
        // (m64nN fragment register 4 jn + 2 i + c).
        const uint32_t* meta = metas + s * P::kMetaWords;
        const uint32_t* a_meta = meta + tb * P::kBlockWords + (row0 - tb * 64);  // + 8: row0 + 8
        // Word of this thread's first B column of n8 tile jn in its block (+ 64: its exponent word).
        auto b_word = [&](int jn) {
          const int n = wb * WN + 8 * jn;
          return (P::kAAtoms + n / 64) * P::kBlockWords + n % 64 + 2 * (lane % 4);
        };
        // The records of the warpgroup's A atom and its B atoms (wide bytes in word 0, break
        // bytes in word 1): the same words for every thread, so the branches below are
        // uniform over the warpgroup.
        constexpr int kRecord = fp8::kMetaRecord / 4;
        uint2 bits = *reinterpret_cast<const uint2*>(meta + tb * P::kBlockWords + kRecord);
#pragma unroll
        for (int t = 0; t < WN / 64; ++t) {
          const uint2 b =
              *reinterpret_cast<const uint2*>(meta + (P::kAAtoms + wb * (WN / 64) + t) * P::kBlockWords + kRecord);
          bits.x |= b.x, bits.y |= b.y;
        }
        // (Votes: the values are the same in every lane, but ptxas must see uniform branches,
        // or it serializes every wgmma, as groups are in flight across them: C7518.)
        const bool wide = __any_sync(0xFFFFFFFFu, bits.x != 0u);
        // A narrow slice whose chain goes on: the next slice of this tile adds into the sums.
        const bool chain_on = !wide && __all_sync(0xFFFFFFFFu, bits.y == 0u) && j + 1 < j1;
        if constexpr (kExpDataOnly) {
          release_stage(it);
          continue;
        }
        // Issues k32 steps kk0 .. kk0 + kSteps - 1 of the slice for the warpgroup's WN columns as
        // one wgmma group (WN = 128: one m64n128k32 per step, so that A's 64 x 32 bytes are read
        // from shared memory once, not twice; session 20: -7% at 1024x7168x2048, when shared
        // memory moves the wgmma operands and the bulk copies' bytes at ~128 B per clock); the
        // first step adds to the sums when `add`, else overwrites them.
        auto issue = [&](int kk0, auto steps, bool add) {
          constexpr int kSteps = decltype(steps)::value;
#pragma unroll
          for (int i = 0; i < 32; ++i) fence_operand(sum0[i]);
          if constexpr (WN == 128) {
#pragma unroll
            for (int i = 0; i < 32; ++i) fence_operand(sum1[i]);
          }
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < kSteps; ++kk) {
            if constexpr (WN == 128) {
              wgmma_m64n128k32_s8(sum0, sum1, da + 2 * (kk0 + kk), db + 2 * (kk0 + kk), int(kk > 0 || add));
            } else {
              wgmma_m64n64k32_s8(sum0, da + 2 * (kk0 + kk), db + 2 * (kk0 + kk), int(kk > 0 || add));
            }
          }
          wgmma_commit();
        };
        // acc += float(sum) * 2^(ea + eb) for one 64-column block h: the s32 sum is below 2^24
        // (a chain of at most kChainSlices slices: kChainSlices * 128 * 96 * 96), so the
        // conversion is exact; the scale products are exact (|e| <= 48, or 0 for a flagged
        // group, whose codes are zero), and the FFMA rounds once. `scales(jn, a0, a1, p)` gives
        // the fragment's rows' A scales and writes B's for the two columns of n8 tile jn into p.
        auto promote = [&](uint32_t(&sum)[32], int h, auto&& scales) {
#pragma unroll
          for (int i = 0; i < 32; ++i) fence_operand(sum[i]);
#pragma unroll
          for (int jn = 0; jn < 8; ++jn) {
            float a0, a1, b[2];
            scales(8 * h + jn, a0, a1, b);
            float* a = acc + 32 * h + 4 * jn;
            a[0] = fmaf(float(int(sum[4 * jn + 0])), a0 * b[0], a[0]);
            a[1] = fmaf(float(int(sum[4 * jn + 1])), a0 * b[1], a[1]);
            a[2] = fmaf(float(int(sum[4 * jn + 2])), a1 * b[0], a[2]);
            a[3] = fmaf(float(int(sum[4 * jn + 3])), a1 * b[1], a[3]);
          }
        };
        // The wait for the wgmma group just issued (and any before it) and the promotion of
        // its sums, then, if `last`, the stage's release: every wgmma and every metadata read
        // of the stage is done.
        auto finish = [&](bool last, auto&& scales) {
          wgmma_wait<0>();
          promote(sum0, 0, scales);
          if constexpr (WN == 128) promote(sum1, 1, scales);
          if (held) release_stage(it - 1), held = false;  // its groups are done too
          if (last) release_stage(it);
        };
        if (!wide) {
          // Narrow tile: the four k32 steps of each 64-column block chain in the tensor core
          // (integer sums are exact), onto the previous slice's sums when the chain goes on.
          issue(0, std::integral_constant<int, 4>{}, chained);
          if (chain_on) {
            if (held) {  // the previous slice's group is done once only this slice's may run
              wgmma_wait<1>();
              release_stage(it - 1);
            }
            held = true;
          } else {  // the chain ends: promote once with its scales (those of every slice in it)
            // One scale per row and column (the blocks' scales, fp8_layout.hpp).
            finish(true, [&](int jn, float& a0, float& a1, float (&b)[2]) {
              a0 = __uint_as_float(a_meta[0]), a1 = __uint_as_float(a_meta[8]);
              const float2 v = *reinterpret_cast<const float2*>(meta + b_word(jn));
              b[0] = v.x, b[1] = v.y;
            });
          }
        } else {
          // Wide tile (never inside a chain: a wide group breaks the chain before and after
          // it): one round per k32 step, promoted with its block's exponents (E8M0 bytes kk of
          // the exponent words).
          // (No group is in flight here, as no chain goes on into a wide slice; said
          // explicitly so that ptxas can follow the waits below: else C7514.)
          wgmma_wait<0>();
          // The k32 steps are a rolled loop (unrolled, ptxas keeps the steps' exponent words
          // live together: 132 bytes of spills in 192 x 128, 32 in the 20-warp 128 x 128).
          // Rolled in every kernel: session 25 measured the narrow path fp8 shapes 1-4% faster
          // (64x7168x2048 11.07 -> 10.77 us, 256x7168x2048 14.97 -> 14.31; a smaller loop
          // body) and every-group-wide calls 7-21% slower than with the default kernels'
          // steps unrolled; narrow activations are the common case.
#pragma unroll 1
          for (int kk = 0; kk < 4; ++kk) {
            issue(kk, std::integral_constant<int, 1>{}, false);
            finish(kk == 3, [&](int jn, float& a0, float& a1, float (&b)[2]) {
              constexpr int kExp = fp8::kMetaExponents / 4;
              a0 = exp2_byte(a_meta[kExp], kk), a1 = exp2_byte(a_meta[kExp + 8], kk);
              const uint2 w = *reinterpret_cast<const uint2*>(meta + b_word(jn) + kExp);
              b[0] = exp2_byte(w.x, kk), b[1] = exp2_byte(w.y, kk);
            });
          }
        }
        chained = chain_on;
      }
      // (Every group is complete here: a tile's last slice ends its chain. Said explicitly, so
      // that ptxas need not inject the wait into every slice for the registers the epilogue
      // reuses: C7517.)
      wgmma_wait<0>();

      // Epilogue: straight from the accumulators to C (bf16 rounded to nearest even, or fp32),
      // or, split-K, into this CTA's partial tile in shared memory.
      const int64_t m_base = (int64_t(mt) * kCtas + rank) * P::kBM + row0;
      if (split) {
        // Every consumer warpgroup is past its last read of the ring (named barrier 1).
        __syncwarp();
        asm volatile("bar.sync 1, %0;" ::"r"(kCons * 128) : "memory");
        float* red = reinterpret_cast<float*>(tiles);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int jn = 0; jn < WN / 8; ++jn)
            *reinterpret_cast<float2*>(red + (row0 + 8 * i) * P::kRedPitch + wb * WN + 8 * jn + 2 * (lane % 4)) =
                make_float2(acc[4 * jn + 2 * i], acc[4 * jn + 2 * i + 1]);
        continue;
      }
      const int64_t n_base = int64_t(nt) * BN + wb * WN + 2 * (lane % 4);
      bool nan = false;
#pragma unroll
      for (int e = 0; e < WN / 2; ++e) nan |= acc[e] != acc[e];
      // Warp-uniform (quad_transpose shuffles over the whole warp): rows differ per lane.
      const int64_t n_warp = n_base - 2 * (lane % 4);  // first column of this warpgroup's WN columns
      const int64_t n_lane = n_warp + 8 * (lane % 4);  // lane q's first column after quad_transpose
      if (__all_sync(0xFFFFFFFFu, p.row16_store && !nan && (p.N % 8 == 0 || n_warp + WN <= p.N))) {
        // bf16 C with 16-byte stores allowed, no NaN, and each lane's groups of 8 columns
        // wholly inside or wholly outside N (almost every tile): one conversion per pair
        // (bf16_pair_rn, the bits of fmt::f32_to_bf16), then per 32 columns a transpose over
        // the quad, so that lane q holds 8 adjacent columns of its row (8 jn + 0..7, jn = 4 g +
        // q) and writes them with one 16-byte store: whole 32-byte sectors, a quarter of the
        // store instructions (session 19, ncu at 1024x7168x2048: the checked 2-element stores
        // below took a quarter of the stall samples, then a sixth unchecked). A row past M or
        // a group past N is not stored: a predicated store, not a branch between the groups'
        // shuffles (ptxas may branch around the last store, after every shuffle). Session 49's
        // per-lane branch here cost full tiles +0.46-2.5 us, session 50's second store loop
        // for tiles past N as much.
        uint16_t* c = static_cast<uint16_t*>(p.C) + m_base * p.ldc + n_lane;
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int g = 0; g < WN / 32; ++g) {
            uint32_t x[4];
#pragma unroll
            for (int t = 0; t < 4; ++t) x[t] = bf16_pair_rn(acc[4 * (4 * g + t) + 2 * i], acc[4 * (4 * g + t) + 2 * i + 1]);
            quad_transpose(x, lane);
            st_global_v4_if(c + 8 * i * p.ldc + 32 * g, x[0], x[1], x[2], x[3], m_base + 8 * i < p.M && n_lane + 32 * g < p.N);
          }
        continue;
      }
      if (p.c_f32 && p.vec_store && (p.N % 2 == 0 || n_warp + WN <= p.N)) {
        // fp32 C (tensor-parallel partials) with 8-byte stores allowed: each lane's pairs straight
        // from the accumulators (columns n_base + 8 jn, + 1), one predicated st.global.v2.f32
        // each, rows past M and pairs past N not stored (with N even a pair is wholly inside or
        // outside N); NaN stored as computed. No shuffles, so no vote: every condition is the
        // warp's. Session 52 call 1: the rolled path below cost a tile ~5 us more than unrolled
        // stores did, and every fp32 tile took it.
        float* c = static_cast<float*>(p.C) + m_base * p.ldc + n_base;
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int jn = 0; jn < WN / 8; ++jn)
            st_global_v2_f32_if(c + 8 * i * p.ldc + 8 * jn, acc[4 * jn + 2 * i], acc[4 * jn + 2 * i + 1],
                                m_base + 8 * i < p.M && n_base + 8 * jn < p.N);
        continue;
      }
      // The checked stores (a NaN in bf16 C, C or ldc not aligned for the paths above, a lane's
      // 8 bf16 columns straddling N, an fp32 warp whose columns straddle an odd N): rare, so
      // rolled, over a copy of the accumulators in local memory. Unrolled
      // they were ~2200 instructions of the tile loop (128 x 128) between the K loop and the
      // 16-byte stores; code in the tile loop costs full tiles even where it never runs
      // (session 51 call 1: epilogue v2's 567 instructions, never executed for full tiles,
      // cost ~0.5 us per tile round at 1024x7168x2048).
      float part[WN / 2];
#pragma unroll
      for (int e = 0; e < WN / 2; ++e) part[e] = acc[e];
#pragma unroll 1
      for (int i = 0; i < 2; ++i) {
        const int64_t m = m_base + 8 * i;
        if (m >= p.M) continue;
#pragma unroll 1
        for (int jn = 0; jn < WN / 8; ++jn) store_pair(p, m, n_base + 8 * jn, part[4 * jn + 2 * i], part[4 * jn + 2 * i + 1]);
      }
    }
    if constexpr (FIX) close_cluster(first < tiles_total);
    // The exact fix-up of the region this CTA stored, when it has a flagged group (rare; the
    // same answer in every consumer thread; FIX kernels only). Its staging lies in the drained
    // stage ring. PAIR: the peer's multicasts into the ring have all landed (this CTA's
    // consumers waited for every stage).
    if constexpr (FIX) {
      mbarrier_wait(&scan_bar, 0u);
      if (flagged != 0u) {
        static_assert(sizeof(FixSmem) <= P::kStages * P::kTileBytes && BM <= kListCap && BN <= kListCap,
                      "the fix-up's staging fits the ring, a region's lines one window");
        const Region r = stored_region<BM, BN, WN, PAIR>(p);
        fix_region<kCons * 128>(p, r.m0, r.m1, r.n0, r.n1, 0, 1, *reinterpret_cast<FixSmem*>(tiles));
      }
    }
  }
  if constexpr (!FIX) close_cluster(wg < kCons && first < tiles_total);
}

}  // namespace
}  // namespace mxfp4::cuda
