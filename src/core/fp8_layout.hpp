// The 8-bit operand image of path "fp8" (docs/fp8-path.md): an MXFP4 matrix [rows, K]
// re-encoded for Hopper's 8-bit wgmma, one scaling group per (row, 128-wide K slice). The
// prefill GEMM reads the weights' image (built once by prepack_fp8) and the activations' image
// (built per call in the workspace); both are addressed by these host/device functions and
// nothing else. Since session 17 the codes are s8 (the s8 x s8 -> s32 tensor core sums
// exactly, where Hopper's e4m3 MMA truncates: docs/perf-notes.md, sessions 3 and 17).
//
// Layout, rows padded to Rp = round_up(rows, 256) (a 2-CTA cluster's 256 rows are always
// inside the image), S = ceil(K / 128) slices:
//   codes      S * Rp * 128 bytes at offset 0: atom (slice j, 64-row tile t) of 8192 bytes at
//              (j * Rp/64 + t) * 8192, so any multiple of 64 rows of one slice is contiguous.
//              Row r of an atom starts at 128 r; its 16-byte chunk c (K bytes 16c .. 16c+15 of
//              the slice) is stored at chunk position c ^ (r % 8): the 128-byte swizzle that
//              wgmma reads from shared memory (PTX ISA "Shared memory matrix layout", 128B
//              swizzle), so one bulk copy moves an atom into shared memory ready for wgmma.
//              Byte = the s8 integer e2m1 * 2^(s - e) of an element of block exponent s (scale
//              byte - 127), e the block's image exponent below; 0 for padding and flagged groups.
//   metadata   S * Rp/64 blocks of kMetaBlockBytes = 528 bytes at offset S * Rp * 128, one per
//              (slice j, 64-row atom t) at (j * Rp/64 + t) * 528 (so the metadata of any
//              multiple of 64 rows of one slice is contiguous, and the GEMM moves a tile's with
//              one bulk copy per operand and stage: layout 4, session 24; layout 3 had three
//              arrays and three copies). A block holds, for rows 64 t + i (i = 0 .. 63):
//     scales     at byte 4 i, a float: 2^R of the group (the one scale of a narrow group;
//                R = lo - 1 for a wide one), 0.0 for a flagged group, 1.0 for padding rows;
//     exponents  at byte 256 + 4 i, a word holding the image exponents e_0 .. e_3 of the
//                group's blocks as E8M0 bytes (byte b = e_b + 127): element value = code *
//                2^e_b, and byte << 23 is 2^e_b as fp32 bits. A narrow group (block exponents
//                span <= 3 binades) has e_b = R for every b (choose_exponent picks R so that
//                the slices of a row's chain chunk share it where they can); a wide group has
//                e_b = s_b - 1 per nonzero block and R for zero blocks. Every e_b of a group
//                on the path lies in [-kMaxAbsR, kMaxAbsR]. Padding rows: e = 0 (byte 127);
//                flagged groups: byte 0 (kFlaggedExponent, read as +0.0);
//     record     at byte 512, 16 bytes: byte q = 1 when quarter q (rows 64 t + 16 q ..) has
//                a wide group on the path, and byte 4 + q = 1 when the quarter's chain breaks
//                after slice j: some row of the quarter does not continue (chain_continues)
//                into slice j + 1, or j is the last slice of its chain chunk (kChainSlices)
//                or of the matrix. Bytes 8-15 are 0. A GEMM tile whose wide bytes are all zero
//                chains a slice's four k32 steps in the tensor core (integer sums are exact);
//                if its break bytes are zero too, the next slice adds into the same integer
//                sums, and the tile promotes once per chain with the scales of the chain's
//                last slice. Any other tile promotes each k32 step with its block's exponents.
//   flags      S * Rp/16 bytes after the records: [j][q] = 1 when a group of 16-row
//              quarter tile q (rows 16q .. 16q+15) in slice j is flagged, else 0 (written by
//              the image-kernel CTA of those 16 rows).
// A group is flagged (computed by the exact fix-up instead) when a block has the NaN
// scale 0xFF or lo - 1 or hi - 1 leaves [-kMaxAbsR, kMaxAbsR] (then 2^(ea + eb) times a slice
// sum could leave fp32's normal range).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/qdq_bf16x2.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::fp8 {

inline constexpr int kSliceK = 128;       ///< K elements per scaling group (4 blocks)
inline constexpr int kRowPad = 256;       ///< image rows are padded to this
inline constexpr int kAtomRows = 64;      ///< rows per 8192-byte atom
inline constexpr int kAtomBytes = kAtomRows * kSliceK;
inline constexpr int kFlagRows = 16;      ///< rows per flag byte
inline constexpr int kWideRecordBytes = 16;  ///< per (slice, atom): wide and break bytes per 16-row quarter
/// Metadata block of one (slice, atom): 64 scales, 64 exponent words, the record.
inline constexpr int kMetaExponents = 4 * kAtomRows, kMetaRecord = 8 * kAtomRows;  ///< byte offsets in a block
inline constexpr int kMetaBlockBytes = kMetaRecord + kWideRecordBytes;
static_assert(kMetaBlockBytes % 16 == 0, "metadata blocks keep bulk copies 16-byte aligned");
/// Byte offset of the break bytes in a record (the wide bytes are at 0).
inline constexpr int kBreakByte = 4;
/// Slices per chain chunk: a chain (slices of a row sharing R, summed in s32) never crosses a
/// multiple of kChainSlices, so its integer sum stays below kChainSlices * 128 * 96 * 96 < 2^24
/// and converts to fp32 exactly.
inline constexpr int kChainSlices = 8;
static_assert(int64_t{kChainSlices} * 128 * 96 * 96 < (int64_t{1} << 24), "a chain's s32 sum converts to fp32 exactly");
/// The flags of a slice fill whole 16-byte units, so the image ends on the last flag byte.
static_assert(kRowPad / kFlagRows % 16 == 0, "the flags of a slice fill whole 16-byte units");
/// e2m1 * 2^d is an s8 integer for d in [kMinShift, kMaxShift]: 0.5 * 2 = 1 and 6 * 2^4 = 96 <= 127.
inline constexpr int kMinShift = 1, kMaxShift = 4;
/// Largest block-exponent span (binades) of a narrow group: with R = hi - kMaxShift the lowest
/// block's shift lo - R is still >= kMinShift.
inline constexpr int kNarrowSpan = kMaxShift - kMinShift;
/// Largest |e| kept on the path: slice sums of s8 products are integers below 2^21 (128 * 96 *
/// 96), so S * 2^(ea + eb) stays a normal fp32 number for |ea|, |eb| <= 48.
inline constexpr int kMaxAbsR = 48;
/// Image exponent of every block of a flagged group: E8M0 byte 0, read as +0.0.
inline constexpr int kFlaggedExponent = -127;

/// Geometry of the image of a [rows, K] matrix.
struct ImageGeometry {
  int64_t rows_padded;  ///< Rp
  int64_t slices;       ///< S
  MXFP4_HD static ImageGeometry of(int64_t rows, int64_t K) {
    return {(rows + kRowPad - 1) / kRowPad * kRowPad, (K + kSliceK - 1) / kSliceK};
  }
  MXFP4_HD int64_t code_bytes() const { return slices * rows_padded * kSliceK; }
  MXFP4_HD int64_t meta_offset() const { return code_bytes(); }
  MXFP4_HD int64_t flag_offset() const { return meta_offset() + slices * (rows_padded / kAtomRows) * kMetaBlockBytes; }
  MXFP4_HD int64_t flag_count() const { return slices * (rows_padded / kFlagRows); }
  /// A multiple of 16 bytes: codes and metadata blocks are, and so are the flags (kFlagRows's
  /// static_assert).
  MXFP4_HD int64_t total_bytes() const { return flag_offset() + flag_count(); }
  /// Byte offset of the s8 code of element (row r, column k).
  MXFP4_HD int64_t code_offset(int64_t r, int64_t k) const {
    const int64_t j = k / kSliceK, kk = k % kSliceK, t = r / kAtomRows, rr = r % kAtomRows;
    return (j * (rows_padded / kAtomRows) + t) * kAtomBytes + rr * kSliceK + (((kk / 16) ^ (rr % 8)) * 16) + kk % 16;
  }
  /// Byte offset of the metadata block of (64-row atom t, slice j).
  MXFP4_HD int64_t meta_block(int64_t t, int64_t j) const {
    return meta_offset() + (j * (rows_padded / kAtomRows) + t) * kMetaBlockBytes;
  }
  /// Byte offsets of group (row r, slice j)'s scale (a float) and exponent word.
  MXFP4_HD int64_t scale_at(int64_t r, int64_t j) const { return meta_block(r / kAtomRows, j) + 4 * (r % kAtomRows); }
  MXFP4_HD int64_t exponent_at(int64_t r, int64_t j) const {
    return meta_block(r / kAtomRows, j) + kMetaExponents + 4 * (r % kAtomRows);
  }
  /// Byte offset of the record of (64-row atom t, slice j).
  MXFP4_HD int64_t record_at(int64_t t, int64_t j) const { return meta_block(t, j) + kMetaRecord; }
  /// Bytes from one slice's metadata blocks to the next slice's (the same atom).
  MXFP4_HD int64_t meta_slice_stride() const { return (rows_padded / kAtomRows) * kMetaBlockBytes; }
  /// Index (in bytes from flag_offset()) of the flag of (16-row quarter tile q, slice j): rows
  /// 16q .. 16q+15.
  MXFP4_HD int64_t flag_index(int64_t q, int64_t j) const { return j * (rows_padded / kFlagRows) + q; }
};

/// How a (row, slice) group is held by the image.
enum class GroupKind : uint8_t {
  narrow,   ///< one image exponent R for the group's four blocks
  wide,     ///< one image exponent per block (s_b - 1)
  flagged,  ///< not on the path: codes 0, computed by the fix-up
};

/// A group's kind and the image exponents R that can hold it: any R in [bottom, top] encodes
/// it exactly; `canon` is the one it takes without an anchor to keep (group_range).
struct GroupRange {
  GroupKind kind;
  bool nonzero;  ///< the group has a nonzero code
  int bottom, top, canon;
};

/// Kind and exponent range of one (row, slice) group from its blocks' exponents: `lo`/`hi` the
/// smallest/largest exponent (scale byte - 127) over blocks with a nonzero code, `any` whether
/// such a block exists, `nan` whether a block has scale 0xFF.
/// - narrow (span hi - lo <= 3): R in [max(hi - kMaxShift, -kMaxAbsR), lo - 1] (shifts s - R in
///   [kMinShift, kMaxShift], |R| <= kMaxAbsR); canon = hi - kMaxShift + 1 within that range,
///   the R that leaves one binade of room on both sides for the other slices of a row of
///   steady magnitude;
/// - without nonzero blocks: narrow, any R in [-kMaxAbsR, kMaxAbsR], canon 0;
/// - wide and flagged groups: R = lo - 1 only (0 for a flagged group without nonzero blocks).
MXFP4_HD GroupRange group_range(int lo, int hi, bool any, bool nan) {
  const int low = any ? lo - 1 : 0;
  if (nan) return {GroupKind::flagged, any, low, low, low};
  if (!any) return {GroupKind::narrow, false, -kMaxAbsR, kMaxAbsR, 0};
  if (lo - 1 < -kMaxAbsR || hi - 1 > kMaxAbsR) return {GroupKind::flagged, true, low, low, low};
  if (hi - lo > kNarrowSpan) return {GroupKind::wide, true, low, low, low};
  const int bottom = hi - kMaxShift > -kMaxAbsR ? hi - kMaxShift : -kMaxAbsR, top = lo - 1;
  const int canon = hi - kMaxShift + 1 < bottom ? bottom : (hi - kMaxShift + 1 > top ? top : hi - kMaxShift + 1);
  return {GroupKind::narrow, true, bottom, top, canon};
}

/// The anchor of a row's chain chunk: the canon of the row's group in the chunk's first slice,
/// when that group is narrow with a nonzero code (else none: `has` false). Every group of the
/// chunk whose range admits the anchor takes it, so the row's slices share one R wherever
/// they can, and each slice's R depends on two slices only (its own and the chunk's first).
MXFP4_HD int chunk_anchor(const GroupRange& first, bool& has) {
  has = first.kind == GroupKind::narrow && first.nonzero;
  return first.canon;
}

/// The image exponent of a group of range `g` in a chunk with anchor `anchor` (`has_anchor`):
/// the anchor where g admits it (the chain goes on), else g.canon.
MXFP4_HD int choose_exponent(const GroupRange& g, bool has_anchor, int anchor) {
  return has_anchor && anchor >= g.bottom && anchor <= g.top ? anchor : g.canon;
}

/// Whether a row's group of slice j (kind `kind`, exponent R) continues its chain into slice
/// j + 1 of the same chain chunk, whose group has kind `next` and exponent `next_R`: both
/// narrow with the same R. Flagged and wide groups break; so does a chunk's end (chunk_ends).
MXFP4_HD bool chain_continues(GroupKind kind, int R, GroupKind next, int next_R) {
  return kind == GroupKind::narrow && next == GroupKind::narrow && R == next_R;
}

/// Whether slice j is the last of its chain chunk or of the matrix's S slices.
MXFP4_HD bool chunk_ends(int64_t j, int64_t slices) { return j % kChainSlices == kChainSlices - 1 || j == slices - 1; }

/// Image exponent of a block with exponent s (scale byte - 127) and nonzero codes `nonzero` in
/// a group of kind `kind` and group exponent R (choose_exponent).
MXFP4_HD int block_image_exponent(GroupKind kind, int R, int s, bool nonzero) {
  return kind == GroupKind::wide && nonzero ? s - 1 : R;
}

/// The s8 byte (two's complement) of e2m1 code `code` (low 4 bits) times 2^d, d in
/// [kMinShift, kMaxShift]: exact; both zeros give 0 (s8 has no -0; a zero product adds nothing).
MXFP4_HD uint8_t e2m1_to_s8(uint8_t code, int d) {
  // |value| * 2 for the magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
  constexpr int kTwice[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  const int v = kTwice[code & 7u] << (d - 1);
  return uint8_t((code & 8u) ? -v : v);
}

/// e2m1_to_s8 of four e2m1 codes at once: code i in bits 4i .. 4i+3 of `codes` (the low 16
/// bits; the packed layout's nibble order), each times 2^d, d in [kMinShift, kMaxShift], as
/// byte i. The magnitudes come from a byte_permute table of {0, 1, 2, 3, 4, 6, 8, 12} << (d - 1)
/// (at most 96, so the shift moves no bit across a byte), the signs (bit 3 of each code) from
/// the sign-replicating selectors over the codes moved so that each sign is a byte's bit 7.
MXFP4_HD uint32_t e2m1_to_s8_quad(uint32_t codes, int d) {
  const uint32_t lo = 0x03020100u << (d - 1), hi = 0x0C080604u << (d - 1);
  const uint32_t mag = qdq::byte_permute(lo, hi, codes & 0x7777u);
  const uint32_t neg = qdq::byte_permute(codes << 4, codes, 0xD9C8u);  // codes 0..3's bit 3
  return qdq::apply_signs(mag, neg);
}

/// The E8M0 byte of image exponent e in [-127, 127].
MXFP4_HD constexpr uint8_t exponent_byte(int e) { return uint8_t(e + 127); }

/// 2^(b - 127) as fp32 for an image exponent byte b (byte 0, the flagged groups', gives +0.0):
/// b written into fp32's exponent field.
MXFP4_HD float exp2_of_exponent_byte(uint8_t b) {
  const uint32_t bits = uint32_t(b) << 23;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

}  // namespace mxfp4::fp8
