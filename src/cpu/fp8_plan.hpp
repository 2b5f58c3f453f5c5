// Groundwork of the FP8 (e4m3) prefill path, issue 6 (internal; docs/perf-notes.md "Issue 6
// ... design"). An MXFP4 operand is split into scaling groups of one row x one 128-wide K slice
// (4 blocks). A group with exponents s_i (scale byte - 127) gets R = max s_i - 6 over its
// nonzero blocks, and each element becomes the e4m3 value e2m1 * 2^(s_i - R): exact iff
// s_i - R is in [-8, 6] for every nonzero block (e4m3: max 448 = 1.5 * 2^8 needs
// s_i - R <= 6, its smallest subnormal 2^-9 = 0.5 * 2^-8 needs s_i - R >= -8). Groups that
// span more (or hold a NaN scale) are flagged and must be computed another way.
#pragma once

#include <cstdint>
#include <vector>

#include "core/fp8_layout.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::fp8 {

/// Per (row, K slice) group exponent R and exactness of one operand [rows, K] (row-major:
/// index row * slices + slice, slices = ceil(K / 128)).
struct GroupPlan {
  int64_t rows = 0, slices = 0;
  std::vector<int16_t> R;       ///< group exponent (0 for a group without nonzero codes)
  std::vector<uint8_t> exact;   ///< 1: the group stays on the FP8 path (fp8::plan_group)
};

/// Plans the groups of `m` (plain code and scale layouts; K % 32 == 0) with fp8::plan_group:
/// a group leaves the FP8 path when its nonzero blocks' exponents span more than
/// kMaxShift - kMinShift = 14 binades, a block has the NaN scale 0xFF or |R| > kMaxAbsR.
/// Blocks whose codes are all +-0 never affect R.
GroupPlan plan_groups(const MxMatrix& m);

/// The FP8 image (core/fp8_layout.hpp) of `m` (plain layouts) into `out`
/// (ImageGeometry::of(m.rows, m.K).total_bytes() bytes, every byte written): the CPU oracle
/// of the GPU image builders.
void build_image(const MxMatrix& m, uint8_t* out);

/// Value of an e4m3 byte (0x7F / 0xFF are NaN).
float e4m3_to_f32(uint8_t b);

/// CPU model of the FP8 data path (the GPU kernel's oracle): C [M, N] (fp32, row stride ldc) =
/// sum over K slices of S * 2^(R_a + R_b), where S is the fp32 sum of the slice's e4m3
/// products when both groups are exact, else the slice is summed from the dequantized values
/// in fp64 (the "exact path"). Slices are combined in fp64 and rounded once to fp32. Within
/// spec §3's bound for every input (products of e4m3 values are exact; the fp32 slice sum is
/// the only rounding besides the final one).
void gemm_model(const MxMatrix& A, const MxMatrix& B, float* C, int64_t ldc);

}  // namespace mxfp4::fp8
