// Launchers of the FP8 prefill path (path "fp8", docs/fp8-path.md; internal). Arguments are
// validated by the API layer; every launcher queues work on `stream` and throws CudaError when
// a launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Which image kernel runs (src/cuda/fp8_image.cu): all write the same bytes. per_chunk: 1024
/// threads per (16 rows, chain chunk), 2 slices per thread; per_window: 128 threads per
/// (16 rows, window of kSerialW slices: 4 of the chain chunk's 8), 16 elements of each
/// slice per thread; per_two_slices: the same on windows of 2 slices; per_slice: on windows of
/// one. `automatic` picks per_window from 1.5 (16 rows, chunk) units per SM,
/// per_two_slices from 48 such units, else per_slice, and per_chunk past 65535 slices
/// (fp8_image.cu: the measurements); tests and probes force one.
enum class ImageKernel { automatic, per_slice, per_chunk, per_window, per_two_slices };
/// Every image kernel `automatic` can stand for (tests force each in turn).
inline constexpr ImageKernel kEveryImageKernel[] = {ImageKernel::per_slice, ImageKernel::per_chunk,
                                                   ImageKernel::per_window, ImageKernel::per_two_slices};

/// 8-bit image (core/fp8_layout.hpp) of bf16 activations A [M, K] (row stride lda) quantized
/// under `rule` (spec §2), into `out` (ImageGeometry::of(M, K).total_bytes() bytes).
void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream, ImageKernel kernel = ImageKernel::automatic);

/// 8-bit image of packed weights B (layout v3) into `out` (ImageGeometry::of(B.N, B.K).total_bytes()).
void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream,
                           ImageKernel kernel = ImageKernel::automatic);

/// C [M, N] = A * B^T on s8 wgmma from the two 8-bit images (a_img: activations, B.fp8:
/// weights); tile cfg.block_m x cfg.block_n (64 or 128 each, or the 256 x 128 cluster pair),
/// a persistent grid of at most `sm_count` CTAs, or split-K clusters. Elements of C whose
/// activation row has a flagged group in a_img, or whose weight row has one in B.fp8, are
/// recomputed exactly (exact block products, fp32 sums of 2^(sa+sb)-scaled block sums;
/// gemm_fp8_exact.cuh) from A (bf16 [M, K], row stride lda, quantized again under `rule`) and
/// B's packed weights: by the GEMM kernel itself where each CTA (PAIR: cluster) stores one
/// tile without split-K and the tile is not 192 x 128, else by a second kernel launched here.
void gemm_fp8(const uint16_t* A, int64_t lda, ScaleRule rule, const uint8_t* a_img, int64_t M, int64_t K,
              const PackedWeights& B, void* C, bool c_f32, int64_t ldc, const GemmConfig& cfg, int sm_count,
              cudaStream_t stream);

}  // namespace mxfp4::cuda
