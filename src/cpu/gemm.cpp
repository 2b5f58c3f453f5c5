// Fast CPU GEMM (spec §3): both MXFP4 operands decoded exactly to fp32 and multiplied with
// OpenBLAS cblas_sgemm (MXFP4_HAVE_CBLAS) or gemm_f32_blocked(); the fp32 sum is rounded once
// to bf16 (nearest even), or stored as is for an fp32 C (so bf16(fp32 C) == bf16 C there).
//
// fp32 cannot hold every MXFP4 product (spec §3: 2^127 * 2^-127 must stay finite), so the
// fp32 path runs only when the scale bytes prove that every decoded value, product and partial
// sum is finite; otherwise (extreme scales) the exact fp64 path of gemm_reference runs. fp32
// underflow is harmless within the contract: each product loses at most 2^-150, and the fp32
// path is taken for K > 2^16 only when no product is subnormal. Blocks with scale 0xFF decode
// to 0 here and their whole output row (A) or column (B) is set to NaN afterwards, which is
// exactly where the exact sum is NaN (spec §2.1).
//
// Threads: decoding, quantization and rounding use Exec::threads; cblas_sgemm uses OpenBLAS's
// own pool (OPENBLAS_NUM_THREADS). Results do not depend on Exec::threads, and one process
// gives the same bits for the same operands every call, so gemm() on bf16 A and
// gemm_quantized() on quantize(A) (the same decoded operands) are bit-identical (bug kind K03).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/packed_layout.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/parallel.hpp"
#include "mxfp4/format.hpp"

#if defined(MXFP4_HAVE_CBLAS)
#include <cblas.h>
#endif

namespace mxfp4::cpu {
namespace {

constexpr uint16_t kBf16NaN = 0x7FC0;

// A GEMM operand [rows, K] read in place: plain MXFP4 layouts or packed layout v3.
struct Operand {
  const MxMatrix* plain = nullptr;
  const PackedWeights* packed = nullptr;
  int64_t rows = 0, K = 0, Np = 0, Kp = 0;

  static Operand of(const MxMatrix& m) {
    Operand o;
    o.plain = &m;
    o.rows = m.rows;
    o.K = m.K;
    return o;
  }
  static Operand of(const PackedWeights& p) {
    Operand o;
    o.packed = &p;
    o.rows = p.N;
    o.K = p.K;
    o.Np = packed::padded_rows(p.N);
    o.Kp = packed::padded_k(p.K);
    return o;
  }
  uint8_t scale(int64_t r, int64_t j) const {
    return plain ? plain->scales[r * (K / kBlockSize) + j] : packed->data[packed::scale_offset(r, j, Np, Kp)];
  }
  // The 16 code bytes of block (r, j).
  void block_codes(int64_t r, int64_t j, uint8_t* out) const {
    if (plain) {
      std::memcpy(out, plain->codes + r * (K / 2) + j * (kBlockSize / 2), kBlockSize / 2);
      return;
    }
    for (int64_t i = 0; i < kBlockSize / 2; ++i) out[i] = packed::read_code_pair(packed->data, r, j * kBlockSize + 2 * i, Kp);
  }
  // Rows [r0, r1) decoded exactly to fp32, row-major with stride K; 0xFF blocks decode to +0.
  void decode_rows(int64_t r0, int64_t r1, float* out) const {
    if (packed != nullptr && r0 % 16 == 0) {
      decode_packed_tiles(r0, r1, out);
      return;
    }
    float lut[16];
    uint8_t cb[kBlockSize / 2];
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < K / kBlockSize; ++j) {
        const uint8_t s = scale(r, j);
        for (int c = 0; c < 16; ++c) lut[c] = s == kScaleNaN ? 0.0f : fmt::dequant_f32(uint8_t(c), s);
        block_codes(r, j, cb);
        float* o = out + (r - r0) * K + j * kBlockSize;
        for (int i = 0; i < kBlockSize / 2; ++i) {
          o[2 * i] = lut[cb[i] & 0xF];
          o[2 * i + 1] = lut[cb[i] >> 4];
        }
      }
  }

 private:
  // Row and K column inside a 16 x 64 tile of each of its 1024 codes (docs/packed-layout.md),
  // so that a tile is decoded reading its words in order: code i is register q = i % 4, half
  // e = (i % 8) / 4 of word i / 8.
  struct TileMap {
    uint8_t row[1024];
    uint8_t col[1024];
  };
  static const TileMap& tile_map() {
    static const TileMap map = [] {
      TileMap m{};
      for (int r = 0; r < 16; ++r)
        for (int k = 0; k < 64; ++k) {
          const auto i = 2 * packed::code_word_offset(r, k, 64) + packed::code_register(r, k) + 4 * packed::code_half(k);
          m.row[i] = uint8_t(r);
          m.col[i] = uint8_t(k);
        }
      return m;
    }();
    return map;
  }
  // Packed rows [r0, r1), r0 a multiple of 16: tile by tile, bytes in storage order.
  void decode_packed_tiles(int64_t r0, int64_t r1, float* out) const {
    const TileMap& map = tile_map();
    float lut[16][2][16];  // [row in tile][block of the tile][code]
    for (int64_t nt = r0 / 16; nt * 16 < r1; ++nt)
      for (int64_t kc = 0; kc < Kp / 64; ++kc) {
        for (int64_t rr = 0; rr < 16; ++rr)
          for (int64_t h = 0; h < 2; ++h) {
            const int64_t r = nt * 16 + rr, j = 2 * kc + h;
            const uint8_t s = (r < rows && j < K / kBlockSize) ? scale(r, j) : uint8_t(0);
            for (int c = 0; c < 16; ++c) lut[rr][h][c] = s == kScaleNaN ? 0.0f : fmt::dequant_f32(uint8_t(c), s);
          }
        const uint8_t* tile = packed->data + (nt * (Kp / 64) + kc) * 512;
        uint32_t w = 0;
        for (int i = 0; i < 1024; ++i) {
          if (i % 8 == 0) w = packed::load_word(tile + 4 * (i / 8));  // the next code word, 8 codes
          const int64_t r = nt * 16 + map.row[i], k = kc * 64 + map.col[i];
          if (r < r0 || r >= r1 || k >= K) continue;
          out[(r - r0) * K + k] = lut[map.row[i]][map.col[i] / 32][packed::gather_code(w, i % 4, (i % 8) / 4)];
        }
      }
  }
};

struct ScaleScan {
  int max_finite = -1;           // largest scale byte other than 0xFF (-1: none)
  int min_finite = 256;          // smallest scale byte other than 0xFF
  std::vector<uint8_t> nan_row;  // 1 where the row holds a 0xFF block
};

ScaleScan scan_scales(const Operand& op) {
  ScaleScan s;
  s.nan_row.assign(size_t(op.rows), 0);
  for (int64_t r = 0; r < op.rows; ++r)
    for (int64_t j = 0; j < op.K / kBlockSize; ++j) {
      const int b = op.scale(r, j);
      if (b == kScaleNaN) {
        s.nan_row[size_t(r)] = 1;
      } else {
        s.max_finite = std::max(s.max_finite, b);
        s.min_finite = std::min(s.min_finite, b);
      }
    }
  return s;
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

// C32 [M, n] = A32 [M, K] * B32 [n, K]^T (row-major; rows of A32 and B32 `ld` floats apart,
// C32 dense).
void sgemm_nt(const float* a32, const float* b32, float* c32, int64_t M, int64_t n, int64_t K, int64_t ld,
              int threads) {
#if defined(MXFP4_HAVE_CBLAS)
  if (M <= INT_MAX && n <= INT_MAX && ld <= INT_MAX) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(n), int(K), 1.0f, a32, int(ld), b32, int(ld), 0.0f,
                c32, int(n));
    return;
  }
#endif
  gemm_f32_blocked(a32, b32, c32, M, n, K, ld, threads);
}

/// K elements per fp32 partial sum of the fp32 path; the partials are added in fp64. fp32
/// accumulation of L products errs by at most (L - 1) 2^-24 sum |a_k b_k| in any order
/// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1), so
/// L = 1024 keeps it below 2^-14 sum |a_k b_k|, a quarter of spec §3's 2^-12 term, for every K.
/// Whole-K fp32 sums broke the bound at K = 2^22 (test Gemm.LongKWithCancellationStaysWithinContract).
constexpr int64_t kChunkK = 1024;

// Writes the fp32 sums src[0, n) of row m, columns [n0, n0 + n), into C: rounded to bf16 or
// stored as fp32; NaN where row m of A or a row of B holds a NaN block (spec §2.1).
void store_row(const GemmOut& C, int64_t m, int64_t n0, int64_t n, const float* src, bool nan_row,
               const std::vector<uint8_t>& nan_col) {
  if (C.f32) {
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    float* crow = static_cast<float*>(C.data) + m * C.ld + n0;
    for (int64_t i = 0; i < n; ++i) crow[i] = (nan_row || nan_col[size_t(n0 + i)]) ? kNaN : src[i];
    return;
  }
  uint16_t* crow = static_cast<uint16_t*>(C.data) + m * C.ld + n0;
  for (int64_t i = 0; i < n; ++i)
    crow[i] = (nan_row || nan_col[size_t(n0 + i)]) ? kBf16NaN : fmt::f32_to_bf16(src[i]);
}

// The fp32 path: A decoded once; B decoded in chunks of rows that stay in cache (buffers
// reused, so no page faults on huge temporaries), each chunk multiplied and stored. The
// chunking does not depend on C's type, so the fp32 sums are the same for both.
void gemm_fp32_path(const Operand& a, const Operand& b, const ScaleScan& scan_a, const ScaleScan& scan_b,
                    const GemmOut& C, int threads) {
  const int64_t M = a.rows, N = b.rows, K = a.K;
  std::unique_ptr<float[]> a32(new float[size_t(M * K)]);
  parallel_for(M, threads, std::max<int64_t>(1, 16384 / K), [&](int64_t r0, int64_t r1) {
    a.decode_rows(r0, r1, a32.get() + r0 * K);
  });
  const int64_t nb = std::min(N, std::max<int64_t>(16, ((int64_t(1) << 19) / K) / 16 * 16));
  std::unique_ptr<float[]> b32(new float[size_t(nb * K)]);
  std::unique_ptr<float[]> c32(new float[size_t(M * nb)]);
  std::vector<double> c64(K > kChunkK ? size_t(M * nb) : 0);
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t n = std::min(nb, N - n0);
    parallel_for((n + 15) / 16, threads, std::max<int64_t>(1, 1024 / K), [&](int64_t g0, int64_t g1) {
      b.decode_rows(n0 + 16 * g0, n0 + std::min(n, 16 * g1), b32.get() + 16 * g0 * K);
    });
    if (K <= kChunkK) {
      sgemm_nt(a32.get(), b32.get(), c32.get(), M, n, K, K, threads);
    } else {  // fp32 partial sums of kChunkK products, added in fp64, rounded to fp32 once
      for (int64_t k0 = 0; k0 < K; k0 += kChunkK) {
        sgemm_nt(a32.get() + k0, b32.get() + k0, c32.get(), M, n, std::min(kChunkK, K - k0), K, threads);
        const bool first = k0 == 0, last = k0 + kChunkK >= K;
        parallel_for(M, threads, std::max<int64_t>(1, 16384 / n), [&](int64_t m0, int64_t m1) {
          for (int64_t i = m0 * n; i < m1 * n; ++i) {
            c64[size_t(i)] = (first ? 0.0 : c64[size_t(i)]) + double(c32[size_t(i)]);
            if (last) c32[size_t(i)] = float(c64[size_t(i)]);
          }
        });
      }
    }
    parallel_for(M, threads, std::max<int64_t>(1, 16384 / n), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m)
        store_row(C, m, n0, n, c32.get() + m * n, scan_a.nan_row[size_t(m)] != 0, scan_b.nan_row);
    });
  }
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

void gemm_f32_blocked(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, int64_t ld,
                      int threads) {
  constexpr int64_t NR = 16, MR = 4, MC = 64, KC = 256;
  const int64_t ntiles = (N + NR - 1) / NR, mchunks = (M + MC - 1) / MC;
  // B^T packed per 16-column tile: bp[t][k][j] = B[16t + j][k], zero past N.
  std::vector<float> bp(size_t(ntiles * K * NR), 0.0f);
  parallel_for(ntiles, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t j = 0; j < NR && t * NR + j < N; ++j) {
        const float* brow = B + (t * NR + j) * ld;
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
          for (int64_t i = 0; i < MR; ++i) arow[i] = A + (m_begin + std::min(mg + i, m_count - 1)) * ld;
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

void gemm_mx(const MxMatrix& A, const MxMatrix& B, const GemmOut& C, int threads) {
  PlainStorage sa, sb;
  const MxMatrix a = to_plain(A, sa, threads);
  const MxMatrix b = to_plain(B, sb, threads);
  const Operand oa = Operand::of(a), ob = Operand::of(b);
  const ScaleScan scan_a = scan_scales(oa), scan_b = scan_scales(ob);
  if (fp32_path_is_safe(scan_a, scan_b, a.K))
    gemm_fp32_path(oa, ob, scan_a, scan_b, C, threads);
  else
    gemm_reference(a, b, C, nullptr, nullptr, threads);
}

namespace {
// Quantizes bf16 A [M, K] (row stride lda) into plain codes and scales owned by `st`.
MxMatrix quantize_a(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, PlainStorage& st,
                    int threads) {
  st.codes.resize(size_t(M * (K / 2)));
  st.scales.resize(size_t(M * (K / kBlockSize)));
  quantize(A, DType::bf16, M, K, lda, st.codes.data(), st.scales.data(), rule, ScaleLayout::plain, threads);
  MxMatrix aq;
  aq.codes = st.codes.data();
  aq.scales = st.scales.data();
  aq.rows = M;
  aq.K = K;
  return aq;
}
}  // namespace

void gemm_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, const GemmOut& C,
               ScaleRule rule, int threads) {
  PlainStorage st;
  gemm_mx(quantize_a(A, M, K, lda, rule, st, threads), B, C, threads);
}

void gemm_bf16_packed(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B,
                      const GemmOut& C, ScaleRule rule, int threads) {
  PlainStorage st;
  const MxMatrix aq = quantize_a(A, M, K, lda, rule, st, threads);
  const Operand oa = Operand::of(aq), ob = Operand::of(B);
  const ScaleScan scan_a = scan_scales(oa), scan_b = scan_scales(ob);
  if (fp32_path_is_safe(scan_a, scan_b, K)) {
    gemm_fp32_path(oa, ob, scan_a, scan_b, C, threads);
    return;
  }
  // Extreme scales: the exact path on plain copies (same result as gemm_bf16 on the unpacked B).
  std::vector<uint8_t> codes(size_t(B.N * (K / 2))), scales(size_t(B.N * (K / kBlockSize)));
  unpack(B, codes.data(), scales.data(), threads);
  MxMatrix b;
  b.codes = codes.data();
  b.scales = scales.data();
  b.rows = B.N;
  b.K = K;
  gemm_reference(aq, b, C, nullptr, nullptr, threads);
}

}  // namespace mxfp4::cpu
