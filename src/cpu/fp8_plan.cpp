// Path fp8's scaling-group planner, exact e2m1 -> s8 encoding and the CPU model of its sums
// (fp8_plan.hpp; design in docs/fp8-path.md, issue 6).
#include "cpu/fp8_plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
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
  const size_t groups = size_t(p.rows * p.slices);
  p.R.assign(groups, 0);
  p.exact.assign(groups, 1);
  p.wide.assign(groups, 0);
  p.cont.assign(groups, 0);
  p.e.assign(4 * groups, 0);
  const int64_t kblocks = m.K / 32;
  std::vector<GroupRange> range(size_t(p.slices));
  std::vector<std::array<bool, 4>> nonzero(size_t(p.slices));
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t s = 0; s < p.slices; ++s) {
      int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
      bool nan = false;
      nonzero[size_t(s)] = {};
      for (int64_t b = 4 * s; b < std::min(kblocks, 4 * s + 4); ++b) {
        const uint8_t sb = m.scales[r * kblocks + b];
        if (sb == kScaleNaN) {
          nan = true;
          continue;
        }
        if (block_is_zero(m, r, b)) continue;
        nonzero[size_t(s)][size_t(b - 4 * s)] = true;
        lo = std::min(lo, int(sb) - 127);
        hi = std::max(hi, int(sb) - 127);
      }
      range[size_t(s)] = group_range(lo, hi, hi != std::numeric_limits<int>::min(), nan);
    }
    for (int64_t c = 0; c < p.slices; c += kChainSlices) {  // one chain chunk
      bool has_anchor = false;
      const int anchor = chunk_anchor(range[size_t(c)], has_anchor);
      const int64_t end = std::min(p.slices, c + kChainSlices);
      for (int64_t s = c; s < end; ++s) {
        const size_t i = size_t(r * p.slices + s);
        const GroupRange& g = range[size_t(s)];
        const int R = choose_exponent(g, has_anchor, anchor);
        p.R[i] = int16_t(R);
        p.exact[i] = g.kind != GroupKind::flagged;
        p.wide[i] = g.kind == GroupKind::wide;
        if (s > c) p.cont[i - 1] = chain_continues(range[size_t(s - 1)].kind, p.R[i - 1], g.kind, R);
        for (int64_t b = 0; b < 4; ++b) {
          const int64_t blk = 4 * s + b;
          const int sb = blk < kblocks ? int(m.scales[r * kblocks + blk]) - 127 : 0;
          p.e[4 * i + size_t(b)] = int16_t(g.kind == GroupKind::flagged
                                               ? kFlaggedExponent
                                               : block_image_exponent(g.kind, R, sb, nonzero[size_t(s)][size_t(b)]));
        }
      }
    }
  }
  return p;
}

void build_image(const MxMatrix& m, uint8_t* out) {
  const ImageGeometry g = ImageGeometry::of(m.rows, m.K);
  const GroupPlan p = plan_groups(m);
  const int64_t kblocks = m.K / 32;
  std::fill(out, out + g.total_bytes(), uint8_t(0));
  uint8_t* flags = out + g.flag_offset();
  auto set_scale = [&](int64_t r, int64_t j, float v) { std::memcpy(out + g.scale_at(r, j), &v, 4); };
  for (int64_t j = 0; j < g.slices; ++j)
    for (int64_t r = 0; r < g.rows_padded; ++r) {
      uint8_t* record = out + g.record_at(r / kAtomRows, j);
      uint8_t* exps = out + g.exponent_at(r, j);
      // A chunk's last slice breaks every quarter's chain, padding quarters' too; padding rows
      // (zero codes) never break one themselves.
      uint8_t& brk = record[kBreakByte + (r % kAtomRows) / kFlagRows];
      if (chunk_ends(j, g.slices)) brk = 1;
      if (r >= m.rows) {  // padding: codes 0, scale 1, exponents 0
        set_scale(r, j, 1.f);
        for (int b = 0; b < 4; ++b) exps[b] = exponent_byte(0);
        continue;
      }
      const size_t i = size_t(r * p.slices + j);
      set_scale(r, j, p.exact[i] ? std::ldexp(1.f, p.R[i]) : 0.f);
      for (int b = 0; b < 4; ++b) exps[b] = exponent_byte(p.e[4 * i + size_t(b)]);
      if (p.wide[i]) record[(r % kAtomRows) / kFlagRows] = 1;
      if (!p.cont[i]) brk = 1;
      if (!p.exact[i]) {
        flags[g.flag_index(r / kFlagRows, j)] = 1;
        continue;
      }
      for (int64_t k = j * kSliceK; k < std::min(m.K, (j + 1) * kSliceK); ++k) {
        const uint8_t code = code_at(m, r, k);
        if ((code & 7u) == 0) continue;  // zeros stay 0 (their block may lie outside the span)
        const int d = int(m.scales[r * kblocks + k / 32]) - 127 - p.e[4 * i + size_t((k % kSliceK) / 32)];
        out[g.code_offset(r, k)] = e2m1_to_s8(code, d);
      }
    }
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
          for (int64_t k = k0; k < k1; k += 32) {  // one block: an exact integer sum of s8 products
            const int b = int((k - k0) / 32);
            const int ea = pa.e[4 * ia + size_t(b)], eb = pb.e[4 * ib + size_t(b)];
            int64_t sum = 0;
            for (int64_t kk = k; kk < k + 32; ++kk) {
              const uint8_t ca = code_at(A, m, kk), cb = code_at(B, n, kk);
              if ((ca & 7u) == 0 || (cb & 7u) == 0) continue;  // zero blocks may be out of span
              const int da = int(A.scales[m * kblocks + kk / 32]) - 127 - ea;
              const int db = int(B.scales[n * kblocks + kk / 32]) - 127 - eb;
              sum += int64_t(int8_t(e2m1_to_s8(ca, da))) * int64_t(int8_t(e2m1_to_s8(cb, db)));
            }
            acc += std::ldexp(double(sum), ea + eb);  // exponent sum, spec §3
          }
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
