// Tiled large-M GEMM (path "tiled", docs/dispatch.md).
//
// A is quantized once by quantize_fragments() into bf16 mma fragments (quantize_kernels.cuh);
// this kernel streams 64-wide K chunks of packed weights (docs/packed-layout.md) and of those
// fragments through a kStages-deep cp.async ring in shared memory, decodes the weights to
// bf16 e2m1 * 2^s in registers and runs mma.sync.m16n8k16 (C^T = B * A^T, fp32 accumulate).
// CTA tile: 128 weight rows x 128 tokens, 8 warps as 4 (N) x 2 (M), warp tile 32 x 64.
#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockN = 128;                 // weight rows per CTA (8 slabs of 16)
constexpr int kBlockM = 128;                 // tokens per CTA (16 token tiles of 8)
constexpr int kSlabs = kBlockN / 16;
constexpr int kTokenTiles = kBlockM / 8;
constexpr int kStages = 3;
constexpr int kCodeBytes = kSlabs * 512;             // 4 KiB
constexpr int kScaleBytes = kSlabs * 32;             // 256 B
constexpr int kFragBytes = kTokenTiles * 4 * 256;    // 16 KiB
constexpr int kStageBytes = kCodeBytes + kScaleBytes + kFragBytes;
constexpr int kOutPitch = kBlockN + 8;               // bf16 elements per staged output row
constexpr int kSmemBytes = kStages * kStageBytes > kBlockM * kOutPitch * 2 ? kStages * kStageBytes
                                                                            : kBlockM * kOutPitch * 2;

struct TiledArgs {
  const uint32_t* frags;  // activation fragments, round_up(M, 8) rows x k_padded
  int64_t M;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;     // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
};

__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__global__ void __launch_bounds__(kThreads, 1) gemm_tiled_kernel(const TiledArgs p) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wn = warp % 4, wm = warp / 4;
  const int64_t kc_total = p.geo.k_chunks;
  const int64_t ks_total = p.geo.k_padded / 16;
  const int64_t slabs_total = p.geo.rows_padded / 16;
  const int64_t token_tiles_total = (p.M + 7) / 8;
  const int64_t slab0 = int64_t(blockIdx.x) * kSlabs;
  const int64_t tile0 = int64_t(blockIdx.y) * kTokenTiles;

  // Producer: every thread copies its share of one K chunk into stage `st`. Slabs and token
  // tiles past the matrix are clamped to valid memory; their results are never stored.
  auto load_stage = [&](int st, int64_t kc) {
    uint8_t* base = smem + st * kStageBytes;
    {
      const int s = threadIdx.x / 32;  // 8 slabs x 32 lanes x 16 B
      const int64_t slab = min(slab0 + s, slabs_total - 1);
      cp_async16(base + s * 512 + lane * 16, p.packed + (slab * kc_total + kc) * 512 + lane * 16);
    }
    if (threadIdx.x < kSlabs * 8) {  // 8 slabs x 8 words of scales
      const int s = threadIdx.x / 8, w = threadIdx.x % 8;
      const int64_t slab = min(slab0 + s, slabs_total - 1);
      cp_async4(base + kCodeBytes + s * 32 + w * 4, p.packed + p.geo.code_bytes + (slab * kc_total + kc) * 32 + w * 4);
    }
#pragma unroll
    for (int i = 0; i < kFragBytes / 16 / kThreads; ++i) {
      const int v = threadIdx.x + i * kThreads;  // 16-byte vector index in the stage
      const int tt = v / 64, within = v % 64;     // token tile, vector within its 1 KiB
      const int64_t tile = min(tile0 + tt, token_tiles_total - 1);
      const uint32_t* src = p.frags + (tile * ks_total + 4 * kc) * 64 + within * 4;
      cp_async16(base + kCodeBytes + kScaleBytes + tt * 1024 + within * 16, src);
    }
  };

  float acc[2][8][4];
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[s][j][0] = acc[s][j][1] = acc[s][j][2] = acc[s][j][3] = 0.f;

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < kc_total) load_stage(st, st);
    cp_async_commit();
  }
  for (int64_t kc = 0; kc < kc_total; ++kc) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    {  // refill the stage consumed in the previous iteration
      const int64_t next = kc + kStages - 1;
      if (next < kc_total) load_stage(int(next % kStages), next);
      cp_async_commit();
    }
    const uint8_t* base = smem + int(kc % kStages) * kStageBytes;
    uint4 wc[2];
    ChunkScales cs[2];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int slab = 2 * wn + s;
      wc[s] = *reinterpret_cast<const uint4*>(base + slab * 512 + lane * 16);
      cs[s] = chunk_scales(*reinterpret_cast<const uint32_t*>(base + kCodeBytes + slab * 32 + 4 * (lane / 4)));
    }
    const uint32_t* frag = reinterpret_cast<const uint32_t*>(base + kCodeBytes + kScaleBytes);
#pragma unroll
    for (int step = 0; step < 4; ++step) {
      uint32_t a[2][4];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const uint32_t words[4] = {wc[s].x, wc[s].y, wc[s].z, wc[s].w};
        decode_weight_fragment(words[step], cs[s], step, a[s]);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int tt = 8 * wm + j;
        const uint2 b = *reinterpret_cast<const uint2*>(&frag[(tt * 4 + step) * 64 + 2 * lane]);
        mma_bf16_16816(acc[0][j], a[0], b.x, b.y);
        mma_bf16_16816(acc[1][j], a[1], b.x, b.y);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  const int64_t n0 = slab0 * 16, m0 = tile0 * 8;
  if (p.c_f32) {  // fp32 output (row-parallel partial sums): accumulators straight to C
    float* C = static_cast<float*>(p.C);
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t n = n0 + wn * 32 + s * 16 + g + 8 * (e / 2), m = m0 + wm * 64 + j * 8 + 2 * t + e % 2;
          if (m < p.M && n < p.N) C[m * p.ldc + n] = acc[s][j][e];
        }
    return;
  }
  // Epilogue: stage the bf16 tile as out[m_local][n_local] in shared memory, then store rows.
  uint16_t* out = reinterpret_cast<uint16_t*>(smem);
  {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int n = wn * 32 + s * 16 + g, m = wm * 64 + j * 8 + 2 * t;
        out[m * kOutPitch + n] = fmt::f32_to_bf16(acc[s][j][0]);
        out[(m + 1) * kOutPitch + n] = fmt::f32_to_bf16(acc[s][j][1]);
        out[m * kOutPitch + n + 8] = fmt::f32_to_bf16(acc[s][j][2]);
        out[(m + 1) * kOutPitch + n + 8] = fmt::f32_to_bf16(acc[s][j][3]);
      }
  }
  __syncthreads();
  uint16_t* C = static_cast<uint16_t*>(p.C);
  const bool vec = (reinterpret_cast<uintptr_t>(C) % 16 == 0) && (p.ldc % 8 == 0) && (n0 + kBlockN <= p.N);
  if (vec) {
    for (int v = threadIdx.x; v < kBlockM * kBlockN / 8; v += kThreads) {
      const int m = v / (kBlockN / 8), c = v % (kBlockN / 8);
      if (m0 + m < p.M) {
        *reinterpret_cast<uint4*>(C + (m0 + m) * p.ldc + n0 + c * 8) =
            *reinterpret_cast<const uint4*>(out + m * kOutPitch + c * 8);
      }
    }
  } else {
    for (int e = threadIdx.x; e < kBlockM * kBlockN; e += kThreads) {
      const int m = e / kBlockN, n = e % kBlockN;
      if (m0 + m < p.M && n0 + n < p.N) C[(m0 + m) * p.ldc + n0 + n] = out[m * kOutPitch + n];
    }
  }
}

}  // namespace



void gemm_tiled(int64_t M, const PackedWeights& B, void* C, bool c_f32, int64_t ldc, const uint32_t* frags,
                cudaStream_t stream) {
  const TiledArgs args{frags, M, B.data, PackedGeometry::of(B.N, B.K), B.N, C, c_f32, ldc};
  // Per device and cheap; not a stream operation, so also legal during graph capture.
  check(cudaFuncSetAttribute(gemm_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes),
        "cudaFuncSetAttribute(gemm_tiled_kernel)");
  const dim3 grid(unsigned(ceil_div(args.geo.rows_padded, kBlockN)), unsigned(ceil_div(M, kBlockM)));
  gemm_tiled_kernel<<<grid, kThreads, kSmemBytes, stream>>>(args);
  check_launch("gemm_tiled_kernel");
}

}  // namespace mxfp4::cuda
