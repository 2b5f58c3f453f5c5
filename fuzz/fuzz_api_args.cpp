// libFuzzer target: argument validation of every public entry point (src/core/api.cpp).
//
// Sizes, strides, enum values, thread counts and layout versions come from the input (biased
// towards boundaries: 0, +-1, 31/32/33, 2^31, 2^62, INT64_MAX, INT64_MIN, ...). Pointers are
// either null or all the SAME address (optionally misaligned), an address that faults if
// written. So no call can legitimately do any work: every output overlaps an input, or a
// pointer is null. Properties:
//   - every call throws InvalidArgument, TypeMismatch or (Backend::cuda in this CPU-only
//     build) Error, with a message starting "mxfp4::<function>: "; nothing else escapes, and
//     nothing crashes or trips UBSan (signed overflow in size arithmetic, bad enum loads);
//   - the pure size functions (shuffled_scales_bytes, packed_bytes, explain_gemm) either
//     throw or return exactly what the spec formula gives (computed here in 128-bit).
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "mxfp4/mxfp4.hpp"

using namespace mxfp4;
using mxfp4::fuzz::Input;

namespace {

int64_t size_arg(Input& in) {
  static const int64_t kTable[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   15,
                                   16,
                                   17,
                                   31,
                                   32,
                                   33,
                                   48,
                                   63,
                                   64,
                                   96,
                                   255,
                                   256,
                                   257,
                                   -32,
                                   INT32_MAX,
                                   int64_t(INT32_MAX) + 1,
                                   int64_t(1) << 31 << 1,
                                   int64_t(1) << 40,
                                   int64_t(1) << 57,
                                   int64_t(1) << 58,
                                   (int64_t(1) << 62) - 32,
                                   int64_t(1) << 62,
                                   (int64_t(1) << 62) + 32,
                                   INT64_MAX,
                                   INT64_MAX / 32 * 32,
                                   INT64_MAX - 255,
                                   INT64_MIN,
                                   INT64_MIN + 32};
  constexpr int kN = int(sizeof(kTable) / sizeof(kTable[0]));
  const uint8_t sel = in.u8();
  if (sel < 224) return kTable[sel % kN];
  return int64_t(in.u64());
}

int small_int(Input& in) {
  static const int kTable[] = {0, 1, 2, 3, -1, 7, 255, INT_MAX, INT_MIN};
  const uint8_t sel = in.u8();
  if (sel < 224) return kTable[sel % 9];
  return int(in.u32());
}

template <class E>
E enum_arg(Input& in) {
  const uint8_t sel = in.u8();
  return sel < 200 ? E(sel % 3) : E(small_int(in));
}

// Pointer source: null, or one fixed address inside ASan's shadow gap (any access faults).
struct Pointers {
  uintptr_t base;
  uint8_t mode;  // 0: all at base, 1: base + 1 (misaligned), 2: each null or base
  Input* in;
  template <class T = uint8_t>
  T* get() {
    if (mode == 2 && in->flag()) return nullptr;
    return reinterpret_cast<T*>(base + (mode == 1 ? 1 : 0));
  }
};

void expect_rejected(const char* fn, Input& in, void (*call)(Input&, Pointers&), Pointers& ptrs) {
  try {
    call(in, ptrs);
  } catch (const InvalidArgument& e) {
    FUZZ_CHECK(std::string(e.what()).rfind(std::string("mxfp4::"), 0) == 0, "%s: message '%s'", fn, e.what());
    return;
  } catch (const TypeMismatch& e) {
    FUZZ_CHECK(std::string(e.what()).rfind(std::string("mxfp4::"), 0) == 0, "%s: message '%s'", fn, e.what());
    return;
  } catch (const Error& e) {
    // Only the missing CUDA backend may answer after validation in this CPU-only build.
    FUZZ_CHECK(std::string(e.what()).find("without the CUDA backend") != std::string::npos, "%s: Error '%s'", fn,
               e.what());
    return;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "%s threw an undocumented exception: %s", fn, e.what());
  }
  FUZZ_CHECK(false, "%s accepted overlapping or null buffers", fn);
}

Exec exec_arg(Input& in) {
  Exec e;
  const uint8_t b = in.u8();
  e.backend = b < 160 ? Backend::cpu : (b < 240 ? Backend::cuda : Backend(small_int(in)));
  e.threads = in.u8() < 200 ? int(in.u8() % 4) : small_int(in);
  return e;
}

MxMatrix mx_arg(Input& in, Pointers& p) {
  MxMatrix m;
  m.codes = p.get();
  m.scales = p.get();
  m.rows = size_arg(in);
  m.K = size_arg(in);
  m.code_layout = enum_arg<CodeLayout>(in);
  m.scale_layout = enum_arg<ScaleLayout>(in);
  return m;
}

PackedWeights packed_arg(Input& in, Pointers& p) {
  PackedWeights w;
  w.data = p.get();
  w.N = size_arg(in);
  w.K = size_arg(in);
  w.version = in.u8() < 192 ? kPackedLayoutVersion : small_int(in);
  w.fp8 = in.flag() ? p.get() : nullptr;  // an FP8 image (prepack_fp8) or none
  return w;
}

using i128 = __int128;
i128 ru(i128 v, i128 m) { return (v + m - 1) / m * m; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Pointers ptrs{uintptr_t(1) << 32, uint8_t(in.u8() % 3), &in};
  const int which = in.u8() % 16;
  switch (which) {
    case 0:
      expect_rejected("quantize", in, [](Input& in, Pointers& p) {
        const DType dt = enum_arg<DType>(in);
        const int64_t rows = size_arg(in), K = size_arg(in), stride = size_arg(in);
        const ScaleRule rule = enum_arg<ScaleRule>(in);
        const Exec e = exec_arg(in);
        const ScaleLayout sl = enum_arg<ScaleLayout>(in);
        quantize(p.get<void>(), dt, rows, K, stride, p.get(), p.get(), rule, e, sl);
      }, ptrs);
      break;
    case 1:
      expect_rejected("dequantize", in, [](Input& in, Pointers& p) {
        const MxMatrix q = mx_arg(in, p);
        const DType dt = enum_arg<DType>(in);
        const int64_t stride = size_arg(in);
        dequantize(q, p.get<void>(), dt, stride, exec_arg(in));
      }, ptrs);
      break;
    case 2:
    case 3:
      expect_rejected("shuffle_scales", in, [](Input& in, Pointers& p) {
        const int64_t rows = size_arg(in), kb = size_arg(in);
        const bool inverse = in.flag();
        const Exec e = exec_arg(in);
        if (inverse)
          unshuffle_scales(p.get(), rows, kb, p.get(), e);
        else
          shuffle_scales(p.get(), rows, kb, p.get(), e);
      }, ptrs);
      break;
    case 4:
      expect_rejected("shuffle_weight", in, [](Input& in, Pointers& p) {
        const int64_t N = size_arg(in), K = size_arg(in);
        const bool inverse = in.flag();
        const Exec e = exec_arg(in);
        if (inverse)
          unshuffle_weight(p.get(), N, K, p.get(), e);
        else
          shuffle_weight(p.get(), N, K, p.get(), e);
      }, ptrs);
      break;
    case 5:
      expect_rejected("prepack", in, [](Input& in, Pointers& p) {
        const MxMatrix b = mx_arg(in, p);
        prepack(b, p.get(), exec_arg(in));
      }, ptrs);
      break;
    case 6:
      expect_rejected("prepack_dense", in, [](Input& in, Pointers& p) {
        const DType dt = enum_arg<DType>(in);
        const int64_t N = size_arg(in), K = size_arg(in), stride = size_arg(in);
        const ScaleRule rule = enum_arg<ScaleRule>(in);
        prepack_dense(p.get<void>(), dt, N, K, stride, p.get(), p.get(), rule, exec_arg(in));
      }, ptrs);
      break;
    case 7:
      if (in.flag()) {
        expect_rejected("prepack_fp8", in, [](Input& in, Pointers& p) {
          const PackedWeights w = packed_arg(in, p);
          prepack_fp8(w, p.get(), exec_arg(in));
        }, ptrs);
        break;
      }
      expect_rejected("unpack", in, [](Input& in, Pointers& p) {
        const PackedWeights w = packed_arg(in, p);
        unpack(w, p.get(), p.get(), exec_arg(in));
      }, ptrs);
      break;
    case 8:
    case 9:
      expect_rejected("gemm", in, [](Input& in, Pointers& p) {
        const int64_t M = size_arg(in), K = size_arg(in), lda = size_arg(in), ldc = size_arg(in);
        GemmOptions opt;
        opt.rule = enum_arg<ScaleRule>(in);
        GemmConfig cfg;
        if (in.flag()) {
          const uint8_t path = in.u8();  // fused, splitk, tiled, fp8, or any int
          cfg.path = path < 240 ? GemmPath(path % 4) : GemmPath(small_int(in));
          cfg.block_n = small_int(in);
          cfg.block_m = small_int(in);
          cfg.split_k = small_int(in);
          cfg.warps = small_int(in);
          opt.config = &cfg;
        }
        if (in.flag()) {
          opt.workspace = p.get<void>();
          opt.workspace_bytes = size_t(size_arg(in));
        }
        const bool packed = in.flag();
        const Exec e = exec_arg(in);
        // A flag after B picks the fp32-output overloads (float* C).
        if (packed) {
          const PackedWeights B = packed_arg(in, p);
          if (in.flag())
            gemm(p.get<const uint16_t>(), M, K, lda, B, p.get<float>(), ldc, opt, e);
          else
            gemm(p.get<const uint16_t>(), M, K, lda, B, p.get<uint16_t>(), ldc, opt, e);
        } else {
          const MxMatrix B = mx_arg(in, p);
          if (in.flag())
            gemm(p.get<const uint16_t>(), M, K, lda, B, p.get<float>(), ldc, opt, e);
          else
            gemm(p.get<const uint16_t>(), M, K, lda, B, p.get<uint16_t>(), ldc, opt, e);
        }
      }, ptrs);
      break;
    case 10:
      expect_rejected("gemm_quantized", in, [](Input& in, Pointers& p) {
        const MxMatrix A = mx_arg(in, p), B = mx_arg(in, p);
        const int64_t ldc = size_arg(in);
        gemm_quantized(A, B, p.get<uint16_t>(), ldc, exec_arg(in));
      }, ptrs);
      break;
    case 11:
      expect_rejected("gemm_reference", in, [](Input& in, Pointers& p) {
        const MxMatrix A = mx_arg(in, p), B = mx_arg(in, p);
        const int64_t ldc = size_arg(in);
        double* f64 = in.flag() ? p.get<double>() : nullptr;
        double* abs = in.flag() ? p.get<double>() : nullptr;
        gemm_reference(A, B, p.get<uint16_t>(), ldc, f64, abs);
      }, ptrs);
      break;
    case 12: {  // shuffled_scales_bytes: throws or returns the spec size
      const int64_t rows = size_arg(in), kb = size_arg(in);
      try {
        const int64_t v = shuffled_scales_bytes(rows, kb);
        FUZZ_CHECK(rows >= 1 && kb >= 1 && i128(v) == ru(rows, 256) * ru(kb, 8) && v <= (int64_t(1) << 62),
                   "shuffled_scales_bytes(%lld, %lld) = %lld", (long long)rows, (long long)kb, (long long)v);
      } catch (const InvalidArgument&) {
        FUZZ_CHECK(rows < 1 || kb < 1 || ru(rows, 256) * ru(kb, 8) > (i128(1) << 62) ||
                       rows > (int64_t(1) << 62) || kb > (int64_t(1) << 62),
                   "shuffled_scales_bytes(%lld, %lld) rejected a valid size", (long long)rows, (long long)kb);
      }
      break;
    }
    case 13: {  // packed_bytes, fp8_weights_bytes
      const int64_t N = size_arg(in), K = size_arg(in);
      try {
        const int64_t v = packed_bytes(N, K);
        const i128 padded = ru(N, 16) * ru(K, 64);
        FUZZ_CHECK(N >= 1 && K >= 32 && K % 32 == 0 && i128(v) == padded / 2 + padded / 32,
                   "packed_bytes(%lld, %lld) = %lld", (long long)N, (long long)K, (long long)v);
      } catch (const InvalidArgument&) {
      }
      try {  // codes S * Rp * 128, scales and exponent words S * Rp * 4 each, wide records
             // S * Rp / 64 * 16, flags S * Rp / 16, rounded up to 16 (docs/fp8-path.md)
        const int64_t v = fp8_weights_bytes(N, K);
        const i128 rows = ru(N, 256), slices = ru(K, 128) / 128;
        FUZZ_CHECK(N >= 1 && K >= 32 && K % 32 == 0 &&
                       i128(v) == ru(slices * rows * 136 + slices * (rows / 64) * 16 + slices * rows / 16, 16),
                   "fp8_weights_bytes(%lld, %lld) = %lld", (long long)N, (long long)K, (long long)v);
      } catch (const InvalidArgument&) {
      }
      break;
    }
    case 14: {  // explain_gemm on the CPU: validated like gemm(), answers the fixed CPU config
      const int64_t M = size_arg(in), N = size_arg(in), K = size_arg(in);
      Exec e = exec_arg(in);
      try {
        const GemmConfig c = explain_gemm(M, N, K, e);
        FUZZ_CHECK(M >= 1 && N >= 1 && K >= 32 && K % 32 == 0 && i128(M) * K * 2 <= (i128(1) << 62) &&
                       i128(M) * N * 2 <= (i128(1) << 62),
                   "explain_gemm accepted (%lld, %lld, %lld)", (long long)M, (long long)N, (long long)K);
        // Shapes explain_gemm accepts are safe for the pure dispatcher helpers.
        DeviceInfo dev;
        dev.sm_count = int(in.range(1, 1024));
        const GemmConfig d = choose_gemm_config(M, N, K, dev);
        (void)gemm_workspace_bytes(M, K, d);
        (void)gemm_workspace_bytes(M, N, K, d);
        (void)gemm_workspace_bytes(M, N, K, c);
        (void)describe(c);
      } catch (const InvalidArgument&) {
      } catch (const Error& err) {
        FUZZ_CHECK(e.backend == Backend::cuda, "explain_gemm: %s", err.what());
      }
      break;
    }
    default: {  // describe() of any configuration, valid or not
      GemmConfig c;
      c.path = enum_arg<GemmPath>(in);
      c.block_n = small_int(in);
      c.block_m = small_int(in);
      c.split_k = small_int(in);
      c.warps = small_int(in);
      FUZZ_CHECK(!describe(c).empty(), "describe");
      break;
    }
  }
  return 0;
}
