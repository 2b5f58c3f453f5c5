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
  /// The ring, per stage its metadata and two mbarriers, then split-K's receive mbarrier.
  static constexpr int kBytes = 1024 /*alignment slack*/ + kStages * (kTileBytes + kMetaWords * 4 + 16) + 16;
  static constexpr int kThreads = 128 * (kCons + 1);
  static constexpr int kRedPitch = BN + 4;  ///< floats per row of split-K's receive slots (in the drained ring)
  /// Split-K's receive slots: split - 1 slots of ceil(BM / split) rows (fp8_splitk_push).
  static constexpr int recv_floats(int split) { return (split - 1) * ((BM + split - 1) / split) * kRedPitch; }
  static constexpr bool recv_fits() {
    for (int s = 2; s <= 8; ++s)
      if (recv_floats(s) * 4 > kStages * kTileBytes) return false;
    return true;
  }
  static_assert(kBytes <= 227 * 1024, "FP8 GEMM exceeds the opt-in shared memory of sm_90");
  static_assert(recv_fits(), "split-K receive slots exceed the stage ring at some split_k in 2..8");
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

/// Split-K reduction of one tile by push (p.split CTAs of a cluster, rank `krank`; called by
/// every consumer thread with its accumulators, once its K loop is over). Rank k owns the
/// tile's rows [k * BM / split, (k + 1) * BM / split) (any split: 6 ranks own 21 or 22 rows).
/// A lane pair first trades halves so that each lane holds 4 adjacent columns of one row
/// (even lanes row0, odd lanes row0 + 8; `acc` is rearranged in place). After a relaxed cluster
/// barrier (every rank's K loop is over, so its drained ring, where `recv` lies, is free), a
/// lane whose row another rank owns sends it there by st.async (16 bytes each, slot = the
/// sender's rank without the owner's, counted on the owner's `recv_bar`, which expects
/// (split - 1) * own rows * BN * 4 bytes). An owner waits for those and sums ranks 0..split-1
/// in rank order, its own values from registers (deterministic: the bits do not depend on
/// timing; the former pull's bits), then stores C. No release fence: the pull this replaces
/// began with a releasing cluster barrier, a GPU-scope fence (MEMBAR.ALL.GPU) that cost ~0.44
/// us per call at 128x2112x7168 (docs/perf-notes.md, session 41). The init of `recv_bar`
/// reaches the other ranks by fence_mbarrier_init and this barrier, the receiver's ring is
/// written only after its reads completed: the relaxed-barrier patterns of path splitk's bulk
/// copy (splitk_reduce.cuh). Every rank waits for every byte sent to it, so none needs a
/// closing barrier; threads without a tile (the producer warpgroup) pass the barrier alone.
template <int BM, int BN, int WN>
__device__ __forceinline__ void fp8_splitk_push(const Fp8Params& p, float* recv, uint64_t* recv_bar, int krank,
                                                float (&acc)[WN / 2], int row0, int col0, int mt, int nt, int lane) {
  using P = Plan<BM, BN, WN>;
  const bool odd = lane & 1;
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn) {
    // Even lanes keep row0's pair and take the partner's (2 columns on); odd lanes keep row0 +
    // 8's pair and take the partner's (2 columns before).
    const float s0 = odd ? acc[4 * jn] : acc[4 * jn + 2], s1 = odd ? acc[4 * jn + 1] : acc[4 * jn + 3];
    const float g0 = __shfl_xor_sync(0xFFFFFFFFu, s0, 1), g1 = __shfl_xor_sync(0xFFFFFFFFu, s1, 1);
    if (odd) {
      acc[4 * jn] = g0, acc[4 * jn + 1] = g1;
    } else {
      acc[4 * jn + 2] = g0, acc[4 * jn + 3] = g1;
    }
  }
  const int row = row0 + (odd ? 8 : 0), col = col0 + 4 * ((lane % 4) >> 1);  // + 8 jn
  const int split = p.split, rows_max = (BM + split - 1) / split;
  const int owner = ((row + 1) * split - 1) / BM;  // the k with k * BM / split <= row < (k + 1) * BM / split
  cluster_sync_relaxed();
  if (owner != krank) {
    const int slot = krank < owner ? krank : krank - 1;
    float* dst = recv + (slot * rows_max + row - BM * owner / split) * P::kRedPitch + col;
#pragma unroll
    for (int jn = 0; jn < WN / 8; ++jn)
      st_async_cluster_f4(dst + 8 * jn, recv_bar, uint32_t(owner),
                          make_float4(acc[4 * jn], acc[4 * jn + 1], acc[4 * jn + 2], acc[4 * jn + 3]));
    return;
  }
  mbarrier_wait(recv_bar, 0u);  // before any return: no rank may leave while bytes are on their way to it
  const int64_t m = int64_t(mt) * BM + row;
  if (m >= p.M) return;
  const float* src = recv + (row - BM * krank / split) * P::kRedPitch + col;
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn) {
    float4 sum = make_float4(acc[4 * jn], acc[4 * jn + 1], acc[4 * jn + 2], acc[4 * jn + 3]);
    if (krank > 0) sum = *reinterpret_cast<const float4*>(src + 8 * jn);  // rank 0's slot is slot 0
    for (int r = 1; r < split; ++r) {
      const float4 v = r == krank ? make_float4(acc[4 * jn], acc[4 * jn + 1], acc[4 * jn + 2], acc[4 * jn + 3])
                                  : *reinterpret_cast<const float4*>(src + ((r < krank ? r : r - 1) * rows_max) * P::kRedPitch + 8 * jn);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    const int64_t n = int64_t(nt) * BN + col + 8 * jn;
    store_pair(p, m, n, sum.x, sum.y), store_pair(p, m, n + 2, sum.z, sum.w);
  }
}

}  // namespace
}  // namespace mxfp4::cuda
