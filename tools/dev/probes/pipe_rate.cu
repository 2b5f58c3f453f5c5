// Issue rate of the operations the weight decode is made of (a measurement aid for the GPU
// machine, not built by CMake; docs/perf-notes.md, session 33): one CTA of 1024 threads per SM
// (8 warps per scheduler) runs an unrolled loop of 8 independent chains of one operation, or of
// a pair of operations interleaved, and thread 0 times it with clock64 between two barriers.
// Prints warp instructions per clock per SM (at most 4: one per scheduler) for each kind, so
// that a pair's rate against its parts says whether the two share a pipe.
// Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 tools/dev/probes/pipe_rate.cu -o /tmp/pr && /tmp/pr
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

enum Op { kLop3, kShf, kImad, kImadWide, kImadHi, kHmul2, kPrmt, kFfma, kLop3Wide, kLop3Hmul2, kWideHmul2, kShfImad, kCount };
static const char* kNames[kCount] = {"LOP3", "SHF.R.W", "IMAD", "IMAD.WIDE.U32", "IMAD.HI.U32", "HMUL2.BF16",
                                     "PRMT", "FFMA", "LOP3 + IMAD.WIDE", "LOP3 + HMUL2", "IMAD.WIDE + HMUL2",
                                     "SHF + IMAD"};
// Operations per loop iteration and chain: 1, or 2 for the pairs.
static const int kPerIter[kCount] = {1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2};

template <int OP>
__device__ __forceinline__ void step(uint32_t& x, uint32_t& y, uint32_t m) {
  if constexpr (OP == kLop3) {
    asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(y), "r"(m));
  } else if constexpr (OP == kShf) {
    asm volatile("shf.r.wrap.b32 %0, %0, %0, %1;" : "+r"(x) : "r"(m));
  } else if constexpr (OP == kImad) {
    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(m), "r"(y));
  } else if constexpr (OP == kImadWide) {
    asm volatile("{ .reg .u64 p; mul.wide.u32 p, %0, %1; mov.b64 {%0, %1}, p; }" : "+r"(x), "+r"(y));
  } else if constexpr (OP == kImadHi) {
    asm volatile("mul.hi.u32 %0, %0, %1;" : "+r"(x) : "r"(m));
  } else if constexpr (OP == kHmul2) {
    asm volatile("mul.rn.bf16x2 %0, %0, %1;" : "+r"(x) : "r"(m));
  } else if constexpr (OP == kPrmt) {
    asm volatile("prmt.b32 %0, %0, %1, %2;" : "+r"(x) : "r"(y), "r"(m));
  } else if constexpr (OP == kFfma) {
    asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+r"(x) : "r"(m));
  } else if constexpr (OP == kLop3Wide) {
    step<kLop3>(y, x, m);
    step<kImadWide>(x, y, m);
  } else if constexpr (OP == kLop3Hmul2) {
    step<kLop3>(y, x, m);
    step<kHmul2>(x, y, m);
  } else if constexpr (OP == kWideHmul2) {
    step<kHmul2>(y, x, m);
    step<kImadWide>(x, y, m);
  } else if constexpr (OP == kShfImad) {
    step<kShf>(y, x, m);
    step<kImad>(x, y, m);
  }
}

template <int OP>
__global__ void rate(int iters, uint32_t m, uint32_t* sink, long long* cycles) {
  uint32_t x[8], y[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) x[c] = threadIdx.x * 7u + c, y[c] = threadIdx.x ^ (c * 0x9E3779B9u);
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int c = 0; c < 8; ++c) step<OP>(x[c], y[c], m);
  }
  __syncthreads();
  const long long t1 = clock64();
  uint32_t r = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) r ^= x[c] ^ y[c];
  if (r == 0x12345678u) sink[threadIdx.x] = r;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int OP>
double measure(int sms, uint32_t* sink, long long* cycles) {
  const int iters = 512, threads = 1024;
  rate<OP><<<sms, threads>>>(iters, 0x3F803F81u, sink, cycles);  // warm-up
  rate<OP><<<sms, threads>>>(iters, 0x3F803F81u, sink, cycles);
  cudaDeviceSynchronize();
  long long c[1024];
  cudaMemcpy(c, cycles, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
  long long mx = 0;
  for (int i = 0; i < sms; ++i) mx = c[i] > mx ? c[i] : mx;
  const double warp_instr = double(threads / 32) * iters * 4 * 8 * kPerIter[OP];
  return warp_instr / double(mx);
}

template <int OP>
void run(int sms, uint32_t* sink, long long* cycles) {
  const double r = measure<OP>(sms, sink, cycles);
  std::printf("%-20s %5.2f warp instructions per clock per SM (%4.1f clocks per warp instruction per scheduler)\n",
              kNames[OP], r, 4.0 / r);
  if constexpr (OP + 1 < kCount) run<OP + 1>(sms, sink, cycles);
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint32_t* sink;
  long long* cycles;
  cudaMalloc(&sink, 1024 * sizeof(uint32_t));
  cudaMalloc(&cycles, 1024 * sizeof(long long));
  run<0>(sms, sink, cycles);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
