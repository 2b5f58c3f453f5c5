// What a thread-block cluster costs a short kernel (a measurement aid for the small-M path,
// not built by CMake): CUDA graphs of 200 launches of a kernel of `ctas` CTAs of 128 threads
// with cluster sizes 1, 2, 4 and 8; each CTA waits `spin` ns and, with a cluster, passes one
// cluster barrier. Prints microseconds per launch. Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -Isrc \
//        tools/dev/probes/cluster_overhead.cu -o /tmp/co && /tmp/co
#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/bulk_copy.cuh"

using namespace mxfp4::cuda;

__global__ void work(int spin_ns, int clustered, int* sink) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= unsigned(spin_ns)) break;
  }
  if (clustered) cluster_sync_acq_rel();
  if (threadIdx.x == 0 && spin_ns < 0) sink[blockIdx.x] = 1;
}

float time_graph(int ctas, int cluster, int spin_ns, int* sink) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(ctas));
  cfg.blockDim = dim3(128);
  cfg.stream = s;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = unsigned(cluster);
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = cluster > 1 ? 1 : 0;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < 200; ++i) cudaLaunchKernelEx(&cfg, work, spin_ns, int(cluster > 1), sink);
  if (cudaStreamEndCapture(s, &g) != cudaSuccess || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
    cudaStreamDestroy(s);
    return -1.f;  // e.g. a grid that is not a multiple of the cluster size
  }
  cudaGraphLaunch(ge, s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  cudaGraphLaunch(ge, s);
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return ms * 1000.f / 200.f;
}

int main() {
  int* sink;
  cudaMalloc(&sink, 1 << 16);
  for (int ctas : {132, 264, 360, 448})
    for (int spin : {0, 2000})
      for (int cluster : {1, 2, 4, 8})
        if (ctas % cluster == 0)
        printf("%4d CTAs, spin %4d ns, cluster %d: %.2f us per launch (%s)\n", ctas, spin, cluster,
               time_graph(ctas, cluster, spin, sink), cudaGetErrorString(cudaGetLastError()));
  return 0;
}
