// Argument validation at the public API boundary (src/core/api.cpp). Every check throws the
// exception type mxfp4.hpp documents, with a message that names the function and the
// offending values. Internal header; nothing here touches memory behind the pointers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::detail {

/// Concatenates streamable values into a message.
template <class... Ts>
std::string cat(const Ts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

[[noreturn]] void throw_invalid(const char* fn, const std::string& what);
[[noreturn]] void throw_type(const char* fn, const std::string& what);

/// A byte range [p, p + bytes) named for messages.
struct Span {
  const void* p = nullptr;
  int64_t bytes = 0;
  const char* name = "";
};

/// Largest byte or element count any size computation here may reach (2^62): sizes are
/// checked against it before they are padded, added or multiplied, so that no signed int64
/// arithmetic on caller-supplied values can overflow.
inline constexpr int64_t kMaxSize = int64_t(1) << 62;

/// a * b with an InvalidArgument if it exceeds 2^62 (operands must be >= 0).
int64_t mul_checked(const char* fn, int64_t a, int64_t b);
/// a + b with an InvalidArgument if it exceeds 2^62 (operands must be >= 0).
int64_t add_checked(const char* fn, int64_t a, int64_t b);
/// InvalidArgument unless v <= 2^62 (so that round_up(v, m) and small sums cannot overflow).
void require_size(const char* fn, const char* name, int64_t v);

/// v >= 1.
void require_positive(const char* fn, const char* name, int64_t v);
/// K >= 32 and K % 32 == 0 (spec §1.3).
void require_k(const char* fn, const char* name, int64_t K);
/// stride >= row_len.
void require_stride(const char* fn, const char* name, int64_t stride, int64_t row_len);
/// p != nullptr.
void require_nonnull(const char* fn, const char* name, const void* p);
/// p is a multiple of `alignment` bytes (a power of two). `why` says who needs it, e.g.
/// "fp32 elements" or "the CUDA GEMM's 16-byte loads".
void require_aligned(const char* fn, const char* name, const void* p, int64_t alignment, const char* why);
/// No output overlaps an input or another output (byte ranges; strided matrices are treated
/// as their whole span from the first to the last byte they touch).
void require_disjoint(const char* fn, std::initializer_list<Span> inputs, std::initializer_list<Span> outputs);

/// Bytes per element of a dense dtype; TypeMismatch for an unknown value.
int64_t dtype_bytes(const char* fn, DType dtype);
/// TypeMismatch unless rule is aiter, floor or rceil.
void require_rule(const char* fn, ScaleRule rule);
/// TypeMismatch for unknown layout enum values.
void require_code_layout(const char* fn, CodeLayout layout);
void require_scale_layout(const char* fn, ScaleLayout layout);
/// InvalidArgument for an unknown backend or negative thread count.
void require_exec(const char* fn, const Exec& exec);

/// Bytes spanned by a row-major matrix: ((rows - 1) * stride + cols) * elem_bytes.
int64_t strided_bytes(const char* fn, int64_t rows, int64_t cols, int64_t stride, int64_t elem_bytes);

/// Code bytes of an MxMatrix (rows * K / 2 in both layouts).
int64_t mx_code_bytes(const MxMatrix& m);
/// Scale bytes of an MxMatrix (rows * K / 32 plain, shuffled_scales_bytes() shuffled).
int64_t mx_scale_bytes(const MxMatrix& m);

/// Full check of an MxMatrix argument: rows >= 1, K % 32 == 0, non-null pointers, known
/// layouts (TypeMismatch), AITER weight layout needs rows % 16 == 0 and K % 64 == 0.
void require_mx(const char* fn, const char* name, const MxMatrix& m);

/// Full check of a PackedWeights argument: version (TypeMismatch), N >= 1, K % 32 == 0, data.
void require_packed(const char* fn, const char* name, const PackedWeights& p);

}  // namespace mxfp4::detail
