// Test helper: quantize one 32-element block through every CPU producer of codes and scales
// (bug kind K03: all must be byte-identical).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "cpu/spec_ref.hpp"
#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {

struct PathResult {
  std::string path;
  uint8_t scale = 0;
  std::vector<uint8_t> packed;  // 16 bytes
};

/// Runs `block` (32 fp32 values) through: quantize with fp32 / bf16 / fp16 input (each when
/// exact), 1 row; a 32 x 128 matrix (block at row 21, K block 2, random neighbours, 2 threads)
/// with plain and with AITER-shuffled scales (then unshuffle_scales), with AITER-shuffled
/// weights (shuffle_weight, unshuffle_weight); prepack_dense then unpack.
inline std::vector<PathResult> quantize_all_paths(const std::vector<float>& block, ScaleRule rule) {
  std::vector<PathResult> out;
  auto pack_result = [](const std::string& name, uint8_t s, const uint8_t* codes) {
    return PathResult{name, s, std::vector<uint8_t>(codes, codes + 16)};
  };
  {
    uint8_t c[16], s = 0;
    quantize(block.data(), DType::fp32, 1, 32, 32, c, &s, rule);
    out.push_back(pack_result("fp32", s, c));
  }
  std::vector<uint16_t> hb(32), hh(32);
  bool bf_ok = true, h_ok = true;
  for (int i = 0; i < 32; ++i) {
    auto b = exact_bf16(block[size_t(i)]);
    auto h = exact_f16(block[size_t(i)]);
    bf_ok = bf_ok && b.has_value();
    h_ok = h_ok && h.has_value();
    hb[size_t(i)] = b.value_or(0);
    hh[size_t(i)] = h.value_or(0);
  }
  if (bf_ok) {
    uint8_t c[16], s = 0;
    quantize(hb.data(), DType::bf16, 1, 32, 32, c, &s, rule);
    out.push_back(pack_result("bf16", s, c));
  }
  if (h_ok) {
    uint8_t c[16], s = 0;
    quantize(hh.data(), DType::fp16, 1, 32, 32, c, &s, rule);
    out.push_back(pack_result("fp16", s, c));
  }
  // Inside a larger matrix.
  constexpr int64_t R = 32, K = 128, r0 = 21, j0 = 2;
  std::vector<float> x = randn_f32(size_t(R * K), 99);
  std::memcpy(x.data() + r0 * K + j0 * 32, block.data(), 128);
  Exec two;
  two.threads = 2;
  {
    std::vector<uint8_t> codes(R * K / 2), scales(R * K / 32);
    quantize(x.data(), DType::fp32, R, K, K, codes.data(), scales.data(), rule, two);
    out.push_back(pack_result("matrix plain", scales[r0 * 4 + j0], codes.data() + r0 * 64 + j0 * 16));
    std::vector<uint8_t> sw(codes.size()), back(codes.size());
    shuffle_weight(codes.data(), R, K, sw.data(), two);
    unshuffle_weight(sw.data(), R, K, back.data(), two);
    out.push_back(pack_result("matrix shuffle_weight round trip", scales[r0 * 4 + j0], back.data() + r0 * 64 + j0 * 16));
  }
  {
    std::vector<uint8_t> codes(R * K / 2), shuffled(size_t(shuffled_scales_bytes(R, 4)), 0xEE), plain(R * 4);
    quantize(x.data(), DType::fp32, R, K, K, codes.data(), shuffled.data(), rule, two, ScaleLayout::aiter_shuffled);
    unshuffle_scales(shuffled.data(), R, 4, plain.data());
    out.push_back(pack_result("matrix shuffled scales", plain[r0 * 4 + j0], codes.data() + r0 * 64 + j0 * 16));
  }
  {
    std::vector<uint8_t> packed(size_t(packed_bytes(R, K))), tmp(R * K / 2 + R * K / 32);
    std::vector<uint8_t> codes(R * K / 2), scales(R * K / 32);
    const PackedWeights p = prepack_dense(x.data(), DType::fp32, R, K, K, packed.data(), tmp.data(), rule, two);
    unpack(p, codes.data(), scales.data());
    out.push_back(pack_result("prepack_dense + unpack", scales[r0 * 4 + j0], codes.data() + r0 * 64 + j0 * 16));
  }
  return out;
}

}  // namespace mxfp4::test
