// GPU side of `mxfp4 bench` and `mxfp4 tune` (internal; used by the CLI). Timing follows
// ../shared/spec/hopper-design-notes.md "Measuring": CUDA graph of many calls, weight copies
// rotated past L2 (>= rotate_bytes), median of >= `replays` graph replays, cuBLAS baselines
// measured in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

struct BenchResult {
  std::vector<uint16_t> C;        ///< our output [M, N] bf16 bits from one untimed call (with fp32 C: its values rounded to bf16)
  double ours_us = 0;             ///< median GPU time per call
  double cublas_bf16_us = 0;      ///< cuBLAS bf16: A x dequantized bf16 B^T
  double cublas_fp8_us = 0;       ///< cuBLASLt e4m3 x e4m3, per-tensor scales
  GemmConfig config;              ///< configuration our call used
};

/// Runs one shape: A host bf16 [M, K] (dense), B host plain MXFP4 [N, K]. Uploads, prepacks,
/// runs once (C copied back), then times ours and the baselines. `config` forces a
/// configuration (nullptr: the library's choice); `weights_static` times ours with
/// GemmOptions::weights_static (the benchmark's weights are written once, before any call);
/// `c_f32` times ours writing fp32 C [M, N] (ldc = N) instead of bf16, and BenchResult::C holds
/// those values rounded to bf16 (fmt::f32_to_bf16: the bf16 path's bits, spec §3), so the same
/// check applies; the cuBLAS baselines keep bf16 C. Throws CudaError / Error.
BenchResult bench_gemm(const uint16_t* A, int64_t M, int64_t K, const MxMatrix& B, int replays,
                       int64_t rotate_bytes, const GemmConfig* config, bool baselines, bool weights_static = false,
                       bool c_f32 = false);

}  // namespace mxfp4::cuda
