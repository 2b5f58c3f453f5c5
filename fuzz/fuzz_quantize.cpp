// libFuzzer target: the CPU quantizer and dequantizer against an independent reference.
//
// The reference below is written from the spec's rules (docs/semantics.md §1-§2), not from
// include/mxfp4/format.hpp: values are widened to double by their own decoders, the rceil
// exponent is found by search, the fp32 product x * 2^-s is an exact double product rounded
// once to float, and e2m1 rounding picks the nearest representable value by distance with
// ties to the even code. For random fp32 / bf16 / fp16 bit patterns (NaN, Inf, subnormals
// included) and all three rules it checks, bit for bit:
//   - quantize() codes and scales (plain and AITER-shuffled scale layouts, any row stride,
//     any thread count), with canaries around every output and garbage between rows;
//   - dequantize() to fp32 and bf16 (exact values, canonical NaN, overflow to Inf);
//   - quantize(dequantize(q)): the same codes and scales for aiter and floor, the same
//     values for rceil (blocks that dequantize to Inf excepted).
// Input layout: dtype, rule, rows, K blocks, row padding, threads, then element bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.hpp"
#include "mxfp4/mxfp4.hpp"

using namespace mxfp4;
using mxfp4::fuzz::Input;

namespace {

// ---- independent reference (spec §1, §2) -------------------------------------------------

double widen(uint32_t bits, DType dt) {
  if (dt == DType::fp32) {
    float f;
    std::memcpy(&f, &bits, 4);
    return double(f);
  }
  if (dt == DType::bf16) {
    const uint32_t u = bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return double(f);
  }
  // IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  const int exp = int((bits >> 10) & 0x1F);
  const int frac = int(bits & 0x3FF);
  if (exp == 31) return frac ? std::nan("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(double(frac), -24);
  return sign * std::ldexp(double(1024 + frac), exp - 25);
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

int clamp127(int s) { return s < -127 ? -127 : (s > 127 ? 127 : s); }

/// Shared exponent of a finite block with maximum magnitude amax (spec §2 steps 1-3).
int ref_exponent(double amax, ScaleRule rule) {
  if (rule == ScaleRule::aiter) {
    const uint32_t e = ((bits_of(float(amax)) + 0x00200000u) >> 23) & 0xFFu;  // amax is an fp32 value
    if (e == 0) return -127;
    if (e == 255) return 127;
    return clamp127(int(e) - 129);
  }
  if (amax == 0.0) return -127;
  int ex = 0;
  (void)std::frexp(amax, &ex);  // amax = m * 2^ex, m in [0.5, 1): floor(log2(amax)) = ex - 1
  if (rule == ScaleRule::floor) return clamp127(ex - 1 - 2);
  int s = ex - 1 - 3;  // amax / 2^s >= 8 here; the smallest s with amax / 2^s <= 6:
  while (std::ldexp(amax, -s) > 6.0) ++s;
  return clamp127(s);
}

/// e2m1 code of y: nearest of {0, .5, 1, 1.5, 2, 3, 4, 6} by distance, ties to the even code,
/// sign bit from y's sign (spec §2 steps 5-6).
uint8_t ref_code(float y) {
  static const double kVals[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::fabs(double(y));
  int best = 0;
  for (int i = 1; i < 8; ++i) {
    const double d = std::fabs(a - kVals[i]), db = std::fabs(a - kVals[best]);
    if (d < db || (d == db && i % 2 == 0)) best = i;
  }
  return uint8_t(best | (std::signbit(y) ? 8 : 0));
}

/// Spec §2 / §2.1 for one block of 32 widened values: codes and the scale byte.
uint8_t ref_block(const double* x, ScaleRule rule, uint8_t* codes) {
  double amax = 0.0;
  for (int i = 0; i < 32; ++i) {
    if (!std::isfinite(x[i])) {
      for (int j = 0; j < 32; ++j) codes[j] = 0;
      return 0xFF;
    }
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  const int s = ref_exponent(amax, rule);
  for (int i = 0; i < 32; ++i) codes[i] = ref_code(float(std::ldexp(x[i], -s)));  // exact, then one rounding
  return uint8_t(s + 127);
}

/// Spec §1.3 value of (code, scale byte) as fp32: NaN for 0xFF, +-Inf beyond fp32.
float ref_value(uint8_t code, uint8_t scale) {
  static const double kVals[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  if (scale == 0xFF) return NAN;
  const double v = std::ldexp(kVals[code & 7], int(scale) - 127);
  return float((code & 8) ? -v : v);
}

/// AITER e8m0_shuffle offset, written from spec §4.1.
int64_t ref_shuffled_scale_offset(int64_t r, int64_t c, int64_t sn) {
  const int64_t tile = (r / 32) * (32 * sn), kgroup = (c / 8) * 256;
  return tile + kgroup + (c % 4) * 64 + (r % 16) * 4 + ((c / 4) % 2) * 2 + ((r / 16) % 2);
}

uint8_t nibble(const uint8_t* codes, int64_t row_bytes, int64_t r, int64_t k) {
  const uint8_t b = codes[r * row_bytes + k / 2];
  return (k % 2) ? uint8_t(b >> 4) : uint8_t(b & 0xF);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const DType dt = DType(in.u8() % 3);
  const ScaleRule rule = ScaleRule(in.u8() % 3);
  const int64_t rows = in.range(1, 4);
  const int64_t kblocks = in.range(1, 4);
  const int64_t K = 32 * kblocks;
  const int64_t pad = in.range(0, 7);  // extra elements at the end of each row
  Exec exec;
  exec.threads = int(in.range(1, 4));
  const int64_t stride = K + pad;
  const int64_t eb = dt == DType::fp32 ? 4 : 2;

  // x: element bits from the input; the padding between rows holds NaN bit patterns, which
  // would turn a block into a NaN block if the quantizer read them.
  const std::vector<uint8_t> raw = in.fill(size_t(rows * K * eb));
  std::vector<uint32_t> bits(size_t(rows * K));
  for (size_t i = 0; i < bits.size(); ++i) {
    uint32_t v = 0;
    std::memcpy(&v, raw.data() + i * eb, size_t(eb));
    bits[i] = v;
  }
  std::vector<uint8_t> xbuf(size_t(rows * stride * eb) + 64);
  uint8_t* x = xbuf.data() + 16;  // 16-byte aligned offset inside an operator-new buffer
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < stride; ++k) {
      const uint32_t v = k < K ? bits[size_t(r * K + k)] : (eb == 4 ? 0x7FC00001u : 0x7E01u);
      std::memcpy(x + (r * stride + k) * eb, &v, size_t(eb));
    }
  const std::vector<uint8_t> x_before = xbuf;

  // Reference.
  std::vector<uint8_t> want_codes(size_t(rows * K / 2)), want_scales(size_t(rows * kblocks));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kblocks; ++j) {
      double v[32];
      uint8_t c[32];
      for (int i = 0; i < 32; ++i) v[i] = widen(bits[size_t(r * K + j * 32 + i)], dt);
      want_scales[size_t(r * kblocks + j)] = ref_block(v, rule, c);
      for (int i = 0; i < 16; ++i) want_codes[size_t(r * K / 2 + j * 16 + i)] = uint8_t(c[2 * i] | (c[2 * i + 1] << 4));
    }

  // Library, plain layout, canaries after each output.
  constexpr size_t kSlack = 64;
  std::vector<uint8_t> codes(want_codes.size() + kSlack), scales(want_scales.size() + kSlack);
  fuzz::poison(codes.data(), codes.size(), 1);
  fuzz::poison(scales.data(), scales.size(), 2);
  quantize(x, dt, rows, K, stride, codes.data(), scales.data(), rule, exec);
  FUZZ_CHECK(xbuf == x_before, "quantize wrote to its input");
  FUZZ_CHECK(fuzz::intact(codes.data() + want_codes.size(), kSlack, 1 + want_codes.size()), "codes overrun");
  FUZZ_CHECK(fuzz::intact(scales.data() + want_scales.size(), kSlack, 2 + want_scales.size()), "scales overrun");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kblocks; ++j) {
      const size_t si = size_t(r * kblocks + j);
      FUZZ_CHECK(scales[si] == want_scales[si], "dtype %d rule %d row %lld block %lld: scale %u, reference %u",
                 int(dt), int(rule), (long long)r, (long long)j, scales[si], want_scales[si]);
      for (int i = 0; i < 16; ++i) {
        const size_t ci = size_t(r * K / 2 + j * 16 + i);
        FUZZ_CHECK(codes[ci] == want_codes[ci],
                   "dtype %d rule %d row %lld block %lld byte %d: code byte %02x, reference %02x (scale %u)", int(dt),
                   int(rule), (long long)r, (long long)j, i, codes[ci], want_codes[ci], want_scales[si]);
      }
    }

  // AITER-shuffled scales: each byte at its spec §4.1 offset, padding untouched.
  const int64_t sn = (kblocks + 7) / 8 * 8;
  const int64_t sh_bytes = shuffled_scales_bytes(rows, kblocks);
  FUZZ_CHECK(sh_bytes == (rows + 255) / 256 * 256 * sn, "shuffled_scales_bytes");
  std::vector<uint8_t> sh(size_t(sh_bytes) + kSlack), codes2(want_codes.size());
  fuzz::poison(sh.data(), sh.size(), 3);
  const std::vector<uint8_t> sh_poisoned = sh;
  quantize(x, dt, rows, K, stride, codes2.data(), sh.data(), rule, exec, ScaleLayout::aiter_shuffled);
  FUZZ_CHECK(std::memcmp(codes2.data(), want_codes.data(), want_codes.size()) == 0, "codes differ (shuffled call)");
  std::vector<uint8_t> expect_sh = sh_poisoned;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kblocks; ++j)
      expect_sh[size_t(ref_shuffled_scale_offset(r, j, sn))] = want_scales[size_t(r * kblocks + j)];
  FUZZ_CHECK(sh == expect_sh, "shuffled scales differ from spec §4.1 placement (or padding was written)");

  // Dequantize to fp32 and bf16 with a row stride > K and canaries in the gaps.
  const MxMatrix q{codes.data(), scales.data(), rows, K};
  const int64_t ostride = K + 3;
  std::vector<float> out32(size_t(rows * ostride + 8));
  std::vector<uint16_t> out16(size_t(rows * ostride + 8));
  for (auto& v : out32) v = -12345.0f;
  for (auto& v : out16) v = 0xDEAD;
  dequantize(q, out32.data(), DType::fp32, ostride, exec);
  dequantize(q, out16.data(), DType::bf16, ostride, exec);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < ostride; ++k) {
      const size_t o = size_t(r * ostride + k);
      if (k >= K) {
        FUZZ_CHECK(out32[o] == -12345.0f && out16[o] == 0xDEAD, "dequantize wrote into the row gap");
        continue;
      }
      const uint8_t s = scales[size_t(r * kblocks + k / 32)];
      const float want = ref_value(nibble(codes.data(), K / 2, r, k), s);
      const uint32_t got = bits_of(out32[o]);
      if (std::isnan(want)) {
        FUZZ_CHECK(got == 0x7FC00000u && out16[o] == 0x7FC0, "NaN is not the canonical quiet NaN: %08x / %04x", got,
                   out16[o]);
      } else {
        FUZZ_CHECK(got == bits_of(want), "dequantize fp32 at (%lld, %lld): %08x, reference %08x", (long long)r,
                   (long long)k, got, bits_of(want));
        FUZZ_CHECK(out16[o] == uint16_t(bits_of(want) >> 16), "dequantize bf16 at (%lld, %lld): %04x, reference %08x",
                   (long long)r, (long long)k, out16[o], bits_of(want));
      }
    }
  for (size_t o = size_t(rows * ostride); o < out32.size(); ++o)
    FUZZ_CHECK(out32[o] == -12345.0f && out16[o] == 0xDEAD, "dequantize wrote past the last row");

  // quantize(dequantize(q)): a fixed point for aiter and floor, value-preserving for rceil.
  std::vector<float> dense(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&dense[size_t(r * K)], &out32[size_t(r * ostride)], size_t(K) * 4);
  std::vector<uint8_t> codes3(want_codes.size()), scales3(want_scales.size());
  quantize(dense.data(), DType::fp32, rows, K, K, codes3.data(), scales3.data(), rule, exec);
  std::vector<float> dense3(dense.size());
  dequantize(MxMatrix{codes3.data(), scales3.data(), rows, K}, dense3.data(), DType::fp32, K, exec);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kblocks; ++j) {
      bool has_inf = false;
      for (int i = 0; i < 32; ++i) has_inf = has_inf || std::isinf(dense[size_t(r * K + j * 32 + i)]);
      if (has_inf) continue;  // byte 254 (and rceil 253) blocks overflow fp32: documented (bug kind K06)
      const size_t si = size_t(r * kblocks + j);
      if (rule != ScaleRule::rceil) {
        FUZZ_CHECK(scales3[si] == scales[si], "QDQ scale %u != %u (rule %d)", scales3[si], scales[si], int(rule));
        FUZZ_CHECK(std::memcmp(&codes3[size_t(r * K / 2 + j * 16)], &codes[size_t(r * K / 2 + j * 16)], 16) == 0,
                   "QDQ codes differ (rule %d, scale %u)", int(rule), scales[si]);
      }
      for (int i = 0; i < 32; ++i) {
        const size_t e = size_t(r * K + j * 32 + i);
        FUZZ_CHECK(bits_of(dense3[e]) == bits_of(dense[e]), "QDQ value %08x != %08x (rule %d)", bits_of(dense3[e]),
                   bits_of(dense[e]), int(rule));
      }
    }
  return 0;
}
