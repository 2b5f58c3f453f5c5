#pragma once
// Path "fp8"'s kernel arguments, shared-memory plan, tile order and output side (C stores, the
// split-K reduction across a cluster). Included only by gemm_fp8_kernel.cuh (the kernel and its
// producer), itself included only by gemm_fp8.cu; the anonymous namespace keeps everything in
// that one unit. Design: docs/fp8-path.md.
#include <algorithm>

#include "core/fp8_layout.hpp"
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kGroupM = 8;  ///< M tiles per rasterization group (L2 reuse of B across a wave)

struct Fp8Params {
  const uint8_t* a_img;
  const uint8_t* b_img;
  int64_t M, N;
  int64_t a_rows, b_rows;  ///< padded rows of the two images
  int slices;
  int m_tiles, n_tiles;  ///< in units of the cluster's tile (PAIR: 2 * BM rows)
  void* C;
  int64_t ldc;
  bool c_f32;
  bool vec_store;  ///< C and ldc allow 2-element vector stores
  bool row16_store;  ///< bf16 C, and C and ldc allow 16-byte stores (8 elements)
  int split;       ///< split-K: a cluster of `split` CTAs per tile, each a contiguous share of the slices
  // The exact fix-up's operands (gemm_fp8_exact.cuh): flagged groups are recomputed from them.
  const uint16_t* A;         ///< bf16 activations [M, K], row stride lda
  int64_t lda, K;
  ScaleRule rule;            ///< A's quantization rule (spec §2), as for a_img
  const uint8_t* b_packed;   ///< the packed weights (layout v3) whose image is b_img
};

/// Most ring stages of any tile: the 64 x 64 tile's 17 KB stages would fit 13, but 13 were
/// slower (session 24: 64x7168x2048 GEMM alone 7.02 -> 7.27 us).
constexpr int kMaxStages = 8;

/// Shared-memory plan of one instantiation: the stage ring (A and B atoms, 1024-byte aligned
/// for the 128-byte swizzle), the per-stage metadata blocks, then the mbarriers. kCons consumer
/// warpgroups, each 64 tokens x WN weight rows of the BM x BN tile, plus one producer warpgroup.
template <int BM, int BN, int WN>
struct Plan {
  static_assert(((BM == 64 || BM == 128) && (BN == 64 || BN == 128) && (WN == 64 || WN == BN)) ||
                    (BM == 192 && BN == 128 && WN == 128),
                "FP8 tile");
  static constexpr int kBM = BM;
  static constexpr int kWeightBlocks = BN / WN;  ///< consumer warpgroups along N
  static constexpr int kCons = (BM / 64) * kWeightBlocks;
  static constexpr int kABytes = kBM * fp8::kSliceK, kBBytes = BN * fp8::kSliceK;
  static constexpr int kTileBytes = kABytes + kBBytes;
  /// Per stage after the tiles: the image's metadata blocks (fp8_layout.hpp: 64 scales, 64
  /// exponent words and a record per 64-row atom) of A's kBM rows, then of B's BN rows.
  static constexpr int kAAtoms = kBM / 64, kBlockWords = fp8::kMetaBlockBytes / 4;
  static constexpr int kMetaWords = (kAAtoms + BN / 64) * kBlockWords;
  static constexpr int kBudget = 224 * 1024;
  static constexpr int kStages = std::min(kMaxStages, (kBudget - 1024) / (kTileBytes + kMetaWords * 4 + 16));
  static constexpr int kBytes = 1024 /*alignment slack*/ + kStages * (kTileBytes + kMetaWords * 4 + 16);
  static constexpr int kThreads = 128 * (kCons + 1);
  static constexpr int kRedPitch = BN + 4;  ///< floats per row of the split-K partial tile (reuses the ring)
  static_assert(kBytes <= 227 * 1024, "FP8 GEMM exceeds the opt-in shared memory of sm_90");
  static_assert(BM * kRedPitch * 4 <= kStages * kTileBytes, "split-K partial tile exceeds the stage ring");
};

/// Tile (mt, nt) of linear tile index `id`, grouped by kGroupM M tiles so that a wave of
/// consecutive ids shares its B tiles in L2.
__device__ __forceinline__ void raster(int id, int m_tiles, int n_tiles, int& mt, int& nt) {
  const int per_group = kGroupM * n_tiles;
  const int first_m = (id / per_group) * kGroupM, group_m = min(m_tiles - first_m, kGroupM);
  mt = first_m + (id % per_group) % group_m;
  nt = (id % per_group) / group_m;
}

/// Stores C[m][n] and C[m][n + 1] (those below N) as bf16 (round to nearest even) or fp32.
__device__ __forceinline__ void store_pair(const Fp8Params& p, int64_t m, int64_t n, float v0, float v1) {
  if (p.c_f32) {
    float* c = static_cast<float*>(p.C) + m * p.ldc + n;
    if (p.vec_store && n + 1 < p.N) {
      *reinterpret_cast<float2*>(c) = make_float2(v0, v1);
    } else {
      if (n < p.N) c[0] = v0;
      if (n + 1 < p.N) c[1] = v1;
    }
  } else {
    uint16_t* c = static_cast<uint16_t*>(p.C) + m * p.ldc + n;
    if (p.vec_store && n + 1 < p.N) {
      *reinterpret_cast<uint32_t*>(c) = uint32_t(fmt::f32_to_bf16(v0)) | (uint32_t(fmt::f32_to_bf16(v1)) << 16);
    } else {
      if (n < p.N) c[0] = fmt::f32_to_bf16(v0);
      if (n + 1 < p.N) c[1] = fmt::f32_to_bf16(v1);
    }
  }
}

/// Transposes a 4 x 4 matrix of words over the 4 lanes of a quad (lanes 4k .. 4k+3; all 32
/// lanes call this together): lane q's x[t] becomes lane t's x[q]. Two butterfly stages,
/// each exchanging the half of the words whose index differs from the lane in that bit.
__device__ __forceinline__ void quad_transpose(uint32_t (&x)[4], int lane) {
#pragma unroll
  for (int bit = 2; bit >= 1; bit >>= 1) {
    const bool hi = (lane & bit) != 0;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      if (t & bit) continue;  // pair (t, t + bit)
      // Lane l keeps x[t] if its bit is clear (x[t + bit] if set) and takes the other one
      // from lane l ^ bit: that lane's x[t + bit] (x[t]).
      const uint32_t send = hi ? x[t] : x[t + bit];
      const uint32_t got = __shfl_xor_sync(0xFFFFFFFFu, send, bit);
      if (hi) {
        x[t] = got;
      } else {
        x[t + bit] = got;
      }
    }
  }
}

/// Split-K reduction of one tile through distributed shared memory (p.split CTAs of a cluster,
/// each holding its fp32 partial BM x BN tile in its drained stage ring `tiles`, pitch
/// Plan::kRedPitch floats). Rank `krank` stores rows [krank * BM / split, (krank + 1) * BM /
/// split) of the tile (any split: 6 ranks take 21 or 22 rows), summing the partials of ranks
/// 0..split-1 in that order (deterministic: the bits do not depend on timing). Every thread of
/// every CTA of the cluster calls this (two cluster barriers); `stores` is false for the
/// threads that store nothing (the producer warpgroup, a CTA without a tile); the Plan's kCons
/// consumer warpgroups share the rows. `id`: the tile, in raster order.
template <int BM, int BN, int WN>
__device__ __forceinline__ void fp8_splitk_reduce(const Fp8Params& p, const uint8_t* tiles, uint32_t krank, bool stores,
                                                  int id) {
  using P = Plan<BM, BN, WN>;
  constexpr int kCons = P::kCons;
  __syncwarp();
  cluster_sync_shared();  // every rank's partial tile is in its shared memory
  if (stores) {
    int mt, nt;
    raster(id, p.m_tiles, p.n_tiles, mt, nt);
    const float* red = reinterpret_cast<const float*>(tiles);
    const int first_row = P::kBM * int(krank) / p.split, rows = P::kBM * (int(krank) + 1) / p.split - first_row;
    const int quads = rows * (BN / 4);
    for (int q = int(threadIdx.x); q < quads; q += kCons * 128) {
      const int ml = first_row + q / (BN / 4), nl = 4 * (q % (BN / 4));
      const int64_t m = int64_t(mt) * P::kBM + ml, n = int64_t(nt) * BN + nl;
      if (m >= p.M) continue;  // no remote load may still be in flight at the closing barrier
      // The ranks' quads kBatch at a time, every load of a batch issued before the first add
      // (one distributed-shared-memory round trip per batch instead of one per rank), summed
      // in rank order from rank 0's quad (the bits of a one-load-at-a-time sum). kBatch is
      // the most that compiles without spills (ptxas -v): 4 spill in the 128 x 128 kernels,
      // 3 in the 20-warp one (four consumer warpgroups).
      constexpr int kBatch = kCons >= 4 ? 2 : 3;
      const float* src = red + ml * P::kRedPitch + nl;
      float4 v[kBatch], sum;
      for (int r0 = 0; r0 < p.split; r0 += kBatch) {
#pragma unroll
        for (int i = 0; i < kBatch; ++i)
          if (r0 + i < p.split) v[i] = ld_shared_cluster_f4(src, uint32_t(r0 + i));
        if (r0 == 0) sum = v[0];
#pragma unroll
        for (int i = 0; i < kBatch; ++i)
          if (r0 + i < p.split && r0 + i > 0) sum.x += v[i].x, sum.y += v[i].y, sum.z += v[i].z, sum.w += v[i].w;
      }
      store_pair(p, m, n, sum.x, sum.y), store_pair(p, m, n + 2, sum.z, sum.w);
    }
  }
  cluster_sync_relaxed();  // keep shared memory alive until every rank has read it
}

}  // namespace
}  // namespace mxfp4::cuda
