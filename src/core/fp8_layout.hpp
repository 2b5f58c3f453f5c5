// The FP8 operand image (docs/fp8-path.md): an MXFP4 matrix [rows, K] re-encoded for the e4m3
// wgmma path, one scaling group per (row, 128-wide K slice). The prefill GEMM reads the weights'
// image (built once by prepack_fp8) and the activations' image (built per call in the
// workspace); both are addressed by these host/device functions and nothing else.
//
// Layout, rows padded to Rp = round_up(rows, 256) (a 2-CTA cluster's 256 rows are always
// inside the image), S = ceil(K / 128) slices:
//   codes   S * Rp * 128 bytes at offset 0: atom (slice j, 64-row tile t) of 8192 bytes at
//           (j * Rp/64 + t) * 8192, so any multiple of 64 rows of one slice is contiguous.
//           Row r of an atom starts at 128 r; its 16-byte chunk c (K bytes 16c .. 16c+15 of
//           the slice) is stored at chunk position c ^ (r % 8): the 128-byte swizzle that
//           wgmma reads from shared memory (PTX ISA "Shared memory matrix layout", 128B
//           swizzle), so one bulk copy moves an atom into shared memory ready for wgmma.
//           Byte = e4m3 of e2m1 * 2^(s - R) for the element's block exponent s and the
//           group exponent R (fp8::e2m1_to_e4m3); 0 for padding and for flagged groups.
//   scales  S * Rp floats at offset S * Rp * 128: [j][row] = 2^R of the group, 1.0 for groups
//           without nonzero codes and for padding, 0.0 for a flagged group.
//   flags   S * Rp/16 bytes after the scales: [j][q] = 1 when a group of 16-row quarter tile
//           q (rows 16q .. 16q+15) in slice j is flagged, else 0 (image-kernel CTAs cover
//           16 or 64 rows of one slice and write one byte per 16 rows).
// A group is flagged (computed by the exact fix-up kernel instead) when its nonzero blocks'
// exponents span more than 14 binades, a block has the NaN scale 0xFF, or |R| > kMaxAbsR
// (then 2^(Ra + Rb) times a slice sum could leave fp32's normal range).
#pragma once

#include <cstdint>

#include "mxfp4/format.hpp"

namespace mxfp4::fp8 {

inline constexpr int kSliceK = 128;       ///< K elements per scaling group (4 blocks)
inline constexpr int kRowPad = 256;       ///< image rows are padded to this
inline constexpr int kAtomRows = 64;      ///< rows per 8192-byte atom
inline constexpr int kAtomBytes = kAtomRows * kSliceK;
inline constexpr int kFlagRows = 16;      ///< rows per flag byte
/// The flags of a slice fill whole 16-byte units, so the image ends on the last flag byte.
static_assert(kRowPad / kFlagRows % 16 == 0, "the flags of a slice fill whole 16-byte units");
inline constexpr int kMinShift = -8, kMaxShift = 6;  ///< e2m1 * 2^d is exact in e4m3 for d here
/// Largest |R| kept on the FP8 path: slice sums of e4m3 products are multiples of 2^-18 below
/// 2^25, so S * 2^(Ra + Rb) stays a normal fp32 number for |Ra|, |Rb| <= 48.
inline constexpr int kMaxAbsR = 48;

/// Geometry of the image of a [rows, K] matrix.
struct ImageGeometry {
  int64_t rows_padded;  ///< Rp
  int64_t slices;       ///< S
  MXFP4_HD static ImageGeometry of(int64_t rows, int64_t K) {
    return {(rows + kRowPad - 1) / kRowPad * kRowPad, (K + kSliceK - 1) / kSliceK};
  }
  MXFP4_HD int64_t code_bytes() const { return slices * rows_padded * kSliceK; }
  MXFP4_HD int64_t scale_offset() const { return code_bytes(); }
  MXFP4_HD int64_t flag_offset() const { return code_bytes() + slices * rows_padded * 4; }
  MXFP4_HD int64_t flag_count() const { return slices * (rows_padded / kFlagRows); }
  /// A multiple of 16 bytes: codes and scales are (rows_padded is), and so are the flags
  /// (kFlagRows's static_assert).
  MXFP4_HD int64_t total_bytes() const { return flag_offset() + flag_count(); }
  /// Byte offset of the e4m3 code of element (row r, column k).
  MXFP4_HD int64_t code_offset(int64_t r, int64_t k) const {
    const int64_t j = k / kSliceK, kk = k % kSliceK, t = r / kAtomRows, rr = r % kAtomRows;
    return (j * (rows_padded / kAtomRows) + t) * kAtomBytes + rr * kSliceK + (((kk / 16) ^ (rr % 8)) * 16) + kk % 16;
  }
  /// Index (in floats from scale_offset()) of the scale of group (row r, slice j).
  MXFP4_HD int64_t scale_index(int64_t r, int64_t j) const { return j * rows_padded + r; }
  /// Index (in bytes from flag_offset()) of the flag of (16-row quarter tile q, slice j): rows
  /// 16q .. 16q+15.
  MXFP4_HD int64_t flag_index(int64_t q, int64_t j) const { return j * (rows_padded / kFlagRows) + q; }
};

/// Group exponent and status of one (row, slice) from its blocks' exponents: `lo`/`hi` the
/// smallest/largest exponent (scale byte - 127) over blocks with a nonzero code, `any` whether
/// such a block exists, `nan` whether a block has scale 0xFF. Returns true when the group stays
/// on the FP8 path, and sets R (0 without nonzero blocks).
MXFP4_HD bool plan_group(int lo, int hi, bool any, bool nan, int& R) {
  R = any ? hi - kMaxShift : 0;
  if (nan) return false;
  if (!any) return true;
  return hi - lo <= kMaxShift - kMinShift && R >= -kMaxAbsR && R <= kMaxAbsR;
}

/// The e4m3 byte (OCP FN: bias 7, 3 mantissa bits, subnormals m * 2^-9) of e2m1 code `code`
/// (low 4 bits) times 2^d, d in [kMinShift, kMaxShift]: exact, sign of -0 kept.
MXFP4_HD uint8_t e2m1_to_e4m3(uint8_t code, int d) {
  const uint8_t sign = (code & 8u) ? 0x80 : 0x00;
  const uint32_t mag = code & 7u;  // values {0, 0.5, 1, 1.5, 2, 3, 4, 6}
  if (mag == 0) return sign;
  // |value| = 2^e * (1 + f/2), f in {0, 1}: mag 1 -> (e -1, f 0), 2 -> (0, 0), 3 -> (0, 1),
  // 4 -> (1, 0), 5 -> (1, 1), 6 -> (2, 0), 7 -> (2, 1).
  const int e = (mag == 1 ? -1 : int(mag >> 1) - 1) + d;
  const uint32_t f = (mag >= 2) ? (mag & 1u) : 0u;
  if (e >= -6) return uint8_t(sign | uint32_t(e + 7) << 3 | f << 2);  // normal, mantissa bit 2
  // Subnormal m * 2^-9: m = (2 + f) * 2^(e + 8), e >= -9 since d >= kMinShift (f = 0 there).
  return uint8_t(sign | ((2u + f) << (e + 9)) >> 1);
}

}  // namespace mxfp4::fp8
