// Device-side building blocks shared by the CUDA kernels: error checks, e2m1 -> bf16 fragment
// decoding, the mma.sync wrapper and the packed-layout addressing of docs/packed-layout.md.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "mxfp4/format.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Throws CudaError naming `what` when `err` is not cudaSuccess.
inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw CudaError(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")");
  }
}

/// Checks the launch that was just queued (configuration errors surface here).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/// Geometry of packed layout v1 (docs/packed-layout.md) for a [rows, K] matrix.
struct PackedGeometry {
  int64_t rows_padded;  ///< round_up(rows, 16)
  int64_t k_padded;     ///< round_up(K, 64)
  int64_t k_chunks;     ///< k_padded / 64: tiles per 16-row slab
  int64_t code_bytes;   ///< rows_padded * k_padded / 2: start of the scale region
  __host__ __device__ static PackedGeometry of(int64_t rows, int64_t K) {
    PackedGeometry g;
    g.rows_padded = (rows + 15) / 16 * 16;
    g.k_padded = (K + 63) / 64 * 64;
    g.k_chunks = g.k_padded / 64;
    g.code_bytes = g.rows_padded * g.k_padded / 2;
    return g;
  }
};

/// Offset of the code byte holding (row r, columns k, k+1), k even, in packed layout v1.
__host__ __device__ inline int64_t packed_code_offset(const PackedGeometry& g, int64_t r, int64_t k) {
  const int64_t nt = r / 16, kc = k / 64;
  const int rr = int(r % 16), kk = int(k % 64);
  const int h = kk / 32, s = (kk / 16) % 2, k16 = kk % 16;
  const int hi_k = k16 >= 8 ? 1 : 0;          // columns 2t+8.. -> q = 2, 3
  const int t = (k16 - 8 * hi_k) / 2;
  const int grp = rr % 8, hi_r = rr >= 8 ? 1 : 0;
  const int q = 2 * hi_k + hi_r;
  const int lane = 4 * grp + t;
  return (nt * g.k_chunks + kc) * 512 + lane * 16 + 8 * h + 4 * s + q;
}

/// Offset of the scale byte of (row r, K block kb) in packed layout v1.
__host__ __device__ inline int64_t packed_scale_offset(const PackedGeometry& g, int64_t r, int64_t kb) {
  const int64_t nt = r / 16, kc = kb / 2;
  const int rr = int(r % 16);
  const int i = (rr >= 8 ? 2 : 0) + int(kb % 2);
  return g.code_bytes + (nt * g.k_chunks + kc) * 32 + 4 * (rr % 8) + i;
}

#if defined(__CUDACC__)

/// Four packed code bytes (8 e2m1 codes) -> four bf16x2 registers holding the codes' values
/// times 2^-126: each 3-bit magnitude goes to the low bf16 exponent bits and the top mantissa
/// bit, which makes e2m1's subnormal (0.5) the bf16 subnormal 2^-127 and every other code
/// the bf16 normal 2^(e-127) * (1 + m/2). Byte q of `x` -> register q; its low nibble -> low
/// half (the first element).
__device__ __forceinline__ void e2m1x8_to_bf16x8_scaled_down(uint32_t x, uint32_t (&r)[4]) {
  const uint32_t mag_mask = 0x01C001C0u, sign_mask = 0x80008000u;
  // Spread byte q's two nibbles to bits [0..3] and [16..19] of a temporary, then place.
  // prmt picks byte q into lane 0 and byte q again into lane 2; the high nibble is then
  // shifted down by 4 into bits 16..19.
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t b = __byte_perm(x, 0, 0x4040u | uint32_t(q) | (uint32_t(q) << 8));  // [q,0,q,0]
    const uint32_t lo_hi = (b & 0x0000000Fu) | ((b >> 4) & 0x000F0000u);                  // nibbles
    r[q] = ((lo_hi << 6) & mag_mask) | ((lo_hi << 12) & sign_mask);
  }
}

/// bf16x2 multiply (round to nearest even; subnormals kept: PTX mul.rn.bf16x2 has no ftz).
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/// bf16x2 with both halves equal to 2^e (e in [-133, 127]; 2^-127.. subnormal), or NaN for
/// E8M0 byte 0xFF when called through scale_bf16x2.
__device__ __forceinline__ uint32_t pow2_bf16x2(int e) {
  const uint32_t h = e >= -126 ? uint32_t(e + 127) << 7 : (1u << (e + 133));
  return h | (h << 16);
}

/// bf16x2 {2^(b-127), 2^(b-127)} for an E8M0 byte b (0xFF -> NaN).
__device__ __forceinline__ uint32_t scale_bf16x2(uint32_t b) {
  return b == 0xFFu ? 0x7FC07FC0u : pow2_bf16x2(int(b) - 127);
}

/// D += A * B for one m16n8k16 bf16 MMA with fp32 accumulators (PTX ISA "mma.sync").
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Decodes the 16 packed code bytes of one lane (one 16x64 tile, docs/packed-layout.md) for
/// K16 step `step` (0..3) into the m16n8k16 A fragment, scaled by the block scales of the
/// lane's two rows. `sc` holds the lane's 4 scale bytes (row g blk0, row g blk1, row g+8 blk0,
/// row g+8 blk1). Exact: e2m1 * 2^s is representable in bf16 unless |value| >= 2^128.
__device__ __forceinline__ void decode_weight_fragment(uint32_t codes4, uint32_t sc, int step, uint32_t (&a)[4]) {
  e2m1x8_to_bf16x8_scaled_down(codes4, a);
  const int blk = step >> 1;  // K16 steps 0,1 -> block 0; 2,3 -> block 1
  const uint32_t s_lo = (sc >> (8 * blk)) & 0xFFu;        // row g
  const uint32_t s_hi = (sc >> (8 * (2 + blk))) & 0xFFu;  // row g + 8
  const uint32_t up = pow2_bf16x2(126);
  const uint32_t f_lo = scale_bf16x2(s_lo), f_hi = scale_bf16x2(s_hi);
  a[0] = bf16x2_mul(bf16x2_mul(a[0], up), f_lo);
  a[1] = bf16x2_mul(bf16x2_mul(a[1], up), f_hi);
  a[2] = bf16x2_mul(bf16x2_mul(a[2], up), f_lo);
  a[3] = bf16x2_mul(bf16x2_mul(a[3], up), f_hi);
}

/// Quantizes 32 consecutive values of one row (spec §2, via the shared fmt::quantize_block)
/// and returns their dequantized bf16 bit patterns e2m1 * 2^s in `out` (exact unless
/// |value| >= 2^128, which becomes Inf; NaN blocks give NaN).
__device__ __forceinline__ void quantize_block_to_bf16(const float (&x)[32], ScaleRule rule, uint16_t (&out)[32]) {
  uint8_t codes[32];
  const uint8_t sb = fmt::quantize_block(x, 32, codes, rule);
#pragma unroll
  for (int i = 0; i < 32; ++i) out[i] = fmt::f32_to_bf16(fmt::dequant_f32(codes[i], sb));
}

#endif  // __CUDACC__

}  // namespace mxfp4::cuda
