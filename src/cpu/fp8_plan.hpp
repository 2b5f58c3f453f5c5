// Groundwork of path "fp8" (issue 6; design in docs/fp8-path.md): the CPU planner of the 8-bit
// image's scaling groups, the image builder (the oracle of the GPU builders) and a CPU model of
// the path's sums. An MXFP4 operand is split into groups of one row x one 128-wide K slice (4
// blocks). A group whose nonzero blocks' exponents s_b (scale byte - 127) span at most 3
// binades is narrow: one R with 1 <= s_b - R <= 4 for every block (so |code| <= 96), the
// anchor of the row's chain chunk where possible (chunk_anchor, choose_exponent), and each
// element becomes the s8 integer e2m1 * 2^(s_b - R). A wider group keeps one exponent per block: e2m1 * 2,
// exponent s_b - 1. A NaN scale, or an exponent out of [-48, 48], flags the group: it must be
// computed another way (the fix-up).
#pragma once

#include <cstdint>
#include <vector>

#include "core/fp8_layout.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::fp8 {

/// Per (row, K slice) group of one operand [rows, K] (row-major: index row * slices + slice,
/// slices = ceil(K / 128)): its kind, group exponent and the image exponents of its 4 blocks.
struct GroupPlan {
  int64_t rows = 0, slices = 0;
  std::vector<int16_t> R;        ///< group exponent (choose_exponent; without nonzero codes the anchor, or 0)
  std::vector<uint8_t> exact;    ///< 1: the group stays on the path (narrow or wide)
  std::vector<uint8_t> wide;     ///< 1: a wide group
  std::vector<uint8_t> cont;     ///< 1: the group's chain goes on into the row's next slice (chain_continues)
  std::vector<int16_t> e;        ///< image exponents, 4 per group (kFlaggedExponent when flagged)
};

/// Plans the groups of `m` (plain code and scale layouts; K % 32 == 0): fp8::group_range per
/// group, then fp8::choose_exponent with the anchor of each chain chunk (fp8::chunk_anchor).
/// Blocks whose codes are all +-0 never affect R, and blocks past K count as such blocks.
GroupPlan plan_groups(const MxMatrix& m);

/// The 8-bit image (core/fp8_layout.hpp) of `m` (plain layouts) into `out`
/// (ImageGeometry::of(m.rows, m.K).total_bytes() bytes, every byte written): the CPU oracle
/// of the GPU image builders.
void build_image(const MxMatrix& m, uint8_t* out);

/// CPU model of the path's data (the GPU kernel's oracle): C [M, N] (fp32, row stride ldc) =
/// sum over K slices of the exact slice sum: sum over blocks b of (s8 code products, an exact
/// integer) * 2^(ea_b + eb_b) when both groups are on the path, else the slice summed from the
/// dequantized values in fp64 (the "exact path"). Slices are combined in fp64 and rounded once
/// to fp32: within spec §3's bound for every input.
void gemm_model(const MxMatrix& A, const MxMatrix& B, float* C, int64_t ldc);

}  // namespace mxfp4::fp8
