// Internal interface of the CUDA backend. The public API (src/core/api.cpp) validates every
// argument and then calls these; they assume valid arguments and device pointers, queue work
// on `stream` (a cudaStream_t) and throw CudaError when a CUDA call fails. Implemented in
// src/cuda/*.cu, or by src/cuda/no_cuda.cpp (every call throws Error) in CPU-only builds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Number of usable CUDA devices (0 when none or no driver; never throws).
int device_count();
/// Properties of device `index`.
DeviceInfo device_info(int index);
/// Properties of `device`, read once per device and process (thread-safe; the reference stays
/// valid).
const DeviceInfo& cached_device_info(int device);
/// The calling thread's current device.
int current_device();

void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule, ScaleLayout scale_layout, void* stream);
void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, void* stream);

void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, void* stream);
void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, void* stream);
void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, void* stream);
void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, void* stream);

/// Packs B (any layout) into packed layout v3 (docs/packed-layout.md); every byte written.
void prepack(const MxMatrix& b, uint8_t* out, void* stream);
/// Packed layout v3 -> plain codes [N, K/2] and scales [N, K/32].
void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, void* stream);
/// FP8 image (core/fp8_layout.hpp) of packed weights into `out`, every byte written.
void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream);

/// Configuration for (M, N, K) on the current device: tune cache entry or dispatcher, for
/// weights with an FP8 image, or without one (config_for_weights).
GemmConfig config_for(int64_t M, int64_t N, int64_t K, bool fp8_image = true);
/// C = quantize(A) * B^T on the GPU with configuration `cfg` (path fp8 for weights without an
/// FP8 image runs the tiled kernel); C is bf16 (c_f32 false) or the
/// fp32 accumulator without the final rounding (c_f32 true; row-parallel partial sums).
/// `weights_static`: GemmOptions::weights_static (path gemv reads B before its PDL wait; path
/// splitk's quantizer lets the GEMM, which streams B before its wait, launch before its own).
void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
          int64_t ldc, const GemmConfig& cfg, ScaleRule rule, void* workspace, size_t workspace_bytes, void* stream,
          bool weights_static = false);

}  // namespace mxfp4::cuda
