// Path "gemv" (docs/dispatch.md): the decode GEMM for M <= 8 tokens on CUDA cores.
//
// At M = 1..8 the tensor-core kernels spend most of a call on fixed latencies (a quantizer
// launch or in-kernel fragment quantization, a stage ring, a split-K reduction across CTAs)
// while the work is a stream of weight bytes. This kernel is one launch with no split-K:
//   - one CTA per 16-row weight slab of the packed layout (docs/packed-layout.md), all of K;
//     warp w takes the slab's 64-wide K chunks w, w + W, ... and keeps batch_of<MT>() chunks'
//     16-byte loads in flight per lane; launched with PDL, each CTA asks for an L2 prefetch
//     of its weights before it waits for the previous kernel;
//   - every CTA quantizes all of A (M <= 8 rows, spec §2, bit-identical to fmt::quantize_block
//     through quantize_kernels.cuh) into shared memory as fp32 values e2m1 * 2^s;
//   - a lane decodes its chunk's code words into bf16 e2m1 * 2^s (exact, the operand the
//     tensor-core paths feed their MMAs, common.cuh decode_weight_fragment), widens them to
//     fp32 and multiplies by A's values with FMAs: the 8 products a lane holds of one
//     32-element block and row share one power-of-two grid and their sum is exact in fp32
//     (spec §3), so rounding happens only where block partials meet the fp32 accumulator;
//   - the 4 lanes that share a row sum by shuffles, the W warps through shared memory in
//     warp order: the result does not depend on timing (deterministic).
// The semantics at the edges are those of the bf16 paths: an element that decodes to 2^128
// or more is +-Inf (docs/hardening.md section 3), NaN scales give NaN.
#include <string>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"
#include "dispatch/path_name.hpp"

namespace mxfp4::cuda {
namespace {

/// K chunks per warp whose loads are in flight (two sets of registers); 2 for 8 tokens, whose
/// accumulators leave no room for 4 under the 128-register cap of 512-thread CTAs.
template <int MT>
constexpr int batch_of() { return MT >= 8 ? 2 : 4; }

struct GemvArgs {
  const uint16_t* A;  // bf16 [M, K], row stride lda
  int64_t M, K, lda;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;  // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
  ScaleRule rule;
};

/// Float index in the shared A buffer of token m, column k (padded K kp): lane t of K16 step
/// k / 16 reads floats 4t .. 4t + 3, its fragment columns {2t, 2t + 1, 2t + 8, 2t + 9}
/// (docs/packed-layout.md: the columns of the lane's code word), with one 16-byte load.
__device__ __forceinline__ int a_index(int m, int k, int kp) {
  const int kk = k % 16;
  return m * kp + (k / 16) * 16 + 4 * ((kk % 8) / 2) + 2 * (kk / 8) + kk % 2;
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

/// Asks the TMA engine to bring `bytes` (a multiple of 16, 16-byte aligned) at `p` into L2
/// (PTX cp.async.bulk.prefetch.L2.global; no data is returned, so it is safe before
/// griddepcontrol.wait: L2 is the point of coherence, and every load that returns data comes
/// after the wait).
__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

__device__ __forceinline__ float bf16_lo(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t pair) { return __uint_as_float(pair & 0xFFFF0000u); }

/// Quantizes A's rows 0 .. MT-1 (rows >= M and columns >= K as zeros) into `sa`, fp32
/// dequantized values at a_index. Warp-collective rounds of 8 blocks (4 lanes per block).
template <int MT>
__device__ __forceinline__ void quantize_a_to_shared(const GemvArgs& p, float* sa, int warp, int warps, int lane) {
  const int kp = int(p.geo.k_padded), blocks_per_row = kp / 32;
  const int rounds = (MT * blocks_per_row + 7) / 8;
  for (int r = warp; r < rounds; r += warps) {  // uniform per warp
    const int b = 8 * r + lane / 4, q = lane % 4;
    const int m = b / blocks_per_row, c = b % blocks_per_row;
    uint32_t w[4];
    load_quarter_bf16(p.A, p.M, p.K, p.lda, m, c, q, w);  // zeros for m >= M or past K
    uint32_t words[4];
    quantize_quarter_words(w, p.rule, words);  // all 32 lanes
    if (m < MT) {
      const int k0 = 32 * c + 8 * q;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const float2 v = make_float2(bf16_lo(words[t]), bf16_hi(words[t]));
        *reinterpret_cast<float2*>(&sa[a_index(m, k0 + 2 * t, kp)]) = v;
      }
    }
  }
}

/// acc[m][half] += the products of one K chunk (4 code words `wc`, scale word `sc`) with A's
/// values in shared memory at chunk kc. Each 32-element block's 8 products per lane and row are
/// summed on their own (exact) before they meet the accumulator.
template <int MT>
__device__ __forceinline__ void chunk_products(const uint4& wc, uint32_t sc, const float* sa, int kp, int64_t kc,
                                               int t, float (&acc)[MT][2]) {
  const ChunkScales cs = chunk_scales(sc);  // warp-collective
  const uint32_t words[4] = {wc.x, wc.y, wc.z, wc.w};
  float part[MT][2][2];  // [token][row half][K16 step within the block]
#pragma unroll
  for (int step = 0; step < 4; ++step) {
    uint32_t a[4];
    decode_weight_fragment(words[step], cs, step, a);
    // a[0], a[2]: row g at columns {2t, 2t+1}, {2t+8, 2t+9}; a[1], a[3]: row g + 8.
    const float w0[4] = {bf16_lo(a[0]), bf16_hi(a[0]), bf16_lo(a[2]), bf16_hi(a[2])};
    const float w1[4] = {bf16_lo(a[1]), bf16_hi(a[1]), bf16_lo(a[3]), bf16_hi(a[3])};
    const int s = step % 2;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      const float4 x = *reinterpret_cast<const float4*>(&sa[m * kp + int(kc) * 64 + step * 16 + 4 * t]);
      part[m][0][s] = fmaf(w0[3], x.w, fmaf(w0[2], x.z, fmaf(w0[1], x.y, w0[0] * x.x)));
      part[m][1][s] = fmaf(w1[3], x.w, fmaf(w1[2], x.z, fmaf(w1[1], x.y, w1[0] * x.x)));
    }
    if (s == 1) {
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        acc[m][0] += part[m][0][0] + part[m][0][1];
        acc[m][1] += part[m][1][0] + part[m][1][1];
      }
    }
  }
}

template <int MT>
__global__ void __launch_bounds__(512) gemv_kernel(const GemvArgs p) {
  extern __shared__ __align__(16) float smem[];
  const int warps = int(blockDim.x / 32), warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int kp = int(p.geo.k_padded);
  float* sa = smem;                 // [MT][kp] fp32
  float* red = smem + MT * kp;      // [warps][MT][16]
  const int64_t slab = blockIdx.x, kcs = p.geo.k_chunks;
  const uint8_t* codes = p.packed + slab * kcs * 512 + lane * 16;
  const uint8_t* scales = p.packed + p.geo.code_bytes + slab * kcs * 32 + 4 * (lane / 4);

  // This warp's chunks: kc = warp + warps * i, in batches of kBatch; batch b + 1's loads are
  // issued before batch b is multiplied (two register sets, named so that nothing is indexed
  // at run time).
  constexpr int kBatch = batch_of<MT>();
  uint4 wc0[kBatch], wc1[kBatch];
  uint32_t sc0[kBatch], sc1[kBatch];
  auto load_batch = [&](uint4 (&wc)[kBatch], uint32_t (&sc)[kBatch], int64_t first) {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t kc = first + int64_t(u) * warps;
      if (kc < kcs) {
        wc[u] = load_stream16(codes + kc * 512);
        sc[u] = load_stream4(scales + kc * 32);
      }
    }
  };
  // The first kernel of a call reads no global memory before its wait (docs/dispatch.md,
  // "Stream order"): the previous kernel may write B, A or C. Only an L2 prefetch of this
  // CTA's weights (16 rows x K) goes ahead of it.
  if (threadIdx.x == 0) {
    const int64_t code_bytes = kcs * 512, scale_bytes = kcs * 32;  // < 0.5 MiB: A's copy in shared memory caps K
    prefetch_l2(p.packed + slab * code_bytes, uint32_t(code_bytes));
    prefetch_l2(p.packed + p.geo.code_bytes + slab * scale_bytes, uint32_t(scale_bytes));
  }
  grid_dependency_wait();
  grid_dependents_launch();
  load_batch(wc0, sc0, warp);
  quantize_a_to_shared<MT>(p, sa, warp, warps, lane);
  __syncthreads();

  float acc[MT][2];
#pragma unroll
  for (int m = 0; m < MT; ++m) acc[m][0] = acc[m][1] = 0.f;
  const int t = lane % 4;
  auto multiply_batch = [&](const uint4 (&wc)[kBatch], const uint32_t (&sc)[kBatch], int64_t first) {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t kc = first + int64_t(u) * warps;
      if (kc < kcs) chunk_products<MT>(wc[u], sc[u], sa, kp, kc, t, acc);  // uniform per warp
    }
  };
  const int64_t step = int64_t(kBatch) * warps;
  for (int64_t first = warp; first < kcs; first += 2 * step) {
    if (first + step < kcs) load_batch(wc1, sc1, first + step);
    multiply_batch(wc0, sc0, first);
    if (first + step >= kcs) break;
    if (first + 2 * step < kcs) load_batch(wc0, sc0, first + 2 * step);
    multiply_batch(wc1, sc1, first + step);
  }

  // Rows g and g + 8 of the slab: the 4 lanes of a row group, then the warps in order.
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float v = acc[m][h];
      v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
      v += __shfl_xor_sync(0xFFFFFFFFu, v, 2);
      if (t == 0) red[(warp * MT + m) * 16 + lane / 4 + 8 * h] = v;
    }
  __syncthreads();
  for (int i = int(threadIdx.x); i < MT * 16; i += int(blockDim.x)) {
    const int m = i / 16, r = i % 16;
    const int64_t n = slab * 16 + r;
    if (m >= p.M || n >= p.N) continue;
    float v = red[m * 16 + r];
    for (int w = 1; w < warps; ++w) v += red[(w * MT + m) * 16 + r];
    if (p.c_f32) {
      static_cast<float*>(p.C)[m * p.ldc + n] = v;
    } else {
      static_cast<uint16_t*>(p.C)[m * p.ldc + n] = fmt::f32_to_bf16(v);
    }
  }
}

template <int MT>
void launch_gemv(const GemvArgs& args, int warps, cudaStream_t stream) {
  const size_t smem = gemv_smem_bytes(args.M, args.K, warps);
  auto kernel = gemv_kernel<MT>;
  // The largest need of any accepted shape (gemm_config_problem), the same for every call, so
  // concurrent host threads never lower it under another's launch. Not a stream operation.
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kGemvSmemLimit)),
        "cudaFuncSetAttribute(gemv_kernel)");
  const dim3 grid(unsigned(args.geo.rows_padded / 16));
  launch_pdl_smem(kernel, grid, dim3(unsigned(32 * warps)), smem, stream, "gemv_kernel", args);
}

}  // namespace

void gemm_gemv(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
               int64_t ldc, const GemmConfig& cfg, ScaleRule rule, cudaStream_t stream) {
  const GemvArgs args{A, M, K, lda, B.data, PackedGeometry::of(B.N, B.K), B.N, C, c_f32, ldc, rule};
  // The explicit list of instantiations: token rows 1, 2, 4, 8.
  if (M <= 1) return launch_gemv<1>(args, cfg.warps, stream);
  if (M <= 2) return launch_gemv<2>(args, cfg.warps, stream);
  if (M <= 4) return launch_gemv<4>(args, cfg.warps, stream);
  return launch_gemv<8>(args, cfg.warps, stream);
}

}  // namespace mxfp4::cuda
