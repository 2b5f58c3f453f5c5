// Offsets of packed layout v2 (docs/packed-layout.md), shared by the CPU and the CUDA code
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

/// Offset of the 32-bit code word holding element (row r, K column k) in a layout with padded
/// K `Kp`: tile (r/16, k/64) at 512 bytes each, lane l = 4g + t at 16 l, word 2h + s
/// (docs/packed-layout.md, "Code region").
MXFP4_HD int64_t code_word_offset(int64_t r, int64_t k, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = k / 64, kk = k % 64;
  const int64_t g = rr % 8, h = kk / 32, s = (kk % 32) / 16, t = ((kk % 16) % 8) / 2;
  return (nt * (Kp / 64) + kc) * 512 + 16 * (4 * g + t) + 4 * (2 * h + s);
}

/// Nibble position (0..7, bits 4p..4p+3 of the little-endian word) of element (r, k) in its
/// code word: p = q + 4e, q = fragment register (2 * [k%16 >= 8] + [r%16 >= 8]), e = k % 2.
MXFP4_HD int code_nibble(int64_t r, int64_t k) {
  const int64_t k16 = k % 16;
  const int q = int((r % 16) / 8 + 2 * (k16 / 8));
  return q + 4 * int(k % 2);
}

/// The plain code byte of (row r, columns k, k+1), k even: code(k) | code(k+1) << 4.
MXFP4_HD uint8_t read_code_pair(const uint8_t* packed, int64_t r, int64_t k, int64_t Kp) {
  const uint8_t* w = packed + code_word_offset(r, k, Kp);
  const int p = code_nibble(r, k);  // element k+1 sits at p + 4: two bytes further
  const uint8_t lo = uint8_t((w[p / 2] >> (4 * (p % 2))) & 0xF);
  const uint8_t hi = uint8_t((w[p / 2 + 2] >> (4 * (p % 2))) & 0xF);
  return uint8_t(lo | (hi << 4));
}

/// Stores the plain code byte `pair` of (row r, columns k, k+1), k even, into its two nibbles.
MXFP4_HD void write_code_pair(uint8_t* packed, int64_t r, int64_t k, int64_t Kp, uint8_t pair) {
  uint8_t* w = packed + code_word_offset(r, k, Kp);
  const int p = code_nibble(r, k), shift = 4 * (p % 2);
  w[p / 2] = uint8_t((w[p / 2] & ~(0xF << shift)) | ((pair & 0xF) << shift));
  w[p / 2 + 2] = uint8_t((w[p / 2 + 2] & ~(0xF << shift)) | ((pair >> 4) << shift));
}

/// Offset (from the start of the buffer) of the scale byte of (row r, K block b), with padded
/// rows `Np` and padded K `Kp` (docs/packed-layout.md, "Scale region").
MXFP4_HD int64_t scale_offset(int64_t r, int64_t b, int64_t Np, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = b / 2;
  const int64_t i = 2 * (rr / 8) + (b % 2);
  return Np * Kp / 2 + (nt * (Kp / 64) + kc) * 32 + 4 * (rr % 8) + i;
}

}  // namespace mxfp4::packed
