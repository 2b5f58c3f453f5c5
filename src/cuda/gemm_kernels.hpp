// Launchers of the GEMM kernels (internal). Arguments are validated by the API layer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// The small-M split-K kernel (cfg.split_k CTAs per output tile; 64 tokens per CTA, CTAs
/// along grid.y for larger M, M <= 64 * 65535). With `frags` null it quantizes A itself (path
/// "fused"), else it reads A's fragments from `frags` (path "splitk", filled by
/// quantize_fragments). The split-K ranks of a tile reduce through a thread-block cluster, or
/// through `partials` and `counters` when given (the workspace's split-K scratch, passed only
/// where splitk_scratch(M, N, K, cfg).needed, so path splitk with M <= 16; counters zeroed by
/// quantize_fragments): every rank stores its partial tile and the last to finish sums them
/// in rank order (bitwise the cluster's result); that grid is spread evenly over `sm_count`
/// SMs (0: as the block scheduler places it).
void gemm_fused(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
                int64_t ldc, const GemmConfig& cfg, ScaleRule rule, const uint32_t* frags, float* partials,
                int* counters, int sm_count, cudaStream_t stream);

/// True when path "splitk" runs its K loop on register-A wgmma for this M (then its fragments
/// must be written in FragOrder::wgmma, quantize_kernels.cuh).
bool splitk_uses_wgmma(int64_t M);


/// Path "tiled": the tiled GEMM on A's fragments (quantize_fragments, M rows).
/// C is bf16, or fp32 (no final rounding) when c_f32 is set, for every launcher here.
void gemm_tiled(int64_t M, const PackedWeights& B, void* C, bool c_f32, int64_t ldc, const uint32_t* frags,
                cudaStream_t stream);

/// Path "gemv" (M <= 16; src/cuda/gemm_gemv.cu): mma.sync on the packed weights' fragments
/// loaded straight into registers, A quantized inside the kernel into shared memory, one CTA of
/// cfg.warps warps per cfg.block_n / 16 slabs of 16 weight rows over all of K (one or two token
/// tiles of 8: gemv_token_tiles), launched with programmatic dependent
/// launch (common.cuh launch_pdl_smem). Needs
/// gemv_smem_bytes(M, K, cfg.warps) <= kGemvSmemLimit (dispatch/path_name.hpp; checked by
/// the caller). C is bf16, or fp32 when c_f32 is set. `weights_static` (GemmOptions::weights_static):
/// the weights are read before griddepcontrol.wait (each warp's first two batches into
/// registers, the next chunks by bulk copies into shared memory, as many as fit in 100 KiB
/// beside A) instead of only prefetched into L2.
void gemm_gemv(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
               int64_t ldc, const GemmConfig& cfg, ScaleRule rule, bool weights_static, cudaStream_t stream);

}  // namespace mxfp4::cuda
