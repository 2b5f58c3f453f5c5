// Latency and throughput of e4m3 wgmma m64n64k32 on one SM (a measurement aid, not built by
// CMake): one CTA of W warpgroups; each warpgroup runs R rounds of D in-flight MMAs (D
// scratch accumulators issued back to back, then wait_group 0) on zeroed 128B-swizzled shared
// tiles. Prints cycles per round and MACs per cycle for the SM. A second probe runs the
// consumer side of gemm_fp8's 128 x 128 four-warpgroup step without a producer: per 128-K
// slice it walks a ring of 6 resident stages (as the kernel's shared-memory addresses do),
// optionally reloads the 32 scale products from shared memory (2 LDS + 8 LDS.64 + 32 FMUL),
// and promotes every k32 block with 32 FFMA. Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -Isrc tools/dev/probes/wgmma_latency.cu -o /tmp/wl && /tmp/wl
#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/wgmma.cuh"

using namespace mxfp4::cuda;

/// D (+)= A * B, m64n64k32, e4m3 x e4m3 -> f32, A and B from shared memory descriptors;
/// scale_d = 0 overwrites D (PTX ISA "wgmma.mma_async"). D: 32 registers per thread.
__device__ __forceinline__ void wgmma_m64n64k32_e4m3(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

template <int D, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1) probe(long long* out, int rounds) {
  extern __shared__ __align__(1024) uint8_t smem[];
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) smem[i] = 0;
  __syncthreads();
  const uint64_t da = smem_desc_sw128(smem), db = smem_desc_sw128(smem + 8192);
  float t[D][32];
#pragma unroll
  for (int d = 0; d < D; ++d)
#pragma unroll
    for (int i = 0; i < 32; ++i) t[d][i] = 0.f;
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  __syncthreads();
  const long long c0 = clock64();
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
#pragma unroll
      for (int i = 0; i < 32; ++i) fence_operand(t[d][i]);
      wgmma_fence();
      wgmma_m64n64k32_e4m3(t[d], da + 2 * (d % 4), db + 2 * (d % 4), 0);
      wgmma_commit();
    }
    wgmma_wait<0>();
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
      for (int i = 0; i < 32; ++i) fence_operand(t[d][i]);
#pragma unroll
    for (int d = 0; d < D; ++d)
#pragma unroll
      for (int i = 0; i < 32; ++i) acc[i] += t[d][i];
  }
  const long long c1 = clock64();
  __syncthreads();
  if (threadIdx.x % 128 == 0) out[threadIdx.x / 128] = c1 - c0;
  float sink = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) sink += acc[i];
  if (sink == 1.f) out[7] = 1;  // keep the results alive
}

/// gemm_fp8's consumer loop for one 128 x 128 tile (four 64 x 64 warpgroups), stages resident.
template <bool RELOAD>
__global__ void __launch_bounds__(512, 1) slice_probe(long long* out, int slices) {
  extern __shared__ __align__(1024) uint8_t smem[];
  constexpr int kStages = 6, kStage = 32768;  // A 128 x 128 + B 128 x 128 e4m3
  float* scales = reinterpret_cast<float*>(smem + kStages * kStage);
  for (int i = threadIdx.x; i < kStages * kStage / 4; i += blockDim.x) reinterpret_cast<float*>(smem)[i] = 0.f;
  for (int i = threadIdx.x; i < kStages * 256; i += blockDim.x) scales[i] = 1.f;
  __syncthreads();
  const int wg = threadIdx.x / 128, tb = wg / 2, wb = wg % 2, lane = threadIdx.x % 32;
  const int row0 = tb * 64 + (threadIdx.x % 128) / 32 * 16 + lane / 4;
  float acc[32], t[32], ab[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f, t[i] = 0.f, ab[i] = 1.f;
  __syncthreads();
  const long long c0 = clock64();
  for (int j = 0; j < slices; ++j) {
    const int s = j % kStages;
    const uint8_t* stage = smem + s * kStage;
    const uint64_t da = smem_desc_sw128(stage + tb * 8192), db = smem_desc_sw128(stage + 16384 + wb * 8192);
    if (RELOAD) {
      const float* sa = scales + s * 256;
      const float* sb = sa + 128 + wb * 64;
      const float a0 = sa[row0], a1 = sa[row0 + 8];
#pragma unroll
      for (int jn = 0; jn < 8; ++jn) {
        const float2 b = *reinterpret_cast<const float2*>(sb + 8 * jn + 2 * (lane % 4));
        ab[4 * jn + 0] = a0 * b.x, ab[4 * jn + 1] = a0 * b.y, ab[4 * jn + 2] = a1 * b.x, ab[4 * jn + 3] = a1 * b.y;
      }
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int i = 0; i < 32; ++i) fence_operand(t[i]);
      wgmma_fence();
      wgmma_m64n64k32_e4m3(t, da + 2 * kk, db + 2 * kk, 0);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < 32; ++i) fence_operand(t[i]);
#pragma unroll
      for (int i = 0; i < 32; ++i) acc[i] = fmaf(t[i], ab[i], acc[i]);
    }
  }
  const long long c1 = clock64();
  float sink = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) sink += acc[i];
  if (threadIdx.x == 0) out[0] = c1 - c0;
  if (sink == 1.f) out[7] = 1;
}

template <bool RELOAD>
void run_slices() {
  long long* d_out;
  cudaMalloc(&d_out, 8 * sizeof(long long));
  const int smem = 6 * 32768 + 6 * 256 * 4, slices = 600;
  cudaFuncSetAttribute(slice_probe<RELOAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  slice_probe<RELOAD><<<1, 512, smem>>>(d_out, 12);
  slice_probe<RELOAD><<<1, 512, smem>>>(d_out, slices);
  long long h[8] = {};
  cudaMemcpy(h, d_out, sizeof(h), cudaMemcpyDeviceToHost);
  const double step = double(h[0]) / slices / 4;
  printf("gemm_fp8 consumer step, 4 warpgroups, 6 resident stages, scale reload %d: %.1f cycles per k32 step, "
         "%.0f MAC/cycle per SM (%s)\n",
         int(RELOAD), step, 128.0 * 128 * 32 / step, cudaGetErrorString(cudaGetLastError()));
  cudaFree(d_out);
}

template <int D, int WGS>
void run() {
  const int wgs = WGS;
  long long* d_out;
  cudaMalloc(&d_out, 8 * sizeof(long long));
  const int rounds = 1000;
  probe<D, WGS><<<1, 128 * WGS, 16384>>>(d_out, 10);
  probe<D, WGS><<<1, 128 * WGS, 16384>>>(d_out, rounds);
  long long h[8] = {};
  cudaMemcpy(h, d_out, sizeof(h), cudaMemcpyDeviceToHost);
  const double cyc = double(h[0]) / rounds;
  const double macs = double(wgs) * D * 64 * 64 * 32;
  printf("warpgroups %d, in flight per warpgroup %d: %.1f cycles per round, %.0f MAC/cycle per SM (%s)\n", wgs, D,
         cyc, macs / cyc, cudaGetErrorString(cudaGetLastError()));
  cudaFree(d_out);
}

int main() {
  run<1, 1>(), run<2, 1>(), run<4, 1>();
  run<1, 2>(), run<2, 2>(), run<4, 2>();
  run<1, 4>(), run<2, 4>();
  run_slices<false>(), run_slices<true>();
  return 0;
}
