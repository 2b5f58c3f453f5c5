// Shared helpers of the mxfp4 CLI (see common.hpp).
#include "common.hpp"

namespace mxfp4cli {

mxfp4::ScaleRule parse_rule(const std::string& name) {
  if (name == "aiter") return mxfp4::ScaleRule::aiter;
  if (name == "floor") return mxfp4::ScaleRule::floor;
  if (name == "rceil") return mxfp4::ScaleRule::rceil;
  throw CliError("unknown scale rule '" + name + "' (expected aiter, floor or rceil)", 2);
}

const char* rule_name(mxfp4::ScaleRule r) {
  switch (r) {
    case mxfp4::ScaleRule::aiter: return "aiter";
    case mxfp4::ScaleRule::floor: return "floor";
    case mxfp4::ScaleRule::rceil: return "rceil";
  }
  return "?";
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

npy::Array load_matrix(const std::string& path, const std::string& what, const std::vector<npy::Dtype>& allowed) {
  npy::Array a = npy::read(path);
  if (a.shape.size() != 2)
    throw CliError(what + " " + path + ": expected a 2-D array, got rank " + std::to_string(a.shape.size()) +
                   " with shape " + npy::shape_str(a.shape));
  bool ok = false;
  std::string names;
  for (npy::Dtype d : allowed) {
    ok = ok || d == a.dtype;
    names += (names.empty() ? "'" : ", '") + std::string(npy::descr(d)) + "'";
  }
  if (!ok)
    throw CliError(what + " " + path + ": dtype '" + npy::descr(a.dtype) + "' is not accepted here (expected " +
                   names + ")");
  return a;
}

mxfp4::MxMatrix HostMx::view() const { return rows_view(0, rows); }

mxfp4::MxMatrix HostMx::rows_view(int64_t r0, int64_t n) const {
  mxfp4::MxMatrix m;
  m.codes = codes.data() + r0 * (K / 2);
  m.scales = scales.data() + r0 * (K / 32);
  m.rows = n;
  m.K = K;
  return m;
}

HostMx load_mx(const std::string& codes_path, const std::string& scales_path) {
  npy::Array q = load_matrix(codes_path, "codes", {npy::Dtype::u1});
  npy::Array s = load_matrix(scales_path, "scales", {npy::Dtype::u1});
  // Check the stored shape before deriving K from it (2 * shape[1] must not overflow).
  if (q.shape[0] < 1 || q.shape[1] < 16 || q.shape[1] % 16 != 0)
    throw CliError("codes " + codes_path + ": shape " + npy::shape_str(q.shape) +
                   " must be [rows >= 1, K/2] with K a positive multiple of 32");
  const int64_t rows = q.shape[0], K = 2 * q.shape[1];
  if (s.shape[0] != rows || s.shape[1] != K / 32)
    throw CliError("scales " + scales_path + ": shape " + npy::shape_str(s.shape) + " does not match codes shape " +
                   npy::shape_str(q.shape) + " (expected (" + std::to_string(rows) + ", " + std::to_string(K / 32) +
                   "))");
  HostMx m;
  m.rows = rows;
  m.K = K;
  m.codes = std::move(q.data);
  m.scales = std::move(s.data);
  return m;
}

void save_u8(const std::string& path, const std::vector<uint8_t>& v, int64_t rows, int64_t cols) {
  npy::write(path, npy::Dtype::u1, {rows, cols}, v.data());
}
void save_u16(const std::string& path, const std::vector<uint16_t>& v, int64_t rows, int64_t cols) {
  npy::write(path, npy::Dtype::u2, {rows, cols}, v.data());
}
void save_f32(const std::string& path, const std::vector<float>& v, int64_t rows, int64_t cols) {
  npy::write(path, npy::Dtype::f4, {rows, cols}, v.data());
}

}  // namespace mxfp4cli
