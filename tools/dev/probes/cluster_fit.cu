// How many clusters of the small-M kernel's shape are resident at once (a measurement aid for
// the late clusters of 16x2112x7168 and 8x2112x7168, docs/perf-notes.md session 8; not built
// by CMake). For each case (threads per CTA, dynamic shared memory, cluster size, CTAs) it
// prints cudaOccupancyMaxActiveClusters and launches a spin kernel of that shape once (every
// CTA spins 20 us): how many CTAs started more than 5 us after the first (a second wave),
// how many SMs ran a CTA, and the most CTAs one SM ran. The spin kernel needs few registers
// (the real kernel: 78-124, session 8 cuobjdump), so only shared memory, threads and the
// cluster scheduler limit it; with REGS=80 each thread also keeps 80 registers' worth of
// live values (check with cuobjdump --dump-resource-usage). Usage (GPU machine):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a [-DREGS=80] \
//        tools/dev/probes/cluster_fit.cu -o /tmp/cf && /tmp/cf [THREADS,SMEM,CLUSTER,CTAS ...]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#ifndef REGS
#define REGS 0
#endif

template <int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads, 512 / kMaxThreads) spin(unsigned long long* starts, unsigned* sms,
                                                                      int spin_ns, int* sink) {
  extern __shared__ int smem[];
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  const unsigned cta = blockIdx.x;
  if (threadIdx.x == 0) starts[cta] = t0, sms[cta] = smid;
#if REGS > 0
  float v[REGS - 16];  // live across the spin: the kernel needs about REGS registers
#pragma unroll
  for (int i = 0; i < REGS - 16; ++i) v[i] = float(threadIdx.x * (i + 1));
#endif
  for (;;) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= unsigned(spin_ns)) break;
#if REGS > 0
#pragma unroll
    for (int i = 0; i < REGS - 16; ++i) v[i] = v[i] * 1.0001f + 1.0f;
#endif
  }
#if REGS > 0
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < REGS - 16; ++i) s += v[i];
  if (s == 12345.f) sink[0] = 1;
#endif
  if (spin_ns < 0) sink[cta] = smem[threadIdx.x];
}

struct Case {
  int threads, smem, cluster, ctas;
};

int main(int argc, char** argv) {
  // 16x2112x7168 as dispatched (N8 = 2, 4 slabs x 2 warps, 4 stages: 67712 bytes), the same
  // with 4 warps, clusters of 4, and no cluster.
  // Session 23: path fp8's 2-CTA pair (128 x 128 tiles, 384 threads, 210400 bytes) and its
  // unpaired kernel, 132 CTAs (is the pair's grid resident at once?).
  const Case cases[] = {{256, 67712, 8, 264},  {128, 67712, 8, 264},  {256, 67712, 4, 264}, {256, 67712, 1, 264},
                        {256, 110000, 8, 264}, {384, 210400, 2, 132}, {384, 210400, 1, 132},
                        // Session 26: split-K clusters of 3 to 8 fp8 CTAs (128 x 128: 384 threads,
                        // ~210 KB), 17 tiles (128x2112x7168) or 33 (128 x 64 tiles).
                        {384, 210400, 3, 99},  {384, 210400, 4, 68},   {384, 210400, 5, 85},  {384, 210400, 6, 102},
                        {384, 210400, 7, 119}, {384, 210400, 8, 136}};
  // Cases from the command line instead, each THREADS,SMEM,CLUSTER,CTAS (session 55: clusters
  // of 3 and 4 fp8 CTAs in grids of 100-132 CTAs).
  std::vector<Case> todo(std::begin(cases), std::end(cases));
  if (argc > 1) todo.clear();
  for (int i = 1; i < argc; ++i) {
    Case c{};
    if (sscanf(argv[i], "%d,%d,%d,%d", &c.threads, &c.smem, &c.cluster, &c.ctas) != 4 || c.ctas > 4096 ||
        c.ctas % c.cluster != 0) {
      fprintf(stderr, "bad case '%s' (THREADS,SMEM,CLUSTER,CTAS; CTAS <= 4096, a multiple of CLUSTER)\n", argv[i]);
      return 2;
    }
    todo.push_back(c);
  }
  unsigned long long* starts;
  unsigned* sms;
  int* sink;
  cudaMalloc(&starts, 4096 * 8), cudaMalloc(&sms, 4096 * 4), cudaMalloc(&sink, 4096 * 4);
  for (auto k : {spin<256>, spin<384>}) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024);
    cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  }
  for (const Case& c : todo) {
    auto spin_k = c.threads > 256 ? spin<384> : spin<256>;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(c.ctas));
    cfg.blockDim = dim3(unsigned(c.threads));
    cfg.dynamicSmemBytes = size_t(c.smem);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(c.cluster);
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = -1;
    const cudaError_t oe = cudaOccupancyMaxActiveClusters(&clusters, spin_k, &cfg);
    const cudaError_t le = cudaLaunchKernelEx(&cfg, spin_k, starts, sms, 20000, sink);
    const cudaError_t se = cudaDeviceSynchronize();
    std::vector<unsigned long long> t(size_t(c.ctas));
    std::vector<unsigned> sm(size_t(c.ctas));
    cudaMemcpy(t.data(), starts, t.size() * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(sm.data(), sms, sm.size() * 4, cudaMemcpyDeviceToHost);
    const unsigned long long first = *std::min_element(t.begin(), t.end());
    int late = 0;
    for (unsigned long long x : t) late += x - first > 5000;
    std::vector<int> per_sm(1024, 0);
    for (unsigned x : sm) ++per_sm[x % 1024];
    int used = 0, most = 0;
    for (int n : per_sm) used += n > 0, most = std::max(most, n);
    printf("threads %3d smem %6d cluster %d CTAs %d (REGS %d): max active clusters %d (%s), launch %s; late CTAs %d, "
           "SMs used %d, most CTAs on one SM %d\n",
           c.threads, c.smem, c.cluster, c.ctas, REGS, clusters, cudaGetErrorString(oe),
           cudaGetErrorString(le == cudaSuccess ? se : le), late, used, most);
  }
  return 0;
}
