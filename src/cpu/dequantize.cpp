// CPU dequantizer (spec §1.3): value = e2m1(code) * 2^(b-127) via fmt::dequant_f32, exact
// except byte 254 with |code| >= 4 (overflows to +-Inf); scale 0xFF gives NaN.
#include <cstdint>

#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::cpu {

void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, int threads) {
  PlainStorage storage;
  const MxMatrix p = to_plain(q, storage, threads);
  const int64_t K = p.K, kblocks = K / kBlockSize;
  parallel_for(p.rows, threads, std::max<int64_t>(1, 32768 / K), [&](int64_t r0, int64_t r1) {
    float lut[16];
    float v[kBlockSize];
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* crow = p.codes + r * (K / 2);
      for (int64_t j = 0; j < kblocks; ++j) {
        const uint8_t s = p.scales[r * kblocks + j];
        for (int c = 0; c < 16; ++c) lut[c] = fmt::dequant_f32(uint8_t(c), s);
        const uint8_t* cb = crow + j * (kBlockSize / 2);
        for (int i = 0; i < kBlockSize / 2; ++i) {
          v[2 * i] = lut[cb[i] & 0xF];
          v[2 * i + 1] = lut[cb[i] >> 4];
        }
        if (out_dtype == DType::fp32) {
          float* o = static_cast<float*>(out) + r * out_stride + j * kBlockSize;
          for (int i = 0; i < kBlockSize; ++i) o[i] = v[i];
        } else {
          uint16_t* o = static_cast<uint16_t*>(out) + r * out_stride + j * kBlockSize;
          for (int i = 0; i < kBlockSize; ++i) o[i] = fmt::f32_to_bf16(v[i]);
        }
      }
    }
  });
}

}  // namespace mxfp4::cpu
