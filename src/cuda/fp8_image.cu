// Builders of the FP8 operand image (src/core/fp8_layout.hpp, docs/fp8-path.md): from bf16
// activations (quantized per spec §2 with fmt::quantize_block, the CPU's own rule, so the
// image is bit-identical to fp8::build_image of the CPU-quantized matrix) and from packed
// weights (layout v2). One CTA of 256 threads per (64-row tile, 128-K slice); thread
// 4 rr + q owns block q of row rr, and the 4 threads of a row agree on the group exponent
// with two shuffles.
#include "core/fp8_layout.hpp"
#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"
#include "cuda/fp8_kernels.hpp"
#include "cuda/quantize_kernels.cuh"

namespace mxfp4::cuda {
namespace {

/// Block source: bf16 activations A [M, K] (row stride lda), quantized under `rule`.
struct Bf16Source {
  const uint16_t* A;
  int64_t M, K, lda;
  ScaleRule rule;
  /// Codes (one per byte) and scale byte of block b of row r; zeros / 1.0 outside [M, K].
  __device__ uint8_t block(int64_t r, int64_t b, uint8_t (&codes)[32]) const {
    if (r >= M || b * 32 >= K) {
#pragma unroll
      for (int i = 0; i < 32; ++i) codes[i] = 0;
      return 127;
    }
    float v[32];
    load_block<DType::bf16>(A, r * lda + b * 32, v);
    return fmt::quantize_block(v, 32, codes, rule);
  }
};

/// Block source: packed weights (layout v2, docs/packed-layout.md) B [N, K].
struct PackedSource {
  const uint8_t* data;
  int64_t N, K;
  __device__ uint8_t block(int64_t r, int64_t b, uint8_t (&codes)[32]) const {
    if (r >= N || b * 32 >= K) {
#pragma unroll
      for (int i = 0; i < 32; ++i) codes[i] = 0;
      return 127;
    }
    const PackedGeometry g = PackedGeometry::of(N, K);
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const uint8_t pair = packed::read_code_pair(data, r, b * 32 + i, g.k_padded);
      codes[i] = pair & 0xF;
      codes[i + 1] = pair >> 4;
    }
    return data[packed::scale_offset(r, b, g.rows_padded, g.k_padded)];
  }
};

template <class Source>
__global__ void __launch_bounds__(256) fp8_image_kernel(Source src, int64_t rows, int64_t K, uint8_t* __restrict__ out) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t t = blockIdx.x, j = blockIdx.y;
  const int rr = int(threadIdx.x) / 4, q = int(threadIdx.x) % 4;
  const int64_t r = t * fp8::kAtomRows + rr;
  uint8_t codes[32];
  const uint8_t sb = src.block(r, 4 * j + q, codes);
  bool nonzero = false;
#pragma unroll
  for (int i = 0; i < 32; ++i) nonzero |= (codes[i] & 7u) != 0;
  const int s = int(sb) - 127;
  int lo = nonzero && sb != kScaleNaN ? s : 1 << 20, hi = nonzero && sb != kScaleNaN ? s : -(1 << 20);
  int nan = sb == kScaleNaN;
#pragma unroll
  for (int d = 1; d < 4; d <<= 1) {  // the 4 lanes of one row are adjacent
    lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, d));
    nan |= __shfl_xor_sync(0xFFFFFFFFu, nan, d);
  }
  int R = 0;
  const bool ok = fp8::plan_group(lo, hi, hi > -(1 << 20), nan != 0, R);
  const bool flagged = r < rows && !ok;
  uint32_t words[8];
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    uint32_t word = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) word |= uint32_t(flagged ? 0 : fp8::e2m1_to_e4m3(codes[4 * w + e], s - R)) << (8 * e);
    words[w] = word;
  }
  const int64_t k0 = j * fp8::kSliceK + 32 * q;
  *reinterpret_cast<uint4*>(out + g.code_offset(r, k0)) = make_uint4(words[0], words[1], words[2], words[3]);
  *reinterpret_cast<uint4*>(out + g.code_offset(r, k0 + 16)) = make_uint4(words[4], words[5], words[6], words[7]);
  if (q == 0) {
    float* scales = reinterpret_cast<float*>(out + g.scale_offset());
    scales[g.scale_index(r, j)] = r >= rows ? 1.f : ok ? fmt::exp2i(R) : 0.f;
  }
  const int any_flag = __syncthreads_or(int(flagged));
  if (threadIdx.x == 0) out[g.flag_offset() + g.flag_index(t, j)] = uint8_t(any_flag != 0);
  // The alignment padding after the flags (< 16 bytes) is zeroed, so every byte is written.
  const int64_t flags_end = g.flag_offset() + g.slices * (g.rows_padded / fp8::kAtomRows);
  if (t == 0 && j == 0 && threadIdx.x < g.total_bytes() - flags_end) out[flags_end + threadIdx.x] = 0;
}

template <class Source>
void launch_image(const Source& src, int64_t rows, int64_t K, uint8_t* out, cudaStream_t stream, const char* name) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const dim3 grid(unsigned(g.rows_padded / fp8::kAtomRows), unsigned(g.slices));
  fp8_image_kernel<Source><<<grid, 256, 0, stream>>>(src, rows, K, out);
  check_launch(name);
}

}  // namespace

void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream) {
  launch_image(Bf16Source{A, M, K, lda, rule}, M, K, out, stream, "fp8_image_kernel<bf16>");
}

void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream) {
  launch_image(PackedSource{B.data, B.N, B.K}, B.N, B.K, out, stream, "fp8_image_kernel<packed>");
}

void prepack_fp8(const PackedWeights& p, uint8_t* out, void* stream) { fp8_image_from_packed(p, out, as_stream(stream)); }

}  // namespace mxfp4::cuda
