// Packed layout v3 on the CPU (docs/packed-layout.md): prepack writes every byte of the
// buffer tile by tile (padding rows/columns zero), unpack is its exact inverse.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/packed_layout.hpp"

#include "cpu/cpu_backend.hpp"
#include "cpu/fp8_plan.hpp"
#include "cpu/parallel.hpp"

namespace mxfp4::cpu {

void prepack(const MxMatrix& b, uint8_t* out, int threads) {
  PlainStorage storage;
  const MxMatrix p = to_plain(b, storage, threads);
  const int64_t N = p.rows, K = p.K, kb = K / 2, kblocks = K / kBlockSize;
  const int64_t Np = packed::padded_rows(N), Kp = packed::padded_k(K);
  const int64_t ktiles = Kp / 64;
  // One task = one 16-row tile strip: its code tiles and its scale tiles (disjoint bytes).
  parallel_for(Np / 16, threads, std::max<int64_t>(1, 4096 / Kp), [&](int64_t t0, int64_t t1) {
    for (int64_t nt = t0; nt < t1; ++nt) {
      uint8_t* codes = out + nt * ktiles * 512;
      std::memset(codes, 0, size_t(ktiles * 512));
      uint8_t* scales = out + packed::code_region_bytes(N, K) + nt * ktiles * 32;
      std::memset(scales, 0, size_t(ktiles * 32));
      const int64_t r_end = std::min(N, nt * 16 + 16);
      for (int64_t r = nt * 16; r < r_end; ++r) {
        const uint8_t* crow = p.codes + r * kb;
        for (int64_t c = 0; c < kb; ++c) packed::write_code_pair(out, r, 2 * c, Kp, crow[c]);
        const uint8_t* srow = p.scales + r * kblocks;
        for (int64_t j = 0; j < kblocks; ++j) out[packed::scale_offset(r, j, Np, Kp)] = srow[j];
      }
    }
  });
}

void unpack(const PackedWeights& pw, uint8_t* codes, uint8_t* scales, int threads) {
  const int64_t N = pw.N, K = pw.K, kb = K / 2, kblocks = K / kBlockSize;
  const int64_t Np = packed::padded_rows(N), Kp = packed::padded_k(K);
  parallel_for(N, threads, std::max<int64_t>(1, 65536 / K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = 0; c < kb; ++c) codes[r * kb + c] = packed::read_code_pair(pw.data, r, 2 * c, Kp);
      for (int64_t j = 0; j < kblocks; ++j) scales[r * kblocks + j] = pw.data[packed::scale_offset(r, j, Np, Kp)];
    }
  });
}

void prepack_fp8(const PackedWeights& pw, uint8_t* out, int threads) {
  std::vector<uint8_t> codes(size_t(pw.N * (pw.K / 2))), scales(size_t(pw.N * (pw.K / kBlockSize)));
  unpack(pw, codes.data(), scales.data(), threads);
  fp8::build_image(MxMatrix{codes.data(), scales.data(), pw.N, pw.K, CodeLayout::plain, ScaleLayout::plain}, out);
}

}  // namespace mxfp4::cpu
