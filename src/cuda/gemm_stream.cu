// Path "stream" (docs/dispatch.md): the small-M GEMM in one launch, with every weight byte of a
// CTA requested at once.
//
// The two-kernel small-M path (quantize_fragments, then the ring kernel) spends most of a call
// on fixed latencies: the quantizer's launch and its PDL edge, a stage ring refilled in small
// copies, and a split-K reduction across many CTAs (docs/perf-notes.md, "Where a call's time
// goes"). This kernel has one launch and no ring:
//   - one CTA per `slabs` consecutive 16-row weight slabs (block_n = 16 * slabs) and K range
//     (its rank among `split` CTAs of a thread-block cluster along K; split 1: all of K);
//   - before griddepcontrol.wait a CTA only asks for an L2 prefetch of its weights (no load
//     that returns data: docs/dispatch.md, "Stream order"); right after the wait lane 0 of
//     warp s % warps issues stage s's 1-D bulk copies (TMA engine) into shared memory, one per
//     slab, each stage completing on an mbarrier of its own, so the CTA's whole weight
//     share is in flight at once (copies of several KB: docs/perf-notes.md, session 5's
//     stream probe);
//   - meanwhile every warp quantizes the CTA's token rows of A over its K range (spec §2,
//     bit-identical to fmt::quantize_block through quantize_kernels.cuh) into shared memory as
//     the bf16 B fragments of mma.sync.m16n8k16, loads of a batch issued before its arithmetic;
//     with cluster_n > 1 the cluster's CTAs of cluster_n adjacent tiles (same K range) each
//     quantize 1/cluster_n of the rows' blocks and store the fragments into all of them through
//     distributed shared memory, then meet at a cluster barrier;
//   - the K loop: warp w takes slab w / KW and every KW-th 64-wide chunk from w % KW, waits for
//     a chunk's stage, decodes its code words into A fragments e2m1 * 2^s (exact, common.cuh
//     decode_weight_fragment) and runs one m16n8k16 MMA per K16 step and token tile of 8;
//   - the KW warps of a slab add their partial tiles in warp order through shared memory, and
//     split > 1 sums the ranks of a cluster in rank order through distributed shared memory
//     (splitk_reduce_pull), so the result does not depend on timing (deterministic).
// Semantics at the edges are those of the other bf16 paths (docs/hardening.md section 3).
#include <string>
#include <type_traits>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"
#include "cuda/splitk_reduce.cuh"
#include "dispatch/path_name.hpp"

namespace mxfp4::cuda {
namespace {

#ifndef MXFP4_EXP_STREAM_NOPAD
#define MXFP4_EXP_STREAM_NOPAD 0
#endif

constexpr int kQuantBatch = 4;  // groups of A (8 blocks of one row) whose loads a warp has in flight

struct StreamArgs {
  const uint16_t* A;  // bf16 [M, K], row stride lda
  int64_t M, K, lda;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;  // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
  ScaleRule rule;
  StreamPlan plan;
};

/// One CTA of kWarps warps over plan.slabs slabs (KW = kWarps / slabs warps per slab) and the
/// K chunks [kc0, kc1) of its rank; 8 * N8 token rows (M <= 8 * N8, the rest zeros).
template <int N8, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, 1) gemm_stream_kernel(const StreamArgs p) {
  constexpr int kThreads = kWarps * 32;
  extern __shared__ __align__(128) uint8_t smem[];
  const StreamPlan& pl = p.plan;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);  // one per K stage
  uint32_t* afrag = reinterpret_cast<uint32_t*>(smem + pl.a_off);
  uint8_t* wcodes = smem + pl.w_off;
  uint8_t* wscales = smem + pl.s_off;
  float* red = reinterpret_cast<float*>(smem + pl.a_off);  // after the K loop

  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int kw_count = kWarps / pl.slabs, ls = warp / kw_count, kq = warp % kw_count;
  // Cluster of split x cluster_n CTAs: rank along K = crank % split, share of A's quantization
  // rank_n = crank / split (consecutive CTAs: the split ranks of one tile, then the next tile).
  const int csize = pl.split * pl.cluster_n;
  const int crank = csize > 1 ? int(cluster_rank()) : 0;
  const int rank = crank % pl.split, rank_n = crank / pl.split;
  const int64_t slab0 = int64_t(blockIdx.x / unsigned(pl.split)) * pl.slabs;
  const int64_t slabs_total = p.geo.rows_padded / 16;
  // Tiles past the weights (the grid is padded to whole clusters) have no slabs: they only take
  // part in A's quantization and the cluster barriers.
  const int active = int(max(int64_t(0), min(int64_t(pl.slabs), slabs_total - slab0)));
  const int64_t kct = p.geo.k_chunks;
  const int64_t kc0 = kct * rank / pl.split, kc1 = kct * (rank + 1) / pl.split;
  const int nch = int(kc1 - kc0);  // <= pl.chunks
  const int nst = (nch + pl.stage_chunks - 1) / pl.stage_chunks;
  const int ks = 4 * pl.chunks;  // K16 steps per token tile in afrag

  if (threadIdx.x == 0) {
    for (int s = 0; s < nst; ++s) mbarrier_init(&full[s], 1);
    fence_mbarrier_init();
    // This CTA's weights into L2 (no data returns: legal before the wait, docs/dispatch.md).
    for (int i = 0; i < active; ++i) {
      prefetch_l2(p.packed + ((slab0 + i) * kct + kc0) * 512, uint32_t(nch) * 512u);
      prefetch_l2(p.packed + p.geo.code_bytes + ((slab0 + i) * kct + kc0) * 32, uint32_t(nch) * 32u);
    }
  }
  // Stores into a peer's shared memory need the peer running: a cluster barrier first (its
  // wait comes right before the first remote store).
  if (pl.cluster_n > 1) cluster_arrive_relaxed();
  grid_dependency_wait();  // the previous kernel may write A, B or C
  grid_dependents_launch();
  __syncthreads();  // barriers initialised before anyone waits on them

  // Stage s's copies (and its barrier's expected bytes) come from lane 0 of warp s % kWarps, so
  // that no warp issues all of them before it joins A's quantization.
  if (lane == 0) {
    for (int s = warp; s < nst; s += kWarps) {
      const int c0 = s * pl.stage_chunks, cnt = min(pl.stage_chunks, nch - c0);
      const uint32_t code_bytes = uint32_t(cnt) * 512u;
      mbarrier_arrive_expect_tx(&full[s], uint32_t(active) * (code_bytes + (s == 0 ? uint32_t(nch) * 32u : 0u)));
      for (int i = 0; i < active; ++i) {
        const int64_t src = (slab0 + i) * kct + kc0;
        if (s == 0)
          bulk_copy_g2s(wscales + i * pl.chunks * 32, p.packed + p.geo.code_bytes + src * 32, uint32_t(nch) * 32u,
                        &full[0]);
        bulk_copy_g2s(wcodes + (i * pl.chunks + c0) * 512, p.packed + (src + c0) * 512, code_bytes, &full[s]);
      }
    }
  }

  // A's rows [0, 8 N8) over this rank's K blocks [0, 2 nch) -> afrag. A group is 8 consecutive
  // blocks of one row, 4 lanes per block (one quarter each): group g = row g % rows, block group
  // g / rows, so the first groups cover the first K. Rows >= M are stored as zeros without
  // arithmetic (warp-uniform), blocks past K as the quantizer's zeros. With cluster_n > 1 this
  // CTA quantizes the groups g = rank_n (mod cluster_n) and stores each piece into the afrag of
  // every CTA of the cluster with its K range (the same K chunks, so the same layout).
  {
    constexpr int kRows = 8 * N8;
    const int cn = pl.cluster_n;
    const int nb = 2 * nch, groups = kRows * ((nb + 7) / 8), mine = (groups - rank_n + cn - 1) / cn;
    const int q = lane % 4;
    if (cn > 1) cluster_wait();  // every peer runs (the arrival above)
    for (int first = warp; first < mine; first += kQuantBatch * kWarps) {
      uint32_t w[kQuantBatch][4];
#pragma unroll
      for (int j = 0; j < kQuantBatch; ++j) {
        const int g = (first + j * kWarps) * cn + rank_n, r = g % kRows, b = 8 * (g / kRows) + lane / 4;
        const bool real = g < groups && r < p.M && b < nb;
        load_quarter_bf16(p.A, real ? p.M : 0, p.K, p.lda, r, 2 * kc0 + b, q, w[j]);
      }
#pragma unroll
      for (int j = 0; j < kQuantBatch; ++j) {
        const int g = (first + j * kWarps) * cn + rank_n;
        if (g >= groups) break;  // uniform per warp
        const int r = g % kRows, b = 8 * (g / kRows) + lane / 4;
        uint4 piece = make_uint4(0u, 0u, 0u, 0u);
        if (r < p.M) {  // uniform per warp
          uint32_t words[4];
          quantize_quarter_words(w[j], p.rule, words);  // all 32 lanes
          piece = mma_piece_of_quarter(words, q);
        }
        if (b < nb) {
          uint32_t* dst = afrag + a_fragment_index(r / 8, 2 * b + q / 2, ks, 4 * (r % 8) + 2 * (q % 2), 0);
          *reinterpret_cast<uint4*>(dst) = piece;
          for (int i = 1; i < cn; ++i)  // the peers with this K range: cluster ranks rank + split * n
            st_shared_cluster_u4(dst, uint32_t(rank + pl.split * ((rank_n + i) % cn)), piece);
        }
      }
    }
  }
  if (pl.cluster_n > 1) {
    cluster_sync_acq_rel();  // every CTA's A fragments complete, the peers' stores included
  } else {
    __syncthreads();  // A's fragments complete
  }

  // K loop. N8 <= 2: even and odd K16 steps in separate accumulators (two HMMA chains per token
  // tile), added in a fixed order after the loop (as the small-M kernel).
  constexpr int kChains = N8 <= 2 ? 2 : 1;
  float acc[kChains][N8][4];
#pragma unroll
  for (int h = 0; h < kChains; ++h)
#pragma unroll
    for (int j = 0; j < N8; ++j) acc[h][j][0] = acc[h][j][1] = acc[h][j][2] = acc[h][j][3] = 0.f;
  if (ls < active) {
    const uint8_t* codes = wcodes + ls * pl.chunks * 512 + lane * 16;
    const uint8_t* scales = wscales + ls * pl.chunks * 32 + 4 * (lane / 4);
    const uint32_t* a_lane = afrag + 2 * lane;
    // Every slab's scales come with stage 0 (one copy per slab), so every warp with chunks waits
    // for it first, also when its own first chunk lies in a later stage (16 warps on one slab).
    int landed = 0;
    if (kq < nch) mbarrier_wait(&full[0], 0u);
    for (int c = kq; c < nch; c += kw_count) {
      const int s = c / pl.stage_chunks;
      if (s > landed) mbarrier_wait(&full[s], 0u), landed = s;  // each barrier completes one phase
      const uint4 wc = *reinterpret_cast<const uint4*>(codes + c * 512);
      const uint32_t sc = *reinterpret_cast<const uint32_t*>(scales + c * 32);
      const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
      auto mma_chunk = [&](auto fused) {
        constexpr bool kFused = decltype(fused)::value;
        uint32_t f[2][2];
        chunk_scale_factors<kFused>(sc, f);
#pragma unroll
        for (int step = 0; step < 4; ++step) {
          uint32_t a[4];
          decode_weight_fragment(words[step], f, kFused, step, a);
#pragma unroll
          for (int j = 0; j < N8; ++j) {
            const uint2 bf = *reinterpret_cast<const uint2*>(a_lane + (j * ks + 4 * c + step) * 64);
            mma_bf16_16816(acc[step % kChains][j], a, bf.x, bf.y);
          }
        }
      };
      if (chunk_scales_fuse(sc)) {
        mma_chunk(std::true_type{});
      } else {
        mma_chunk(std::false_type{});
      }
    }
  } else {
    // A warp without a slab still waits for every stage, so that no copy is in flight into
    // shared memory that the epilogue reuses (the other warps wait for the stages they read).
    for (int s = 0; s < nst; ++s) mbarrier_wait(&full[s], 0u);
  }
  if constexpr (kChains > 1) {
#pragma unroll
    for (int j = 0; j < N8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][j][e] += acc[1][j][e];
  }
  // Every warp has waited for the stages it read, and a slab's warps together for all of them,
  // so after this barrier no copy is in flight and afrag is free for the partial tile.
  __syncthreads();

  // Epilogue: the KW warps of a slab add their accumulators into red[m][n_local] in warp order,
  // then (cluster-)reduce 4 consecutive n per thread and store. D fragment: d0, d1 = row g,
  // tokens 2t, 2t + 1; d2, d3 = row g + 8 (token tile j: tokens + 8j).
  const int kP = pl.red_pitch, g = lane / 4, t = lane % 4;
  for (int group = 0; group < kw_count; ++group) {
    if (kq == group && ls < pl.slabs) {
#pragma unroll
      for (int j = 0; j < N8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float& dst = red[(8 * j + 2 * t + e % 2) * kP + ls * 16 + g + 8 * (e / 2)];
          dst = group == 0 ? acc[0][j][e] : dst + acc[0][j][e];
        }
    }
    __syncthreads();
  }
  const int64_t n0 = slab0 * 16;
  const int kQuads = 4 * pl.slabs;  // 16 * slabs columns
  const int rows = p.M < 8 * N8 ? int(p.M) : 8 * N8;
  const int quads = rows * kQuads;
  const bool vec = p.c_f32 ? (reinterpret_cast<uintptr_t>(p.C) % 16 == 0 && p.ldc % 4 == 0)
                           : (reinterpret_cast<uintptr_t>(p.C) % 8 == 0 && p.ldc % 4 == 0);
  auto store4 = [&](int m, int nl, float4 v) {
    const int64_t n = n0 + nl, at = m * p.ldc + n;
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
  if (pl.split == 1) {
    for (int qd = int(threadIdx.x); qd < quads; qd += kThreads) {
      const int m = qd / kQuads, nl = 4 * (qd % kQuads);
      store4(m, nl, *reinterpret_cast<const float4*>(red + m * kP + nl));
    }
  } else {
    splitk_reduce_pull_any<kThreads>(red, quads, kQuads, kP, rank, pl.split, store4, pl.split * rank_n);
  }
}

template <int N8, int kWarps>
void launch_stream(const StreamArgs& args, int sm_count, cudaStream_t stream) {
  auto* kernel = gemm_stream_kernel<N8, kWarps>;
  // The largest need of any accepted plan (stream_plan caps smem at kStreamSmemLimit), the same
  // for every call, so concurrent host threads never lower it under another's launch.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kStreamSmemLimit)),
        "cudaFuncSetAttribute(gemm_stream_kernel)");
  const StreamPlan& pl = args.plan;
  // Tiles padded to whole clusters of cluster_n tiles (the extra CTAs have no slabs).
  const int64_t tiles = round_up(ceil_div(args.geo.rows_padded / 16, int64_t(pl.slabs)), int64_t(pl.cluster_n));
  const int csize = pl.split * pl.cluster_n;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles * pl.split));
  cfg.blockDim = dim3(kWarps * 32);
  cfg.dynamicSmemBytes = size_t(pl.smem);
  // Without clusters the block scheduler may stack CTAs unevenly over the SMs (docs/perf-notes.md,
  // session 9): where the grid needs 2 or 3 CTAs per SM, pad the shared memory so that no more
  // fit (228 KB per SM, 1 KB reserved per CTA; CUDA C++ Programming Guide, compute capability 9.0).
  // -DMXFP4_EXP_STREAM_NOPAD=1 (a measurement only, session 35): no padding, so that the next
  // call's CTAs (PDL) can be resident next to this call's where the shared memory allows.
  if (csize == 1 && sm_count > 0 && !MXFP4_EXP_STREAM_NOPAD) {
    const int64_t per_sm = ceil_div(int64_t(cfg.gridDim.x), int64_t(sm_count));
    const int64_t padded = per_sm <= 3 ? 228 * 1024 / (per_sm + 1) - 1024 + 256 : 0;
    if (padded > pl.smem && padded <= int64_t(kStreamSmemLimit)) cfg.dynamicSmemBytes = size_t(padded);
  }
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (csize > 1) {  // split-K and A's shared quantization through a cluster along grid.x
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(csize);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[n].val.programmaticStreamSerializationAllowed = 1;
  ++n;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  check(cudaLaunchKernelEx(&cfg, kernel, args), "cudaLaunchKernelEx(gemm_stream_kernel)");
}

/// The explicit, bounded list of instantiations: token tiles N8 in {1, 2, 4, 8} x warps in
/// {4, 8, 16}: 12 kernels.
template <int N8>
void dispatch_warps(const StreamArgs& args, int warps, int sm_count, cudaStream_t stream) {
  switch (warps) {
    case 4: return launch_stream<N8, 4>(args, sm_count, stream);
    case 8: return launch_stream<N8, 8>(args, sm_count, stream);
    default: return launch_stream<N8, 16>(args, sm_count, stream);
  }
}

}  // namespace

void gemm_stream(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
                 int64_t ldc, const GemmConfig& cfg, ScaleRule rule, int sm_count, cudaStream_t stream) {
  const StreamArgs args{A, M, K, lda, B.data, PackedGeometry::of(B.N, B.K), B.N, C, c_f32, ldc, rule,
                        stream_plan(M, K, cfg)};
  switch (small_m_tile_rows(M)) {
    case 8: return dispatch_warps<1>(args, cfg.warps, sm_count, stream);
    case 16: return dispatch_warps<2>(args, cfg.warps, sm_count, stream);
    case 32: return dispatch_warps<4>(args, cfg.warps, sm_count, stream);
    default: return dispatch_warps<8>(args, cfg.warps, sm_count, stream);
  }
}

}  // namespace mxfp4::cuda
