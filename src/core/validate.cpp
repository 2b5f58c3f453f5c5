// Argument validation helpers (see validate.hpp).
#include "core/validate.hpp"

#include <cstdint>

namespace mxfp4::detail {

void throw_invalid(const char* fn, const std::string& what) { throw InvalidArgument(cat("mxfp4::", fn, ": ", what)); }
void throw_type(const char* fn, const std::string& what) { throw TypeMismatch(cat("mxfp4::", fn, ": ", what)); }

int64_t mul_checked(const char* fn, int64_t a, int64_t b) {
  if (a < 0 || b < 0) throw_invalid(fn, cat("negative size in product ", a, " * ", b));
  if (a != 0 && b > kMaxSize / a) throw_invalid(fn, cat("size ", a, " * ", b, " is too large"));
  return a * b;
}

int64_t add_checked(const char* fn, int64_t a, int64_t b) {
  if (a < 0 || b < 0) throw_invalid(fn, cat("negative size in sum ", a, " + ", b));
  if (a > kMaxSize || b > kMaxSize - a) throw_invalid(fn, cat("size ", a, " + ", b, " is too large"));
  return a + b;
}

void require_size(const char* fn, const char* name, int64_t v) {
  if (v > kMaxSize) throw_invalid(fn, cat(name, " = ", v, " is too large (limit 2^62)"));
}

void require_positive(const char* fn, const char* name, int64_t v) {
  if (v < 1) throw_invalid(fn, cat(name, " = ", v, " must be >= 1"));
}

void require_k(const char* fn, const char* name, int64_t K) {
  if (K < kBlockSize) throw_invalid(fn, cat(name, " = ", K, " must be >= 32 (one MXFP4 block)"));
  if (K % kBlockSize != 0) throw_invalid(fn, cat(name, " = ", K, " is not a multiple of 32 (the MXFP4 block size)"));
}

void require_stride(const char* fn, const char* name, int64_t stride, int64_t row_len) {
  if (stride < row_len) throw_invalid(fn, cat(name, " = ", stride, " is smaller than the row length ", row_len));
}

void require_nonnull(const char* fn, const char* name, const void* p) {
  if (p == nullptr) throw_invalid(fn, cat(name, " is a null pointer"));
}

void require_aligned(const char* fn, const char* name, const void* p, int64_t alignment, const char* why) {
  if (reinterpret_cast<uintptr_t>(p) % uintptr_t(alignment) != 0)
    throw_invalid(fn, cat(name, " = ", p, " is not aligned to ", alignment, " bytes (", why, ")"));
}

namespace {
bool overlaps(const Span& a, const Span& b) {
  if (a.bytes <= 0 || b.bytes <= 0) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a.p);
  const auto b0 = reinterpret_cast<uintptr_t>(b.p);
  return a0 < b0 + uintptr_t(b.bytes) && b0 < a0 + uintptr_t(a.bytes);
}
std::string describe_span(const Span& s) {
  return cat(s.name, " [", s.p, ", +", s.bytes, " bytes)");
}
}  // namespace

void require_disjoint(const char* fn, std::initializer_list<Span> inputs, std::initializer_list<Span> outputs) {
  for (const Span* o = outputs.begin(); o != outputs.end(); ++o) {
    for (const Span& i : inputs)
      if (overlaps(*o, i)) throw_invalid(fn, cat("output ", describe_span(*o), " overlaps input ", describe_span(i)));
    for (const Span* o2 = o + 1; o2 != outputs.end(); ++o2)
      if (overlaps(*o, *o2))
        throw_invalid(fn, cat("output ", describe_span(*o), " overlaps output ", describe_span(*o2)));
  }
}

int64_t dtype_bytes(const char* fn, DType dtype) {
  switch (dtype) {
    case DType::bf16:
    case DType::fp16:
      return 2;
    case DType::fp32:
      return 4;
  }
  throw_type(fn, cat("unsupported dtype value ", int(dtype), " (expected bf16, fp16 or fp32)"));
}

void require_rule(const char* fn, ScaleRule rule) {
  if (rule != ScaleRule::aiter && rule != ScaleRule::floor && rule != ScaleRule::rceil)
    throw_type(fn, cat("unsupported scale rule value ", int(rule), " (expected aiter, floor or rceil)"));
}

void require_code_layout(const char* fn, CodeLayout layout) {
  if (layout != CodeLayout::plain && layout != CodeLayout::aiter_shuffled)
    throw_type(fn, cat("unsupported code layout value ", int(layout), " (expected plain or aiter_shuffled)"));
}

void require_scale_layout(const char* fn, ScaleLayout layout) {
  if (layout != ScaleLayout::plain && layout != ScaleLayout::aiter_shuffled)
    throw_type(fn, cat("unsupported scale layout value ", int(layout), " (expected plain or aiter_shuffled)"));
}

void require_exec(const char* fn, const Exec& exec) {
  if (exec.backend != Backend::cpu && exec.backend != Backend::cuda)
    throw_invalid(fn, cat("unknown backend value ", int(exec.backend), " (expected cpu or cuda)"));
  if (exec.threads < 0) throw_invalid(fn, cat("Exec::threads = ", exec.threads, " must be >= 0"));
}

int64_t strided_bytes(const char* fn, int64_t rows, int64_t cols, int64_t stride, int64_t elem_bytes) {
  return mul_checked(fn, add_checked(fn, mul_checked(fn, rows - 1, stride), cols), elem_bytes);
}

int64_t mx_code_bytes(const MxMatrix& m) { return m.rows * (m.K / 2); }

int64_t mx_scale_bytes(const MxMatrix& m) {
  if (m.scale_layout == ScaleLayout::aiter_shuffled) return shuffled_scales_bytes(m.rows, m.K / kBlockSize);
  return m.rows * (m.K / kBlockSize);
}

void require_mx(const char* fn, const char* name, const MxMatrix& m) {
  const std::string n(name);
  require_positive(fn, (n + ".rows").c_str(), m.rows);
  require_k(fn, (n + ".K").c_str(), m.K);
  mul_checked(fn, m.rows, m.K);
  require_code_layout(fn, m.code_layout);
  require_scale_layout(fn, m.scale_layout);
  require_nonnull(fn, (n + ".codes").c_str(), m.codes);
  require_nonnull(fn, (n + ".scales").c_str(), m.scales);
  if (m.code_layout == CodeLayout::aiter_shuffled && (m.rows % 16 != 0 || m.K % 64 != 0))
    throw_invalid(fn, cat(n, ": the AITER shuffled weight layout needs rows % 16 == 0 and K % 64 == 0, got rows = ",
                          m.rows, ", K = ", m.K));
}

void require_packed(const char* fn, const char* name, const PackedWeights& p) {
  const std::string n(name);
  if (p.version != kPackedLayoutVersion)
    throw_type(fn, cat(n, ".version = ", p.version, " is not the supported packed layout version ",
                       kPackedLayoutVersion, " (prepack again with this library)"));
  require_positive(fn, (n + ".N").c_str(), p.N);
  require_k(fn, (n + ".K").c_str(), p.K);
  mul_checked(fn, p.N, p.K);
  require_nonnull(fn, (n + ".data").c_str(), p.data);
}

}  // namespace mxfp4::detail
