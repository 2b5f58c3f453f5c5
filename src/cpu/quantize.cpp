// CPU quantizer (spec §2): one fmt::quantize_block call per 32-element block, rows spread over
// threads. Plain or AITER-shuffled scale output (spec §4.1; padding left untouched).
#include <cstdint>
#include <cstring>

#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::cpu {
namespace {

// Widen 32 consecutive elements of row data to fp32 (exact for all three dtypes).
void load_block(const void* row, DType dtype, int64_t k0, float* out) {
  switch (dtype) {
    case DType::bf16: {
      const auto* p = static_cast<const uint16_t*>(row) + k0;
      for (int i = 0; i < kBlockSize; ++i) out[i] = fmt::bf16_to_f32(p[i]);
      break;
    }
    case DType::fp16: {
      const auto* p = static_cast<const uint16_t*>(row) + k0;
      for (int i = 0; i < kBlockSize; ++i) out[i] = fmt::f16_to_f32(p[i]);
      break;
    }
    case DType::fp32:
      std::memcpy(out, static_cast<const float*>(row) + k0, sizeof(float) * kBlockSize);
      break;
  }
}

int64_t elem_bytes(DType dtype) { return dtype == DType::fp32 ? 4 : 2; }

}  // namespace

void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule, ScaleLayout scale_layout, int threads) {
  const int64_t kblocks = K / kBlockSize;
  const int64_t sn = (kblocks + 7) / 8 * 8;
  const int64_t row_bytes = x_stride * elem_bytes(dtype);
  const auto* base = static_cast<const unsigned char*>(x);
  parallel_for(rows, threads, std::max<int64_t>(1, 32768 / K), [&](int64_t r0, int64_t r1) {
    float v[kBlockSize];
    uint8_t c[kBlockSize];
    for (int64_t r = r0; r < r1; ++r) {
      const void* row = base + r * row_bytes;
      uint8_t* crow = codes + r * (K / 2);
      for (int64_t j = 0; j < kblocks; ++j) {
        load_block(row, dtype, j * kBlockSize, v);
        const uint8_t s = fmt::quantize_block(v, kBlockSize, c, rule);
        uint8_t* out = crow + j * (kBlockSize / 2);
        for (int i = 0; i < kBlockSize / 2; ++i) out[i] = uint8_t(c[2 * i] | (c[2 * i + 1] << 4));
        if (scale_layout == ScaleLayout::plain)
          scales[r * kblocks + j] = s;
        else
          scales[fmt::aiter_scale_offset(r, j, sn)] = s;
      }
    }
  });
}

}  // namespace mxfp4::cpu
