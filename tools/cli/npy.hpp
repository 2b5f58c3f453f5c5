// Minimal, defensive .npy reader and writer for the mxfp4 CLI.
//
// Supported: format versions 1.0, 2.0 (and 3.0, which differs only in the header's text
// encoding), C order, little-endian dtypes '|u1' (also '<u1'), '<u2', '<f2', '<f4', '<f8'.
// Everything else is rejected with one NpyError whose message names the file and the
// problem: bad magic, unsupported version, absurd or truncated header, malformed header
// dictionary, unsupported descr, Fortran order, bad shape, truncated or trailing data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxfp4cli::npy {

/// Error for a malformed or unsupported .npy file (message: one line, names the file).
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Dtype { u1, u2, f2, f4, f8 };

/// numpy descr string written for `d` ('|u1', '<u2', '<f2', '<f4', '<f8').
const char* descr(Dtype d);
/// Bytes per element.
size_t itemsize(Dtype d);

/// Largest header we accept (numpy's own default limit is 10000 bytes).
inline constexpr size_t kMaxHeaderBytes = 1u << 20;

struct Array {
  Dtype dtype = Dtype::u1;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  ///< raw little-endian element bytes, C order

  int64_t count() const;
  /// Copies the data out as T (sizeof(T) must equal itemsize(dtype)).
  template <class T>
  std::vector<T> as() const {
    if (sizeof(T) != itemsize(dtype)) throw std::logic_error("npy::Array::as: element size mismatch");
    std::vector<T> out(data.size() / sizeof(T));
    if (!data.empty()) std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
};

/// Parses an in-memory .npy image; `name` is used in error messages.
Array parse(const uint8_t* bytes, size_t n, const std::string& name);
/// Reads and parses a .npy file (NpyError if it cannot be opened or is malformed).
Array read(const std::string& path);
/// Writes a version 1.0 .npy file (header padded to a multiple of 64 bytes).
void write(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape, const void* data);

/// "(3, 64)" style text of a shape, as numpy prints it.
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace mxfp4cli::npy
