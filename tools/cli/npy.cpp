// .npy reader/writer (see npy.hpp for what is accepted).
#include "npy.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace mxfp4cli::npy {

static_assert(std::endian::native == std::endian::little, "the .npy code assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw NpyError(name + ": " + what); }

std::string printable(const std::string& s, size_t max_len = 40) {
  std::string out;
  for (char c : s.substr(0, max_len)) out += (std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  if (s.size() > max_len) out += "...";
  return out;
}

// Parser for the Python dict literal of a .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr_out, bool& fortran_out, std::vector<int64_t>& shape_out) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    ws();
    expect('{');
    while (true) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = string_literal("a dictionary key");
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (have_descr) bad("duplicate key 'descr'");
        if (peek() == '[') bad("structured dtypes (a list descr) are not supported");
        descr_out = string_literal("the descr string");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) bad("duplicate key 'fortran_order'");
        fortran_out = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) bad("duplicate key 'shape'");
        shape_out = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + printable(key) + "'");
      }
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      bad("expected ',' or '}' at offset " + std::to_string(i_));
    }
    ws();
    if (i_ != s_.size()) bad("unexpected text after the header dictionary");
    if (!have_descr) bad("missing key 'descr'");
    if (!have_fortran) bad("missing key 'fortran_order'");
    if (!have_shape) bad("missing key 'shape'");
  }

 private:
  [[noreturn]] void bad(const std::string& what) { fail(name_, "malformed .npy header: " + what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string string_literal(const char* what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad(std::string("expected ") + what + " (a quoted string) at offset " + std::to_string(i_));
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') bad("escape sequences are not supported in the header");
      out += s_[i_++];
    }
    if (i_ >= s_.size()) bad("unterminated string");
    ++i_;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      ws();
      if (peek() == ')') {
        ++i_;
        break;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("shape must be a tuple of non-negative integers");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int d = s_[i_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) bad("shape dimension too large");
        v = v * 10 + d;
      }
      if (peek() == 'L') ++i_;  // Python 2 long suffix
      dims.push_back(v);
      if (dims.size() > 32) bad("shape has more than 32 dimensions");
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      ws();
      if (peek() == ')') {
        ++i_;
        break;
      }
      bad("expected ',' or ')' in shape");
    }
    return dims;
  }

  const std::string& s_;
  const std::string& name_;
  size_t i_ = 0;
};

Dtype dtype_from_descr(const std::string& d, const std::string& name) {
  if (d == "|u1" || d == "<u1" || d == "=u1") return Dtype::u1;
  if (d == "<u2") return Dtype::u2;
  if (d == "<f2") return Dtype::f2;
  if (d == "<f4") return Dtype::f4;
  if (d == "<f8") return Dtype::f8;
  fail(name, "unsupported dtype descr '" + printable(d) +
                 "' (supported: '|u1', '<u2' (bf16 bits), '<f2', '<f4', '<f8', little-endian)");
}

uint32_t read_le(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* descr(Dtype d) {
  switch (d) {
    case Dtype::u1: return "|u1";
    case Dtype::u2: return "<u2";
    case Dtype::f2: return "<f2";
    case Dtype::f4: return "<f4";
    case Dtype::f8: return "<f8";
  }
  return "?";
}

size_t itemsize(Dtype d) {
  switch (d) {
    case Dtype::u1: return 1;
    case Dtype::u2: case Dtype::f2: return 2;
    case Dtype::f4: return 4;
    case Dtype::f8: return 8;
  }
  return 0;
}

int64_t Array::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {
// Parses and validates everything up to the data: `head` holds the first `n_head` bytes of a
// file of `file_size` bytes (n_head >= min(file_size, 12 + kMaxHeaderBytes)). Fills a.dtype and
// a.shape and returns the data offset; the data must be exactly file_size - offset bytes.
size_t parse_header(const uint8_t* head, size_t n_head, uint64_t file_size, const std::string& name, Array& a) {
  if (n_head < kMagicLen + 2 || std::memcmp(head, kMagic, kMagicLen) != 0)
    fail(name, "not a .npy file (missing the \\x93NUMPY magic)");
  const int major = head[6], minor = head[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicLen + 2 + len_bytes;
  if (n_head < prefix) fail(name, "truncated .npy header (file has only " + std::to_string(file_size) + " bytes)");
  const size_t header_len = read_le(head + kMagicLen + 2, int(len_bytes));
  if (header_len > kMaxHeaderBytes)
    fail(name, "absurd .npy header size " + std::to_string(header_len) + " bytes (limit " +
                   std::to_string(kMaxHeaderBytes) + ")");
  if (n_head - prefix < header_len)
    fail(name, "truncated .npy header (header says " + std::to_string(header_len) + " bytes, file has " +
                   std::to_string(file_size - prefix) + " after the prefix)");
  const std::string text(reinterpret_cast<const char*>(head + prefix), header_len);

  std::string d;
  bool fortran = false;
  HeaderParser(text, name).parse(d, fortran, a.shape);
  a.dtype = dtype_from_descr(d, name);
  if (fortran) fail(name, "Fortran-order arrays are not supported (save a C-contiguous array)");

  // Element count and byte size with overflow checks. As numpy does, the product of the
  // non-zero dimensions times the item size must fit in an int64 even when another
  // dimension is 0, so that every product of dimensions callers form (Array::count()) fits.
  const uint64_t data_avail = file_size - prefix - header_len;
  const uint64_t isz = itemsize(a.dtype);
  const uint64_t kMaxBytes = uint64_t(std::numeric_limits<int64_t>::max());
  uint64_t nonzero = 1;
  bool any_zero = false;
  for (int64_t dim : a.shape) {
    if (dim == 0) {
      any_zero = true;
      continue;
    }
    if (nonzero > kMaxBytes / isz / uint64_t(dim)) fail(name, "shape " + shape_str(a.shape) + " is too large");
    nonzero *= uint64_t(dim);
  }
  const uint64_t count = any_zero ? 0 : nonzero;
  const uint64_t need = count * isz;
  if (need > data_avail)
    fail(name, "truncated data: shape " + shape_str(a.shape) + " of " + descr(a.dtype) + " needs " +
                   std::to_string(need) + " bytes, file has " + std::to_string(data_avail));
  if (need < data_avail)
    fail(name, std::to_string(data_avail - need) + " unexpected bytes after the data of shape " + shape_str(a.shape));
  return prefix + header_len;
}
}  // namespace

Array parse(const uint8_t* bytes, size_t n, const std::string& name) {
  Array a;
  const size_t off = parse_header(bytes, n, n, name, a);
  a.data.assign(bytes + off, bytes + n);
  return a;
}

Array read(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw NpyError(path + ": cannot open for reading");
  const std::streamoff size = f.tellg();
  if (size < 0) throw NpyError(path + ": cannot determine the file size");
  // Read the header region first, then the data straight into the array (one copy in memory).
  const size_t n_head = size_t(std::min<std::streamoff>(size, std::streamoff(kMagicLen + 6 + kMaxHeaderBytes)));
  std::vector<uint8_t> head(n_head);
  f.seekg(0);
  if (n_head > 0 && !f.read(reinterpret_cast<char*>(head.data()), std::streamsize(n_head)))
    throw NpyError(path + ": read error");
  Array a;
  const size_t off = parse_header(head.data(), n_head, uint64_t(size), path, a);
  a.data.resize(size_t(size) - off);
  f.seekg(std::streamoff(off));
  if (!a.data.empty() && !f.read(reinterpret_cast<char*>(a.data.data()), std::streamsize(a.data.size())))
    throw NpyError(path + ": read error");
  return a;
}

void write(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape, const void* data) {
  std::string header = std::string("{'descr': '") + descr(dtype) + "', 'fortran_order': False, 'shape': " +
                       shape_str(shape) + ", }";
  // Total of magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  const size_t unpadded = kMagicLen + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) throw NpyError(path + ": shape too long for a .npy 1.0 header");

  uint64_t count = 1;
  for (int64_t d : shape) count *= uint64_t(d);
  const uint64_t bytes = count * itemsize(dtype);

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw NpyError(path + ": cannot open for writing");
  f.write(kMagic, kMagicLen);
  const char ver[2] = {1, 0};
  f.write(ver, 2);
  const char len[2] = {char(header.size() & 0xFF), char((header.size() >> 8) & 0xFF)};
  f.write(len, 2);
  f.write(header.data(), std::streamsize(header.size()));
  if (bytes) f.write(static_cast<const char*>(data), std::streamsize(bytes));
  f.close();
  if (!f) throw NpyError(path + ": write error");
}

}  // namespace mxfp4cli::npy
