#pragma once
// The small-M kernel (paths "fused" and "splitk"): the kernel template (its arguments and
// shared-memory plan are in gemm_fused_plan.cuh). Included only by gemm_fused.cu, which holds
// the launchers and the explicit list of instantiations (the anonymous namespace keeps them in
// that one unit).
//
// Small-M GEMM (paths "fused" and "splitk", docs/dispatch.md): up to 64 tokens per CTA,
// larger M in more CTAs along grid.y (M <= 64 * 65535).
//
// C^T = B * A^T on mma.sync.m16n8k16 (bf16 in, fp32 accumulate): weight rows are the MMA's M
// dimension (16 per slab), tokens its N dimension (8 per n8 tile, N8 tiles, a CTA's tokens
// <= 8*N8). A CTA owns block_n = 16 * SLABS weight rows (KW warps per 16-row slab, which take
// alternate K chunks of every stage), 64 tokens and one K range (its rank in a cluster of
// split_k CTAs). The weight stream is the whole design:
//   - A ring of up to kMaxStages stages (K256 each: kG 64-wide chunks) in shared memory is
//     filled by 16-byte cp.async from every thread (a slab's tiles are contiguous along K in
//     the packed layout), so every stage of the ring is in flight at once; each thread arrives
//     on the slot's mbarrier once its copies have landed (cp.async.mbarrier.arrive.noinc).
//     In path splitk's prologue of two or more stages warp 0 issues none and arrives plainly.
//   - Path "splitk": A arrives pre-quantized as fragments (quantize_fragments, launched just
//     before; both launches use programmatic dependent launch): the weight copies start before
//     the quantizer has finished, the fragments' bulk copies (TMA engine, thread 0) after
//     griddepcontrol.wait, right after which the kernel lets its own dependents launch. Path
//     "fused" waits for the previous kernel before anything else.
//   - Path "fused": the CTA quantizes its tokens of A over its K range (spec §2, shared block
//     quantizer) into shared memory itself, all at once when that fits in half the budget
//     (the upper half of the warps stages A's rows by cp.async and quantizes them while the
//     lower half issues the ring's weight copies), else one stage at a time (one launch, no
//     workspace).
//   - Weights are decoded in registers to bf16 e2m1 * 2^s (exact below 2^128) and both
//     operands carry their block scale, so the fp32 accumulator sums exact products.
//   - Path "splitk" with 32 or 64 tokens (N8 >= 4): the same fragments feed register-A
//     wgmma m64n(8*N8)k16 (a warpgroup is 4 slabs at one kw), B = the token tiles in shared
//     memory (FragOrder::wgmma).
// Split-K, in rank order 0..S-1 either way (deterministic, bitwise the same):
//   - path "splitk" with the workspace's split-K scratch: every rank stores its partial tile
//     to the workspace and counts itself on the tile's counter (zeroed by quantize_fragments);
//     the last rank to arrive sums the partials and stores C. No clusters: the ranks never
//     wait for each other, and the grid is not bound to clusters' placement;
//   - otherwise the CTAs of a cluster reduce through distributed shared memory: with 8 or 16
//     tokens at split >= 4 (path splitk: at split 8) every rank pushes the rows that others
//     own into their receive buffers (st.async, counted on the owner's mbarrier;
//     push_reduce); otherwise path splitk copies them there with one bulk copy per rank
//     after a cluster barrier, where the ring has room for the receive slots
//     (splitk_reduce_copy), and every rank pulls its rows after a cluster barrier where not
//     (path fused; a one-stage ring of 8 slabs).

#include <cooperative_groups.h>

#include <type_traits>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_fused_plan.cuh"
#include "cuda/quantize_kernels.cuh"
#include "cuda/splitk_reduce.cuh"
#include "cuda/wgmma.cuh"

// -DMXFP4_EXP_WAIT_AT_ENTRY=1 (a measurement only: docs/perf-notes.md, session 32 plan item
// s): path splitk's CTAs wait for quantize_fragments as their first instruction, so that the
// timeline's start stamp is the wait's return with nothing of the kernel's own before it.
#ifndef MXFP4_EXP_WAIT_AT_ENTRY
#define MXFP4_EXP_WAIT_AT_ENTRY 0
#endif
// -DMXFP4_EXP_EXIT_AT_WAIT=1|2 (a measurement only, session 34 plan item s; with WAIT_AT_ENTRY
// and the timeline tool's --steady instrumentation, tools/dev/timeline/instrument.py): path
// splitk's CTAs stamp their start and leave; 2 also launches them without dynamic shared
// memory and cluster (gemm_fused.cu). Is the GEMM's late release its launch or its work?
#ifndef MXFP4_EXP_EXIT_AT_WAIT
#define MXFP4_EXP_EXIT_AT_WAIT 0
#endif

namespace cg = cooperative_groups;

namespace mxfp4::cuda {
namespace {

/// One CTA: SLABS 16-row weight slabs x KW warps per slab (the KW warps of a slab take
/// alternate K chunks of every stage), tokens [64 * blockIdx.y, +64) of A. Launch bounds keep
/// every instantiation at <= 128 registers (>= 16 resident warps per SM).
template <int N8, int SLABS, int KW, bool PREQUANT, bool WS>
__global__ void __launch_bounds__(SLABS * KW * 32, SLABS * KW >= 16 ? 1 : 16 / (SLABS * KW)) gemm_fused_kernel(const FusedArgs p) {
  if constexpr (PREQUANT && MXFP4_EXP_WAIT_AT_ENTRY) grid_dependency_wait();  // the later waits return at once
  constexpr int kThreads = SLABS * KW * 32;
  using R = Ring<N8, SLABS, PREQUANT>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw);
  uint8_t* ring = smem_raw + R::kHeader;
  uint32_t* abuf = reinterpret_cast<uint32_t*>(ring + p.stages * R::kSlot);  // path "fused"
  uint32_t* astage = abuf + R::abuf_bytes(p.a_chunks) / 4;                    // path "fused", staged A
  uint64_t* abar = full + kMaxStages;                                          // astage landed
  uint64_t* recv_bar = full + kMaxStages + 1;                                  // push: every row I own landed
  float* red = reinterpret_cast<float*>(ring);                                // after the K loop

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int ls = warp % SLABS, kw = warp / SLABS;
  // Split-K through the workspace (path "splitk" only): no cluster, rank from the grid.
  // A kernel of its own (WS), so that the cluster kernels compile as if it did not exist.
  static_assert(!WS || (PREQUANT && N8 <= 2), "split-K through the workspace: path splitk, M <= 16");
  const bool ws_split = WS && p.split > 1;
  const int rank = p.split <= 1 ? 0
                   : ws_split   ? int(blockIdx.x % unsigned(p.split))
                                : int(cg::this_cluster().block_rank());
  const int64_t slab0 = (blockIdx.x / p.split) * int64_t(SLABS);
  const int64_t slabs_total = p.geo.rows_padded / 16;
  const int active_slabs = slabs_total - slab0 < SLABS ? int(slabs_total - slab0) : SLABS;
  const int64_t kc_total = p.geo.k_chunks, ks_total = p.geo.k_padded / 16;
  const int64_t kc0 = kc_total * rank / p.split, kc1 = kc_total * (rank + 1) / p.split;
  const int nstages = int((kc1 - kc0 + kG - 1) / kG);
  const int64_t m0 = int64_t(blockIdx.y) * kBlockM;  // first token of this CTA
  const int rows = p.M - m0 < 8 * N8 ? int(p.M - m0) : 8 * N8;
  const int tiles_m = (rows + 7) / 8;
  const uint32_t* frags = PREQUANT ? p.frags + (m0 / 8) * ks_total * 64 : nullptr;
  // Push reduction: rank r owns token rows [r * rpr, +rpr) of the tile (fewer or none at the end).
  const bool push = push_reduce<N8, WS, PREQUANT>(p.split);
  const int rpr = (rows + p.split - 1) / p.split;
  const int own_rows = max(0, min(rows, (rank + 1) * rpr) - rank * rpr);
  // Otherwise path splitk's clusters reduce by bulk copy (splitk_reduce_copy) where the ring
  // holds the partial tile and the receive slots after it, else by pull.
  const bool copy_red = PREQUANT && !WS && !push && p.split > 1 &&
                        p.stages * R::kSlot >= R::kRed + p.split * rpr * R::kRedPitch * 4;

  // Producer: the bytes of stage s into ring slot s % stages. The weights (codes and scales of
  // every slab) go by 16-byte cp.async from every thread, which then arrives on the slot's
  // mbarrier when its copies have landed (cp.async.mbarrier.arrive.noinc). 1-D bulk copies of a
  // slab's 2 KB and 128 bytes cost ~120-200 ns each per CTA, however many threads issue them
  // (docs/perf-notes.md, session 6). Path "splitk"'s fragments (one bulk copy per token tile)
  // stay on the TMA engine: thread 0's arrival adds their bytes to the transaction count.
  // The slot's mbarrier expects kThreads + 1 arrivals per phase.
  auto stage_chunks = [&](int s) {
    const int64_t left = kc1 - kc0 - int64_t(s) * kG;
    return left < kG ? int(left) : kG;
  };
  // Codes: 128 pieces of 16 bytes per slab and full stage, thread t taking pieces t + nt j
  // (slab p / 128, chunk p % 128 / 32); scales: 8 pieces per slab, threads 0 .. 8 * SLABS - 1.
  // The copies are spread over `nt` threads (kThreads; in the prologue path "fused"'s issuing
  // half, or path "splitk"'s warps 1.. when warp 0 waits), t = 0 .. nt-1 being the caller's
  // index among them.
  // Stage s goes into ring slot `slot` (s % p.stages: the caller knows it).
  auto issue_weight_copies = [&](int s, int slot, int t, auto nt_c) {
    constexpr int nt = decltype(nt_c)::value, kPieces = SLABS * kG * 32;
    constexpr int kCodePieces = (kPieces + nt - 1) / nt;  // (4 / KW) * kThreads / nt when nt divides
    const int chunks = stage_chunks(s);
    uint8_t* dst = ring + slot * R::kSlot;
    const int64_t kc = kc0 + int64_t(s) * kG;
#pragma unroll
    for (int j = 0; j < kCodePieces; ++j) {
      const int piece = t + nt * j, i = piece / (kG * 32), o = piece % (kG * 32);
      if (kPieces % nt != 0 && piece >= kPieces) break;  // the waiter warp's prologue only
      if (i < active_slabs && o < chunks * 32)
        cp_async16(dst + i * kG * 512 + o * 16, p.packed + ((slab0 + i) * kc_total + kc) * 512 + o * 16);
    }
    // (Giving the scale pieces to the threads without an extra code piece where nt does not
    // divide them measured within the spread: session 32.)
    static_assert(SLABS * 2 * kG <= nt, "every scale piece needs a thread");
    if (t < SLABS * 2 * kG) {
      const int i = t / (2 * kG), o = t % (2 * kG);
      if (i < active_slabs && o < 2 * chunks)
        cp_async16(dst + R::kCodes + i * kG * 32 + o * 16,
                   p.packed + p.geo.code_bytes + ((slab0 + i) * kc_total + kc) * 32 + o * 16);
    }
  };
  auto issue_weights = [&](int s, int slot, int t, auto nt_c) {
    issue_weight_copies(s, slot, t, nt_c);
    cp_async_mbarrier_arrive_noinc(&full[slot]);
  };
  // Thread 0: the slot's transaction arrival, with path "splitk"'s fragment copies.
  auto issue_frags = [&](int s, int slot) {
    const int chunks = stage_chunks(s);
    if (!PREQUANT) {
      mbarrier_arrive(&full[slot]);
      return;
    }
    mbarrier_arrive_expect_tx(&full[slot], uint32_t(tiles_m * chunks * 1024));
    uint8_t* dst = ring + slot * R::kSlot + R::kCodes + R::kScales;
    const int64_t ks = 4 * (kc0 + int64_t(s) * kG);
    for (int j = 0; j < tiles_m; ++j)
      bulk_copy_g2s(dst + j * kG * 1024, frags + (j * ks_total + ks) * 64, uint32_t(chunks * 1024), &full[slot]);
  };
  // Path "fused": A[m0 + 0..rows, chunks c0 .. c0+n of this rank] -> abuf as fragments (zeros
  // past M and K), 4 lanes per 32-element block. Every lane joins every round (the block
  // reductions shuffle across 4 lanes); tasks past the end quantize zeros and store nothing.
  // Spread over `nt` threads (whole warps), `me` = 0 .. nt-1 being the caller's index among them.
  auto quantize_a = [&](int64_t c0, int n, int me, int nt) {
    const int tasks = 8 * N8 * 2 * n * 4, rounds = (tasks + nt - 1) / nt;
    const int64_t ks_buf = 4 * int64_t(p.a_chunks);
    for (int round = 0; round < rounds; ++round) {
      const int task = round * nt + me;
      const int q = task % 4, blk = task / 4;
      const int r = blk / (2 * n), b = blk % (2 * n);
      // A warp whose tasks are all past the CTA's tokens (padding of the last token tile, or
      // past the batch) writes zeros, the quantizer's result for them, without running it:
      // at M = 1 seven of eight rows are padding (docs/perf-notes.md, session 5).
      // Each lane stores one 16-byte piece (mma_piece_of_quarter): fragment lanes
      // 4 (r % 8) + 2 (q % 2) + {0, 1}, both registers.
      auto store = [&](const uint4& piece) {
        if (task < tasks)
          *reinterpret_cast<uint4*>(abuf + a_fragment_index(r / 8, 2 * b + q / 2, ks_buf, 4 * (r % 8) + 2 * (q % 2), 0)) = piece;
      };
      if (__all_sync(0xFFFFFFFFu, task >= tasks || r >= rows)) {
        store(make_uint4(0u, 0u, 0u, 0u));
        continue;
      }
      uint32_t words[4];
      if (p.a_stage_rows > 0) {  // the batch is the rank's whole range, staged as [row][a_chunks * 64]
        uint32_t w[4] = {0u, 0u, 0u, 0u};
        if (task < tasks && r < rows && (2 * kc0 + b) * 32 < p.K) {
          const uint4 u = *reinterpret_cast<const uint4*>(astage + r * p.a_chunks * 32 + b * 16 + 4 * q);
          w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
        }
        quantize_quarter_words(w, p.rule, words);
      } else {
        quantize_quarter_to_fragment_words(p.A + m0 * p.lda, task < tasks ? rows : 0, p.K, p.lda, r,
                                           2 * (kc0 + c0) + b, q, p.rule, words);
      }
      store(mma_piece_of_quarter(words, q));  // all lanes of the warp shuffle
    }
  };

  // Path "fused", whole range quantized at once: the CTA's rows of A over the rank's K range
  // go to shared memory by cp.async *before* the weights. Loaded after them, A waited behind
  // the SM's whole weight stream (quantization ended 3.8 us into 1x7168x2048, session 6).
  auto stage_a = [&](int t, int nt) {
    const int64_t col0 = kc0 * 64, cols = min(kc1 * 64, p.K) - col0;  // K % 32 == 0: whole 16-byte pieces
    const int per_row = int(cols / 8), pieces = rows * per_row;
    for (int piece = t; piece < pieces; piece += nt) {
      const int r = piece / per_row, o = piece % per_row;
      cp_async16(astage + r * p.a_chunks * 32 + 4 * o, p.A + (m0 + r) * p.lda + col0 + 8 * o);
    }
    cp_async_mbarrier_arrive_noinc(abar);
  };

  const int prologue = min(nstages, p.stages);
  // Path "fused": the lower half of the warps issues the prologue's weight copies (and stalls in
  // that burst, 1.3-1.8 us, docs/perf-notes.md session 6) while the upper half stages and
  // quantizes A's first batch; the quantizers arrive on the ring's mbarriers without copies.
  constexpr int kHalf = kThreads / 2;
  const bool quantizer = !PREQUANT && int(threadIdx.x) >= kHalf;
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) mbarrier_init(&full[s], kThreads + 1);
    mbarrier_init(abar, kHalf);
    if (push) {  // one phase: the other ranks' rows that I own, 16 bytes per quad
      mbarrier_init(recv_bar, 1);
      mbarrier_arrive_expect_tx(recv_bar, uint32_t((p.split - 1) * own_rows * 16 * SLABS * 4));
    } else if (copy_red) {  // one phase: the other ranks' rows that I own, whole rows of the tile
      mbarrier_init(recv_bar, 1);
      mbarrier_arrive_expect_tx(recv_bar, uint32_t((p.split - 1) * own_rows * R::kRedPitch * 4));
    }
    fence_mbarrier_init();
  }
  // Both paths are launched with programmatic dependent launch. Path "fused" may start while
  // the stream's previous kernel, which may write A, the weights or C, is finishing, so every
  // thread waits for it before touching global memory. Path "splitk"'s primary is
  // quantize_fragments, which lets it start only after its own wait, so the weights are final
  // and stream at once (with GemmOptions::weights_static it lets it start before: the caller
  // promised the weights are final); A's fragments, the workspace and C wait below.
  if constexpr (!PREQUANT) grid_dependency_wait();
  __syncthreads();  // barriers initialised before any copy names them or anyone waits on them
  if (push) cluster_arrive_relaxed();  // ... and before another rank pushes (cluster_wait in the epilogue)
  // Path "splitk" with two or more prologue stages: warp 0 issues no weights there; it waits
  // at once and thread 0 issues the fragments' bulk copies, while the other warps issue the
  // weights and then wait. Issuing a long prologue (1.0-1.8 us of cp.async) before the wait
  // had delayed every thread's wait, and so A, past the quantizer's end (session 31:
  // 16x2112x7168 10.13 -> 9.30 us, 8x2112x7168 9.71 -> 9.16, 64x3072x1536 7.94 -> 7.75; with
  // one stage it gained nothing and lost up to 0.09: docs/perf-notes.md).
  const bool wait_warp = PREQUANT && prologue >= 2;
  if constexpr (PREQUANT) {
    // Every prologue stage before the wait (by all warps, or by warps 1.. when warp 0 waits):
    // issuing only the first (or none) before it did not shorten the quantizer's part of a
    // call (session 10, -DMXFP4_EXP_PRO=1 / 0).
    // (Waiting before any weight copy, -DMXFP4_EXP_WAIT_FIRST in session 32, lost 0.3-1.0 us on
    // the multi-stage shapes and did not move the wait's return; waiting on a count of finished
    // quantizer CTAs instead of griddepcontrol.wait, -DMXFP4_EXP_FLAG, returned 0.5-0.8 us later.)
    if (!wait_warp) {
      for (int s = 0; s < prologue; ++s) issue_weights(s, s, int(threadIdx.x), std::integral_constant<int, kThreads>{});
      grid_dependency_wait();
    } else if (threadIdx.x < 32) {
      grid_dependency_wait();
      if (threadIdx.x == 0)
        for (int s = 0; s < prologue; ++s) issue_frags(s, s);
      for (int s = 0; s < prologue; ++s) mbarrier_arrive(&full[s]);  // its arrivals, without copies
    } else {
      for (int s = 0; s < prologue; ++s)
        issue_weights(s, s, int(threadIdx.x) - 32, std::integral_constant<int, kThreads - 32>{});
      grid_dependency_wait();
    }
    // The next call's first kernel (quantize_fragments, itself waiting for this grid before it
    // touches memory) may launch now and wait on the SMs, instead of launching once this
    // grid's last CTA has exited: session 28, -0.45 to -0.65 us per call on five of the six
    // path splitk shapes of the workload (docs/perf-notes.md). Path fused signals only at exit.
    grid_dependents_launch();
  } else if (quantizer) {
    for (int s = 0; s < prologue; ++s) mbarrier_arrive(&full[s]);
    if (p.a_stage_rows > 0) {
      stage_a(int(threadIdx.x) - kHalf, kHalf);
      mbarrier_wait(abar, 0u);  // staged A has landed (one batch)
    }
    quantize_a(0, min(int(kc1 - kc0), p.a_chunks), int(threadIdx.x) - kHalf, kHalf);
  } else {
    for (int s = 0; s < prologue; ++s) issue_weights(s, s, int(threadIdx.x), std::integral_constant<int, kHalf>{});
  }
  if (threadIdx.x == 0 && !wait_warp)
    for (int s = 0; s < prologue; ++s) issue_frags(s, s);
  if constexpr (!PREQUANT) __syncthreads();  // A's first batch is in abuf

  // N8 <= 2: even and odd K16 steps accumulate into separate registers (two independent HMMA
  // chains per token tile instead of one, which the latency of each HMMA would serialise),
  // added in a fixed order after the loop. Four chains at N8 = 1 were slower (session 11).
  constexpr int kChains = N8 <= 2 ? 2 : 1;
  // Path "splitk" with 32 or 64 tokens: the K loop on register-A wgmma (FragOrder::wgmma).
  constexpr bool kWgmma = PREQUANT && N8 >= 4;
  static_assert(!kWgmma || SLABS % 4 == 0, "a warpgroup is 4 slabs at one kw");
  float acc[kChains][N8][4];
#pragma unroll
  for (int h = 0; h < kChains; ++h)
#pragma unroll
    for (int j = 0; j < N8; ++j) acc[h][j][0] = acc[h][j][1] = acc[h][j][2] = acc[h][j][3] = 0.f;

  // The end-of-stage barrier guards ring slots that are refilled and path "fused"'s A batches
  // that are overwritten. Without either (every stage has its own slot, A is quantized once)
  // the warps run through their stages independently, and one barrier after the loop keeps
  // the ring alive until every warp has read it (the epilogue's reduction tile reuses it).
  const bool stage_barrier = nstages > p.stages || (!PREQUANT && p.a_chunks < nstages * kG);
  int slot = 0;         // s % p.stages
  uint32_t phase = 0u;  // (s / p.stages) & 1
  for (int s = 0; s < nstages; ++s) {
    const int chunks = stage_chunks(s);
    const uint8_t* slot_base = ring + slot * R::kSlot;
    const uint32_t* a_frag;  // fragments of this stage's first chunk, K16-step pitch ks_pitch
    int ks_pitch;
    if constexpr (PREQUANT) {
      a_frag = reinterpret_cast<const uint32_t*>(slot_base + R::kCodes + R::kScales);
      ks_pitch = 4 * kG;
    } else {
      const int in_batch = (s * kG) % p.a_chunks;
      if (in_batch == 0 && s > 0) {  // the previous batch is consumed (end-of-stage barrier)
        const int64_t left = kc1 - kc0 - int64_t(s) * kG;
        quantize_a(int64_t(s) * kG, left < p.a_chunks ? int(left) : p.a_chunks, int(threadIdx.x), kThreads);
        __syncthreads();
      }
      a_frag = abuf + in_batch * 4 * 64;
      ks_pitch = 4 * p.a_chunks;
    }
    mbarrier_wait(&full[slot], phase);

    if constexpr (kWgmma) {
      // Each warpgroup (4 slabs at one kw) issues one m64n(8*N8)k16 wgmma per K16 step: A is
      // every warp's decoded fragment of its slab (warps past the last slab decode zeros),
      // B the stage's token tiles in wgmma word order (FragOrder::wgmma), D the accumulators in
      // the m16n8 C-fragment order the epilogue reads.
      const bool live = ls < active_slabs;
      const uint8_t* codes = slot_base + ls * kG * 512 + lane * 16;
      const uint8_t* scales = slot_base + R::kCodes + ls * kG * 32 + 4 * (lane / 4);
      const uint8_t* tiles = slot_base + R::kCodes + R::kScales;  // [tile][K16 step][256 bytes]
      float(&d)[4 * N8] = reinterpret_cast<float(&)[4 * N8]>(acc[0]);
      uint32_t abuf2[2][4] = {};  // the A fragments of the last two K16 steps (read asynchronously)
#pragma unroll
      for (int cc = 0; cc < kG / KW; ++cc) {
        const int c = cc * KW + kw;  // the same for the 4 warps of a warpgroup
        if (c >= chunks) break;
        const uint4 wc = live ? *reinterpret_cast<const uint4*>(codes + c * 512) : make_uint4(0u, 0u, 0u, 0u);
        const uint32_t sc = live ? *reinterpret_cast<const uint32_t*>(scales + c * 32) : 0x7F7F7F7Fu;
        const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
        const bool fused = chunk_scales_fuse(sc);
        uint32_t f[2][2];
        if (fused) {
          chunk_scale_factors<true>(sc, f);
        } else {
          chunk_scale_factors<false>(sc, f);
        }
        // Two A buffers by K16 step parity: step s's decode overlaps step s-1's wgmma; the
        // wait before it (at most one group pending) frees the buffer that step s-2 read.
#pragma unroll
        for (int step = 0; step < 4; ++step) {
          uint32_t(&a)[4] = abuf2[step & 1];
          decode_weight_fragment(words[step], f, fused, step, a);
          wgmma_fence();
          wgmma_bf16_rs<8 * N8>(d, a, smem_desc_kmajor(tiles + (4 * c + step) * 256, 128, kG * 4 * 256), 1);
          wgmma_commit();
          wgmma_wait<1>();  // step - 1's wgmma is done: its buffer may be written next
#pragma unroll
          for (int q = 0; q < 4; ++q) fence_operand(abuf2[(step + 1) & 1][q]);
        }
      }
      wgmma_wait<0>();  // every wgmma of the stage has read its slot (refilled after the barrier)
#pragma unroll
      for (int q = 0; q < 4; ++q) fence_operand(abuf2[0][q]), fence_operand(abuf2[1][q]);
#pragma unroll
      for (int e = 0; e < 4 * N8; ++e) fence_operand(d[e]);
    } else if (ls < active_slabs) {
      const uint8_t* codes = slot_base + ls * kG * 512 + lane * 16;
      const uint8_t* scales = slot_base + R::kCodes + ls * kG * 32 + 4 * (lane / 4);
      const uint32_t* a_lane = a_frag + 2 * lane;
#pragma unroll
      for (int cc = 0; cc < kG / KW; ++cc) {
        const int c = cc * KW + kw;
        if (c >= chunks) break;
        const uint4 wc = *reinterpret_cast<const uint4*>(codes + c * 512);
        const uint32_t sc = *reinterpret_cast<const uint32_t*>(scales + c * 32);
        const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
        // One warp-uniform branch per chunk on the scale case (common.cuh chunk_scales).
        auto mma_chunk = [&](auto fused) {
          constexpr bool kFused = decltype(fused)::value;
          uint32_t f[2][2];
          chunk_scale_factors<kFused>(sc, f);
#pragma unroll
          for (int step = 0; step < 4; ++step) {
            uint32_t a[4];
            decode_weight_fragment(words[step], f, kFused, step, a);
#pragma unroll
            for (int j = 0; j < N8; ++j) {  // tiles past M hold don't-care values: never stored
              const uint2 b = *reinterpret_cast<const uint2*>(a_lane + (j * ks_pitch + 4 * c + step) * 64);
              mma_bf16_16816(acc[step % kChains][j], a, b.x, b.y);
            }
          }
        };
        if (chunk_scales_fuse(sc)) {
          mma_chunk(std::true_type{});
        } else {
          mma_chunk(std::false_type{});
        }
      }
    }
    if (stage_barrier) __syncthreads();  // slot (and abuf) consumed by every warp
    if (s + p.stages < nstages) {
      issue_weights(s + p.stages, slot, int(threadIdx.x), std::integral_constant<int, kThreads>{});
      if (threadIdx.x == 0) issue_frags(s + p.stages, slot);
    }
    if (++slot == p.stages) slot = 0, phase ^= 1u;
  }
  if (!stage_barrier) __syncthreads();
  if constexpr (kChains > 1) {
#pragma unroll
    for (int h = 1; h < kChains; ++h)
#pragma unroll
      for (int j = 0; j < N8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[0][j][e] += acc[h][j][e];
  }

  // Epilogue: the KW warps of a slab add their accumulators into red[m][n_local] in order
  // (every copy has landed; all warps are past the loop's last barrier), then
  // (cluster-)reduce 4 consecutive n per thread and store.
  constexpr int kBlockN = 16 * SLABS;
  constexpr int kP = R::kRedPitch;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int group = 0; group < KW; ++group) {
    if (kw == group) {
#pragma unroll
      for (int j = 0; j < N8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float& dst = red[(8 * j + 2 * t + e % 2) * kP + ls * 16 + g + 8 * (e / 2)];
          dst = group == 0 ? acc[0][j][e] : dst + acc[0][j][e];
        }
    }
    if (KW > 1) __syncthreads();
  }
  const int64_t n0 = slab0 * 16;
  constexpr int kQuads = kBlockN / 4;
  const int quads = rows * kQuads;
  // Vector stores when the 4 outputs are in range and C's rows are suitably aligned.
  const bool vec = p.c_f32 ? (reinterpret_cast<uintptr_t>(p.C) % 16 == 0 && p.ldc % 4 == 0)
                           : (reinterpret_cast<uintptr_t>(p.C) % 8 == 0 && p.ldc % 4 == 0);
  auto store4 = [&](int m, int nl, float4 v) {
    const int64_t n = n0 + nl, at = (m0 + m) * p.ldc + n;
    if (vec && n + 3 < p.N) {
      if (p.c_f32) {
        *reinterpret_cast<float4*>(static_cast<float*>(p.C) + at) = v;
      } else {
        const uint32_t lo = uint32_t(fmt::f32_to_bf16(v.x)) | (uint32_t(fmt::f32_to_bf16(v.y)) << 16);
        const uint32_t hi = uint32_t(fmt::f32_to_bf16(v.z)) | (uint32_t(fmt::f32_to_bf16(v.w)) << 16);
        *reinterpret_cast<uint2*>(static_cast<uint16_t*>(p.C) + at) = make_uint2(lo, hi);
      }
      return;
    }
    const float e[4] = {v.x, v.y, v.z, v.w};
    for (int i = 0; i < 4 && n + i < p.N; ++i) {
      if (p.c_f32) {
        static_cast<float*>(p.C)[at + i] = e[i];
      } else {
        static_cast<uint16_t*>(p.C)[at + i] = fmt::f32_to_bf16(e[i]);
      }
    }
  };
  if (p.split == 1) {
    if (KW == 1) __syncthreads();
    for (int q = threadIdx.x; q < quads; q += kThreads) {
      const int m = q / kQuads, nl = 4 * (q % kQuads);
      store4(m, nl, *reinterpret_cast<const float4*>(red + m * kP + nl));
    }
  } else if (ws_split) {
    constexpr int kTileFloats = 8 * N8 * kBlockN;
    const int64_t tile = blockIdx.x / unsigned(p.split);  // one token tile (M <= 16: splitk_scratch)
    if (KW == 1) __syncthreads();
    splitk_reduce_workspace<kThreads, kQuads, kP, kTileFloats>(red, quads, rank, p.split,
                                                               p.partials + tile * p.split * kTileFloats,
                                                               p.counters + tile, store4);
  } else if (push) {
    if (KW == 1) __syncthreads();  // red is complete
    splitk_reduce_push<kThreads, kQuads, kP>(red, reinterpret_cast<float*>(smem_raw + p.recv_off), recv_bar, quads,
                                             rpr, own_rows, rank, p.split, store4);
  } else if (copy_red) {
    splitk_reduce_copy<kThreads, kQuads, kP>(red, reinterpret_cast<float*>(ring + R::kRed), recv_bar, rows, rpr,
                                             own_rows, rank, p.split, store4);
  } else {
    splitk_reduce_pull<kThreads, kQuads, kP>(red, quads, rank, p.split, store4);
  }
}

}  // namespace
}  // namespace mxfp4::cuda
