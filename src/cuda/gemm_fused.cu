// Fused small-M GEMM (paths "fused" and "splitk", docs/dispatch.md).
//
// C^T = B * A^T on mma.sync.m16n8k16 (bf16 in, fp32 accumulate): weight rows are the MMA's M
// dimension (16 per warp), tokens its N dimension (8 per n8 tile, N8 tiles, M <= 8*N8).
// Each CTA owns block_n = 16*WARPS weight rows and one K range; per K stage of kStageChunks
// 64-wide chunks it
//   1. issues the warp's weight loads for the stage straight into registers (16 bytes of
//      packed codes per lane per chunk + 4 scale bytes: docs/packed-layout.md), then
//   2. quantizes A[0:M, stage] (spec §2, the shared fmt::quantize_block) into shared memory as
//      bf16 fragments e2m1 * 2^s (quantize_kernels.cuh layout), while those loads fly, then
//   3. decodes weights to bf16 e2m1 * 2^s in registers and runs the MMAs.
// Both operands carry their block scale exactly (bf16 has fp32's exponent range), so the
// fp32 accumulator sums exact products: no per-block rescaling. Split-K: the CTAs of one
// thread-block cluster take disjoint K ranges and reduce through distributed shared memory
// in rank order 0..S-1 (deterministic, no workspace, one launch).
#include <cooperative_groups.h>

#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace cg = cooperative_groups;

namespace mxfp4::cuda {
namespace {

constexpr int kStageChunks = 4;  // 64-wide K chunks per stage (K256)

struct FusedArgs {
  const uint16_t* A;
  int64_t M, K, lda;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  uint16_t* C;
  int64_t ldc;
  ScaleRule rule;
  int split;
  const uint32_t* frags;  // PREQUANT: A as activation fragments (quantize_fragments layout)
};

template <int N8, int WARPS, bool PREQUANT>
__global__ void __launch_bounds__(WARPS * 32) gemm_fused_kernel(const FusedArgs p) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  uint32_t* a_frag = reinterpret_cast<uint32_t*>(smem_raw);  // [N8][4*kStageChunks][64] u32
  float* red = reinterpret_cast<float*>(smem_raw);           // [16*WARPS][8*N8], after the K loop
  constexpr int kSteps = 4 * kStageChunks;                    // K16 steps per stage
  constexpr int kRowsTile = 8 * N8;                           // token rows held in smem

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rank = p.split > 1 ? int(cg::this_cluster().block_rank()) : 0;
  const int64_t tile = blockIdx.x / p.split;
  const int64_t nt = tile * WARPS + warp;  // this warp's 16-row weight slab
  const bool warp_active = nt * 16 < p.geo.rows_padded;
  const int64_t kc_total = p.geo.k_chunks;
  const int64_t kc0 = kc_total * rank / p.split, kc1 = kc_total * (rank + 1) / p.split;

  float acc[N8][4];
#pragma unroll
  for (int j = 0; j < N8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  const uint8_t* codes_base = p.packed + (nt * kc_total) * 512 + lane * 16;
  const uint8_t* scales_base = p.packed + p.geo.code_bytes + (nt * kc_total) * 32 + 4 * (lane / 4);

  for (int64_t kc = kc0; kc < kc1; kc += kStageChunks) {
    const int chunks = kc1 - kc < kStageChunks ? int(kc1 - kc) : kStageChunks;
    // 1. Weight loads for the stage (in flight during the quantization below).
    uint4 wc[kStageChunks];
    uint32_t ws[kStageChunks];
#pragma unroll
    for (int c = 0; c < kStageChunks; ++c) {
      if (warp_active && c < chunks) {
        wc[c] = __ldg(reinterpret_cast<const uint4*>(codes_base + (kc + c) * 512));
        ws[c] = __ldg(reinterpret_cast<const uint32_t*>(scales_base + (kc + c) * 32));
      } else {
        wc[c] = make_uint4(0, 0, 0, 0);
        ws[c] = 0;
      }
    }
    // 2. A[0:M, kc*64 .. (kc+chunks)*64) into shared memory as fragments (zeros past M, K):
    //    copied from the pre-quantized buffer (splitk path) or quantized here (fused path).
    __syncthreads();  // previous stage's fragments fully consumed
    if constexpr (PREQUANT) {
      const int64_t ks_total = p.geo.k_padded / 16, tiles_m = (p.M + 7) / 8;
      constexpr int kVecPerTile = kSteps * 16;  // uint4 per token tile per stage
      for (int v = threadIdx.x; v < N8 * kVecPerTile; v += WARPS * 32) {
        const int j = v / kVecPerTile, w = v % kVecPerTile;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (j < tiles_m && w < chunks * 64) {
          val = __ldg(reinterpret_cast<const uint4*>(p.frags + (j * ks_total + 4 * kc) * 64) + w);
        }
        reinterpret_cast<uint4*>(a_frag + j * kSteps * 64)[w] = val;
      }
    } else {
      // Four lanes per 32-element block, 8 elements (one 16-byte load) each.
      constexpr int kTasks = kRowsTile * 2 * kStageChunks * 4;  // a multiple of the CTA size
      static_assert(kTasks % (WARPS * 32) == 0, "every lane must join the block reductions");
      for (int task = threadIdx.x; task < kTasks; task += WARPS * 32) {
        const int q = task % 4, blk = task / 4;
        const int r = blk / (2 * kStageChunks), b = blk % (2 * kStageChunks);
        const int64_t k = kc * 64 + b * 32;
        float v[8];
        if (r < p.M && k < p.K) {
          const uint16_t* src = p.A + r * p.lda + k + 8 * q;
          uint32_t w[4];
          if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
            const uint4 u = __ldg(reinterpret_cast<const uint4*>(src));
            w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
          } else {  // A view with an odd row stride or offset
#pragma unroll
            for (int i = 0; i < 4; ++i) w[i] = uint32_t(src[2 * i]) | (uint32_t(src[2 * i + 1]) << 16);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            v[2 * i] = fmt::bf16_to_f32(uint16_t(w[i] & 0xFFFFu));
            v[2 * i + 1] = fmt::bf16_to_f32(uint16_t(w[i] >> 16));
          }
        } else {
#pragma unroll
          for (int i = 0; i < 8; ++i) v[i] = 0.f;
        }
        uint16_t deq[8];
        quantize_quarter_block_to_bf16(v, p.rule, deq);
        const int j = r / 8, g = r % 8, step = 2 * b + q / 2, reg = q % 2;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          a_frag[a_fragment_index(j, step, kSteps, 4 * g + t, reg)] = uint32_t(deq[2 * t]) | (uint32_t(deq[2 * t + 1]) << 16);
        }
      }
    }
    __syncthreads();
    // 3. MMAs (shared-memory offsets are compile-time constants from the lane's base).
    const uint32_t* a_lane = a_frag + 2 * lane;
#pragma unroll
    for (int c = 0; c < kStageChunks; ++c) {
      if (c < chunks) {
        const uint32_t words[4] = {wc[c].x, wc[c].y, wc[c].z, wc[c].w};
        const ChunkScales cs = chunk_scales(ws[c]);
#pragma unroll
        for (int step = 0; step < 4; ++step) {
          uint32_t a[4];
          decode_weight_fragment(words[step], cs, step, a);
#pragma unroll
          for (int j = 0; j < N8; ++j) {
            const uint2 b = *reinterpret_cast<const uint2*>(a_lane + (j * kSteps + 4 * c + step) * 64);
            mma_bf16_16816(acc[j], a, b.x, b.y);
          }
        }
      }
    }
  }

  // Epilogue: accumulators -> shared tile red[n_local][m], then (cluster-)reduce and store.
  __syncthreads();
  {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < N8; ++j) {
      const int m = 8 * j + 2 * t;
      const int n_lo = warp * 16 + g, n_hi = n_lo + 8;
      red[n_lo * kRowsTile + m] = acc[j][0];
      red[n_lo * kRowsTile + m + 1] = acc[j][1];
      red[n_hi * kRowsTile + m] = acc[j][2];
      red[n_hi * kRowsTile + m + 1] = acc[j][3];
    }
  }
  constexpr int kBlockN = 16 * WARPS;
  constexpr int kElems = kBlockN * kRowsTile;
  const int64_t n0 = tile * kBlockN;
  if (p.split == 1) {
    __syncthreads();
    for (int e = threadIdx.x; e < kElems; e += WARPS * 32) {
      const int m = e / kBlockN, nl = e % kBlockN;
      if (m < p.M && n0 + nl < p.N) p.C[m * p.ldc + n0 + nl] = fmt::f32_to_bf16(red[nl * kRowsTile + m]);
    }
  } else {
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's partial tile is in its shared memory
    const int per_rank = (kElems + p.split - 1) / p.split;
    const int e_end = min(kElems, (rank + 1) * per_rank);
    for (int e = rank * per_rank + threadIdx.x; e < e_end; e += WARPS * 32) {
      const int m = e / kBlockN, nl = e % kBlockN;
      float sum = 0.f;
      for (int src = 0; src < p.split; ++src) sum += cluster.map_shared_rank(red, src)[nl * kRowsTile + m];
      if (m < p.M && n0 + nl < p.N) p.C[m * p.ldc + n0 + nl] = fmt::f32_to_bf16(sum);
    }
    cluster.sync();  // keep shared memory alive until every rank has read it
  }
}

template <int N8, int WARPS, bool PREQUANT>
void launch_fused(const FusedArgs& args, cudaStream_t stream) {
  constexpr int kFragBytes = N8 * 4 * kStageChunks * 256;
  constexpr int kRedBytes = 16 * WARPS * 8 * N8 * 4;
  constexpr int kSmem = kFragBytes > kRedBytes ? kFragBytes : kRedBytes;
  static_assert(kSmem <= 48 * 1024, "fused kernel must fit the default shared memory limit");
  const int64_t tiles = ceil_div(args.geo.rows_padded, 16 * WARPS);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles * args.split));
  cfg.blockDim = dim3(WARPS * 32);
  cfg.dynamicSmemBytes = kSmem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(args.split);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = args.split > 1 ? 1 : 0;
  check(cudaLaunchKernelEx(&cfg, gemm_fused_kernel<N8, WARPS, PREQUANT>, args), "cudaLaunchKernelEx(gemm_fused_kernel)");
}

template <bool PREQUANT>
void dispatch_fused(const FusedArgs& args, int M, int warps, cudaStream_t stream) {
  // The explicit, bounded list of instantiations: N8 in {1, 2, 4, 8} x WARPS in {4, 8}.
  const int n8 = M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8;
  if (warps == 8) {
    switch (n8) {
      case 1: return launch_fused<1, 8, PREQUANT>(args, stream);
      case 2: return launch_fused<2, 8, PREQUANT>(args, stream);
      case 4: return launch_fused<4, 8, PREQUANT>(args, stream);
      default: return launch_fused<8, 8, PREQUANT>(args, stream);
    }
  }
  switch (n8) {
    case 1: return launch_fused<1, 4, PREQUANT>(args, stream);
    case 2: return launch_fused<2, 4, PREQUANT>(args, stream);
    case 4: return launch_fused<4, 4, PREQUANT>(args, stream);
    default: return launch_fused<8, 4, PREQUANT>(args, stream);
  }
}

}  // namespace

void gemm_fused(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, uint16_t* C,
                int64_t ldc, const GemmConfig& cfg, ScaleRule rule, const uint32_t* frags, cudaStream_t stream) {
  const FusedArgs args{A, M, K, lda, B.data, PackedGeometry::of(B.N, B.K), B.N, C, ldc, rule, cfg.split_k, frags};
  if (frags != nullptr) {
    dispatch_fused<true>(args, int(M), cfg.warps, stream);
  } else {
    dispatch_fused<false>(args, int(M), cfg.warps, stream);
  }
}

}  // namespace mxfp4::cuda
