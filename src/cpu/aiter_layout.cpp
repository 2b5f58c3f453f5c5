// AITER layouts on the CPU (spec §4): e8m0_shuffle'd scales and shuffle_weight(16,16) codes,
// offsets from fmt::aiter_scale_offset / fmt::aiter_weight_offset. Padding is never read or
// written.
#include <cstdint>

#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::cpu {

void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, int threads) {
  const int64_t sn = (kblocks + 7) / 8 * 8;
  parallel_for(rows, threads, std::max<int64_t>(1, 65536 / kblocks), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < kblocks; ++c) shuffled[fmt::aiter_scale_offset(r, c, sn)] = plain[r * kblocks + c];
  });
}

void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, int threads) {
  const int64_t sn = (kblocks + 7) / 8 * 8;
  parallel_for(rows, threads, std::max<int64_t>(1, 65536 / kblocks), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < kblocks; ++c) plain[r * kblocks + c] = shuffled[fmt::aiter_scale_offset(r, c, sn)];
  });
}

void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, int threads) {
  const int64_t kb = K / 2;
  parallel_for(N, threads, std::max<int64_t>(1, 65536 / kb), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t c = 0; c < kb; ++c) shuffled[fmt::aiter_weight_offset(n, c, kb)] = plain[n * kb + c];
  });
}

void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, int threads) {
  const int64_t kb = K / 2;
  parallel_for(N, threads, std::max<int64_t>(1, 65536 / kb), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t c = 0; c < kb; ++c) plain[n * kb + c] = shuffled[fmt::aiter_weight_offset(n, c, kb)];
  });
}

MxMatrix to_plain(const MxMatrix& q, PlainStorage& storage, int threads) {
  MxMatrix p = q;
  if (q.code_layout == CodeLayout::aiter_shuffled) {
    storage.codes.resize(size_t(q.rows * (q.K / 2)));
    unshuffle_weight(q.codes, q.rows, q.K, storage.codes.data(), threads);
    p.codes = storage.codes.data();
    p.code_layout = CodeLayout::plain;
  }
  if (q.scale_layout == ScaleLayout::aiter_shuffled) {
    storage.scales.resize(size_t(q.rows * (q.K / kBlockSize)));
    unshuffle_scales(q.scales, q.rows, q.K / kBlockSize, storage.scales.data(), threads);
    p.scales = storage.scales.data();
    p.scale_layout = ScaleLayout::plain;
  }
  return p;
}

}  // namespace mxfp4::cpu
