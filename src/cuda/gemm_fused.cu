// Small-M GEMM (paths "fused" and "splitk", docs/dispatch.md), M <= 64.
//
// C^T = B * A^T on mma.sync.m16n8k16 (bf16 in, fp32 accumulate): weight rows are the MMA's M
// dimension (16 per slab), tokens its N dimension (8 per n8 tile, N8 tiles, M <= 8*N8).
// A CTA owns block_n = 16 * WARPS * SPW weight rows (SPW 16-row slabs per warp) and one K
// range (its rank in a cluster of split_k CTAs). The weight stream is the whole design:
//   - A ring of NS stages (K128 each) in shared memory is filled by 1-D bulk copies (TMA
//     engine; one copy per slab per stage, since a slab's tiles are contiguous along K in the
//     packed layout), so up to NS stages of every slab are in flight at once, issued by one
//     thread with no register cost; an mbarrier per ring slot counts the bytes in.
//   - Path "splitk": A arrives pre-quantized as fragments (quantize_fragments, launched just
//     before with programmatic dependent launch): the weight copies start before the
//     quantizer has finished, the fragment copies after griddepcontrol.wait.
//   - Path "fused": the CTA quantizes A[0:M, stage] (spec §2, shared block quantizer) into
//     shared memory itself while the ring fills (one launch, no workspace).
//   - Weights are decoded in registers to bf16 e2m1 * 2^s (exact) and both operands carry
//     their block scale, so the fp32 accumulator sums exact products.
// Split-K: the CTAs of a cluster reduce their partial tiles through distributed shared memory
// in rank order 0..S-1 (deterministic, no workspace).
#include <cooperative_groups.h>

#include <algorithm>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace cg = cooperative_groups;

namespace mxfp4::cuda {
namespace {

constexpr int kG = 2;           // 64-wide K chunks per stage (K128)
constexpr int kMaxStages = 8;   // ring slots
constexpr int kTileBytes = 512 + 32;  // codes + scales of one 16x64 weight tile
constexpr int kSmemBudget = 112 * 1024;  // ring bytes per CTA: two CTAs per SM

struct FusedArgs {
  const uint16_t* A;
  int64_t M, K, lda;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;  // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
  ScaleRule rule;
  int split;
  int stages;             // ring slots in use (1..kMaxStages)
  const uint32_t* frags;  // path "splitk": A as activation fragments (quantize_fragments layout)
};

/// Shared-memory layout of one ring slot for a CTA of SLABS slabs and N8 token tiles.
template <int N8, int SLABS, bool PREQUANT>
struct Ring {
  static constexpr int kCodes = SLABS * kG * 512;       // [slab][chunk][512]
  static constexpr int kScales = SLABS * kG * 32;       // [slab][chunk][32]
  static constexpr int kFrags = N8 * kG * 4 * 256;      // [tile][K16 step][64 u32]
  static constexpr int kSlot = kCodes + kScales + (PREQUANT ? kFrags : 0);
  static constexpr int kAbuf = PREQUANT ? 0 : kFrags;   // path "fused": one A buffer
  static constexpr int kRedPitch = 16 * SLABS + 4;      // floats per token row of the tile
  static constexpr int kRed = 8 * N8 * kRedPitch * 4;   // [8*N8 tokens][kRedPitch] fp32
  static constexpr int kHeader = 128;                   // mbarriers
  static int bytes(int stages) {
    const int ring = stages * kSlot + kAbuf;
    return kHeader + (ring > kRed ? ring : kRed);
  }
};

template <int N8, int WARPS, int SPW, bool PREQUANT>
__global__ void __launch_bounds__(WARPS * 32) gemm_fused_kernel(const FusedArgs p) {
  constexpr int kSlabs = WARPS * SPW;
  using R = Ring<N8, kSlabs, PREQUANT>;
  constexpr int kSteps = 4 * kG;  // K16 steps per stage
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw);
  uint8_t* ring = smem_raw + R::kHeader;
  uint32_t* abuf = reinterpret_cast<uint32_t*>(ring + p.stages * R::kSlot);  // path "fused"
  float* red = reinterpret_cast<float*>(ring);                                // after the K loop

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rank = p.split > 1 ? int(cg::this_cluster().block_rank()) : 0;
  const int64_t slab0 = (blockIdx.x / p.split) * int64_t(kSlabs);
  const int64_t slabs_total = p.geo.rows_padded / 16;
  const int active_slabs = slabs_total - slab0 < kSlabs ? int(slabs_total - slab0) : kSlabs;
  const int64_t kc_total = p.geo.k_chunks, ks_total = p.geo.k_padded / 16;
  const int64_t kc0 = kc_total * rank / p.split, kc1 = kc_total * (rank + 1) / p.split;
  const int nstages = int((kc1 - kc0 + kG - 1) / kG);
  const int tiles_m = int((p.M + 7) / 8);

  // Producer (thread 0): the bytes of stage s into ring slot s % stages.
  auto stage_chunks = [&](int s) { const int64_t left = kc1 - kc0 - int64_t(s) * kG; return left < kG ? int(left) : kG; };
  auto issue_weights = [&](int s) {
    const int slot = s % p.stages, chunks = stage_chunks(s);
    uint8_t* dst = ring + slot * R::kSlot;
    const uint32_t frag_bytes = PREQUANT ? uint32_t(tiles_m * chunks * 1024) : 0u;
    mbarrier_arrive_expect_tx(&full[slot], uint32_t(active_slabs * chunks * kTileBytes) + frag_bytes);
    const int64_t kc = kc0 + int64_t(s) * kG;
    for (int ls = 0; ls < active_slabs; ++ls) {
      const int64_t tile = (slab0 + ls) * kc_total + kc;
      bulk_copy_g2s(dst + ls * kG * 512, p.packed + tile * 512, uint32_t(chunks * 512), &full[slot]);
      bulk_copy_g2s(dst + R::kCodes + ls * kG * 32, p.packed + p.geo.code_bytes + tile * 32, uint32_t(chunks * 32),
                    &full[slot]);
    }
  };
  auto issue_frags = [&](int s) {
    const int slot = s % p.stages, chunks = stage_chunks(s);
    uint8_t* dst = ring + slot * R::kSlot + R::kCodes + R::kScales;
    const int64_t ks = 4 * (kc0 + int64_t(s) * kG);
    for (int j = 0; j < tiles_m; ++j)
      bulk_copy_g2s(dst + j * kG * 1024, p.frags + (j * ks_total + ks) * 64, uint32_t(chunks * 1024), &full[slot]);
  };

  const int prologue = min(nstages, p.stages);
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) mbarrier_init(&full[s], 1);
    fence_mbarrier_init();
    for (int s = 0; s < prologue; ++s) issue_weights(s);  // weights never depend on the previous kernel
  }
  // Everything below may read A (or its fragments) and writes C: wait for the previous kernel.
  grid_dependency_wait();
  if (threadIdx.x == 0 && PREQUANT)
    for (int s = 0; s < prologue; ++s) issue_frags(s);
  __syncthreads();  // barriers initialised before anyone waits on them

  float acc[SPW][N8][4];
#pragma unroll
  for (int i = 0; i < SPW; ++i)
#pragma unroll
    for (int j = 0; j < N8; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

  for (int s = 0; s < nstages; ++s) {
    const int slot = s % p.stages, chunks = stage_chunks(s);
    const uint8_t* slot_base = ring + slot * R::kSlot;
    const uint32_t* a_frag = PREQUANT ? reinterpret_cast<const uint32_t*>(slot_base + R::kCodes + R::kScales) : abuf;
    if constexpr (!PREQUANT) {
      // A[0:M, stage] -> fragments in abuf (zeros past M and K), 4 lanes per 32-element block.
      // Every lane joins every round (the block reductions shuffle across 4 lanes); rounds
      // past kTasks quantize zeros and store nothing.
      constexpr int kTasks = 8 * N8 * 2 * kG * 4;
      constexpr int kRounds = (kTasks + WARPS * 32 - 1) / (WARPS * 32);
      const int64_t kb0 = 2 * (kc0 + int64_t(s) * kG);
      for (int round = 0; round < kRounds; ++round) {
        const int task = round * WARPS * 32 + threadIdx.x;
        const int q = task % 4, blk = task / 4;
        const int r = blk / (2 * kG), b = blk % (2 * kG);
        uint32_t words[4];
        quantize_quarter_to_fragment_words(p.A, task < kTasks ? p.M : 0, p.K, p.lda, r, kb0 + b, q, p.rule, words);
        if (task >= kTasks) continue;
#pragma unroll
        for (int t = 0; t < 4; ++t) abuf[a_fragment_index(r / 8, 2 * b + q / 2, kSteps, 4 * (r % 8) + t, q % 2)] = words[t];
      }
      __syncthreads();
    }
    mbarrier_wait(&full[slot], uint32_t(s / p.stages) & 1u);

    const uint32_t* a_lane = a_frag + 2 * lane;
#pragma unroll
    for (int i = 0; i < SPW; ++i) {
      const int ls = warp * SPW + i;
      if (ls >= active_slabs) continue;
      const uint8_t* codes = slot_base + ls * kG * 512 + lane * 16;
      const uint8_t* scales = slot_base + R::kCodes + ls * kG * 32 + 4 * (lane / 4);
#pragma unroll
      for (int c = 0; c < kG; ++c) {
        if (c >= chunks) break;
        const uint4 wc = *reinterpret_cast<const uint4*>(codes + c * 512);
        const ChunkScales cs = chunk_scales(*reinterpret_cast<const uint32_t*>(scales + c * 32));
        const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
#pragma unroll
        for (int step = 0; step < 4; ++step) {
          uint32_t a[4];
          decode_weight_fragment(words[step], cs, step, a);
#pragma unroll
          for (int j = 0; j < N8; ++j) {  // tiles past M hold don't-care values: their columns are never stored
            const uint2 b = *reinterpret_cast<const uint2*>(a_lane + (j * kSteps + 4 * c + step) * 64);
            mma_bf16_16816(acc[i][j], a, b.x, b.y);
          }
        }
      }
    }
    __syncthreads();  // slot (and abuf) consumed by every warp
    if (threadIdx.x == 0 && s + p.stages < nstages) {
      issue_weights(s + p.stages);
      if constexpr (PREQUANT) issue_frags(s + p.stages);
    }
  }

  // Epilogue: accumulators -> red[m][n_local] (every copy has landed; all warps are past the
  // loop's last barrier), then (cluster-)reduce 4 consecutive n per thread and store.
  constexpr int kBlockN = 16 * kSlabs;
  constexpr int kP = R::kRedPitch;
  {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < SPW; ++i)
#pragma unroll
      for (int j = 0; j < N8; ++j) {
        const int m = 8 * j + 2 * t, n = (warp * SPW + i) * 16 + g;
        red[m * kP + n] = acc[i][j][0];
        red[(m + 1) * kP + n] = acc[i][j][1];
        red[m * kP + n + 8] = acc[i][j][2];
        red[(m + 1) * kP + n + 8] = acc[i][j][3];
      }
  }
  const int64_t n0 = slab0 * 16;
  const int rows = int(p.M);  // <= 8 * N8
  constexpr int kQuads = kBlockN / 4;
  const int quads = rows * kQuads;
  // Vector stores when the 4 outputs are in range and C's rows are suitably aligned.
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
  if (p.split == 1) {
    __syncthreads();
    for (int q = threadIdx.x; q < quads; q += WARPS * 32) {
      const int m = q / kQuads, nl = 4 * (q % kQuads);
      store4(m, nl, *reinterpret_cast<const float4*>(red + m * kP + nl));
    }
  } else {
    // Pull: rank r sums its share of the tile from every rank's shared memory, all remote
    // loads of a thread issued before the (rank-ordered, deterministic) sum.
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's partial tile is in its shared memory
    const float* src[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) src[r] = cluster.map_shared_rank(red, r < p.split ? r : 0);
    const int per_rank = (quads + p.split - 1) / p.split;
    const int q_end = min(quads, (rank + 1) * per_rank);
    for (int q = rank * per_rank + threadIdx.x; q < q_end; q += WARPS * 32) {
      const int m = q / kQuads, nl = 4 * (q % kQuads);
      float4 part[8];
#pragma unroll
      for (int r = 0; r < 8; ++r)
        if (r < p.split) part[r] = *reinterpret_cast<const float4*>(src[r] + m * kP + nl);
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int r = 0; r < 8; ++r)
        if (r < p.split) sum.x += part[r].x, sum.y += part[r].y, sum.z += part[r].z, sum.w += part[r].w;
      store4(m, nl, sum);
    }
    cluster.sync();  // keep shared memory alive until every rank has read it
  }
}

template <int N8, int WARPS, int SPW, bool PREQUANT>
void launch_fused(FusedArgs args, cudaStream_t stream) {
  using R = Ring<N8, WARPS * SPW, PREQUANT>;
  const int64_t chunks_per_rank = ceil_div(args.geo.k_chunks, args.split);
  const int nstages = int(ceil_div(chunks_per_rank, kG));
  const int fit = (kSmemBudget - R::kAbuf) / R::kSlot;
  args.stages = std::max(1, std::min({nstages, kMaxStages, fit}));
  const int smem = R::bytes(args.stages);
  auto kernel = gemm_fused_kernel<N8, WARPS, SPW, PREQUANT>;
  // Per device and cheap; not a stream operation, so also legal during graph capture.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
        "cudaFuncSetAttribute(gemm_fused_kernel)");
  const int64_t tiles = ceil_div(args.geo.rows_padded, 16 * WARPS * SPW);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles * args.split));
  cfg.blockDim = dim3(WARPS * 32);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (args.split > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(args.split);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (PREQUANT) {  // overlap the weight stream with quantize_fragments (bulk_copy.cuh)
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  check(cudaLaunchKernelEx(&cfg, kernel, args), "cudaLaunchKernelEx(gemm_fused_kernel)");
}

/// The explicit, bounded list of instantiations: block_n / (16 * warps) slabs per warp (1 or
/// 2) x warps (4 or 8) x token tiles N8 (1, 2, 4, 8) x path (fused, splitk): 32 kernels.
template <int WARPS, int SPW, bool PREQUANT>
void dispatch_n8(const FusedArgs& args, cudaStream_t stream) {
  const int64_t M = args.M;
  if (M <= 8) return launch_fused<1, WARPS, SPW, PREQUANT>(args, stream);
  if (M <= 16) return launch_fused<2, WARPS, SPW, PREQUANT>(args, stream);
  if (M <= 32) return launch_fused<4, WARPS, SPW, PREQUANT>(args, stream);
  return launch_fused<8, WARPS, SPW, PREQUANT>(args, stream);
}

template <bool PREQUANT>
void dispatch_fused(const FusedArgs& args, const GemmConfig& cfg, cudaStream_t stream) {
  const int spw = cfg.block_n / (16 * cfg.warps);
  if (cfg.warps == 8) {
    return spw == 2 ? dispatch_n8<8, 2, PREQUANT>(args, stream) : dispatch_n8<8, 1, PREQUANT>(args, stream);
  }
  return spw == 2 ? dispatch_n8<4, 2, PREQUANT>(args, stream) : dispatch_n8<4, 1, PREQUANT>(args, stream);
}

}  // namespace

void gemm_fused(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
                int64_t ldc, const GemmConfig& cfg, ScaleRule rule, const uint32_t* frags, cudaStream_t stream) {
  const FusedArgs args{A,    M, K, lda, B.data, PackedGeometry::of(B.N, B.K), B.N, C, c_f32, ldc, rule, cfg.split_k,
                       /*stages=*/1, frags};
  if (frags != nullptr) {
    dispatch_fused<true>(args, cfg, stream);
  } else {
    dispatch_fused<false>(args, cfg, stream);
  }
}

}  // namespace mxfp4::cuda
