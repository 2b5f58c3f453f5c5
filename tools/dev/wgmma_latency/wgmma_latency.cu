// Latency and throughput of e4m3 wgmma m64n64k32 on one SM (a measurement aid, not built by
// CMake): one CTA of W warpgroups; each warpgroup runs R rounds of D in-flight MMAs (D
// scratch accumulators issued back to back, then wait_group 0) on zeroed 128B-swizzled shared
// tiles. Prints cycles per round and MACs per cycle for the SM. Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -Isrc tools/dev/wgmma_latency/wgmma_latency.cu -o /tmp/wl && /tmp/wl
#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/wgmma.cuh"

using namespace mxfp4::cuda;

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
      wgmma_e4m3<64>(t[d], da + 2 * (d % 4), db + 2 * (d % 4), 0);
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
  return 0;
}
