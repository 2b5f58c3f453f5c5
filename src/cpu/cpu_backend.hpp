// Internal interface of the CPU backend. The public API (src/core/api.cpp) validates every
// argument and then calls these; they assume valid arguments and host pointers. `threads` is
// the resolved worker count (>= 1). Semantics as in include/mxfp4/mxfp4.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cpu {

// --- quantize.cpp ------------------------------------------------------------------------
/// Spec §2 quantization of x [rows, K] (row stride in elements) with fmt::quantize_block.
void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule, ScaleLayout scale_layout, int threads);

// --- dequantize.cpp ----------------------------------------------------------------------
/// MXFP4 (any layout) -> fp32 or bf16 [rows, K] with row stride out_stride.
void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, int threads);

// --- aiter_layout.cpp --------------------------------------------------------------------
void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, int threads);
void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, int threads);
void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, int threads);
void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, int threads);

/// Owner of plain copies made by to_plain().
struct PlainStorage {
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scales;
};
/// A view of `q` in plain code and scale layouts: `q` itself when already plain, else copies
/// kept alive by `storage`.
MxMatrix to_plain(const MxMatrix& q, PlainStorage& storage, int threads);

// --- packed.cpp --------------------------------------------------------------------------
/// Packed layout v3 (docs/packed-layout.md): every byte of `out` written, padding zero.
void prepack(const MxMatrix& b, uint8_t* out, int threads);
/// Packed layout v3 -> plain codes [N, K/2] and scales [N, K/32].
void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, int threads);
/// FP8 image (core/fp8_layout.hpp) of packed weights into `out`, every byte written.
void prepack_fp8(const PackedWeights& p, uint8_t* out, int threads);

/// Destination of a GEMM result C [M, N] with row stride `ld` (elements): bf16 bit patterns
/// (`f32` false, uint16_t) or fp32 values (`f32` true, float).
struct GemmOut {
  void* data = nullptr;
  bool f32 = false;
  int64_t ld = 0;
};

// --- gemm_reference.cpp ------------------------------------------------------------------
/// Round a double to the nearest bf16 (ties to even) in one step: bf16 subnormals, overflow
/// to +-Inf, NaN as the canonical 0x7FC0.
uint16_t round_to_bf16(double x);
/// Round a double to the nearest fp32 (ties to even) in one step: fp32 subnormals, overflow
/// to +-Inf (from 2^128 - 2^103 up, the midpoint past FLT_MAX), NaN as the canonical quiet NaN.
float round_to_f32(double x);
/// Exact reference GEMM (spec §3): exact products, fp64 accumulation in k order, one rounding
/// to C's element type.
void gemm_reference(const MxMatrix& A, const MxMatrix& B, const GemmOut& C, double* out_f64, double* out_abs,
                    int threads);
/// As above into bf16 C (row stride ldc).
void gemm_reference(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, double* out_f64,
                    double* out_abs, int threads);

// --- gemm.cpp ----------------------------------------------------------------------------
/// Fixed GemmConfig the CPU backend reports from explain_gemm().
GemmConfig cpu_config();
/// C = A * B^T for MXFP4 A [M, K] and B [N, K] (any layouts) into bf16 or fp32 C.
/// fp32 tiles and OpenBLAS (or gemm_f32_blocked; K in chunks of 1024 whose fp32 sums are added
/// in fp64) when every partial sum is finite, the exact
/// fp64 path otherwise (extreme scales); rows/columns with a NaN block are NaN. On the fp32
/// path a bf16 C is exactly the fp32 C rounded to bf16 (the same fp32 sums); on the exact
/// path each is the fp64 sum rounded once to its own type.
void gemm_mx(const MxMatrix& A, const MxMatrix& B, const GemmOut& C, int threads);
/// C = quantize(A, rule) * B^T for bf16 A [M, K] (row stride lda); same core as gemm_mx.
void gemm_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, const GemmOut& C,
               ScaleRule rule, int threads);
/// As gemm_bf16 with B in packed layout v3, read in place (bit-identical to gemm_bf16 on the
/// unpacked B).
void gemm_bf16_packed(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B,
                      const GemmOut& C, ScaleRule rule, int threads);
/// C32 [M, N] = A32 [M, K] * B32 [N, K]^T in fp32 by a blocked multithreaded loop (the path
/// without OpenBLAS; sums each element in ascending k order). Rows of A32 and B32 lie `ld`
/// floats apart (ld >= K), C32 is dense. Exposed for tests.
void gemm_f32_blocked(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, int64_t ld,
                      int threads);

}  // namespace mxfp4::cpu
