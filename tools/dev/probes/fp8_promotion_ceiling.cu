// Path fp8's GEMM kernel alone (a measurement aid for issue 6, not built by CMake; images built
// once, CUDA events, median of 20 launches after 3 warm-ups) on 128 x 128 tiles with
//   - two 64-column blocks per consumer warpgroup (WN 128, 12 warps),
//   - four 64 x 64 consumer warpgroups (WN 64, 20 warps: the dispatcher's at large M).
// (Until session 16 it also timed the e4m3 SLICE_SUM hook, the ceiling that session 17's s8
// design reached for: docs/perf-notes.md.)
// Random weights (scale bytes 120..130) and randn-like activations. Usage (GPU machine, after
// scripts/device-check.sh built build-device/):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Iinclude -Isrc \
//        tools/dev/probes/fp8_promotion_ceiling.cu build-device/libmxfp4.a -lcublasLt -lcublas [-lopenblas] -o /tmp/fp8c && /tmp/fp8c
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <random>
#include <vector>

#include "core/fp8_layout.hpp"
#include "cuda/fp8_kernels.hpp"
#include "mxfp4/mxfp4.hpp"

using namespace mxfp4;

static void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

int main() {
  int sms = 0;
  ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attr");
  const int64_t shapes[][3] = {{1024, 7168, 2048}, {4096, 7168, 2048}, {8192, 8192, 8192}};
  std::mt19937_64 rng(1);
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    std::vector<uint8_t> codes(size_t(N * K / 2)), scales(size_t(N * K / 32));
    for (auto& c : codes) c = uint8_t(rng());
    for (auto& c : scales) c = uint8_t(120 + rng() % 11);
    std::vector<uint16_t> a(size_t(M * K));
    std::normal_distribution<float> nd;
    for (auto& v : a) {
      const float f = nd(rng);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      v = uint16_t(u >> 16);
    }
    uint8_t *dcodes, *dscales, *dpacked, *dfp8, *dimg;
    uint16_t* da;
    void* dc;
    const int64_t img_bytes = fp8::ImageGeometry::of(M, K).total_bytes();
    ok(cudaMalloc(&dcodes, codes.size()), "malloc");
    ok(cudaMalloc(&dscales, scales.size()), "malloc");
    ok(cudaMalloc(&dpacked, size_t(packed_bytes(N, K))), "malloc");
    ok(cudaMalloc(&dfp8, size_t(fp8_weights_bytes(N, K))), "malloc");
    ok(cudaMalloc(&dimg, size_t(img_bytes)), "malloc");
    ok(cudaMalloc(&da, a.size() * 2), "malloc");
    ok(cudaMalloc(&dc, size_t(M * N * 2)), "malloc");
    ok(cudaMemcpy(dcodes, codes.data(), codes.size(), cudaMemcpyHostToDevice), "copy");
    ok(cudaMemcpy(dscales, scales.data(), scales.size(), cudaMemcpyHostToDevice), "copy");
    ok(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "copy");
    Exec ex;
    ex.backend = Backend::cuda;
    PackedWeights pw = prepack(MxMatrix{dcodes, dscales, N, K}, dpacked, ex);
    pw = prepack_fp8(pw, dfp8, ex);
    cuda::fp8_image_from_bf16(da, M, K, K, ScaleRule::aiter, dimg, nullptr);
    ok(cudaDeviceSynchronize(), "prep");
    struct Variant {
      const char* name;
      GemmConfig cfg;
    } variants[] = {{"WN128 (12 warps)", GemmConfig{GemmPath::fp8, 128, 128, 1, 12}},
                    {"WN64 (20 warps)", GemmConfig{GemmPath::fp8, 128, 128, 1, 20}}};
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (const auto& v : variants) {
      std::vector<float> t;
      for (int i = 0; i < 23; ++i) {
        cudaEventRecord(e0);
        cuda::gemm_fp8(da, K, ScaleRule::aiter, dimg, M, K, pw, dc, false, N, v.cfg, sms, nullptr);
        cudaEventRecord(e1);
        ok(cudaEventSynchronize(e1), "run");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= 3) t.push_back(ms * 1000.f);
      }
      std::sort(t.begin(), t.end());
      std::printf("%ldx%ldx%ld  %-34s %9.2f us  %6.0f TFLOP/s\n", long(M), long(N), long(K), v.name, t[t.size() / 2],
                  2.0 * M * N * K / (t[t.size() / 2] * 1e-6) / 1e12);
    }
    cudaFree(dcodes), cudaFree(dscales), cudaFree(dpacked), cudaFree(dfp8), cudaFree(dimg), cudaFree(da), cudaFree(dc);
  }
}
