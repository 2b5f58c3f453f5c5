// How fast can a kernel read T bytes of HBM and do nothing else (a measurement aid for the
// small-M path, not built by CMake)? CUDA graphs of 20 launches, each reading the next of 20
// disjoint T-byte regions (rotated past L2); prints microseconds per launch and TB/s for:
//   - bulk: CTAs whose thread 0 streams the CTA's share through 1-D bulk copies (TMA engine)
//     of `chunk` bytes into a shared-memory ring of `slots` slots (mbarrier per slot), as the
//     small-M kernel's weight ring does;
//   - ldg: every thread reads 16-byte vectors, `unroll` loads in flight, into registers;
//   - empty: the same launch with no loads (launch + drain floor).
// Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -Isrc \
//        tools/dev/probes/stream_probe.cu -o /tmp/sp && /tmp/sp
#include <cuda_runtime.h>

#include <cstdio>
#include <algorithm>
#include <functional>

#include "cuda/bulk_copy.cuh"

using namespace mxfp4::cuda;

__global__ void bulk_stream(const uint8_t* src, int64_t per_cta, int chunk, int slots, int* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem);
  uint8_t* buf = smem + 1024;
  const uint8_t* base = src + blockIdx.x * per_cta;
  const int n = int(per_cta / chunk);
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; ++s) mbarrier_init(&bar[s], 1);
    fence_mbarrier_init();
    for (int i = 0; i < n && i < slots; ++i) {
      mbarrier_arrive_expect_tx(&bar[i], uint32_t(chunk));
      bulk_copy_g2s(buf + i * chunk, base + int64_t(i) * chunk, uint32_t(chunk), &bar[i]);
    }
    for (int i = 0; i < n; ++i) {
      const int s = i % slots;
      mbarrier_wait(&bar[s], uint32_t(i / slots) & 1u);
      if (i + slots < n) {
        mbarrier_arrive_expect_tx(&bar[s], uint32_t(chunk));
        bulk_copy_g2s(buf + s * chunk, base + int64_t(i + slots) * chunk, uint32_t(chunk), &bar[s]);
      }
    }
    if (buf[0] == 0xAB && buf[1] == 0xCD) sink[blockIdx.x] = 1;
  }
}

template <int UNROLL>
__global__ void ldg_stream(const uint4* src, int64_t per_cta, int* sink) {
  const uint4* base = src + blockIdx.x * (per_cta / 16);
  const int64_t n = per_cta / 16;
  uint32_t x = 0;
  for (int64_t i = threadIdx.x; i < n; i += int64_t(blockDim.x) * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t j = i + int64_t(u) * blockDim.x;
      v[u] = j < n ? __ldg(base + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (x == 0x12345678u) sink[blockIdx.x] = 1;
}

__global__ void empty_kernel(int* sink) {
  if (threadIdx.x == 1 << 20) sink[0] = 1;
}

/// Microseconds per launch of `launch(i)` (i = region), median of 7 graph replays of 20.
double time_launches(cudaStream_t s, const std::function<void(int)>& launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < 20; ++i) launch(i);
  cudaStreamEndCapture(s, &g);
  if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) return -1;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  double best[7];
  for (int r = 0; r < 9; ++r) {
    cudaEventRecord(a, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= 2) best[r - 2] = 1000.0 * ms / 20;
  }
  for (int i = 0; i < 7; ++i)
    for (int j = i + 1; j < 7; ++j)
      if (best[j] < best[i]) std::swap(best[i], best[j]);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return best[3];
}

int main() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int64_t region_max = int64_t(64) << 20;
  uint8_t* src;
  int* sink;
  cudaMalloc(&src, region_max * 20);
  cudaMemset(src, 1, region_max * 20);
  cudaMalloc(&sink, 1 << 20);
  cudaFuncSetAttribute(bulk_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  printf("empty kernel, %d CTAs: %.2f us per launch\n", sms,
         time_launches(s, [&](int) { empty_kernel<<<sms, 128, 0, s>>>(sink); }));
  for (int64_t total : {int64_t(8) << 20, int64_t(1) << 20, int64_t(64) << 20}) {
    printf("== %lld bytes per launch\n", (long long)total);
    for (int per_sm : {1, 2, 4}) {
      for (int chunk : {512, 2048, 8192, 16384}) {
        const int ctas = sms * per_sm;
        const int64_t per_cta = total / ctas / chunk * chunk;
        if (per_cta < chunk) continue;
        // At most 64 slots: their mbarriers must fit in the 1024-byte header.
        const int slots = int(std::min<int64_t>({per_cta / chunk, (96 * 1024 / per_sm) / chunk, 64}));
        const int smem = 1024 + slots * chunk;
        const double us = time_launches(s, [&](int i) {
          bulk_stream<<<ctas, 32, smem, s>>>(src + i * region_max, per_cta, chunk, slots, sink);
        });
        printf("bulk  ctas/SM %d chunk %5d slots %3d: %8.2f us  %5.2f TB/s (%s)\n", per_sm, chunk, slots, us,
               per_cta * ctas / us * 1e-6, cudaGetErrorString(cudaGetLastError()));
      }
    }
    for (int threads : {256, 512, 1024}) {
      for (int per_sm : {1, 2, 4}) {
        if (threads * per_sm > 2048) continue;  // one wave
        const int ctas = sms * per_sm;
        const int64_t per_cta = total / ctas / 16 * 16;
        const double us4 = time_launches(s, [&](int i) {
          ldg_stream<4><<<ctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(src + i * region_max), per_cta, sink);
        });
        const double us8 = time_launches(s, [&](int i) {
          ldg_stream<8><<<ctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(src + i * region_max), per_cta, sink);
        });
        printf("ldg   ctas/SM %d threads %4d: unroll 4 %8.2f us %5.2f TB/s, unroll 8 %8.2f us %5.2f TB/s (%s)\n",
               per_sm, threads, us4, per_cta * ctas / us4 * 1e-6, us8, per_cta * ctas / us8 * 1e-6,
               cudaGetErrorString(cudaGetLastError()));
      }
    }
  }
  return 0;
}
