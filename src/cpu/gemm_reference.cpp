// Reference GEMM (spec §3), the test oracle: operands decoded exactly to double (no fp32
// overflow: byte 254 * 6 = 1.5 * 2^129 is just a double), exact products, fp64 accumulation
// in ascending k, and a single rounding double -> bf16 (nearest even, bf16 subnormals,
// overflow to +-Inf) that never goes through float; with an fp32 C, a single rounding double
// -> fp32 instead.
#include <cmath>
#include <limits>
#include <cstdint>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

namespace mxfp4::cpu {

uint16_t round_to_bf16(double x) {
  if (std::isnan(x)) return 0x7FC0;  // one canonical quiet NaN, as every other path writes
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (std::isinf(a)) return uint16_t(sign | 0x7F80);
  if (a == 0.0) return sign;
  int e = 0;
  (void)std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): floor(log2 a) = e - 1
  // bf16 has 8 significant bits; below 2^-126 the quantum is fixed at 2^-133 (subnormals).
  const int quantum_exp = std::max(e - 1, -126) - 7;
  const double q = std::ldexp(a, -quantum_exp);  // exact: a power-of-two rescale, q < 2^9
  double r = std::floor(q);
  const double frac = q - r;  // exact
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  const double v = std::ldexp(r, quantum_exp);  // a bf16 value, or 2^128 on overflow
  if (v >= 0x1p128) return uint16_t(sign | 0x7F80);
  const uint32_t bits = fmt::f32_bits(float(v));  // exact: v has <= 8 significant bits
  return uint16_t(sign | (bits >> 16));
}

float round_to_f32(double x) {
  if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  // Beyond FLT_MAX = 2^128 - 2^104 the next fp32 step would be 2^128; the midpoint
  // 2^128 - 2^103 ties to the even neighbour 2^128, which is +-Inf. Below it, the
  // conversion is exact rounding to nearest even (IEEE 754, default rounding mode).
  if (std::fabs(x) >= 0x1p128 - 0x1p103) return std::signbit(x) ? -std::numeric_limits<float>::infinity()
                                                                   : std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

namespace {
// Exact double value of every element of a plain MXFP4 matrix, row-major [rows, K].
std::vector<double> decode_exact(const MxMatrix& p, int threads) {
  const int64_t K = p.K, kblocks = K / kBlockSize;
  std::vector<double> out(size_t(p.rows * K));
  parallel_for(p.rows, threads, std::max<int64_t>(1, 65536 / K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < kblocks; ++j) {
        const uint8_t s = p.scales[r * kblocks + j];
        const double scale = s == kScaleNaN ? std::nan("") : std::ldexp(1.0, int(s) - 127);
        for (int i = 0; i < kBlockSize; ++i) {
          const int64_t k = j * kBlockSize + i;
          const uint8_t byte = p.codes[r * (K / 2) + k / 2];
          const uint8_t code = (k % 2 == 0) ? (byte & 0xF) : (byte >> 4);
          out[size_t(r * K + k)] = double(fmt::e2m1_to_f32(code)) * scale;
        }
      }
  });
  return out;
}
}  // namespace

void gemm_reference(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, double* out_f64,
                    double* out_abs, int threads) {
  gemm_reference(A, B, GemmOut{C, false, ldc}, out_f64, out_abs, threads);
}

void gemm_reference(const MxMatrix& A, const MxMatrix& B, const GemmOut& C, double* out_f64, double* out_abs,
                    int threads) {
  PlainStorage sa, sb;
  const MxMatrix a = to_plain(A, sa, threads);
  const MxMatrix b = to_plain(B, sb, threads);
  const std::vector<double> da = decode_exact(a, threads);
  const std::vector<double> db = decode_exact(b, threads);
  const int64_t M = a.rows, N = b.rows, K = a.K;
  parallel_for(M, threads, std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, N * K)),
               [&](int64_t m0, int64_t m1) {
                 for (int64_t m = m0; m < m1; ++m) {
                   const double* ar = da.data() + m * K;
                   for (int64_t n = 0; n < N; ++n) {
                     const double* br = db.data() + n * K;
                     double acc = 0.0, abs = 0.0;
                     for (int64_t k = 0; k < K; ++k) {
                       const double prod = ar[k] * br[k];  // exact: <= 4 significant bits
                       acc += prod;
                       abs += std::fabs(prod);
                     }
                     if (C.f32)
                       static_cast<float*>(C.data)[m * C.ld + n] = round_to_f32(acc);
                     else
                       static_cast<uint16_t*>(C.data)[m * C.ld + n] = round_to_bf16(acc);
                     if (out_f64 != nullptr) out_f64[m * N + n] = acc;
                     if (out_abs != nullptr) out_abs[m * N + n] = abs;
                   }
                 }
               });
}

}  // namespace mxfp4::cpu
