// Path "fp8": the prefill GEMM on Hopper's e4m3 tensor cores (issue 6; design in
// docs/fp8-path.md). Both operands are FP8 images (src/core/fp8_layout.hpp): the weights'
// from prepack_fp8, the activations' built per call. One CTA computes a BM x BN tile of C
// (BM = 64 tokens per consumer warpgroup, BN = 64 or 128 weight rows):
//   - one producer thread streams, per 128-K slice, the A and B atoms and their group scales
//     into a ring of shared-memory stages with 1-D bulk copies (TMA engine), signalling
//     `full` mbarriers by transaction bytes; consumers release a stage on its `empty` mbarrier;
//   - each consumer warpgroup runs four m64nBNk32 e4m3 wgmma per slice into a scratch
//     accumulator (exact products; the tensor core's reduced-precision sum covers 128 K) and
//     then promotes it: acc += scratch * (2^Ra[m] * 2^Rb[n]), one FMUL and one FFMA per
//     element, exact up to the final rounding (|R| <= 48, fp8::kMaxAbsR).
// Groups the image flagged carry zero codes here; fp8_fixup (gemm_fp8_fixup.cu) rewrites the
// rows and columns of C they touch afterwards.
#include <algorithm>

#include "core/fp8_layout.hpp"
#include "cuda/common.cuh"
#include "cuda/fp8_kernels.hpp"
#include "cuda/wgmma.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kGroupM = 8;  ///< M tiles per rasterization group (L2 reuse of B across a wave)

struct Fp8Params {
  const uint8_t* a_img;
  const uint8_t* b_img;
  int64_t M, N;
  int64_t a_rows, b_rows;  ///< padded rows of the two images
  int slices;
  int m_tiles, n_tiles;
  void* C;
  int64_t ldc;
  bool c_f32;
  bool vec_store;  ///< C and ldc allow 2-element vector stores
};

/// Shared-memory plan of one instantiation: the stage ring (A and B atoms, 1024-byte aligned
/// for the 128-byte swizzle), the per-stage group scales, then the mbarriers.
template <int BN, int CONS>
struct Plan {
  static constexpr int kBM = 64 * CONS;
  static constexpr int kABytes = kBM * fp8::kSliceK, kBBytes = BN * fp8::kSliceK;
  static constexpr int kTileBytes = kABytes + kBBytes;
  static constexpr int kScaleFloats = kBM + BN;
  static constexpr int kBudget = 224 * 1024;
  static constexpr int kStages = std::min(8, (kBudget - 1024) / (kTileBytes + kScaleFloats * 4 + 16));
  static constexpr int kBytes = 1024 /*alignment slack*/ + kStages * (kTileBytes + kScaleFloats * 4 + 16);
  static constexpr int kThreads = 128 * (CONS + 1);
  static_assert(kBytes <= 227 * 1024, "FP8 GEMM exceeds the opt-in shared memory of sm_90");
};

template <int BN, int CONS>
__global__ void __launch_bounds__(Plan<BN, CONS>::kThreads, 1) gemm_fp8_kernel(const Fp8Params p) {
  using P = Plan<BN, CONS>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* tiles = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);  // swizzle atoms: 1024-aligned
  float* scales = reinterpret_cast<float*>(tiles + P::kStages * P::kTileBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(scales + P::kStages * P::kScaleFloats);
  uint64_t* empty = full + P::kStages;

  const int wg = int(threadIdx.x) / 128;
  grid_dependents_launch();  // the fix-up kernel may start its flag scan (it waits for C itself)
  if (threadIdx.x == 0) {
    for (int s = 0; s < P::kStages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], CONS * 4);  // one arrival per consumer warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  // Grouped rasterization: kGroupM M tiles share each B tile within a wave.
  const int id = int(blockIdx.x), per_group = kGroupM * p.n_tiles;
  const int first_m = (id / per_group) * kGroupM, group_m = min(p.m_tiles - first_m, kGroupM);
  const int mt = first_m + (id % per_group) % group_m, nt = (id % per_group) / group_m;

  if (wg == CONS) {  // producer warpgroup: one thread issues every copy
    if (threadIdx.x == CONS * 128) {
      const float* a_scales = reinterpret_cast<const float*>(p.a_img + p.a_rows * p.slices * fp8::kSliceK);
      const float* b_scales = reinterpret_cast<const float*>(p.b_img + p.b_rows * p.slices * fp8::kSliceK);
      for (int j = 0; j < p.slices; ++j) {
        const int s = j % P::kStages;
        if (j >= P::kStages) mbarrier_wait(&empty[s], uint32_t((j / P::kStages) - 1) & 1u);
        uint8_t* a_dst = tiles + s * P::kTileBytes;
        float* sa_dst = scales + s * P::kScaleFloats;
        mbarrier_arrive_expect_tx(&full[s], P::kTileBytes + P::kScaleFloats * 4);
        bulk_copy_g2s(a_dst, p.a_img + (j * (p.a_rows / 64) + int64_t(mt) * (P::kBM / 64)) * fp8::kAtomBytes,
                      P::kABytes, &full[s]);
        bulk_copy_g2s(a_dst + P::kABytes, p.b_img + (j * (p.b_rows / 64) + int64_t(nt) * (BN / 64)) * fp8::kAtomBytes,
                      P::kBBytes, &full[s]);
        bulk_copy_g2s(sa_dst, a_scales + j * p.a_rows + int64_t(mt) * P::kBM, P::kBM * 4, &full[s]);
        bulk_copy_g2s(sa_dst + P::kBM, b_scales + j * p.b_rows + int64_t(nt) * BN, BN * 4, &full[s]);
      }
    }
    return;
  }

  // Consumer warpgroup `wg`: tokens wg*64 .. wg*64+63 of the tile, all BN weight rows.
  const int warp = (int(threadIdx.x) % 128) / 32, lane = int(threadIdx.x) % 32;
  float acc[BN / 2], tmp[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = tmp[i] = 0.f;
  const int row0 = wg * 64 + warp * 16 + lane / 4;  // rows row0 and row0 + 8 of the tile
  for (int j = 0; j < p.slices; ++j) {
    const int s = j % P::kStages;
    mbarrier_wait(&full[s], uint32_t(j / P::kStages) & 1u);
    const uint8_t* a_tile = tiles + s * P::kTileBytes + wg * 64 * fp8::kSliceK;
    const uint64_t da = smem_desc_sw128(a_tile), db = smem_desc_sw128(tiles + s * P::kTileBytes + P::kABytes);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) fence_operand(tmp[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_e4m3<BN>(tmp, da + 2 * kk, db + 2 * kk, kk);  // +32 bytes of K per step
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) fence_operand(tmp[i]);
    const float* sa = scales + s * P::kScaleFloats;
    const float* sb = sa + P::kBM;
    const float a0 = sa[row0], a1 = sa[row0 + 8];
    float2 b[BN / 8];
#pragma unroll
    for (int jn = 0; jn < BN / 8; ++jn) b[jn] = *reinterpret_cast<const float2*>(sb + 8 * jn + 2 * (lane % 4));
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&empty[s]);
    // Fragment of m64nBN: register 4 jn + 2 i + c holds row row0 + 8 i, column 8 jn + 2 (lane % 4) + c.
#pragma unroll
    for (int jn = 0; jn < BN / 8; ++jn) {
      acc[4 * jn + 0] = fmaf(tmp[4 * jn + 0], a0 * b[jn].x, acc[4 * jn + 0]);
      acc[4 * jn + 1] = fmaf(tmp[4 * jn + 1], a0 * b[jn].y, acc[4 * jn + 1]);
      acc[4 * jn + 2] = fmaf(tmp[4 * jn + 2], a1 * b[jn].x, acc[4 * jn + 2]);
      acc[4 * jn + 3] = fmaf(tmp[4 * jn + 3], a1 * b[jn].y, acc[4 * jn + 3]);
    }
  }

  // Epilogue: straight from the accumulators to C (bf16 rounded to nearest even, or fp32).
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t m = int64_t(mt) * P::kBM + row0 + 8 * i;
    if (m >= p.M) continue;
#pragma unroll
    for (int jn = 0; jn < BN / 8; ++jn) {
      const int64_t n = int64_t(nt) * BN + 8 * jn + 2 * (lane % 4);
      const float v0 = acc[4 * jn + 2 * i], v1 = acc[4 * jn + 2 * i + 1];
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
  }
}

template <int BN, int CONS>
void launch(const Fp8Params& p, cudaStream_t stream) {
  using P = Plan<BN, CONS>;
  auto kernel = gemm_fp8_kernel<BN, CONS>;
  // Same limit for every shape of an instantiation; a device attribute, legal during capture.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, P::kBytes),
        "cudaFuncSetAttribute(gemm_fp8_kernel)");
  const int64_t ctas = int64_t(p.m_tiles) * p.n_tiles;
  kernel<<<unsigned(ctas), P::kThreads, P::kBytes, stream>>>(p);
  check_launch("gemm_fp8_kernel");
}

}  // namespace

void gemm_fp8(const uint8_t* a_img, int64_t M, int64_t K, const PackedWeights& B, void* C, bool c_f32, int64_t ldc,
              const GemmConfig& cfg, cudaStream_t stream) {
  const fp8::ImageGeometry ga = fp8::ImageGeometry::of(M, K), gb = fp8::ImageGeometry::of(B.N, K);
  Fp8Params p{};
  p.a_img = a_img;
  p.b_img = B.fp8;
  p.M = M;
  p.N = B.N;
  p.a_rows = ga.rows_padded;
  p.b_rows = gb.rows_padded;
  p.slices = int(ga.slices);
  const int64_t m_tiles = ceil_div(M, cfg.block_m), n_tiles = ceil_div(B.N, cfg.block_n);
  if (m_tiles * n_tiles > int64_t(INT32_MAX))
    throw InvalidArgument("path fp8: M = " + std::to_string(M) + ", N = " + std::to_string(B.N) +
                          " need more than 2^31 - 1 tiles of " + std::to_string(cfg.block_m) + " x " +
                          std::to_string(cfg.block_n));
  p.m_tiles = int(m_tiles);
  p.n_tiles = int(n_tiles);
  p.C = C;
  p.ldc = ldc;
  p.c_f32 = c_f32;
  const int elem = c_f32 ? 4 : 2;
  p.vec_store = ldc % 2 == 0 && reinterpret_cast<uintptr_t>(C) % (2 * elem) == 0;
  if (cfg.block_n == 128 && cfg.block_m == 128) {
    launch<128, 2>(p, stream);
  } else if (cfg.block_n == 128 && cfg.block_m == 64) {
    launch<128, 1>(p, stream);
  } else if (cfg.block_n == 64 && cfg.block_m == 128) {
    launch<64, 2>(p, stream);
  } else {
    launch<64, 1>(p, stream);
  }
}

}  // namespace mxfp4::cuda
