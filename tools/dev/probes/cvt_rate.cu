// Issue rate of the s32 -> f32 conversion (a measurement aid for an integer-wgmma variant of
// path fp8, not built by CMake): every thread of 8 x SMs CTAs of 256 threads runs 8
// independent chains of `float(int)` (I2FP.F32.S32 in the SASS), of the magic-number form
// (IADD3 + FADD: bits(i + 0x4B400000) - 12582912.0f, exact for |i| < 2^22), of plain FFMA, and of
// the conversion feeding an FFMA (one per-slice promotion of an integer accumulator: does I2F
// share the FFMA's issue slots? session 8's plan).
// Operations per clock per SM come from the whole grid's event time and the SM clock (the
// first version divided by one CTA's clock64 span, which assumed all 8 CTAs of an SM resident
// at once and overstated the rates: bench/results/logs/cvt-rate-flawed-h200.txt). Usage:
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a tools/dev/probes/cvt_rate.cu -o /tmp/cvt && /tmp/cvt
#include <cuda_runtime.h>

#include <cstdio>

constexpr int kIters = 4096, kChains = 8;

template <int MODE>
__global__ void rate(int seed, float* sink, long long* cycles) {
  int v[kChains];
  float f[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = seed + c * 7 + int(threadIdx.x), f[c] = float(c);
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (MODE == 0) {  // s32 -> f32, fed back through an integer add
        f[c] += __int2float_rn(v[c]);
        v[c] += 3;
      } else if constexpr (MODE == 1) {  // magic number: IADD3 then FADD
        f[c] += __int_as_float(v[c] + 0x4B400000) - 12582912.0f;
        v[c] += 3;
      } else if constexpr (MODE == 3) {  // a per-slice promotion: convert, then FFMA with the scale
        f[c] = fmaf(__int2float_rn(v[c]), 0.5f, f[c]);
        v[c] += 3;
      } else {  // FFMA reference
        f[c] = fmaf(f[c], 0.999f, 1.0f);
        v[c] += 3;
      }
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += f[c] + float(v[c] & 1);
  if (s == 12345.f) sink[threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int MODE>
void run(const char* name, int sms, float* sink, long long* cycles) {
  const int ctas = 8 * sms, threads = 256;
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  rate<MODE><<<ctas, threads>>>(1, sink, cycles);  // warm-up
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  rate<MODE><<<ctas, threads>>>(1, sink, cycles);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  // Every thread runs kIters * kChains operations (plus the integer add).
  const double ops = double(ctas) * threads * kIters * kChains;
  const double clocks = double(ms) * 1e-3 * double(khz) * 1e3;  // at the reported (boost) clock
  std::printf("%-36s %8.1f us  %6.1f per clock per SM\n", name, ms * 1e3, ops / (clocks * sms));
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* sink;
  long long* cycles;
  cudaMalloc(&sink, 1024 * sizeof(float));
  cudaMalloc(&cycles, 8 * sms * sizeof(long long));
  run<0>("s32 -> f32 (I2FP) + FADD", sms, sink, cycles);
  run<1>("magic number (IADD3 + FADD + FADD)", sms, sink, cycles);
  run<2>("FFMA", sms, sink, cycles);
  run<3>("s32 -> f32 (I2FP) + FFMA (promotion)", sms, sink, cycles);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::printf("CUDA error: %s\n", cudaGetErrorString(e));
  return 0;
}
