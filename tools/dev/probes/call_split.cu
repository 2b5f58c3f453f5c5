// Where a path "splitk" or "fp8" call's time goes in a CUDA graph (a measurement aid, not built
// by CMake): per-call medians of graphs of `calls` launches of (1) an empty kernel, (2) the A
// quantizer alone (splitk: quantize_fragments; fp8: A's FP8 image), (3) the GEMM kernel alone on
// A quantized once, (4) both, as the library runs them, and for path fp8 also (5) the fix-up
// alone and (6) all three (the library's call). Path splitk runs with split-K through clusters
// and, where splitk_scratch uses it, again through the workspace (its counters reset
// themselves after the first quantizer run). FP8_CFG="BLOCK_M BLOCK_N WARPS SPLIT_K" forces a
// path fp8 configuration on every shape. Weights rotate over copies past the L2 like
// `mxfp4 bench`; their codes are arbitrary and every scale byte is 127 (no fp8 group is flagged). Usage (after
// scripts/device-check.sh has built build-device; tools/dev/call-split.sh does these two steps):
//   nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude -Isrc tools/dev/probes/call_split.cu build-device/libmxfp4.a \
//        -lcublas -lcublasLt "$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-device/CMakeCache.txt)" -o /tmp/call_split && /tmp/call_split M N K [M N K ...]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/fp8_layout.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/fp8_kernels.hpp"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"
#include "dispatch/path_name.hpp"

using namespace mxfp4;

__global__ void empty_kernel() {}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

double time_graph(cudaStream_t s, int calls, const std::function<void(int)>& launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) launch(i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  std::vector<double> us;
  for (int r = 0; r < 22; ++r) {
    cudaEventRecord(a, s);
    CK(cudaGraphLaunch(ge, s));
    cudaEventRecord(b, s);
    CK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= 2) us.push_back(1000.0 * ms / calls);
  }
  std::sort(us.begin(), us.end());
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return us[us.size() / 2];
}

/// The buffers of one shape's measurement: `copies` packed weight copies (rotated past the L2
/// like `mxfp4 bench`; codes arbitrary, every scale byte 127), with their FP8 images when
/// `fp8`, and A (bf16 ~0.75 everywhere) and C.
struct Buffers {
  std::vector<PackedWeights> w;
  uint8_t *packed = nullptr, *images = nullptr;
  uint16_t *A = nullptr, *C = nullptr;
  Buffers(int64_t M, int64_t N, int64_t K, bool fp8, cudaStream_t s) {
    const int64_t pbytes = packed_bytes(N, K), fbytes = fp8 ? fp8_weights_bytes(N, K) : 0;
    const int64_t code_bytes = cuda::PackedGeometry::of(N, K).code_bytes;
    const int copies = int(std::max<int64_t>(1, (256ll << 20) / (pbytes + fbytes) + 1));
    CK(cudaMalloc(&packed, size_t(pbytes) * copies));
    CK(cudaMemset(packed, 0x3A, size_t(pbytes) * copies));
    if (fp8) CK(cudaMalloc(&images, size_t(fbytes) * copies));
    for (int c = 0; c < copies; ++c) {
      CK(cudaMemset(packed + c * pbytes + code_bytes, 127, size_t(pbytes - code_bytes)));
      w.push_back(PackedWeights{packed + c * pbytes, N, K});
      if (fp8) {
        cuda::fp8_image_from_packed(w.back(), images + c * fbytes, s);
        w.back().fp8 = images + c * fbytes;
      }
    }
    CK(cudaMalloc(&A, size_t(M * K * 2)));
    CK(cudaMemset(A, 0x3F, size_t(M * K * 2)));  // bf16 0x3F3F ~ 0.75
    CK(cudaMalloc(&C, size_t(M * N * 2)));
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() { cudaFree(packed), cudaFree(images), cudaFree(A), cudaFree(C); }
  const PackedWeights& weights(int i) const { return w[size_t(i) % w.size()]; }
  int copies() const { return int(w.size()); }
};

/// Path fp8: A's image and the GEMM (with its fix-up since session 44), alone and together (as gemm() runs them).
void fp8_split(cudaStream_t s, int sms, int64_t M, int64_t N, int64_t K, const GemmConfig& cfg) {
  const Buffers b(M, N, K, true, s);
  uint16_t *A = b.A, *C = b.C;
  uint8_t* img;
  CK(cudaMalloc(&img, size_t(fp8::ImageGeometry::of(M, K).total_bytes())));
  auto image_by = [&](cuda::ImageKernel k) {
    return [&, k](int) { cuda::fp8_image_from_bf16(A, M, K, K, ScaleRule::aiter, img, s, k); };
  };
  const auto image = image_by(cuda::ImageKernel::automatic);
  auto gemm = [&](int i) { cuda::gemm_fp8(A, K, ScaleRule::aiter, img, M, K, b.weights(i), C, false, N, cfg, sms, s); };
  image(0), gemm(0);
  CK(cudaStreamSynchronize(s));
  const int calls = std::max(b.copies(), 40);
  const double t_empty = time_graph(s, calls, [&](int) { empty_kernel<<<132, 128, 0, s>>>(); });
  const double t_i = time_graph(s, calls, image), t_g = time_graph(s, calls, gemm);
  const double t_ig = time_graph(s, calls, [&](int i) { image(i), gemm(i); });
  const double t_slice = time_graph(s, calls, image_by(cuda::ImageKernel::per_slice));
  const double t_chunk = time_graph(s, calls, image_by(cuda::ImageKernel::per_chunk));
  const double t_serial = time_graph(s, calls, image_by(cuda::ImageKernel::per_window));
  const double t_two = time_graph(s, calls, image_by(cuda::ImageKernel::per_two_slices));
  printf("%lldx%lldx%lld (%s): empty %.2f  image %.2f (per slice %.2f, per chunk %.2f, window %.2f, two slices %.2f)  gemm %.2f (with its fix-up)  "
         "image+gemm %.2f us per call\n",
         (long long)M, (long long)N, (long long)K, describe(cfg).c_str(), t_empty, t_i, t_slice, t_chunk, t_serial, t_two, t_g, t_ig);
  cudaFree(img);
}

int main(int argc, char** argv) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int a = 1; a + 2 < argc; a += 3) {
    const int64_t M = atoll(argv[a]), N = atoll(argv[a + 1]), K = atoll(argv[a + 2]);
    GemmConfig cfg = cuda::config_for(M, N, K);
    // FP8_CFG="BLOCK_M BLOCK_N WARPS SPLIT_K" forces a path fp8 configuration (e.g. a variant
    // build's instantiation the dispatcher does not pick).
    if (const char* force = getenv("FP8_CFG")) {
      int bm = 0, bn = 0, w = 0, sk = 0;
      if (sscanf(force, "%d %d %d %d", &bm, &bn, &w, &sk) == 4) cfg = GemmConfig{GemmPath::fp8, bn, bm, sk, w};
    }
    if (cfg.path == GemmPath::fp8) {
      fp8_split(s, sms, M, N, K, cfg);
      continue;
    }
    if (cfg.path != GemmPath::splitk) {
      printf("%lldx%lldx%lld: path %s, not splitk; skipped\n", (long long)M, (long long)N, (long long)K,
             describe(cfg).c_str());
      continue;
    }
    const Buffers b(M, N, K, false, s);
    uint16_t *A = b.A, *C = b.C;
    uint32_t* frags;  // the workspace: fragments, then the split-K scratch (dispatch/path_name.hpp)
    const SplitkScratch scratch = splitk_scratch(M, N, K, cfg);
    CK(cudaMalloc(&frags, scratch.end));
    uint8_t* ws = reinterpret_cast<uint8_t*>(frags);
    int* counters = scratch.needed ? reinterpret_cast<int*>(ws + scratch.counters_offset) : nullptr;
    float* partials = scratch.needed ? reinterpret_cast<float*>(ws + scratch.partials_offset) : nullptr;
    const auto order = cuda::splitk_uses_wgmma(M) ? cuda::FragOrder::wgmma : cuda::FragOrder::mma;
    // Split-K through clusters (no scratch), then through the workspace (when there is one).
    for (int through_ws = 0; through_ws <= (scratch.needed ? 1 : 0); ++through_ws) {
      int* cnt = through_ws ? counters : nullptr;
      float* part = through_ws ? partials : nullptr;
      auto quant = [&](int) {
        cuda::quantize_fragments(A, M, K, K, frags, ScaleRule::aiter, s, order, cnt, through_ws ? scratch.tiles : 0);
      };
      auto gemm = [&](int i) {
        cuda::gemm_fused(A, M, K, K, b.weights(i), C, false, N, cfg, ScaleRule::aiter, frags, part, cnt, sms, s);
      };
      quant(0), gemm(0);
      CK(cudaStreamSynchronize(s));
      const int calls = std::max(b.copies(), 40);
      const double t_empty = time_graph(s, calls, [&](int) { empty_kernel<<<132, 128, 0, s>>>(); });
      const double t_q = time_graph(s, calls, quant);
      const double t_g = time_graph(s, calls, gemm);
      const double t_both = time_graph(s, calls, [&](int i) { quant(i), gemm(i); });
      printf("%lldx%lldx%lld (%s, split-K via %s): empty %.2f  quantizer %.2f  gemm %.2f  both %.2f us per call\n",
             (long long)M, (long long)N, (long long)K, describe(cfg).c_str(), through_ws ? "workspace" : "clusters",
             t_empty, t_q, t_g, t_both);
    }
    cudaFree(frags);
  }
  return 0;
}
