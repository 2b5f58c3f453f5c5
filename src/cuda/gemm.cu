// CUDA GEMM entry: configuration lookup (tune cache, then the dispatcher), the cached
// workspace of the splitk, tiled and fp8 paths (with path splitk's split-K scratch), and the
// launch of the chosen kernel.
//
// Hot path: after the first call for a given device/stream and shape class nothing is
// allocated, nothing is copied between host and device and the host never waits; every
// path is a fixed sequence of kernel launches, so it can be captured in a CUDA graph.
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/fp8_kernels.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gemm_kernels.hpp"
#include "cuda/quantize_kernels.cuh"
#include "dispatch/path_name.hpp"
#include "dispatch/tune_cache.hpp"

namespace mxfp4::cuda {
namespace {

// -DMXFP4_EXP_NO_QUANTIZER=1, a measurement only (docs/perf-notes.md, session 29), wrong
// results: path splitk runs its GEMM without quantize_fragments (stale fragments), the bound on
// what quantizing A inside the GEMM's own grid could save.
#ifndef MXFP4_EXP_NO_QUANTIZER
#define MXFP4_EXP_NO_QUANTIZER 0
#endif
constexpr bool kExpNoQuantizer = MXFP4_EXP_NO_QUANTIZER != 0;

/// Workspace cached per (device, stream, host thread): calls on different streams never share
/// scratch, and neither do two host threads queueing on one stream (their quantize and GEMM
/// launches may interleave). A thread's buffers live until the process ends.
struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};
struct CachedWorkspace {
  Workspace current;
  bool captured = false;       // a graph captured on this stream may use `current`
  std::vector<void*> retired;  // outgrown buffers that captured graphs may still use
};

/// The cached workspace of at least `bytes`, grown to `preferred` (>= bytes) when it is smaller
/// and the stream is not being captured; during capture a cache of at least `bytes` is used
/// as it is (path splitk then reduces split-K through clusters instead of the workspace).
/// Growth allocates `preferred`, or only `bytes` when that allocation fails. An outgrown
/// buffer that a captured graph may still use is kept (until the process ends), so earlier
/// captures stay valid; any other outgrown buffer is freed.
Workspace cached_workspace(int device, cudaStream_t stream, size_t bytes, size_t preferred) {
  static std::mutex mutex;
  static std::map<std::tuple<int, cudaStream_t, std::thread::id>, CachedWorkspace> cache;
  std::lock_guard<std::mutex> lock(mutex);
  CachedWorkspace& c = cache[{device, stream, std::this_thread::get_id()}];
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  const bool capturing = status != cudaStreamCaptureStatusNone;
  if (c.current.bytes >= preferred || (capturing && c.current.bytes >= bytes)) {
    c.captured = c.captured || capturing;
    return c.current;
  }
  if (capturing) {
    throw Error("mxfp4::gemm needs " + std::to_string(bytes) +
                " bytes of workspace while the stream is being captured; run the call once before capture "
                "(on the capturing host thread: the cache is per device, stream and thread) "
                "or pass GemmOptions::workspace");
  }
  if (c.current.ptr && c.captured) {
    c.retired.push_back(c.current.ptr);
  } else if (c.current.ptr) {
    check(cudaFree(c.current.ptr), "cudaFree(workspace)");  // waits for work still using it
  }
  c.current = {}, c.captured = false;
  void* ptr = nullptr;
  size_t size = preferred;
  const cudaError_t first = cudaMalloc(&ptr, size);
  if (first != cudaSuccess && preferred > bytes) {
    (void)cudaGetLastError();  // clear the failed allocation's error; retry without the scratch
    ptr = nullptr, size = bytes;
    check(cudaMalloc(&ptr, size), "cudaMalloc(workspace)");
  } else {
    check(first, "cudaMalloc(workspace)");
  }
  c.current = {ptr, size};
  return c.current;
}

}  // namespace

GemmConfig config_for(int64_t M, int64_t N, int64_t K, bool fp8_image) {
  const DeviceInfo& dev = cached_device_info(current_device());
  const auto tuned = tune_cache::lookup(dev.name, M, N, K);
  return config_for_weights(tuned ? *tuned : choose_gemm_config(M, N, K, dev), fp8_image, M, N, K, dev);
}

void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
          int64_t ldc, const GemmConfig& chosen, ScaleRule rule, void* workspace, size_t workspace_bytes,
          void* stream, bool weights_static) {
  cudaStream_t s = as_stream(stream);
  // Weights without an FP8 image run the bf16 kernels where path fp8 was chosen (the API
  // rejects a forced fp8 configuration without one before this point).
  const GemmConfig cfg =
      config_for_weights(chosen, B.fp8 != nullptr, M, B.N, K, cached_device_info(current_device()));
  if (const std::string problem = gemm_config_problem_for_shape(cfg, M, K); !problem.empty()) {
    throw InvalidArgument("unsupported GemmConfig " + describe(cfg) + " for M=" + std::to_string(M) + ": " + problem);
  }
  if (cfg.path == GemmPath::gemv) {  // one launch, no workspace
    gemm_gemv(A, M, K, lda, B, C, c_f32, ldc, cfg, rule, weights_static, s);
    return;
  }
  const uint32_t* frags = nullptr;
  float* partials = nullptr;  // path splitk, split-K through the workspace (null: through clusters)
  int* counters = nullptr;
  int64_t n_counters = 0;
  if (cfg.path != GemmPath::fused) {
    const size_t need = gemm_workspace_bytes(M, K, cfg);
    // Path splitk reduces split-K through the workspace where splitk_scratch says so and the
    // workspace holds that scratch (the cached one always does; a caller's when sized by
    // gemm_workspace_bytes with N), else through clusters: the same bits either way
    // (docs/dispatch.md).
    const SplitkScratch scratch = splitk_scratch(M, B.N, K, cfg);
    void* ws = workspace;
    size_t ws_bytes = workspace_bytes;
    if (ws == nullptr) {
      const Workspace cached = cached_workspace(current_device(), s, need, scratch.end);
      ws = cached.ptr, ws_bytes = cached.bytes;
    } else if (workspace_bytes < need) {
      throw InvalidArgument("GemmOptions::workspace_bytes = " + std::to_string(workspace_bytes) + " but M=" +
                            std::to_string(M) + ", K=" + std::to_string(K) + " needs " + std::to_string(need));
    }
    const bool through_ws = scratch.needed && ws_bytes >= scratch.end;
    if (through_ws) {
      counters = reinterpret_cast<int*>(static_cast<uint8_t*>(ws) + scratch.counters_offset);
      partials = reinterpret_cast<float*>(static_cast<uint8_t*>(ws) + scratch.partials_offset);
      n_counters = scratch.tiles;
    }
    if (cfg.path == GemmPath::fp8) {  // A's FP8 image, then the wgmma GEMM with its exact fix-up
      uint8_t* a_img = static_cast<uint8_t*>(ws);
      fp8_image_from_bf16(A, M, K, lda, rule, a_img, s);
      gemm_fp8(A, lda, rule, a_img, M, K, B, C, c_f32, ldc, cfg, cached_device_info(current_device()).sm_count, s);
      return;
    }
    const bool wgmma_order = cfg.path == GemmPath::splitk && splitk_uses_wgmma(M);
    if (!(kExpNoQuantizer && cfg.path == GemmPath::splitk))
      quantize_fragments(A, M, K, lda, static_cast<uint32_t*>(ws), rule, s,
                         wgmma_order ? FragOrder::wgmma : FragOrder::mma, counters, n_counters,
                         /*trigger_first=*/weights_static && cfg.path == GemmPath::splitk);
    frags = static_cast<const uint32_t*>(ws);
  }
  if (cfg.path == GemmPath::tiled) {
    gemm_tiled(M, B, C, c_f32, ldc, frags, s);
  } else {
    const int sms = partials != nullptr ? cached_device_info(current_device()).sm_count : 0;
    gemm_fused(A, M, K, lda, B, C, c_f32, ldc, cfg, rule, frags, partials, counters, sms, s);
  }
}

}  // namespace mxfp4::cuda
