// Offsets of packed layout v1 (docs/packed-layout.md), shared by the CPU prepack/unpack and,
// if they wish, the CUDA kernels (host/device functions, no state).
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

/// Offset of the code byte holding (row r, K columns k and k+1), k even, in a layout with
/// padded K `Kp`: tile (r/16, k/64) at 512 bytes each, lane l = 4g + t at 16 l, byte
/// j = 8h + 4s + q (docs/packed-layout.md, "Code region").
MXFP4_HD int64_t code_offset(int64_t r, int64_t k, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = k / 64, kk = k % 64;
  const int64_t g = rr % 8, h = kk / 32, s = (kk % 32) / 16, k16 = kk % 16;
  const int64_t t = (k16 % 8) / 2, q = rr / 8 + 2 * (k16 / 8);
  return (nt * (Kp / 64) + kc) * 512 + 16 * (4 * g + t) + 8 * h + 4 * s + q;
}

/// Offset (from the start of the buffer) of the scale byte of (row r, K block b), with padded
/// rows `Np` and padded K `Kp` (docs/packed-layout.md, "Scale region").
MXFP4_HD int64_t scale_offset(int64_t r, int64_t b, int64_t Np, int64_t Kp) {
  const int64_t nt = r / 16, rr = r % 16, kc = b / 2;
  const int64_t i = 2 * (rr / 8) + (b % 2);
  return Np * Kp / 2 + (nt * (Kp / 64) + kc) * 32 + 4 * (rr % 8) + i;
}

}  // namespace mxfp4::packed
