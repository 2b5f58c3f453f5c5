// Does a kernel pay for fetching its code after its PDL wait? (a measurement aid, not built by
// CMake; docs/perf-notes.md session 36.) Session 34's PDL probe found synthetic kernels released
// 0.25-0.5 us sooner than the real splitk GEMM with the same registers, code size, grid and
// shared memory, but its "code size" was a never-run path; session 36 found gemv's time at
// 4x2880x512 moving by 0.2 us with where its code lies. Here a CUDA graph alternates X (a weight
// stream: every node reads a fresh window of a 512 MiB buffer, as the benchmark's rotated
// weights do) and Y (ALU work after its wait), both launched with PDL (wait first, trigger right
// after it). Y (one CTA of 4 warps per SM) runs 2048 FFMAs per thread in 8 independent chains, as
//   mode 0: a loop (a few hundred bytes of code executed again and again, ~1.4x the instructions),
//   mode 1: fully unrolled straight-line code (~32 KB of SASS, each instruction run once),
//   mode 2: mode 1's one copy of the body run twice, once before the wait (results dropped), so
//           its code is in the SM's instruction caches when the wait returns.
// Printed per case: the median over Y's CTAs and nodes of (end - wait return), and the graph's
// time per node pair. If mode 1 is much slower than mode 0 and mode 2 close to mode 0, a
// kernel's first run of its post-wait code is a cost, and running it once before the wait (or
// keeping it small) removes it.
// Usage (GPU machine, repository root): nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a
//   -Iinclude -Isrc tools/dev/probes/ifetch.cu -o /tmp/ifetch && /tmp/ifetch
// (the library's launch_pdl, check and PDL intrinsics, header-only: no library to link).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda/bulk_copy.cuh"
#include "cuda/common.cuh"

using mxfp4::cuda::check;
using mxfp4::cuda::grid_dependency_wait;
using mxfp4::cuda::grid_dependents_launch;
using mxfp4::cuda::launch_pdl;

namespace {

constexpr int kChains = 8, kOps = 2048, kMaxCtas = 1024, kNodes = 64;

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// X: every thread sums its 16-byte pieces of a `bytes` window starting at `src`; one store per CTA.
__global__ void stream_kernel(const uint4* src, size_t bytes, unsigned* sink) {
  grid_dependency_wait();
  grid_dependents_launch();
  unsigned s = 0;
  const size_t n = bytes / 16, stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = __ldg(src + i);
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (s == 0x12345678u) sink[blockIdx.x] = s;  // keeps the loads; practically never stores
}

__device__ __forceinline__ void body_unrolled(float (&a)[kChains]) {
#pragma unroll
  for (int i = 0; i < kOps; ++i) a[i % kChains] = fmaf(a[i % kChains], 1.0000001f, 0.5f * float(i));
}
/// The same 2048 FFMAs in 8 independent chains as a loop of 256 iterations (session 36's first
/// form carried one serial `f += 0.5` chain through every FFMA and was ALU-latency bound).
__device__ __forceinline__ void body_loop(float (&a)[kChains]) {
#pragma unroll 1
  for (int i = 0; i < kOps; i += kChains) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = fmaf(a[j], 1.0000001f, 0.5f * float(j + 1));
  }
}

/// Y: stamps [node][cta][3] = entry, wait return, end (thread 0).
template <int MODE>
__global__ void code_kernel(unsigned long long* stamps, int node, float* sink) {
  const unsigned long long t0 = gtime();
  unsigned long long t1 = t0;
  float a[kChains];
  // Mode 2 runs the one copy of the body twice (pass 0 before the wait, its results dropped;
  // pass 1 after it), so pass 1 executes instruction addresses pass 0 has fetched.
#pragma unroll 1
  for (int pass = MODE == 2 ? 0 : 1; pass < 2; ++pass) {
    if (pass == 1) {
      grid_dependency_wait();
      grid_dependents_launch();
      t1 = gtime();
    }
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = float(threadIdx.x + j + pass);
    if constexpr (MODE == 0) {
      body_loop(a);
    } else {
      body_unrolled(a);
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kChains; ++j) s += a[j];
    if (s == 1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the work; never stores
  }
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x < kMaxCtas) {
    unsigned long long* st = stamps + (size_t(node) * kMaxCtas + blockIdx.x) * 3;
    st[0] = t0, st[1] = t1, st[2] = gtime();
  }
}

/// One case: mode of Y, bytes X streams per node (0: no X), returns nothing; prints a line.
void run_case(int mode, size_t x_bytes, const char* big, size_t big_bytes, unsigned* usink, float* fsink,
              unsigned long long* stamps, int sms) {
  void (*const y)(unsigned long long*, int, float*) = mode == 0 ? code_kernel<0> : mode == 1 ? code_kernel<1> : code_kernel<2>;
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaGraph_t g;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "capture");
  for (int node = 0; node < kNodes; ++node) {
    if (x_bytes > 0) {
      const size_t off = (size_t(node) * x_bytes) % (big_bytes - x_bytes);
      launch_pdl(stream_kernel, dim3(sms), dim3(512), s, "stream_kernel", reinterpret_cast<const uint4*>(big + off / 16 * 16),
                 x_bytes, usink);
    }
    launch_pdl(y, dim3(sms), dim3(128), s, "code_kernel", stamps, node, fsink);
  }
  check(cudaStreamEndCapture(s, &g), "end capture");
  cudaGraphExec_t ge;
  check(cudaGraphInstantiate(&ge, g, 0), "instantiate");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> per_pair;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0, s);
    check(cudaGraphLaunch(ge, s), "graph launch");
    cudaEventRecord(e1, s);
    check(cudaStreamSynchronize(s), "sync");
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 2) per_pair.push_back(ms * 1000.f / kNodes);
  }
  std::vector<unsigned long long> h(size_t(kNodes) * kMaxCtas * 3);
  check(cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
  std::vector<double> run, pre;
  for (int node = 4; node < kNodes; ++node) {
    for (int c = 0; c < sms; ++c) {
      const unsigned long long* st = &h[(size_t(node) * kMaxCtas + c) * 3];
      run.push_back((st[2] - st[1]) / 1000.0);
      pre.push_back((st[1] - st[0]) / 1000.0);
    }
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto p90 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() * 9 / 10];
  };
  std::sort(per_pair.begin(), per_pair.end());
  std::printf("mode %d (%s), X %6.2f MB per node: Y wait->end med %.2f p90 %.2f us; entry->wait med %.2f; graph %.2f us per node pair\n",
              mode, mode == 0 ? "loop    " : mode == 1 ? "unrolled" : "prewarm ", x_bytes / 1e6, med(run), p90(run),
              med(pre), per_pair[per_pair.size() / 2]);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

}  // namespace

int main() {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attr");
  for (auto* k : {reinterpret_cast<const void*>(code_kernel<0>), reinterpret_cast<const void*>(code_kernel<1>),
                  reinterpret_cast<const void*>(code_kernel<2>)}) {
    cudaFuncAttributes a;
    check(cudaFuncGetAttributes(&a, k), "func attributes");
    std::printf("code kernel: %d registers\n", a.numRegs);
  }
  const size_t big_bytes = size_t(512) << 20;
  char* big;
  check(cudaMalloc(&big, big_bytes), "malloc");
  check(cudaMemset(big, 1, big_bytes), "memset");
  unsigned* usink;
  float* fsink;
  unsigned long long* stamps;
  check(cudaMalloc(&usink, 4096 * 4), "malloc");
  check(cudaMalloc(&fsink, size_t(kMaxCtas) * 256 * 4), "malloc");
  check(cudaMalloc(&stamps, size_t(kNodes) * kMaxCtas * 3 * 8), "malloc");
  for (size_t x : {size_t(0), size_t(1) << 20, size_t(8) << 20}) {
    for (int mode = 0; mode < 3; ++mode) run_case(mode, x, big, big_bytes, usink, fsink, stamps, sms);
  }
  return 0;
}
