// Fast CPU GEMM (spec §3): both MXFP4 operands decoded exactly to fp32 and multiplied with
// OpenBLAS cblas_sgemm (MXFP4_HAVE_CBLAS) or gemm_f32_blocked(); the fp32 sum is rounded once
// to bf16 (nearest even).
//
// fp32 cannot hold every MXFP4 product (spec §3: 2^127 * 2^-127 must stay finite), so the
// fp32 path runs only when the scale bytes prove that every decoded value, product and partial
// sum is finite; otherwise (extreme scales) the exact fp64 path of gemm_reference runs. fp32
// underflow is harmless within the contract: each product loses at most 2^-150, and the fp32
// path is taken for K > 2^16 only when no product is subnormal. Blocks with scale 0xFF decode
// to 0 here and their whole output row (A) or column (B) is set to NaN afterwards, which is
// exactly where the exact sum is NaN (spec §2.1).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

#if defined(MXFP4_HAVE_CBLAS)
#include <cblas.h>
#endif

namespace mxfp4::cpu {
namespace {

constexpr uint16_t kBf16NaN = 0x7FC0;

struct ScaleScan {
  int max_finite = -1;   // largest scale byte other than 0xFF (-1: none)
  int min_finite = 256;  // smallest scale byte other than 0xFF
  std::vector<uint8_t> nan_row;  // 1 where the row holds a 0xFF block
};

ScaleScan scan_scales(const MxMatrix& p) {
  ScaleScan s;
  const int64_t kblocks = p.K / kBlockSize;
  s.nan_row.assign(size_t(p.rows), 0);
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t j = 0; j < kblocks; ++j) {
      const int b = p.scales[r * kblocks + j];
      if (b == kScaleNaN) {
        s.nan_row[size_t(r)] = 1;
      } else {
        s.max_finite = std::max(s.max_finite, b);
        s.min_finite = std::min(s.min_finite, b);
      }
    }
  return s;
}

// Plain MXFP4 -> fp32 [rows, K] (exact); blocks with scale 0xFF decode to +0.
void decode_f32(const MxMatrix& p, float* out, int threads) {
  const int64_t K = p.K, kblocks = K / kBlockSize;
  parallel_for(p.rows, threads, std::max<int64_t>(1, 65536 / K), [&](int64_t r0, int64_t r1) {
    float lut[16];
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < kblocks; ++j) {
        const uint8_t s = p.scales[r * kblocks + j];
        for (int c = 0; c < 16; ++c) lut[c] = s == kScaleNaN ? 0.0f : fmt::dequant_f32(uint8_t(c), s);
        const uint8_t* cb = p.codes + r * (K / 2) + j * (kBlockSize / 2);
        float* o = out + r * K + j * kBlockSize;
        for (int i = 0; i < kBlockSize / 2; ++i) {
          o[2 * i] = lut[cb[i] & 0xF];
          o[2 * i + 1] = lut[cb[i] >> 4];
        }
      }
  });
}

// True when fp32 decoding and accumulation cannot overflow and underflow stays in the contract.
bool fp32_path_is_safe(const ScaleScan& a, const ScaleScan& b, int64_t K) {
  if (a.max_finite < 0 || b.max_finite < 0) return true;  // every block NaN: output all NaN
  // |decoded| <= 6 * 2^(s-127) < 2^128 needs s <= 252.
  if (a.max_finite > 252 || b.max_finite > 252) return false;
  // |partial sum| <= K * 36 * 2^(sa+sb-254) must stay below 2^127.
  const int log2_terms = int(std::ceil(std::log2(36.0 * double(K))));
  if (a.max_finite + b.max_finite - 254 + log2_terms > 127) return false;
  // Smallest nonzero product 0.25 * 2^(sa+sb-254) normal when sa + sb >= 130.
  return K <= (int64_t(1) << 16) || a.min_finite + b.min_finite >= 130;
}

}  // namespace

GemmConfig cpu_config() {
  GemmConfig c;
  c.path = GemmPath::tiled;
  c.block_n = 64;
  c.block_m = 64;
  c.split_k = 1;
  c.warps = 0;  // no warps on the CPU
  return c;
}

void gemm_f32_blocked(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, int threads) {
  constexpr int64_t NR = 16, MR = 4, MC = 64, KC = 256;
  const int64_t ntiles = (N + NR - 1) / NR, mchunks = (M + MC - 1) / MC;
  // B^T packed per 16-column tile: bp[t][k][j] = B[16t + j][k], zero past N.
  std::vector<float> bp(size_t(ntiles * K * NR), 0.0f);
  parallel_for(ntiles, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t j = 0; j < NR && t * NR + j < N; ++j) {
        const float* brow = B + (t * NR + j) * K;
        float* dst = bp.data() + t * K * NR + j;
        for (int64_t k = 0; k < K; ++k) dst[k * NR] = brow[k];
      }
  });
  parallel_for(ntiles * mchunks, threads, 1, [&](int64_t w0, int64_t w1) {
    float tile[MC][NR];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t t = w % ntiles, mc = w / ntiles;
      const int64_t m_begin = mc * MC, m_count = std::min(MC, M - m_begin);
      for (auto& row : tile)
        for (float& v : row) v = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t k1 = std::min(K, k0 + KC);
        for (int64_t mg = 0; mg < m_count; mg += MR) {
          const float* arow[MR];
          for (int64_t i = 0; i < MR; ++i) arow[i] = A + (m_begin + std::min(mg + i, m_count - 1)) * K;
          float acc[MR][NR];
          for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j) acc[i][j] = tile[std::min(mg + i, MC - 1)][j];
          const float* bk = bp.data() + t * K * NR;
          for (int64_t k = k0; k < k1; ++k) {
            const float* bv = bk + k * NR;
            for (int64_t i = 0; i < MR; ++i) {
              const float av = arow[i][k];
              for (int64_t j = 0; j < NR; ++j) acc[i][j] += av * bv[j];
            }
          }
          for (int64_t i = 0; i < MR && mg + i < MC; ++i)
            for (int64_t j = 0; j < NR; ++j) tile[mg + i][j] = acc[i][j];
        }
      }
      for (int64_t i = 0; i < m_count; ++i)
        for (int64_t j = 0; j < NR && t * NR + j < N; ++j) C[(m_begin + i) * N + t * NR + j] = tile[i][j];
    }
  });
}

void gemm_mx(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, int threads) {
  PlainStorage sa, sb;
  const MxMatrix a = to_plain(A, sa, threads);
  const MxMatrix b = to_plain(B, sb, threads);
  const int64_t M = a.rows, N = b.rows, K = a.K;
  const ScaleScan scan_a = scan_scales(a), scan_b = scan_scales(b);
  if (!fp32_path_is_safe(scan_a, scan_b, K)) {
    gemm_reference(a, b, C, ldc, nullptr, nullptr, threads);
    return;
  }
  std::vector<float> a32(size_t(M * K)), b32(size_t(N * K)), c32(size_t(M * N));
  decode_f32(a, a32.data(), threads);
  decode_f32(b, b32.data(), threads);
#if defined(MXFP4_HAVE_CBLAS)
  if (M <= INT_MAX && N <= INT_MAX && K <= INT_MAX) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, a32.data(), int(K),
                b32.data(), int(K), 0.0f, c32.data(), int(N));
  } else {
    gemm_f32_blocked(a32.data(), b32.data(), c32.data(), M, N, K, threads);
  }
#else
  gemm_f32_blocked(a32.data(), b32.data(), c32.data(), M, N, K, threads);
#endif
  parallel_for(M, threads, std::max<int64_t>(1, 65536 / N), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      uint16_t* crow = C + m * ldc;
      const float* src = c32.data() + m * N;
      if (scan_a.nan_row[size_t(m)]) {
        for (int64_t n = 0; n < N; ++n) crow[n] = kBf16NaN;
        continue;
      }
      for (int64_t n = 0; n < N; ++n) crow[n] = scan_b.nan_row[size_t(n)] ? kBf16NaN : fmt::f32_to_bf16(src[n]);
    }
  });
}

void gemm_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, uint16_t* C, int64_t ldc,
               ScaleRule rule, int threads) {
  std::vector<uint8_t> codes(size_t(M * (K / 2))), scales(size_t(M * (K / kBlockSize)));
  quantize(A, DType::bf16, M, K, lda, codes.data(), scales.data(), rule, ScaleLayout::plain, threads);
  MxMatrix aq;
  aq.codes = codes.data();
  aq.scales = scales.data();
  aq.rows = M;
  aq.K = K;
  gemm_mx(aq, B, C, ldc, threads);
}

}  // namespace mxfp4::cpu
