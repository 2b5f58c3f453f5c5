// libFuzzer target: AITER layout converters, packed layout v3 prepack/unpack, and the CPU
// GEMM entry points that read them.
//
// Modes (first input byte % 3):
//   0  shuffle_scales / unshuffle_scales: every logical (r, c) lands at its spec §4.1 offset
//      (formula written here from the spec), padding is never written, unshuffle ignores
//      whatever the padding holds, round trip is the identity;
//   1  shuffle_weight / unshuffle_weight: spec §4.2 offsets, round trip, nothing past the end;
//   2  prepack (any code/scale layout) equals an independent model of packed layout v3 built
//      from docs/packed-layout.md, writes every byte (two different poisons give the same
//      bytes) and nothing past the end; unpack inverts it; then for a small bf16 A:
//      gemm(A, packed) == gemm(A, B in its layout) == gemm_quantized(quantize(A), B) bit for
//      bit, within spec §3's bound of gemm_reference, with C written only inside [M, N] of a
//      strided buffer (ldc > N, canary rows after), and A, B byte-identical afterwards.
// Exec::threads is drawn from the input (1..4): results must not depend on it.
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/test_util.hpp"
#include "fuzz_util.hpp"
#include "mxfp4/mxfp4.hpp"

using namespace mxfp4;
using mxfp4::fuzz::Input;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// spec §4.1 (e8m0_shuffle) and §4.2 (shuffle_weight, layout (16, 16)).
int64_t spec_scale_offset(int64_t r, int64_t c, int64_t sn) {
  return (r / 32) * (32 * sn) + (c / 8) * 256 + (c % 4) * 64 + (r % 16) * 4 + ((c / 4) % 2) * 2 + ((r / 16) % 2);
}
int64_t spec_weight_offset(int64_t n, int64_t c, int64_t kb) {
  return (n / 16) * (16 * kb) + (c / 16) * 256 + (n % 16) * 16 + (c % 16);
}

// Packed layout v3 from docs/packed-layout.md: code region tiles of 16 rows x 64 K columns,
// lane l = 4g + t owns 16 bytes = four words w (K16 step 64kc + 16w); code p = q + 4e of a
// word holds row 16nt + g + 8(q&1), column k0 + 2t + 8(q>>1) + e, its bits j = 0..3 (m, e0,
// e1, sign) at the word bits of the doc's table (kDocBit). Scale region: 32 bytes a tile,
// byte 4g + i = row 16nt + g + 8(i>>1), K block 2kc + (i&1). Padding is zero.
constexpr int kDocBit[4][2][4] = {{{6, 7, 8, 15}, {22, 23, 24, 31}},
                                  {{10, 11, 12, 19}, {26, 27, 28, 3}},
                                  {{16, 17, 18, 25}, {0, 1, 2, 9}},
                                  {{20, 13, 14, 21}, {4, 29, 30, 5}}};
std::vector<uint8_t> model_packed(const uint8_t* codes, const uint8_t* scales, int64_t N, int64_t K) {
  const int64_t Np = round_up(N, 16), Kp = round_up(K, 64), kchunks = Kp / 64, kblocks = K / 32;
  std::vector<uint8_t> out(size_t(Np * Kp / 2 + Np * Kp / 32), 0);
  for (int64_t nt = 0; nt < Np / 16; ++nt)
    for (int64_t kc = 0; kc < kchunks; ++kc) {
      const int64_t tile = nt * kchunks + kc;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int w = 0; w < 4; ++w) {
          const int64_t k0 = 64 * kc + 16 * w;
          uint32_t word = 0;
          for (int p = 0; p < 8; ++p) {
            const int q = p % 4, e = p / 4;
            const int64_t r = 16 * nt + g + 8 * (q & 1), k = k0 + 2 * t + 8 * (q >> 1) + e;
            uint32_t code = 0;
            if (r < N && k < K) {
              const uint8_t b = codes[r * (K / 2) + k / 2];
              code = (k % 2) ? (b >> 4) : (b & 0xF);
            }
            for (int j = 0; j < 4; ++j) word |= ((code >> j) & 1u) << kDocBit[q][e][j];
          }
          for (int byte = 0; byte < 4; ++byte) out[size_t(tile * 512 + 16 * l + 4 * w + byte)] = uint8_t(word >> (8 * byte));
        }
      }
      for (int g = 0; g < 8; ++g)
        for (int i = 0; i < 4; ++i) {
          const int64_t r = 16 * nt + g + 8 * (i >> 1), blk = 2 * kc + (i & 1);
          out[size_t(Np * Kp / 2 + tile * 32 + 4 * g + i)] = (r < N && blk < kblocks) ? scales[r * kblocks + blk] : 0;
        }
    }
  return out;
}

constexpr size_t kSlack = 48;

void mode_scales(Input& in, const Exec& exec) {
  const int64_t rows = in.range(1, 600), kblocks = in.range(1, 24);
  const int64_t sn = round_up(kblocks, 8), bytes = round_up(rows, 256) * sn;
  FUZZ_CHECK(shuffled_scales_bytes(rows, kblocks) == bytes, "shuffled_scales_bytes(%lld, %lld)", (long long)rows,
             (long long)kblocks);
  const std::vector<uint8_t> plain = in.fill(size_t(rows * kblocks));
  std::vector<uint8_t> sh(size_t(bytes) + kSlack);
  fuzz::poison(sh.data(), sh.size(), 7);
  std::vector<uint8_t> want = sh;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kblocks; ++c) want[size_t(spec_scale_offset(r, c, sn))] = plain[size_t(r * kblocks + c)];
  const std::vector<uint8_t> plain_before = plain;
  shuffle_scales(plain.data(), rows, kblocks, sh.data(), exec);
  FUZZ_CHECK(plain == plain_before, "shuffle_scales wrote to its input");
  FUZZ_CHECK(sh == want, "shuffle_scales: placement differs from spec §4.1 or padding/slack written (rows %lld, "
             "kblocks %lld)", (long long)rows, (long long)kblocks);
  // The padding still holds the poison (garbage): unshuffle must not read it.
  std::vector<uint8_t> back(size_t(rows * kblocks) + kSlack);
  fuzz::poison(back.data(), back.size(), 9);
  unshuffle_scales(sh.data(), rows, kblocks, back.data(), exec);
  FUZZ_CHECK(std::memcmp(back.data(), plain.data(), plain.size()) == 0, "unshuffle_scales is not the inverse");
  FUZZ_CHECK(fuzz::intact(back.data() + plain.size(), kSlack, 9 + plain.size()), "unshuffle_scales overrun");
}

void mode_weights(Input& in, const Exec& exec) {
  const int64_t N = 16 * in.range(1, 8), K = 64 * in.range(1, 8), kb = K / 2;
  const std::vector<uint8_t> plain = in.fill(size_t(N * kb));
  std::vector<uint8_t> sh(size_t(N * kb) + kSlack);
  fuzz::poison(sh.data(), sh.size(), 11);
  std::vector<uint8_t> want = sh;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < kb; ++c) want[size_t(spec_weight_offset(n, c, kb))] = plain[size_t(n * kb + c)];
  shuffle_weight(plain.data(), N, K, sh.data(), exec);
  FUZZ_CHECK(sh == want, "shuffle_weight differs from spec §4.2 (N %lld, K %lld)", (long long)N, (long long)K);
  std::vector<uint8_t> back(size_t(N * kb) + kSlack);
  fuzz::poison(back.data(), back.size(), 13);
  unshuffle_weight(sh.data(), N, K, back.data(), exec);
  FUZZ_CHECK(std::memcmp(back.data(), plain.data(), plain.size()) == 0, "unshuffle_weight is not the inverse");
  FUZZ_CHECK(fuzz::intact(back.data() + plain.size(), kSlack, 13 + plain.size()), "unshuffle_weight overrun");
}

void mode_packed(Input& in, const Exec& exec) {
  const int64_t N = in.range(1, 48), K = 32 * in.range(1, 8), kblocks = K / 32;
  const bool code_sh = in.flag() && N % 16 == 0 && K % 64 == 0, scale_sh = in.flag();
  const int64_t M = in.range(1, 4), ldc_pad = in.range(0, 5), lda_pad = in.range(0, 40);
  const ScaleRule rule = ScaleRule(in.u8() % 3);
  // Scale bytes: mostly realistic (a window of 40 exponents drawn from the input), sometimes raw
  // (extremes, 0xFF) so that the GEMM's exact fp64 path and NaN rows/columns run too.
  const bool raw_scales = in.u8() < 64;
  const uint8_t scale_base = uint8_t(in.range(60, 180));
  const std::vector<uint8_t> bytes = in.fill(size_t(N * K / 2 + N * kblocks + M * (K + lda_pad) * 2));
  std::vector<uint8_t> codes(bytes.begin(), bytes.begin() + N * K / 2);
  std::vector<uint8_t> scales(size_t(N * kblocks));
  for (size_t i = 0; i < scales.size(); ++i) {
    const uint8_t b = bytes[size_t(N * K / 2) + i];
    scales[i] = raw_scales ? b : uint8_t(scale_base + b % 40);
  }

  // B in the chosen layouts, built with the spec formulas (not the library's converters).
  std::vector<uint8_t> lay_codes = codes, lay_scales = scales;
  if (code_sh)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < K / 2; ++c) lay_codes[size_t(spec_weight_offset(n, c, K / 2))] = codes[size_t(n * K / 2 + c)];
  if (scale_sh) {
    const int64_t sn = round_up(kblocks, 8);
    lay_scales.assign(size_t(round_up(N, 256) * sn), 0xFF);  // padding NaN: must never be read
    for (int64_t r = 0; r < N; ++r)
      for (int64_t c = 0; c < kblocks; ++c) lay_scales[size_t(spec_scale_offset(r, c, sn))] = scales[size_t(r * kblocks + c)];
  }
  MxMatrix B{lay_codes.data(), lay_scales.data(), N, K, code_sh ? CodeLayout::aiter_shuffled : CodeLayout::plain,
             scale_sh ? ScaleLayout::aiter_shuffled : ScaleLayout::plain};
  const std::vector<uint8_t> lay_codes0 = lay_codes, lay_scales0 = lay_scales;

  // prepack: equals the model, every byte written, nothing past the end.
  const int64_t pbytes = packed_bytes(N, K);
  const std::vector<uint8_t> model = model_packed(codes.data(), scales.data(), N, K);
  FUZZ_CHECK(int64_t(model.size()) == pbytes, "packed_bytes(%lld, %lld) = %lld", (long long)N, (long long)K,
             (long long)pbytes);
  std::vector<uint8_t> p1(size_t(pbytes) + kSlack), p2(size_t(pbytes) + kSlack);
  fuzz::poison(p1.data(), p1.size(), 17);
  std::memset(p2.data(), 0x5A, size_t(pbytes));
  fuzz::poison(p2.data() + pbytes, kSlack, 17 + size_t(pbytes));
  const PackedWeights P = prepack(B, p1.data(), exec);
  prepack(B, p2.data(), exec);
  FUZZ_CHECK(P.N == N && P.K == K && P.version == kPackedLayoutVersion && P.data == p1.data(), "descriptor");
  FUZZ_CHECK(p1 == p2, "prepack output depends on the previous buffer contents (a byte is not written)");
  FUZZ_CHECK(std::memcmp(p1.data(), model.data(), model.size()) == 0,
             "prepack differs from docs/packed-layout.md (N %lld, K %lld, layouts %d/%d)", (long long)N, (long long)K,
             int(code_sh), int(scale_sh));
  FUZZ_CHECK(fuzz::intact(p1.data() + pbytes, kSlack, 17 + size_t(pbytes)), "prepack overrun");
  FUZZ_CHECK(lay_codes == lay_codes0 && lay_scales == lay_scales0, "prepack wrote to B");

  std::vector<uint8_t> uc(codes.size() + kSlack), us(scales.size() + kSlack);
  fuzz::poison(uc.data(), uc.size(), 19);
  fuzz::poison(us.data(), us.size(), 23);
  const std::vector<uint8_t> p1_before = p1;
  unpack(P, uc.data(), us.data(), exec);
  FUZZ_CHECK(p1 == p1_before, "unpack wrote to the packed buffer");
  FUZZ_CHECK(std::memcmp(uc.data(), codes.data(), codes.size()) == 0, "unpack codes != original");
  FUZZ_CHECK(std::memcmp(us.data(), scales.data(), scales.size()) == 0, "unpack scales != original");
  FUZZ_CHECK(fuzz::intact(uc.data() + codes.size(), kSlack, 19 + codes.size()) &&
                 fuzz::intact(us.data() + scales.size(), kSlack, 23 + scales.size()),
             "unpack overrun");

  // GEMM on a strided A (lda > K) and a strided, canaried C (ldc > N, two canary rows after).
  const int64_t lda = K + lda_pad, ldc = N + ldc_pad;
  std::vector<uint16_t> A(size_t(M * lda));
  std::memcpy(A.data(), bytes.data() + N * K / 2 + N * kblocks, A.size() * 2);
  // Keep A mostly finite and moderate: bf16 exponent bits from the input but squeezed to a
  // window, except when raw scales are in play (then raw bits, NaN/Inf included).
  if (!raw_scales)
    for (auto& v : A) v = uint16_t((v & 0x807F) | (uint16_t(0x3C + ((v >> 7) & 0xF)) << 7));
  const std::vector<uint16_t> A0 = A;
  const size_t c_elems = size_t((M + 2) * ldc);
  auto fresh_c = [&] {
    std::vector<uint16_t> C(c_elems);
    for (size_t i = 0; i < C.size(); ++i) C[i] = uint16_t(0xC0DE ^ i);
    return C;
  };
  auto check_c_canaries = [&](const std::vector<uint16_t>& C, const char* what) {
    for (int64_t m = 0; m < M + 2; ++m)
      for (int64_t n = 0; n < ldc; ++n)
        if (m >= M || n >= N)
          FUZZ_CHECK(C[size_t(m * ldc + n)] == uint16_t(0xC0DE ^ size_t(m * ldc + n)),
                     "%s wrote C outside [M, N] at (%lld, %lld)", what, (long long)m, (long long)n);
  };
  GemmOptions opt;
  opt.rule = rule;
  std::vector<uint16_t> c_packed = fresh_c(), c_mx = fresh_c(), c_q = fresh_c(), c_ref = fresh_c();
  gemm(A.data(), M, K, lda, P, c_packed.data(), ldc, opt, exec);
  gemm(A.data(), M, K, lda, B, c_mx.data(), ldc, opt, exec);
  std::vector<uint8_t> aq_codes(size_t(M * K / 2)), aq_scales(size_t(M * kblocks));
  quantize(A.data(), DType::bf16, M, K, lda, aq_codes.data(), aq_scales.data(), rule, exec);
  const MxMatrix AQ{aq_codes.data(), aq_scales.data(), M, K};
  gemm_quantized(AQ, B, c_q.data(), ldc, exec);
  const MxMatrix Bplain{codes.data(), scales.data(), N, K};
  std::vector<double> ref(size_t(M * N)), abs_sum(size_t(M * N));
  gemm_reference(AQ, Bplain, c_ref.data(), ldc, ref.data(), abs_sum.data());
  FUZZ_CHECK(A == A0, "a GEMM wrote to A");
  FUZZ_CHECK(p1 == p1_before && lay_codes == lay_codes0 && lay_scales == lay_scales0, "a GEMM wrote to B");
  check_c_canaries(c_packed, "gemm(packed)");
  check_c_canaries(c_mx, "gemm(MxMatrix)");
  check_c_canaries(c_q, "gemm_quantized");
  check_c_canaries(c_ref, "gemm_reference");
  FUZZ_CHECK(c_packed == c_mx, "gemm(packed) != gemm(MxMatrix) (layouts %d/%d)", int(code_sh), int(scale_sh));
  FUZZ_CHECK(c_packed == c_q, "gemm(bf16 A) != gemm_quantized(quantize(A)) (bug kind K03)");
  const test::ContractReport rep = test::check_gemm_contract(c_packed.data(), M, N, ldc, ref.data(), abs_sum.data());
  FUZZ_CHECK(rep.ok(), "spec §3 bound: %s", rep.str().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const int mode = in.u8() % 3;
  Exec exec;
  exec.threads = int(in.range(1, 4));
  if (mode == 0)
    mode_scales(in, exec);
  else if (mode == 1)
    mode_weights(in, exec);
  else
    mode_packed(in, exec);
  return 0;
}
