// Launchers of the GEMM kernels (internal). Arguments are validated by the API layer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Paths "fused" (cfg.split_k == 1) and "splitk" (cluster of cfg.split_k CTAs); M <= 64.
void gemm_fused(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, uint16_t* C,
                int64_t ldc, const GemmConfig& cfg, ScaleRule rule, cudaStream_t stream);


/// Path "tiled": quantize A into `workspace` (gemm_workspace_bytes), then the tiled GEMM.
void gemm_tiled(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, uint16_t* C,
                int64_t ldc, ScaleRule rule, void* workspace, cudaStream_t stream);

}  // namespace mxfp4::cuda
