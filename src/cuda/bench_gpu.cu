// GPU benchmark of one shape: ours, cuBLAS bf16 on dequantized weights, cuBLASLt FP8 (e4m3,
// per-tensor scales), timed the same way (hopper-design-notes "Measuring"): a CUDA graph of
// `calls` calls, each reading the next of `copies` weight copies (together >= rotate_bytes,
// past the 60 MB L2), replayed `replays` times after a warm-up; median time per call.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/bench_gpu.hpp"
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::cuda {
namespace {

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string("cuBLAS error in ") + what + ": status " + std::to_string(int(st)));
  }
}

/// Device buffer owned for the duration of a benchmark.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&ptr, std::max<size_t>(bytes, 16)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(ptr); }
};

__global__ void bf16_to_e4m3_kernel(const uint16_t* __restrict__ in, __nv_fp8_e4m3* __restrict__ out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __nv_fp8_e4m3(fmt::bf16_to_f32(in[i]));
}

/// Owns what time_graph creates, so a failing check() after instantiation leaks none of it.
struct GraphTiming {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  GraphTiming() = default;
  GraphTiming(const GraphTiming&) = delete;
  GraphTiming& operator=(const GraphTiming&) = delete;
  ~GraphTiming() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

/// Median microseconds per call of `launch(i)` for i in [0, calls), captured in one graph.
double time_graph(cudaStream_t stream, int calls, int replays, const std::function<void(int)>& launch) {
  GraphTiming t;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    for (int i = 0; i < calls; ++i) launch(i);
  } catch (...) {
    cudaStreamEndCapture(stream, &t.graph);  // ends the capture; t destroys a graph it returned
    throw;
  }
  check(cudaStreamEndCapture(stream, &t.graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&t.exec, t.graph, 0), "cudaGraphInstantiate");
  check(cudaEventCreate(&t.start), "cudaEventCreate");
  check(cudaEventCreate(&t.stop), "cudaEventCreate");
  std::vector<double> us;
  for (int r = 0; r < replays + 2; ++r) {
    check(cudaEventRecord(t.start, stream), "cudaEventRecord");
    check(cudaGraphLaunch(t.exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(t.stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(t.stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime");
    if (r >= 2) us.push_back(1000.0 * ms / calls);  // first two replays warm up
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int copies_for(int64_t bytes, int64_t rotate_bytes) {
  return int(std::clamp<int64_t>((rotate_bytes + bytes - 1) / std::max<int64_t>(bytes, 1), 1, 4096));
}

}  // namespace

BenchResult bench_gemm(const uint16_t* A_host, int64_t M, int64_t K, const MxMatrix& B_host, int replays,
                       int64_t rotate_bytes, const GemmConfig* config, bool baselines, bool weights_static,
                       bool c_f32) {
  const int64_t N = B_host.rows;
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> stream_guard(stream, [](cudaStream_t s) {
    cudaStreamDestroy(s);
  });
  BenchResult res;
  res.config = config ? *config : config_for(M, N, K);

  const int64_t c_elem = c_f32 ? 4 : 2;
  DeviceBuffer dA(size_t(M * K * 2)), dC(size_t(M * N * c_elem));
  DeviceBuffer dBc(size_t(N * K / 2)), dBs(size_t(N * K / 32));
  check(cudaMemcpy(dA.ptr, A_host, size_t(M * K * 2), cudaMemcpyHostToDevice), "cudaMemcpy(A)");
  check(cudaMemcpy(dBc.ptr, B_host.codes, size_t(N * K / 2), cudaMemcpyHostToDevice), "cudaMemcpy(B codes)");
  check(cudaMemcpy(dBs.ptr, B_host.scales, size_t(N * K / 32), cudaMemcpyHostToDevice), "cudaMemcpy(B scales)");
  // A pageable cudaMemcpy may return before its DMA (legacy stream) has landed, and `stream`
  // does not wait for the legacy stream: wait here, before prepack and the GEMMs read them.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(uploads)");
  const MxMatrix dB{dBc.as<uint8_t>(), dBs.as<uint8_t>(), N, K, CodeLayout::plain, ScaleLayout::plain};

  // Ours: prepacked weight copies, each with its FP8 image when the path reads one.
  const bool fp8 = res.config.path == GemmPath::fp8;
  const int64_t pbytes = packed_bytes(N, K), fbytes = fp8 ? fp8_weights_bytes(N, K) : 0;
  const int ours_copies = copies_for(pbytes + fbytes, rotate_bytes);
  DeviceBuffer packed(size_t(pbytes * ours_copies)), images(size_t(fbytes * ours_copies));
  for (int c = 0; c < ours_copies; ++c) {
    prepack(dB, packed.as<uint8_t>() + c * pbytes, stream);
    if (fp8) prepack_fp8(PackedWeights{packed.as<uint8_t>() + c * pbytes, N, K}, images.as<uint8_t>() + c * fbytes, stream);
  }
  auto ours = [&](int i) {
    const int c = i % ours_copies;
    const PackedWeights w{packed.as<uint8_t>() + c * pbytes, N, K, kPackedLayoutVersion,
                          fp8 ? images.as<uint8_t>() + c * fbytes : nullptr};
    gemm(dA.as<uint16_t>(), M, K, K, w, dC.ptr, c_f32, N, res.config, ScaleRule::aiter, nullptr, 0, stream,
         weights_static);
  };
  check(cudaMemsetAsync(dC.ptr, 0xFF, size_t(M * N * c_elem), stream), "cudaMemset(C poison)");
  ours(0);  // also grows the cached workspace outside capture
  res.C.resize(size_t(M * N));
  std::vector<float> c32(c_f32 ? size_t(M * N) : 0);
  check(cudaMemcpyAsync(c_f32 ? static_cast<void*>(c32.data()) : res.C.data(), dC.ptr, size_t(M * N * c_elem),
                        cudaMemcpyDeviceToHost, stream),
        "cudaMemcpy(C)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (size_t i = 0; i < c32.size(); ++i) res.C[i] = fmt::f32_to_bf16(c32[i]);
  const int calls = std::max(ours_copies, 20);
  res.ours_us = time_graph(stream, calls, replays, ours);
  if (!baselines) return res;

  cublasHandle_t blas;
  check_cublas(cublasCreate(&blas), "cublasCreate");
  std::unique_ptr<cublasContext, void (*)(cublasHandle_t)> blas_guard(blas, [](cublasHandle_t h) { cublasDestroy(h); });
  check_cublas(cublasSetStream(blas, stream), "cublasSetStream");
  DeviceBuffer blas_ws(32u << 20);
  check_cublas(cublasSetWorkspace(blas, blas_ws.ptr, 32u << 20), "cublasSetWorkspace");

  // cuBLAS bf16: C[M,N] = A[M,K] * Bdeq[N,K]^T, i.e. column-major C^T = Bdeq^T(T) * A^T.
  {
    const int64_t bbytes = N * K * 2;
    const int copies = copies_for(bbytes, rotate_bytes);
    DeviceBuffer bdeq(size_t(bbytes * copies));
    for (int c = 0; c < copies; ++c) dequantize(dB, bdeq.as<uint16_t>() + c * N * K, DType::bf16, K, stream);
    const float alpha = 1.f, beta = 0.f;
    auto run = [&](int i) {
      check_cublas(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha,
                                bdeq.as<uint16_t>() + (i % copies) * N * K, CUDA_R_16BF, int(K), dA.ptr, CUDA_R_16BF,
                                int(K), &beta, dC.ptr, CUDA_R_16BF, int(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx(bf16)");
    };
    run(0);
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    res.cublas_bf16_us = time_graph(stream, std::max(copies, 20), replays, run);
  }

  // cuBLASLt FP8: e4m3 x e4m3 -> bf16, per-tensor scales 1.0, TN layout (required for FP8).
  {
    const int64_t bbytes = N * K;
    const int copies = copies_for(bbytes, rotate_bytes);
    DeviceBuffer b8(size_t(bbytes * copies)), a8(size_t(M * K)), bdeq(size_t(N * K * 2)), one(sizeof(float));
    dequantize(dB, bdeq.as<uint16_t>(), DType::bf16, K, stream);
    bf16_to_e4m3_kernel<<<unsigned(ceil_div(N * K, 256)), 256, 0, stream>>>(bdeq.as<uint16_t>(),
                                                                             b8.as<__nv_fp8_e4m3>(), N * K);
    check_launch("bf16_to_e4m3_kernel");
    for (int c = 1; c < copies; ++c) {
      check(cudaMemcpyAsync(b8.as<uint8_t>() + c * bbytes, b8.ptr, size_t(bbytes), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy(fp8 copies)");
    }
    bf16_to_e4m3_kernel<<<unsigned(ceil_div(M * K, 256)), 256, 0, stream>>>(dA.as<uint16_t>(), a8.as<__nv_fp8_e4m3>(),
                                                                             M * K);
    check_launch("bf16_to_e4m3_kernel");
    const float one_h = 1.f;
    check(cudaMemcpy(one.ptr, &one_h, sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy(scale)");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(scale)");  // as the uploads above

    cublasLtHandle_t lt;
    check_cublas(cublasLtCreate(&lt), "cublasLtCreate");
    cublasLtMatmulDesc_t op;
    check_cublas(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    const void* sp = one.ptr;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sp, sizeof(sp));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sp, sizeof(sp));
    cublasLtMatrixLayout_t la, lb, lc;
    check_cublas(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, uint64_t(K), uint64_t(N), int64_t(K)), "layout A");
    check_cublas(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, uint64_t(K), uint64_t(M), int64_t(K)), "layout B");
    check_cublas(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, uint64_t(N), uint64_t(M), int64_t(N)), "layout C");
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    const size_t ws_bytes = 32u << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes));
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
    if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
      DeviceBuffer lt_ws(ws_bytes);
      const float alpha = 1.f, beta = 0.f;
      auto run = [&](int i) {
        check_cublas(cublasLtMatmul(lt, op, &alpha, b8.as<uint8_t>() + (i % copies) * bbytes, la, a8.ptr, lb, &beta,
                                    dC.ptr, lc, dC.ptr, lc, &heur.algo, lt_ws.ptr, ws_bytes, stream),
                     "cublasLtMatmul(fp8)");
      };
      run(0);
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      res.cublas_fp8_us = time_graph(stream, std::max(copies, 20), replays, run);
    } else {
      res.cublas_fp8_us = -1;  // no FP8 algorithm for this shape
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
  }
  return res;
}

}  // namespace mxfp4::cuda
