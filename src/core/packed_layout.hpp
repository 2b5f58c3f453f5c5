// Offsets and bit positions of packed layout v3 (docs/packed-layout.md), shared by the CPU and the CUDA code
// (host/device functions, no state).
#pragma once

#include <cstdint>

#include "mxfp4/format.hpp"

namespace mxfp4::packed {

/// Rows padded to the 16-row tile: Np = round_up(N, 16).
MXFP4_HD int64_t padded_rows(int64_t N) { return (N + 15) / 16 * 16; }
/// K padded to the 64-column tile: Kp = round_up(K, 64).
MXFP4_HD int64_t padded_k(int64_t K) { return (K + 63) / 64 * 64; }
/// Bytes of the code region, Np * Kp / 2 (the scale region starts here).
MXFP4_HD int64_t code_region_bytes(int64_t N, int64_t K) { return padded_rows(N) * padded_k(K) / 2; }
/// Total bytes, Np * Kp / 2 + Np * Kp / 32.
MXFP4_HD int64_t total_bytes(int64_t N, int64_t K) {
  return padded_rows(N) * padded_k(K) / 2 + padded_rows(N) * padded_k(K) / 32;
}

/// Geometry of the packed layout for a [rows, K] matrix (kernel arguments; host and device).
struct Geometry {
  int64_t rows_padded;  ///< padded_rows(rows) = round_up(rows, 16)
  int64_t k_padded;     ///< round_up(K, 64)
  int64_t k_chunks;     ///< k_padded / 64: tiles per 16-row slab
  int64_t code_bytes;   ///< rows_padded * k_padded / 2: start of the scale region
  MXFP4_HD static Geometry of(int64_t rows, int64_t K) {
    Geometry g;
    g.rows_padded = padded_rows(rows);
    g.k_padded = padded_k(K);
    g.k_chunks = g.k_padded / 64;
    g.code_bytes = code_region_bytes(rows, K);
    return g;
  }
};

/// Offset of the 32-bit code word holding element (row r, K column k) in a layout with padded
/// K `Kp`: tile (r/16, k/64) at 512 bytes each, lane l = 4g + t at 16 l, word 2h + s
/// (docs/packed-layout.md, "Code region").
MXFP4_HD int64_t code_word_offset(int64_t r, int64_t k, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = k / 64, kk = k % 64;
  const int64_t g = rr % 8, h = kk / 32, s = (kk % 32) / 16, t = ((kk % 16) % 8) / 2;
  return (nt * (Kp / 64) + kc) * 512 + 16 * (4 * g + t) + 4 * (2 * h + s);
}

/// Fragment register q (0..3: a0a1, a2a3, a4a5, a6a7 of the m16n8k16 A fragment) and half e
/// (0: low, k even; 1: high, k odd) of element (r, k) in its code word:
/// q = 2 * [k % 16 >= 8] + [r % 16 >= 8], e = k % 2.
MXFP4_HD int code_register(int64_t r, int64_t k) { return int((r % 16) / 8 + 2 * ((k % 16) / 8)); }
MXFP4_HD int code_half(int64_t k) { return int(k % 2); }

/// Bit position in its 32-bit code word of bit j of the e2m1 code of register q, half e
/// (j = 0: mantissa, 1-2: exponent, 3: sign). The magnitude bits of half e belong at bf16
/// bits 6 + 16e .. 8 + 16e and the sign at 15 + 16e (the bf16 pair e2m1 * 2^-126 that the
/// kernels decode, src/cuda/common.cuh); register q's bits sit that pattern rotated by 0, 4
/// and 10 for q = 0, 1, 2, and for q = 3 by 6 (bits 7, 8, 15 and 23, 24, 31 of the pattern)
/// or 14 (bits 6 and 22), so that a register decodes with one rotate and one AND (two of
/// each for q = 3). docs/packed-layout.md, "Code region".
MXFP4_HD int code_bit(int q, int e, int j) {
  const int target = (j == 3 ? 15 : 6 + j) + 16 * e;
  const int rot = q == 0 ? 0 : q == 1 ? 4 : q == 2 ? 10 : (j == 0 ? 14 : 6);
  return (target + rot) % 32;
}

/// The 4-bit e2m1 `code` of register q, half e, at its bits of a code word (other bits 0).
MXFP4_HD uint32_t scatter_code(uint32_t code, int q, int e) {
  uint32_t w = 0;
  for (int j = 0; j < 4; ++j) w |= ((code >> j) & 1u) << code_bit(q, e, j);
  return w;
}

/// The 4-bit e2m1 code of register q, half e, read from code word `w`.
MXFP4_HD uint32_t gather_code(uint32_t w, int q, int e) {
  uint32_t code = 0;
  for (int j = 0; j < 4; ++j) code |= ((w >> code_bit(q, e, j)) & 1u) << j;
  return code;
}

/// Rotate right (PTX shf.r.wrap; a funnel shift of w with itself on the GPU).
MXFP4_HD uint32_t rotr32(uint32_t w, int n) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(w, w, unsigned(n));
#else
  return n == 0 ? w : (w >> n) | (w << (32 - n));
#endif
}

/// One code word (8 e2m1 codes) -> the four bf16x2 fragment registers holding the codes'
/// values times 2^-126: each 3-bit magnitude at the low bf16 exponent bits and the top
/// mantissa bit (e2m1's subnormal 0.5 becomes the bf16 subnormal 2^-127, every other code the
/// bf16 normal 2^(e-127) * (1 + m/2)), the sign at bit 15 of each half. Register q is the word
/// rotated right by 0, 4 or 10 and masked (q = 3: two rotations, code_bit). 9 instructions per
/// word on sm_90; checked against gather_code on the CPU (tests/cpu/test_packed.cpp).
MXFP4_HD void decode_word_scaled_down(uint32_t w, uint32_t (&r)[4]) {
  constexpr uint32_t kBits = 0x81C081C0u;                     // sign, e1, e0, m of both halves
  constexpr uint32_t kRot6 = 0x81808180u, kRot14 = 0x00400040u;  // q = 3: which bits come from where
  r[0] = w & kBits;
  r[1] = rotr32(w, 4) & kBits;
  r[2] = rotr32(w, 10) & kBits;
  r[3] = (rotr32(w, 6) & kRot6) | (rotr32(w, 14) & kRot14);
}

/// True when each of the four E8M0 bytes of `sc` (a lane's chunk scale word, docs/packed-layout.md
/// "Scale region") is <= 128, the case where one bf16 multiply by fused_scale_factor turns
/// decode_word_scaled_down's values into e2m1 * 2^(b - 127). A byte b exceeds 128 iff its bit 7
/// and one of its low 7 bits are set; adding 0x7F to the low 7 bits sets bit 7 iff one of them
/// is, and no carry leaves the byte: three ALU operations on the GPU, where __vcmpleu4 took about
/// eight (the small-M K loop is bound by the ALU pipe: docs/perf-notes.md, session 33).
MXFP4_HD bool scale_bytes_fuse(uint32_t sc) {
  return (((sc & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) & sc & 0x80808080u) == 0u;
}

/// The bf16x2 pair {2^(b - 1), 2^(b - 1)} for byte i (0..3) of `sc`, b <= 128: bf16 bits
/// (b + 126) << 7 in each half, computed as b * 0x00800080 + 0x3F003F00 (no carry into the upper
/// half for b <= 128). The product of decode_word_scaled_down's e2m1 * 2^-126 with it is e2m1 *
/// 2^(b - 127), exactly. On the GPU one PRMT picks the byte and one IMAD, which runs on the FMA
/// pipe beside the ALU, makes both halves.
MXFP4_HD uint32_t fused_scale_factor(uint32_t sc, int i) {
#if defined(__CUDA_ARCH__)
  const uint32_t b = __byte_perm(sc, 0u, 0x4440u + unsigned(i));
#else
  const uint32_t b = (sc >> (8 * i)) & 0xFFu;
#endif
  return b * 0x00800080u + 0x3F003F00u;
}

/// The 32-bit code word at `p` (little-endian bytes, any alignment).
MXFP4_HD uint32_t load_word(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

/// The plain code byte of (row r, columns k, k+1), k even: code(k) | code(k+1) << 4.
MXFP4_HD uint8_t read_code_pair(const uint8_t* packed, int64_t r, int64_t k, int64_t Kp) {
  const uint32_t w = load_word(packed + code_word_offset(r, k, Kp));
  const int q = code_register(r, k);
  return uint8_t(gather_code(w, q, 0) | (gather_code(w, q, 1) << 4));
}

/// Stores the plain code byte `pair` of (row r, columns k, k+1), k even, into its bits.
MXFP4_HD void write_code_pair(uint8_t* packed, int64_t r, int64_t k, int64_t Kp, uint8_t pair) {
  uint8_t* p = packed + code_word_offset(r, k, Kp);
  uint32_t w = load_word(p);
  const int q = code_register(r, k);
  w &= ~(scatter_code(0xFu, q, 0) | scatter_code(0xFu, q, 1));
  w |= scatter_code(pair & 0xFu, q, 0) | scatter_code(uint32_t(pair) >> 4, q, 1);
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(w >> (8 * i));
}

/// Offset (from the start of the buffer) of the scale byte of (row r, K block b), with padded
/// rows `Np` and padded K `Kp` (docs/packed-layout.md, "Scale region").
MXFP4_HD int64_t scale_offset(int64_t r, int64_t b, int64_t Np, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = b / 2;
  const int64_t i = 2 * (rr / 8) + (b % 2);
  return Np * Kp / 2 + (nt * (Kp / 64) + kc) * 32 + 4 * (rr % 8) + i;
}

}  // namespace mxfp4::packed
