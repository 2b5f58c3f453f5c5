// Array plumbing for the mxfp4._C bindings (python/src/module.cpp): devices, element types
// and 2-D views of nanobind ndarrays. Only module.cpp includes this; it checks what the C++
// API cannot see behind a raw pointer and leaves every size/stride/layout rule to the library.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "mxfp4/mxfp4.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace mxfp4py {


using mxfp4::Backend;
using mxfp4::CodeLayout;
using mxfp4::DType;
using mxfp4::Exec;
using mxfp4::InvalidArgument;
using mxfp4::ScaleLayout;
using mxfp4::ScaleRule;
using mxfp4::TypeMismatch;

using In = nb::ndarray<nb::ro>;  // read-only input (numpy read-only arrays are accepted)
using Out = nb::ndarray<>;       // written by the library

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3;

inline std::string dtype_name(nb::dlpack::dtype d) {
  using C = nb::dlpack::dtype_code;
  std::string base;
  switch (static_cast<C>(d.code)) {
    case C::Int: base = "int"; break;
    case C::UInt: base = "uint"; break;
    case C::Float: base = "float"; break;
    case C::Bfloat: base = "bfloat"; break;
    case C::Complex: base = "complex"; break;
    case C::Bool: return "bool";
    default: base = "dlpack_code" + std::to_string(int(d.code)) + "_"; break;
  }
  std::string s = base + std::to_string(int(d.bits));
  if (d.lanes != 1) s += "x" + std::to_string(int(d.lanes));
  return s;
}

template <class A>
std::string shape_str(const A& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// ---- devices ------------------------------------------------------------------------------

struct Device {
  int type = kDLCPU;  // kDLCPU or kDLCUDA
  int id = 0;
  std::string str() const { return type == kDLCUDA ? "cuda:" + std::to_string(id) : std::string("cpu"); }
};

template <class A>
Device device_of(const char* name, const A& a) {
  const int t = a.device_type();
  if (t == kDLCPU || t == kDLCUDAHost) return {kDLCPU, 0};
  if (t == kDLCUDA) return {kDLCUDA, a.device_id()};
  throw InvalidArgument(std::string(name) + " lives on an unsupported device (DLPack device type " +
                        std::to_string(t) + "); mxfp4 takes CPU or CUDA arrays");
}

/// The device shared by all arrays of one call (ValueError when they disagree).
class Devices {
 public:
  template <class A>
  void add(const char* name, const A& a) {
    const Device d = device_of(name, a);
    if (!first_) {
      first_ = name;
      dev_ = d;
    } else if (d.type != dev_.type || d.id != dev_.id) {
      throw InvalidArgument(std::string("all arrays of one call must be on the same device: ") + first_ +
                            " is on " + dev_.str() + " but " + name + " is on " + d.str());
    }
  }
  Exec exec(uintptr_t stream) const {
    Exec e;
    e.backend = dev_.type == kDLCUDA ? Backend::cuda : Backend::cpu;
    e.stream = e.backend == Backend::cuda ? reinterpret_cast<void*>(stream) : nullptr;
    return e;
  }
  const Device& device() const { return dev_; }

 private:
  const char* first_ = nullptr;
  Device dev_;
};

/// Makes the arrays' CUDA device current for the duration of a call.
class DeviceGuard {
 public:
  explicit DeviceGuard(const Device& d) {
#if defined(MXFP4_WITH_CUDA)
    if (d.type != kDLCUDA) return;
    int cur = 0;
    if (cudaGetDevice(&cur) != cudaSuccess) {
      cudaGetLastError();
      return;  // the library reports the real failure
    }
    if (cur != d.id) {
      if (cudaSetDevice(d.id) != cudaSuccess) {
        cudaGetLastError();
        throw mxfp4::CudaError("cudaSetDevice(" + std::to_string(d.id) + ") failed");
      }
      prev_ = cur;
    }
#else
    (void)d;
#endif
  }
  ~DeviceGuard() {
#if defined(MXFP4_WITH_CUDA)
    if (prev_ >= 0) cudaSetDevice(prev_);
#endif
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

// ---- element types --------------------------------------------------------------------------

inline bool is_byte(nb::dlpack::dtype d) {
  using C = nb::dlpack::dtype_code;
  const auto c = static_cast<C>(d.code);
  if (int(d.bits) * int(d.lanes) != 8) return false;
  return c == C::UInt || c == C::Int || c == C::Float8_E8M0FNU || c == C::Float4_E2M1FN;
}

/// Checks that `a` holds elements of `dt` (bf16/fp16 may also come as 16-bit integers).
template <class A>
void check_float(const char* name, const A& a, DType dt, const char* allowed) {
  using C = nb::dlpack::dtype_code;
  const auto d = a.dtype();
  const auto c = static_cast<C>(d.code);
  bool ok = d.lanes == 1;
  switch (dt) {
    case DType::fp32: ok = ok && c == C::Float && d.bits == 32; break;
    case DType::fp16: ok = ok && d.bits == 16 && (c == C::Float || c == C::UInt || c == C::Int); break;
    case DType::bf16: ok = ok && d.bits == 16 && (c == C::Bfloat || c == C::UInt || c == C::Int); break;
  }
  if (!ok) {
    throw TypeMismatch(std::string(name) + " must be " + allowed + "; got " + dtype_name(d));
  }
}

inline const char* dtype_label(DType dt) {
  switch (dt) {
    case DType::fp32: return "float32";
    case DType::fp16: return "float16 (or uint16 bit patterns)";
    case DType::bf16: return "bfloat16 (or uint16 bit patterns)";
  }
  return "?";
}

// ---- array views ----------------------------------------------------------------------------

/// A 2-D strided matrix: rows x cols elements, row stride `ld` elements, unit column stride.
struct Mat {
  void* p = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
};

template <class A>
Mat mat2d(const char* name, const A& a) {
  if (a.ndim() != 2) {
    throw InvalidArgument(std::string(name) + " must be 2-D [rows, columns]; got shape " + shape_str(a));
  }
  Mat m;
  m.p = const_cast<void*>(a.data());
  m.rows = int64_t(a.shape(0));
  m.cols = int64_t(a.shape(1));
  if (m.rows == 0 || m.cols == 0) {  // empty: strides are meaningless; the library rejects the sizes
    m.ld = m.cols;
    return m;
  }
  if (m.cols > 1 && a.stride(1) != 1) {
    throw InvalidArgument(std::string(name) + " must have unit stride along its last dimension (got stride " +
                          std::to_string(a.stride(1)) + " elements); pass a contiguous array");
  }
  // A single row has no meaningful row stride: frameworks report anything there.
  m.ld = m.rows > 1 ? int64_t(a.stride(0)) : m.cols;
  if (m.rows > 1 && m.ld < m.cols) {
    throw InvalidArgument(std::string(name) + " has row stride " + std::to_string(m.ld) + " < " +
                          std::to_string(m.cols) + " columns (overlapping or reversed rows); pass a contiguous array");
  }
  return m;
}

template <class A>
bool c_contiguous(const A& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= int64_t(a.shape(i));
  }
  return true;
}

/// A dense byte buffer (uint8, C-contiguous, any shape) of exactly `bytes` bytes;
/// `bytes < 0` skips the size check (the library rejects the sizes first).
template <class A>
void* bytes(const char* name, const A& a, int64_t bytes, const std::string& what) {
  if (!is_byte(a.dtype())) {
    throw TypeMismatch(std::string(name) + " must be uint8 (packed e2m1 codes / E8M0 scale bytes); got " +
                       dtype_name(a.dtype()));
  }
  if (a.size() != 0 && !c_contiguous(a)) {
    throw InvalidArgument(std::string(name) + " must be C-contiguous (dense bytes); got shape " + shape_str(a) +
                          " with non-dense strides");
  }
  if (bytes >= 0 && int64_t(a.size()) != bytes) {
    throw InvalidArgument(std::string(name) + " has " + std::to_string(a.size()) + " bytes (shape " + shape_str(a) +
                          "); expected " + std::to_string(bytes) + " = " + what);
  }
  return const_cast<void*>(a.data());
}

/// True when both are in [1, 2^40] (the library's range for any matrix dimension), so that
/// their product (at most 2^80 before this check) cannot overflow: only then are buffer sizes
/// computed here; otherwise the size check is skipped and the library rejects the sizes.
inline bool dims_in_range(int64_t a, int64_t b) {
  constexpr int64_t kMax = int64_t(1) << 40;
  return a >= 1 && b >= 1 && a <= kMax && b <= kMax && a <= (int64_t(1) << 62) / b;
}

/// True when (rows, K) are sizes the library accepts, so buffer sizes can be computed.
inline bool valid_rows_k(int64_t rows, int64_t K) { return dims_in_range(rows, K) && K >= 32 && K % 32 == 0; }

inline std::string rk(const char* r, int64_t rows, int64_t K) {
  return std::string("(") + r + "=" + std::to_string(rows) + ", K=" + std::to_string(K) + ")";
}

inline int64_t code_bytes(int64_t rows, int64_t K) { return valid_rows_k(rows, K) ? rows * (K / 2) : -1; }

inline int64_t scale_bytes(int64_t rows, int64_t K, ScaleLayout layout) {
  if (!valid_rows_k(rows, K)) return -1;
  return layout == ScaleLayout::plain ? rows * (K / 32) : mxfp4::shuffled_scales_bytes(rows, K / 32);
}

inline std::string scale_what(ScaleLayout layout, const char* r, int64_t rows, int64_t K) {
  return layout == ScaleLayout::plain ? std::string(r) + "*K/32 plain scales " + rk(r, rows, K)
                                      : std::string("round_up(") + r + ",256)*round_up(K/32,8) shuffled scales " +
                                            rk(r, rows, K);
}

inline mxfp4::MxMatrix mx(const char* codes_name, const In& codes, const char* scales_name, const In& scales,
                   const char* r, int64_t rows, int64_t K, CodeLayout cl, ScaleLayout sl) {
  mxfp4::MxMatrix m;
  m.codes = static_cast<const uint8_t*>(
      bytes(codes_name, codes, code_bytes(rows, K), std::string(r) + "*K/2 code bytes " + rk(r, rows, K)));
  m.scales = static_cast<const uint8_t*>(bytes(scales_name, scales, scale_bytes(rows, K, sl), scale_what(sl, r, rows, K)));
  m.rows = rows;
  m.K = K;
  m.code_layout = cl;
  m.scale_layout = sl;
  return m;
}

inline int64_t packed_size(int64_t N, int64_t K) { return valid_rows_k(N, K) ? mxfp4::packed_bytes(N, K) : -1; }

/// fp8_weights_bytes(N, K), or -1 (no size check; the library rejects the sizes) for bad sizes.
inline int64_t fp8_size(int64_t N, int64_t K) { return valid_rows_k(N, K) ? mxfp4::fp8_weights_bytes(N, K) : -1; }

}  // namespace mxfp4py
