// FP8 scaling-group planner, exact e2m1 -> e4m3 encoding and the CPU model of the FP8 path
// (fp8_plan.hpp; design in docs/perf-notes.md, issue 6).
#include "cpu/fp8_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mxfp4/format.hpp"

namespace mxfp4::fp8 {
namespace {

uint8_t code_at(const MxMatrix& m, int64_t r, int64_t k) {
  const uint8_t byte = m.codes[r * (m.K / 2) + k / 2];
  return (k % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
}

bool block_is_zero(const MxMatrix& m, int64_t r, int64_t b) {
  for (int64_t k = 32 * b; k < 32 * b + 32; ++k)
    if ((code_at(m, r, k) & 7u) != 0) return false;
  return true;
}

}  // namespace

GroupPlan plan_groups(const MxMatrix& m) {
  GroupPlan p;
  p.rows = m.rows;
  p.slices = (m.K + kSliceK - 1) / kSliceK;
  p.R.assign(size_t(p.rows * p.slices), 0);
  p.exact.assign(size_t(p.rows * p.slices), 1);
  const int64_t kblocks = m.K / 32;
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t s = 0; s < p.slices; ++s) {
      int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
      bool nan = false;
      for (int64_t b = 4 * s; b < std::min(kblocks, 4 * s + 4); ++b) {
        const uint8_t sb = m.scales[r * kblocks + b];
        if (sb == kScaleNaN) {
          nan = true;
          continue;
        }
        if (block_is_zero(m, r, b)) continue;
        lo = std::min(lo, int(sb) - 127);
        hi = std::max(hi, int(sb) - 127);
      }
      const size_t i = size_t(r * p.slices + s);
      int R = 0;
      p.exact[i] = plan_group(lo, hi, hi != std::numeric_limits<int>::min(), nan, R);
      p.R[i] = int16_t(R);
    }
  return p;
}

void build_image(const MxMatrix& m, uint8_t* out) {
  const ImageGeometry g = ImageGeometry::of(m.rows, m.K);
  const GroupPlan p = plan_groups(m);
  const int64_t kblocks = m.K / 32;
  std::fill(out, out + g.total_bytes(), uint8_t(0));
  float* scales = reinterpret_cast<float*>(out + g.scale_offset());
  uint8_t* flags = out + g.flag_offset();
  for (int64_t j = 0; j < g.slices; ++j)
    for (int64_t r = 0; r < g.rows_padded; ++r) {
      if (r >= m.rows) {
        scales[g.scale_index(r, j)] = 1.f;
        continue;
      }
      const size_t i = size_t(r * p.slices + j);
      scales[g.scale_index(r, j)] = p.exact[i] ? std::ldexp(1.f, p.R[i]) : 0.f;
      if (!p.exact[i]) {
        flags[g.flag_index(r / kFlagRows, j)] = 1;
        continue;
      }
      for (int64_t k = j * kSliceK; k < std::min(m.K, (j + 1) * kSliceK); ++k) {
        const int d = int(m.scales[r * kblocks + k / 32]) - 127 - p.R[i];
        // Zero codes encode as +-0 whatever d is (their block may lie outside the span).
        out[g.code_offset(r, k)] = e2m1_to_e4m3(code_at(m, r, k), d);
      }
    }
}

float e4m3_to_f32(uint8_t b) {
  const float sign = (b & 0x80) ? -1.f : 1.f;
  const int e = (b >> 3) & 0xF, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(float(m), -9);
  return sign * std::ldexp(1.f + float(m) / 8.f, e - 7);
}

void gemm_model(const MxMatrix& A, const MxMatrix& B, float* C, int64_t ldc) {
  const GroupPlan pa = plan_groups(A), pb = plan_groups(B);
  const int64_t K = A.K, kblocks = K / 32;
  for (int64_t m = 0; m < A.rows; ++m)
    for (int64_t n = 0; n < B.rows; ++n) {
      double acc = 0;
      for (int64_t s = 0; s < pa.slices; ++s) {
        const size_t ia = size_t(m * pa.slices + s), ib = size_t(n * pb.slices + s);
        const int64_t k0 = s * kSliceK, k1 = std::min(K, k0 + kSliceK);
        if (pa.exact[ia] && pb.exact[ib]) {
          float sum = 0.f;  // the tensor core's slice sum, modelled as sequential fp32
          for (int64_t k = k0; k < k1; ++k) {
            const int b = int(k / 32);
            const uint8_t ca = code_at(A, m, k), cb = code_at(B, n, k);
            if ((ca & 7u) == 0 || (cb & 7u) == 0) continue;  // zero blocks may be out of span
            const int da = int(A.scales[m * kblocks + b]) - 127 - pa.R[ia];
            const int db = int(B.scales[n * kblocks + b]) - 127 - pb.R[ib];
            sum += e4m3_to_f32(e2m1_to_e4m3(ca, da)) * e4m3_to_f32(e2m1_to_e4m3(cb, db));
          }
          acc += std::ldexp(double(sum), pa.R[ia] + pb.R[ib]);  // exponent sum, spec §3
        } else {
          double sum = 0;
          for (int64_t k = k0; k < k1; ++k) {
            const int64_t b = k / 32;
            sum += double(fmt::dequant_f32(code_at(A, m, k), A.scales[m * kblocks + b])) *
                   double(fmt::dequant_f32(code_at(B, n, k), B.scales[n * kblocks + b]));
          }
          acc += sum;
        }
      }
      C[m * ldc + n] = float(acc);
    }
}

}  // namespace mxfp4::fp8
