// The public API (include/mxfp4/mxfp4.hpp): validates every argument at the boundary, then
// dispatches to the CPU backend (src/cpu/) or the CUDA backend (src/cuda/cuda_backend.hpp).
// choose_gemm_config lives in src/dispatch/dispatch.cpp (path fp8's rules in fp8_rules.cpp),
// describe and gemm_workspace_bytes in src/dispatch/config.cpp.
#include <vector>

#include "core/fp8_layout.hpp"
#include "core/packed_layout.hpp"
#include "core/validate.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "cuda/cuda_backend.hpp"
#include "dispatch/path_name.hpp"
#include "mxfp4/mxfp4.hpp"

#ifndef MXFP4_VERSION
#define MXFP4_VERSION "0.0.0"
#endif

namespace mxfp4 {

using detail::cat;
using detail::Span;

namespace {

bool on_cuda(const Exec& exec) { return exec.backend == Backend::cuda; }
int cpu_threads(const Exec& exec) { return cpu::resolve_threads(exec.threads); }

// Alignment the library needs (docs/hardening.md): dense elements at their own size on every
// backend (the CPU reads them as typed values); on CUDA, packed weights and the GEMM
// workspace at 16 bytes (the kernels read them with 16-byte vector loads; cudaMalloc and
// torch allocations always are).
constexpr int64_t kCudaVectorAlign = 16;

const char* dtype_label(DType d) { return d == DType::fp32 ? "fp32 elements" : d == DType::bf16 ? "bf16 elements" : "fp16 elements"; }

void require_elem_aligned(const char* fn, const char* name, const void* p, DType d, int64_t eb) {
  detail::require_aligned(fn, name, p, eb, dtype_label(d));
}

void require_cuda_packed_aligned(const char* fn, const char* name, const void* p, const Exec& exec) {
  if (exec.backend == Backend::cuda)
    detail::require_aligned(fn, name, p, kCudaVectorAlign, "packed weights on CUDA are read with 16-byte loads");
}

Span code_span(const MxMatrix& m, const char* name) { return {m.codes, detail::mx_code_bytes(m), name}; }
Span scale_span(const MxMatrix& m, const char* name) { return {m.scales, detail::mx_scale_bytes(m), name}; }

void require_config(const char* fn, const GemmConfig& c) {
  if (!is_gemm_path(c.path))
    detail::throw_invalid(fn, cat("GemmConfig::path value ", int(c.path), " is not fused, splitk, tiled, fp8 or gemv"));
  if (c.block_n < 16 || c.block_n % 16 != 0)
    detail::throw_invalid(fn, cat("GemmConfig::block_n = ", c.block_n, " must be a positive multiple of 16"));
  if (c.block_m < 8 || c.block_m % 8 != 0)
    detail::throw_invalid(fn, cat("GemmConfig::block_m = ", c.block_m, " must be a positive multiple of 8"));
  if (c.split_k < 1 || c.split_k > 8)
    detail::throw_invalid(fn, cat("GemmConfig::split_k = ", c.split_k, " must be in 1..8"));
  if (c.warps < 1) detail::throw_invalid(fn, cat("GemmConfig::warps = ", c.warps, " must be >= 1"));
}

// GemmOptions: a forced configuration must be valid on every backend (the CPU ignores it, but
// a bad one is a caller bug either way); workspace_bytes must be a real size.
void require_options(const char* fn, const GemmOptions& opt) {
  if (opt.config != nullptr) require_config(fn, *opt.config);
  if (opt.workspace_bytes > size_t(detail::kMaxSize))
    detail::throw_invalid(fn, cat("GemmOptions::workspace_bytes = ", opt.workspace_bytes, " is too large"));
}

// A forced configuration must be one a kernel runs for this M and K (gemm_config_problem_for_shape), and path
// fp8 needs the weights' FP8 image; checked on every backend, although the CPU ignores the
// configuration, so that a call valid on one backend is valid on the other.
void require_forced_config(const char* fn, const GemmOptions& opt, int64_t M, int64_t K, bool has_fp8_image) {
  if (opt.config == nullptr) return;
  if (const std::string problem = gemm_config_problem_for_shape(*opt.config, M, K); !problem.empty())
    detail::throw_invalid(fn, cat("unsupported GemmConfig ", describe(*opt.config), " for M = ", M, ": ", problem));
  if (opt.config->path == GemmPath::fp8 && !has_fp8_image)
    detail::throw_invalid(fn, "GemmConfig path fp8 needs the weights' FP8 image: set B.fp8 with prepack_fp8()");
}

// Bytes of one element of a GEMM output: fp32 or bf16.
int64_t c_elem_bytes(bool c_f32) { return c_f32 ? 4 : 2; }

// Common checks of the bf16 activation and the output (bf16 or fp32) of the gemm() overloads.
void require_gemm_a_c(const char* fn, const uint16_t* A, int64_t M, int64_t K, int64_t lda, int64_t N,
                      const void* C, bool c_f32, int64_t ldc) {
  detail::require_nonnull(fn, "A", A);
  detail::require_nonnull(fn, "C", C);
  detail::require_aligned(fn, "A", A, 2, "bf16 elements");
  detail::require_aligned(fn, "C", C, c_elem_bytes(c_f32), c_f32 ? "fp32 elements" : "bf16 elements");
  detail::require_positive(fn, "M", M);
  detail::require_k(fn, "K", K);
  detail::require_stride(fn, "lda", lda, K);
  detail::require_stride(fn, "ldc", ldc, N);
  detail::strided_bytes(fn, M, K, lda, 2);
  detail::strided_bytes(fn, M, N, ldc, c_elem_bytes(c_f32));
}

}  // namespace

// --- Quantization ------------------------------------------------------------------------

void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule, const Exec& exec, ScaleLayout scale_layout) {
  constexpr const char* fn = "quantize";
  detail::require_exec(fn, exec);
  const int64_t eb = detail::dtype_bytes(fn, dtype);
  detail::require_rule(fn, rule);
  detail::require_scale_layout(fn, scale_layout);
  detail::require_positive(fn, "rows", rows);
  detail::require_k(fn, "K", K);
  detail::require_stride(fn, "x_stride", x_stride, K);
  detail::require_nonnull(fn, "x", x);
  detail::require_nonnull(fn, "codes", codes);
  detail::require_nonnull(fn, "scales", scales);
  require_elem_aligned(fn, "x", x, dtype, eb);
  const int64_t scale_bytes = scale_layout == ScaleLayout::plain ? detail::mul_checked(fn, rows, K / kBlockSize)
                                                                 : shuffled_scales_bytes(rows, K / kBlockSize);
  detail::require_disjoint(fn, {{x, detail::strided_bytes(fn, rows, K, x_stride, eb), "x"}},
                           {{codes, detail::mul_checked(fn, rows, K / 2), "codes"}, {scales, scale_bytes, "scales"}});
  if (on_cuda(exec))
    cuda::quantize(x, dtype, rows, K, x_stride, codes, scales, rule, scale_layout, exec.stream);
  else
    cpu::quantize(x, dtype, rows, K, x_stride, codes, scales, rule, scale_layout, cpu_threads(exec));
}

void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, const Exec& exec) {
  constexpr const char* fn = "dequantize";
  detail::require_exec(fn, exec);
  detail::require_mx(fn, "q", q);
  const int64_t eb = detail::dtype_bytes(fn, out_dtype);
  if (out_dtype == DType::fp16)
    detail::throw_type(fn, "out_dtype fp16 is not supported (use fp32 or bf16)");
  detail::require_nonnull(fn, "out", out);
  require_elem_aligned(fn, "out", out, out_dtype, eb);
  detail::require_stride(fn, "out_stride", out_stride, q.K);
  detail::require_disjoint(fn, {code_span(q, "q.codes"), scale_span(q, "q.scales")},
                           {{out, detail::strided_bytes(fn, q.rows, q.K, out_stride, eb), "out"}});
  if (on_cuda(exec))
    cuda::dequantize(q, out, out_dtype, out_stride, exec.stream);
  else
    cpu::dequantize(q, out, out_dtype, out_stride, cpu_threads(exec));
}

// --- AITER layouts -----------------------------------------------------------------------

int64_t shuffled_scales_bytes(int64_t rows, int64_t kblocks) {
  constexpr const char* fn = "shuffled_scales_bytes";
  detail::require_positive(fn, "rows", rows);
  detail::require_positive(fn, "kblocks", kblocks);
  detail::require_size(fn, "rows", rows);
  detail::require_size(fn, "kblocks", kblocks);
  return detail::mul_checked(fn, (rows + 255) / 256 * 256, (kblocks + 7) / 8 * 8);
}

namespace {
void check_scales_args(const char* fn, const uint8_t* src, const char* src_name, int64_t src_bytes,
                       const uint8_t* dst, const char* dst_name, int64_t dst_bytes, const Exec& exec) {
  detail::require_exec(fn, exec);
  detail::require_nonnull(fn, src_name, src);
  detail::require_nonnull(fn, dst_name, dst);
  detail::require_disjoint(fn, {{src, src_bytes, src_name}}, {{dst, dst_bytes, dst_name}});
}
}  // namespace

void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, const Exec& exec) {
  constexpr const char* fn = "shuffle_scales";
  const int64_t sb = shuffled_scales_bytes(rows, kblocks);  // validates rows, kblocks
  check_scales_args(fn, plain, "plain", rows * kblocks, shuffled, "shuffled", sb, exec);
  if (on_cuda(exec))
    cuda::shuffle_scales(plain, rows, kblocks, shuffled, exec.stream);
  else
    cpu::shuffle_scales(plain, rows, kblocks, shuffled, cpu_threads(exec));
}

void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, const Exec& exec) {
  constexpr const char* fn = "unshuffle_scales";
  const int64_t sb = shuffled_scales_bytes(rows, kblocks);
  check_scales_args(fn, shuffled, "shuffled", sb, plain, "plain", rows * kblocks, exec);
  if (on_cuda(exec))
    cuda::unshuffle_scales(shuffled, rows, kblocks, plain, exec.stream);
  else
    cpu::unshuffle_scales(shuffled, rows, kblocks, plain, cpu_threads(exec));
}

namespace {
void check_weight_args(const char* fn, const uint8_t* src, const char* src_name, int64_t N, int64_t K,
                       const uint8_t* dst, const char* dst_name, const Exec& exec) {
  detail::require_exec(fn, exec);
  detail::require_positive(fn, "N", N);
  detail::require_k(fn, "K", K);
  if (N % 16 != 0 || K % 64 != 0)
    detail::throw_invalid(fn, cat("the AITER shuffled weight layout needs N % 16 == 0 and K % 64 == 0, got N = ", N,
                                  ", K = ", K));
  detail::require_nonnull(fn, src_name, src);
  detail::require_nonnull(fn, dst_name, dst);
  const int64_t bytes = detail::mul_checked(fn, N, K / 2);
  detail::require_disjoint(fn, {{src, bytes, src_name}}, {{dst, bytes, dst_name}});
}
}  // namespace

void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, const Exec& exec) {
  check_weight_args("shuffle_weight", plain, "plain", N, K, shuffled, "shuffled", exec);
  if (on_cuda(exec))
    cuda::shuffle_weight(plain, N, K, shuffled, exec.stream);
  else
    cpu::shuffle_weight(plain, N, K, shuffled, cpu_threads(exec));
}

void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, const Exec& exec) {
  check_weight_args("unshuffle_weight", shuffled, "shuffled", N, K, plain, "plain", exec);
  if (on_cuda(exec))
    cuda::unshuffle_weight(shuffled, N, K, plain, exec.stream);
  else
    cpu::unshuffle_weight(shuffled, N, K, plain, cpu_threads(exec));
}

// --- Packed weights ----------------------------------------------------------------------

int64_t packed_bytes(int64_t N, int64_t K) {
  constexpr const char* fn = "packed_bytes";
  detail::require_positive(fn, "N", N);
  detail::require_k(fn, "K", K);
  detail::mul_checked(fn, N, K);  // bounds N and K, so that padding them cannot overflow
  detail::mul_checked(fn, packed::padded_rows(N), packed::padded_k(K));
  return packed::total_bytes(N, K);
}

PackedWeights prepack(const MxMatrix& b, uint8_t* out, const Exec& exec) {
  constexpr const char* fn = "prepack";
  detail::require_exec(fn, exec);
  detail::require_mx(fn, "b", b);
  detail::require_nonnull(fn, "out", out);
  require_cuda_packed_aligned(fn, "out", out, exec);
  detail::require_disjoint(fn, {code_span(b, "b.codes"), scale_span(b, "b.scales")},
                           {{out, packed_bytes(b.rows, b.K), "out"}});
  if (on_cuda(exec))
    cuda::prepack(b, out, exec.stream);
  else
    cpu::prepack(b, out, cpu_threads(exec));
  return PackedWeights{out, b.rows, b.K, kPackedLayoutVersion};
}

PackedWeights prepack_dense(const void* b, DType dtype, int64_t N, int64_t K, int64_t b_stride, uint8_t* out,
                            uint8_t* tmp, ScaleRule rule, const Exec& exec) {
  constexpr const char* fn = "prepack_dense";
  detail::require_exec(fn, exec);
  const int64_t eb = detail::dtype_bytes(fn, dtype);
  detail::require_rule(fn, rule);
  detail::require_positive(fn, "N", N);
  detail::require_k(fn, "K", K);
  detail::require_stride(fn, "b_stride", b_stride, K);
  detail::require_nonnull(fn, "b", b);
  detail::require_nonnull(fn, "out", out);
  detail::require_nonnull(fn, "tmp", tmp);
  require_elem_aligned(fn, "b", b, dtype, eb);
  require_cuda_packed_aligned(fn, "out", out, exec);
  const int64_t code_bytes = detail::mul_checked(fn, N, K / 2);
  const int64_t tmp_bytes = code_bytes + N * (K / kBlockSize);
  detail::require_disjoint(fn, {{b, detail::strided_bytes(fn, N, K, b_stride, eb), "b"}},
                           {{out, packed_bytes(N, K), "out"}, {tmp, tmp_bytes, "tmp"}});
  MxMatrix q;
  q.codes = tmp;
  q.scales = tmp + code_bytes;
  q.rows = N;
  q.K = K;
  if (on_cuda(exec)) {
    cuda::quantize(b, dtype, N, K, b_stride, tmp, tmp + code_bytes, rule, ScaleLayout::plain, exec.stream);
    cuda::prepack(q, out, exec.stream);
  } else {
    const int threads = cpu_threads(exec);
    cpu::quantize(b, dtype, N, K, b_stride, tmp, tmp + code_bytes, rule, ScaleLayout::plain, threads);
    cpu::prepack(q, out, threads);
  }
  return PackedWeights{out, N, K, kPackedLayoutVersion};
}

int64_t fp8_weights_bytes(int64_t N, int64_t K) {
  constexpr const char* fn = "fp8_weights_bytes";
  detail::require_positive(fn, "N", N);
  detail::require_k(fn, "K", K);
  detail::mul_checked(fn, N, K);  // bounds N and K, so that padding them cannot overflow
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(N, K);
  // Per (row, slice) the image holds kSliceK code bytes, a float scale, an exponent word and at
  // most one byte of wide records and one of flags (16 bytes per 64 rows, 1 per 16); one more
  // byte covers the rounding up to 16 bytes: total_bytes() cannot overflow.
  detail::mul_checked(fn, detail::mul_checked(fn, g.rows_padded, g.slices), fp8::kSliceK + 4 + 4 + 1 + 1 + 1);
  return g.total_bytes();
}

PackedWeights prepack_fp8(const PackedWeights& p, uint8_t* out, const Exec& exec) {
  constexpr const char* fn = "prepack_fp8";
  detail::require_exec(fn, exec);
  detail::require_packed(fn, "p", p);
  require_cuda_packed_aligned(fn, "p.data", p.data, exec);
  detail::require_nonnull(fn, "out", out);
  require_cuda_packed_aligned(fn, "out", out, exec);
  detail::require_disjoint(fn, {{p.data, packed_bytes(p.N, p.K), "p.data"}},
                           {{out, fp8_weights_bytes(p.N, p.K), "out"}});
  if (on_cuda(exec))
    cuda::prepack_fp8(p, out, exec.stream);
  else
    cpu::prepack_fp8(p, out, cpu_threads(exec));
  PackedWeights r = p;
  r.fp8 = out;
  return r;
}

void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, const Exec& exec) {
  constexpr const char* fn = "unpack";
  detail::require_exec(fn, exec);
  detail::require_packed(fn, "p", p);
  require_cuda_packed_aligned(fn, "p.data", p.data, exec);
  detail::require_nonnull(fn, "codes", codes);
  detail::require_nonnull(fn, "scales", scales);
  detail::require_disjoint(fn, {{p.data, packed_bytes(p.N, p.K), "p.data"}},
                           {{codes, p.N * (p.K / 2), "codes"}, {scales, p.N * (p.K / kBlockSize), "scales"}});
  if (on_cuda(exec))
    cuda::unpack(p, codes, scales, exec.stream);
  else
    cpu::unpack(p, codes, scales, cpu_threads(exec));
}

// --- GEMM --------------------------------------------------------------------------------

GemmConfig explain_gemm(int64_t M, int64_t N, int64_t K, const Exec& exec, bool fp8_image) {
  constexpr const char* fn = "explain_gemm";
  detail::require_exec(fn, exec);
  detail::require_positive(fn, "M", M);
  detail::require_positive(fn, "N", N);
  detail::require_k(fn, "K", K);
  // The operands of a shape gemm() accepts fit in 2^62 bytes: reject the others here too
  // (A and C are bf16; B's packed size is below N * K).
  detail::mul_checked(fn, detail::mul_checked(fn, M, K), 2);
  detail::mul_checked(fn, N, K);
  detail::mul_checked(fn, detail::mul_checked(fn, M, N), 2);
  if (on_cuda(exec)) {
    if (cuda::device_count() == 0)
      throw Error(built_with_cuda() ? "mxfp4::explain_gemm: Backend::cuda but no CUDA device is available"
                                    : "mxfp4::explain_gemm: Backend::cuda but the library was built without the CUDA backend");
    return cuda::config_for(M, N, K, fp8_image);
  }
  return cpu::cpu_config();
}

namespace {
// gemm() with B as an MxMatrix, C bf16 bits (c_f32 false) or fp32.
void gemm_mx_b(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, void* C, bool c_f32,
               int64_t ldc, const GemmOptions& opt, const Exec& exec) {
  constexpr const char* fn = "gemm";
  detail::require_exec(fn, exec);
  detail::require_rule(fn, opt.rule);
  require_options(fn, opt);
  detail::require_mx(fn, "B", B);
  require_gemm_a_c(fn, A, M, K, lda, B.rows, C, c_f32, ldc);
  if (B.K != K) detail::throw_invalid(fn, cat("B.K = ", B.K, " does not match K = ", K));
  require_forced_config(fn, opt, M, K, /*has_fp8_image=*/false);
  detail::require_disjoint(fn,
                           {{A, detail::strided_bytes(fn, M, K, lda, 2), "A"}, code_span(B, "B.codes"),
                            scale_span(B, "B.scales")},
                           {{C, detail::strided_bytes(fn, M, B.rows, ldc, c_elem_bytes(c_f32)), "C"}});
  if (on_cuda(exec))
    detail::throw_invalid(fn, "an MxMatrix B is accepted on Backend::cpu only; on Backend::cuda call prepack() once "
                              "and pass the PackedWeights");
  cpu::gemm_bf16(A, M, K, lda, B, cpu::GemmOut{C, c_f32, ldc}, opt.rule, cpu_threads(exec));
}

// gemm() with B prepacked, C bf16 bits (c_f32 false) or fp32.
void gemm_packed_b(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C,
                   bool c_f32, int64_t ldc, const GemmOptions& opt, const Exec& exec) {
  constexpr const char* fn = "gemm";
  detail::require_exec(fn, exec);
  detail::require_rule(fn, opt.rule);
  require_options(fn, opt);
  detail::require_packed(fn, "B", B);
  require_cuda_packed_aligned(fn, "B.data", B.data, exec);
  if (on_cuda(exec) && opt.workspace != nullptr)
    detail::require_aligned(fn, "GemmOptions::workspace", opt.workspace, kCudaVectorAlign,
                            "the CUDA GEMM reads it with 16-byte loads");
  if (B.fp8 != nullptr) require_cuda_packed_aligned(fn, "B.fp8", B.fp8, exec);
  require_gemm_a_c(fn, A, M, K, lda, B.N, C, c_f32, ldc);
  if (B.K != K) detail::throw_invalid(fn, cat("B.K = ", B.K, " does not match K = ", K));
  require_forced_config(fn, opt, M, K, B.fp8 != nullptr);
  const Span c_span{C, detail::strided_bytes(fn, M, B.N, ldc, c_elem_bytes(c_f32)), "C"};
  const Span a_span{A, detail::strided_bytes(fn, M, K, lda, 2), "A"};
  const Span b_span{B.data, packed_bytes(B.N, B.K), "B.data"};
  // B.fp8 is read-only like B.data; without it a span of length 0 keeps the lists uniform.
  const Span b8_span{B.fp8, B.fp8 != nullptr ? fp8_weights_bytes(B.N, B.K) : 0, "B.fp8"};
  if (opt.workspace != nullptr)
    detail::require_disjoint(fn, {a_span, b_span, b8_span},
                             {c_span, {opt.workspace, int64_t(opt.workspace_bytes), "workspace"}});
  else
    detail::require_disjoint(fn, {a_span, b_span, b8_span}, {c_span});
  if (on_cuda(exec)) {
    const GemmConfig cfg = opt.config != nullptr ? *opt.config : cuda::config_for(M, B.N, K);
    require_config(fn, cfg);
    cuda::gemm(A, M, K, lda, B, C, c_f32, ldc, cfg, opt.rule, opt.workspace, opt.workspace_bytes, exec.stream,
               opt.weights_static);
    return;
  }
  cpu::gemm_bf16_packed(A, M, K, lda, B, cpu::GemmOut{C, c_f32, ldc}, opt.rule, cpu_threads(exec));
}
}  // namespace

void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, uint16_t* C, int64_t ldc,
          const GemmOptions& opt, const Exec& exec) {
  gemm_mx_b(A, M, K, lda, B, C, false, ldc, opt, exec);
}

void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, float* C, int64_t ldc,
          const GemmOptions& opt, const Exec& exec) {
  gemm_mx_b(A, M, K, lda, B, C, true, ldc, opt, exec);
}

void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, uint16_t* C, int64_t ldc,
          const GemmOptions& opt, const Exec& exec) {
  gemm_packed_b(A, M, K, lda, B, C, false, ldc, opt, exec);
}

void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, float* C, int64_t ldc,
          const GemmOptions& opt, const Exec& exec) {
  gemm_packed_b(A, M, K, lda, B, C, true, ldc, opt, exec);
}

void gemm_quantized(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, const Exec& exec) {
  constexpr const char* fn = "gemm_quantized";
  detail::require_exec(fn, exec);
  detail::require_mx(fn, "A", A);
  detail::require_mx(fn, "B", B);
  if (A.K != B.K) detail::throw_invalid(fn, cat("A.K = ", A.K, " does not match B.K = ", B.K));
  detail::require_nonnull(fn, "C", C);
  detail::require_aligned(fn, "C", C, 2, "bf16 elements");
  detail::require_stride(fn, "ldc", ldc, B.rows);
  detail::require_disjoint(
      fn, {code_span(A, "A.codes"), scale_span(A, "A.scales"), code_span(B, "B.codes"), scale_span(B, "B.scales")},
      {{C, detail::strided_bytes(fn, A.rows, B.rows, ldc, 2), "C"}});
  if (on_cuda(exec)) detail::throw_invalid(fn, "runs on Backend::cpu only (on CUDA use gemm() with a bf16 A)");
  cpu::gemm_mx(A, B, cpu::GemmOut{C, false, ldc}, cpu_threads(exec));
}

void gemm_reference(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, double* out_f64,
                    double* out_abs) {
  constexpr const char* fn = "gemm_reference";
  detail::require_mx(fn, "A", A);
  detail::require_mx(fn, "B", B);
  if (A.K != B.K) detail::throw_invalid(fn, cat("A.K = ", A.K, " does not match B.K = ", B.K));
  detail::require_nonnull(fn, "C", C);
  detail::require_aligned(fn, "C", C, 2, "bf16 elements");
  detail::require_stride(fn, "ldc", ldc, B.rows);
  const int64_t mn = detail::mul_checked(fn, A.rows, B.rows);
  if (out_f64 != nullptr) detail::require_aligned(fn, "out_f64", out_f64, 8, "fp64 elements");
  if (out_abs != nullptr) detail::require_aligned(fn, "out_abs", out_abs, 8, "fp64 elements");
  detail::require_disjoint(
      fn, {code_span(A, "A.codes"), scale_span(A, "A.scales"), code_span(B, "B.codes"), scale_span(B, "B.scales")},
      {{C, detail::strided_bytes(fn, A.rows, B.rows, ldc, 2), "C"},
       {out_f64, out_f64 ? detail::mul_checked(fn, mn, 8) : 0, "out_f64"},
       {out_abs, out_abs ? detail::mul_checked(fn, mn, 8) : 0, "out_abs"}});
  cpu::gemm_reference(A, B, C, ldc, out_f64, out_abs, cpu::resolve_threads(0));
}

// --- Build and device information --------------------------------------------------------

const char* version() { return MXFP4_VERSION; }

bool built_with_cuda() {
#if defined(MXFP4_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
  try {
    return cuda::device_count();
  } catch (...) {
    return 0;
  }
}

DeviceInfo cuda_device_info(int index) {
  if (!built_with_cuda())
    throw Error("mxfp4::cuda_device_info: mxfp4 was built without the CUDA backend");
  const int count = cuda_device_count();
  if (index < 0 || index >= count)
    detail::throw_invalid("cuda_device_info", cat("device index ", index, " is out of range [0, ", count, ")"));
  return cuda::device_info(index);
}

}  // namespace mxfp4
