// mxfp4._C: thin nanobind bindings over include/mxfp4/mxfp4.hpp.
//
// Arrays arrive through DLPack / the buffer protocol (numpy, torch, anything with
// __dlpack__) without copies: nb::ndarray is declared with no dtype, shape or order
// constraint, so nanobind never converts. This file only turns an array into (pointer, rows,
// columns, row stride) and checks what the C++ API cannot see behind a raw pointer: the
// element type, a unit stride along the last dimension, the byte size of dense buffers and
// that all arrays of a call live on the same device. Every rule about sizes, strides and
// layouts is the library's (InvalidArgument -> ValueError, TypeMismatch -> TypeError,
// Error/CudaError -> RuntimeError; translators below). Outputs are allocated by the caller
// (the Python package) in the caller's framework and passed in.
//
// CUDA arrays: work runs on the device that holds them (a device guard sets it for the call)
// and is queued on `stream` (a cudaStream_t as an integer, e.g. torch's
// torch.cuda.current_stream().cuda_stream; 0 = the legacy default stream).
#include "arrays.hpp"

using namespace mxfp4py;

namespace {

// ---- bound functions ------------------------------------------------------------------------

void quantize(const In& x, DType dtype, const Out& codes, const Out& scales, ScaleRule rule,
              ScaleLayout scale_layout, uintptr_t stream) {
  Devices devs;
  devs.add("x", x);
  devs.add("codes", codes);
  devs.add("scales", scales);
  check_float("x", x, dtype, "float32, float16 or bfloat16");
  const Mat m = mat2d("x", x);
  void* c = bytes("codes", codes, code_bytes(m.rows, m.cols), "rows*K/2 " + rk("rows", m.rows, m.cols));
  void* s = bytes("scales", scales, scale_bytes(m.rows, m.cols, scale_layout),
                  scale_what(scale_layout, "rows", m.rows, m.cols));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::quantize(m.p, dtype, m.rows, m.cols, m.ld, static_cast<uint8_t*>(c), static_cast<uint8_t*>(s), rule, e,
                  scale_layout);
}

void dequantize(const In& codes, const In& scales, int64_t rows, int64_t K, CodeLayout code_layout,
                ScaleLayout scale_layout, const Out& out, DType out_dtype, uintptr_t stream) {
  Devices devs;
  devs.add("codes", codes);
  devs.add("scales", scales);
  devs.add("out", out);
  const auto q = mx("codes", codes, "scales", scales, "rows", rows, K, code_layout, scale_layout);
  check_float("out", out, out_dtype, "float32 or bfloat16");
  const Mat o = mat2d("out", out);
  if (o.rows != rows || o.cols != K) {
    throw InvalidArgument("out must have shape (" + std::to_string(rows) + ", " + std::to_string(K) + "); got " +
                          shape_str(out));
  }
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::dequantize(q, o.p, out_dtype, o.ld, e);
}

void shuffle_scales(const In& plain, int64_t rows, int64_t kblocks, const Out& shuffled, uintptr_t stream) {
  Devices devs;
  devs.add("plain", plain);
  devs.add("shuffled", shuffled);
  const bool ok = dims_in_range(rows, kblocks);
  const auto dims = "(rows=" + std::to_string(rows) + ", kblocks=" + std::to_string(kblocks) + ")";
  auto* p = static_cast<const uint8_t*>(bytes("plain", plain, ok ? rows * kblocks : -1, "rows*kblocks " + dims));
  auto* s = static_cast<uint8_t*>(bytes("shuffled", shuffled, ok ? mxfp4::shuffled_scales_bytes(rows, kblocks) : -1,
                                        "round_up(rows,256)*round_up(kblocks,8) " + dims));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::shuffle_scales(p, rows, kblocks, s, e);
}

void unshuffle_scales(const In& shuffled, int64_t rows, int64_t kblocks, const Out& plain, uintptr_t stream) {
  Devices devs;
  devs.add("shuffled", shuffled);
  devs.add("plain", plain);
  const bool ok = dims_in_range(rows, kblocks);
  const auto dims = "(rows=" + std::to_string(rows) + ", kblocks=" + std::to_string(kblocks) + ")";
  auto* s = static_cast<const uint8_t*>(bytes("shuffled", shuffled,
                                              ok ? mxfp4::shuffled_scales_bytes(rows, kblocks) : -1,
                                              "round_up(rows,256)*round_up(kblocks,8) " + dims));
  auto* p = static_cast<uint8_t*>(bytes("plain", plain, ok ? rows * kblocks : -1, "rows*kblocks " + dims));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::unshuffle_scales(s, rows, kblocks, p, e);
}

template <bool kShuffle>
void weight_layout(const In& src, int64_t N, int64_t K, const Out& dst, uintptr_t stream) {
  Devices devs;
  devs.add("src", src);
  devs.add("dst", dst);
  const int64_t n = (K >= 2 && dims_in_range(N, K / 2)) ? N * (K / 2) : -1;
  const auto what = "N*K/2 " + rk("N", N, K);
  auto* s = static_cast<const uint8_t*>(bytes("src", src, n, what));
  auto* d = static_cast<uint8_t*>(bytes("dst", dst, n, what));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  if (kShuffle) {
    mxfp4::shuffle_weight(s, N, K, d, e);
  } else {
    mxfp4::unshuffle_weight(s, N, K, d, e);
  }
}

int prepack(const In& codes, const In& scales, int64_t N, int64_t K, CodeLayout code_layout, ScaleLayout scale_layout,
            const Out& out, uintptr_t stream) {
  Devices devs;
  devs.add("codes", codes);
  devs.add("scales", scales);
  devs.add("out", out);
  const auto b = mx("codes", codes, "scales", scales, "N", N, K, code_layout, scale_layout);
  auto* o = static_cast<uint8_t*>(bytes("out", out, packed_size(N, K), "packed_bytes" + rk("N", N, K)));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  return mxfp4::prepack(b, o, e).version;
}

int prepack_dense(const In& w, DType dtype, const Out& out, const Out& tmp, ScaleRule rule, uintptr_t stream) {
  Devices devs;
  devs.add("w", w);
  devs.add("out", out);
  devs.add("tmp", tmp);
  check_float("w", w, dtype, "float32, float16 or bfloat16");
  const Mat m = mat2d("w", w);
  const int64_t N = m.rows, K = m.cols;
  auto* o = static_cast<uint8_t*>(bytes("out", out, packed_size(N, K), "packed_bytes" + rk("N", N, K)));
  auto* t = static_cast<uint8_t*>(
      bytes("tmp", tmp, valid_rows_k(N, K) ? N * (K / 2) + N * (K / 32) : -1, "N*K/2 + N*K/32 " + rk("N", N, K)));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  return mxfp4::prepack_dense(m.p, dtype, N, K, m.ld, o, t, rule, e).version;
}

mxfp4::PackedWeights packed_view(const In& packed, int64_t N, int64_t K, int version) {
  mxfp4::PackedWeights p;
  p.data = static_cast<const uint8_t*>(bytes("packed", packed, packed_size(N, K), "packed_bytes" + rk("N", N, K)));
  p.N = N;
  p.K = K;
  p.version = version;
  return p;
}

/// Builds the FP8 image of the packed weights `packed` (B [N, K], layout `version`) into `out`
/// (fp8_weights_bytes(N, K) bytes).
void prepack_fp8(const In& packed, int64_t N, int64_t K, int version, const Out& out, uintptr_t stream) {
  Devices devs;
  devs.add("packed", packed);
  devs.add("out", out);
  const auto p = packed_view(packed, N, K, version);
  auto* o = static_cast<uint8_t*>(bytes("out", out, fp8_size(N, K), "fp8_weights_bytes" + rk("N", N, K)));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::prepack_fp8(p, o, e);
}

void unpack(const In& packed, int64_t N, int64_t K, int version, const Out& codes, const Out& scales,
            uintptr_t stream) {
  Devices devs;
  devs.add("packed", packed);
  devs.add("codes", codes);
  devs.add("scales", scales);
  const auto p = packed_view(packed, N, K, version);
  auto* c = static_cast<uint8_t*>(bytes("codes", codes, code_bytes(N, K), "N*K/2 " + rk("N", N, K)));
  auto* s = static_cast<uint8_t*>(bytes("scales", scales, scale_bytes(N, K, ScaleLayout::plain),
                                        scale_what(ScaleLayout::plain, "N", N, K)));
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  mxfp4::unpack(p, c, s, e);
}

/// Activation A (bf16 [M, K]) and output C ([M, N], bf16 or float32: its dtype picks the
/// overload of mxfp4::gemm) of a GEMM.
struct GemmIO {
  Mat a, c;
  bool c_f32 = false;
};

GemmIO gemm_io(const In& a, const Out& c, int64_t N) {
  GemmIO io;
  check_float("a", a, DType::bf16, "bfloat16 (or uint16 bf16 bit patterns)");
  const auto d = c.dtype();
  io.c_f32 = d.code == uint8_t(nb::dlpack::dtype_code::Float) && d.bits == 32 && d.lanes == 1;
  if (!io.c_f32) check_float("out", c, DType::bf16, "bfloat16 (or uint16 bf16 bit patterns) or float32");
  io.a = mat2d("a", a);
  io.c = mat2d("out", c);
  if (io.c.rows != io.a.rows || io.c.cols != N) {
    throw InvalidArgument("out must have shape (M, N) = (" + std::to_string(io.a.rows) + ", " + std::to_string(N) +
                          "); got " + shape_str(c));
  }
  return io;
}

void gemm_packed(const In& a, const In& packed, int64_t N, int64_t K, int version, const Out& out, ScaleRule rule,
                 std::optional<mxfp4::GemmConfig> config, std::optional<Out> workspace, uintptr_t stream,
                 std::optional<In> fp8, bool weights_static) {
  Devices devs;
  devs.add("a", a);
  devs.add("packed", packed);
  if (fp8) devs.add("fp8", *fp8);
  devs.add("out", out);
  if (workspace) devs.add("workspace", *workspace);
  const GemmIO io = gemm_io(a, out, N);
  if (io.a.cols != K) {
    throw InvalidArgument("a has K = " + std::to_string(io.a.cols) + " columns but the packed weights have K = " +
                          std::to_string(K));
  }
  auto p = packed_view(packed, N, K, version);
  if (fp8) p.fp8 = static_cast<const uint8_t*>(bytes("fp8", *fp8, fp8_size(N, K), "fp8_weights_bytes" + rk("N", N, K)));
  mxfp4::GemmOptions opt;
  opt.rule = rule;
  opt.weights_static = weights_static;
  if (config) opt.config = &*config;
  if (workspace) {
    opt.workspace = bytes("workspace", *workspace, -1, "");
    opt.workspace_bytes = workspace->size();
  }
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  if (io.c_f32)
    mxfp4::gemm(static_cast<const uint16_t*>(io.a.p), io.a.rows, io.a.cols, io.a.ld, p, static_cast<float*>(io.c.p),
                io.c.ld, opt, e);
  else
    mxfp4::gemm(static_cast<const uint16_t*>(io.a.p), io.a.rows, io.a.cols, io.a.ld, p,
                static_cast<uint16_t*>(io.c.p), io.c.ld, opt, e);
}

void gemm_mx(const In& a, const In& codes, const In& scales, int64_t N, CodeLayout code_layout,
             ScaleLayout scale_layout, const Out& out, ScaleRule rule, uintptr_t stream) {
  Devices devs;
  devs.add("a", a);
  devs.add("codes", codes);
  devs.add("scales", scales);
  devs.add("out", out);
  const GemmIO io = gemm_io(a, out, N);
  const int64_t K = io.a.cols;
  const auto b = mx("codes", codes, "scales", scales, "N", N, K, code_layout, scale_layout);
  mxfp4::GemmOptions opt;
  opt.rule = rule;
  const Exec e = devs.exec(stream);
  DeviceGuard g(devs.device());
  nb::gil_scoped_release nogil;
  if (io.c_f32)
    mxfp4::gemm(static_cast<const uint16_t*>(io.a.p), io.a.rows, K, io.a.ld, b, static_cast<float*>(io.c.p), io.c.ld,
                opt, e);
  else
    mxfp4::gemm(static_cast<const uint16_t*>(io.a.p), io.a.rows, K, io.a.ld, b, static_cast<uint16_t*>(io.c.p),
                io.c.ld, opt, e);
}

/// Operands of gemm_quantized / gemm_reference: plain A [M, K] and B [N, K] (codes, scales)
/// and a bf16 C [M, N], every array registered in `devs`.
struct QuantizedOperands {
  mxfp4::MxMatrix A, B;
  Mat c;
};
QuantizedOperands quantized_operands(Devices& devs, const In& a_codes, const In& a_scales, int64_t M,
                                     const In& b_codes, const In& b_scales, int64_t N, int64_t K, const Out& out) {
  devs.add("a_codes", a_codes);
  devs.add("a_scales", a_scales);
  devs.add("b_codes", b_codes);
  devs.add("b_scales", b_scales);
  devs.add("out", out);
  QuantizedOperands q;
  q.A = mx("a_codes", a_codes, "a_scales", a_scales, "M", M, K, CodeLayout::plain, ScaleLayout::plain);
  q.B = mx("b_codes", b_codes, "b_scales", b_scales, "N", N, K, CodeLayout::plain, ScaleLayout::plain);
  check_float("out", out, DType::bf16, "bfloat16 (or uint16 bf16 bit patterns)");
  q.c = mat2d("out", out);
  if (q.c.rows != M || q.c.cols != N) {
    throw InvalidArgument("out must have shape (M, N) = (" + std::to_string(M) + ", " + std::to_string(N) +
                          "); got " + shape_str(out));
  }
  return q;
}

void gemm_quantized(const In& a_codes, const In& a_scales, int64_t M, const In& b_codes, const In& b_scales,
                    int64_t N, int64_t K, const Out& out) {
  Devices devs;
  const QuantizedOperands q = quantized_operands(devs, a_codes, a_scales, M, b_codes, b_scales, N, K, out);
  const Exec e = devs.exec(0);
  nb::gil_scoped_release nogil;
  mxfp4::gemm_quantized(q.A, q.B, static_cast<uint16_t*>(q.c.p), q.c.ld, e);
}

void gemm_reference(const In& a_codes, const In& a_scales, int64_t M, const In& b_codes, const In& b_scales, int64_t N,
                    int64_t K, const Out& out, std::optional<Out> out_f64, std::optional<Out> out_abs) {
  Devices devs;
  const QuantizedOperands q = quantized_operands(devs, a_codes, a_scales, M, b_codes, b_scales, N, K, out);
  auto f64 = [&](const char* name, std::optional<Out>& o) -> double* {
    if (!o) return nullptr;
    devs.add(name, *o);
    const auto d = o->dtype();
    if (!(d.code == uint8_t(nb::dlpack::dtype_code::Float) && d.bits == 64 && d.lanes == 1)) {
      throw TypeMismatch(std::string(name) + " must be float64; got " + dtype_name(d));
    }
    if (!c_contiguous(*o) || int64_t(o->size()) != M * N) {
      throw InvalidArgument(std::string(name) + " must be a C-contiguous float64 array of M*N elements");
    }
    return static_cast<double*>(o->data());
  };
  double* pf = f64("out_f64", out_f64);
  double* pa = f64("out_abs", out_abs);
  if (devs.device().type != kDLCPU) throw InvalidArgument("gemm_reference runs on the CPU: pass host arrays");
  nb::gil_scoped_release nogil;
  mxfp4::gemm_reference(q.A, q.B, static_cast<uint16_t*>(q.c.p), q.c.ld, pf, pa);
}

mxfp4::GemmConfig explain_gemm(int64_t M, int64_t N, int64_t K, Backend backend, int device, bool fp8_image) {
  Exec e;
  e.backend = backend;
  DeviceGuard g(Device{backend == Backend::cuda ? kDLCUDA : kDLCPU, device});
  return mxfp4::explain_gemm(M, N, K, e, fp8_image);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() =
      "Low-level bindings of the mxfp4 C++ library (include/mxfp4/mxfp4.hpp). Use the mxfp4 package "
      "instead: it allocates outputs, picks streams and accepts N-D inputs.";

  // C++ exceptions -> Python (registered last = tried first). InvalidArgument and
  // TypeMismatch both derive from std::invalid_argument, so they need their own translator.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const mxfp4::TypeMismatch& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const mxfp4::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const mxfp4::Error& e) {  // CudaError included
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  nb::enum_<DType>(m, "DType", "Element type of a dense matrix.")
      .value("bf16", DType::bf16)
      .value("fp16", DType::fp16)
      .value("fp32", DType::fp32);
  nb::enum_<Backend>(m, "Backend", "Where the work runs.").value("cpu", Backend::cpu).value("cuda", Backend::cuda);
  nb::enum_<CodeLayout>(m, "CodeLayout", "Layout of packed e2m1 codes (spec §1.1, §4.2).")
      .value("plain", CodeLayout::plain)
      .value("aiter_shuffled", CodeLayout::aiter_shuffled);
  nb::enum_<ScaleLayout>(m, "ScaleLayout", "Layout of E8M0 scales (spec §4.1).")
      .value("plain", ScaleLayout::plain)
      .value("aiter_shuffled", ScaleLayout::aiter_shuffled);
  nb::enum_<ScaleRule>(m, "ScaleRule", "Shared-exponent rule (spec §2).")
      .value("aiter", ScaleRule::aiter)
      .value("floor", ScaleRule::floor)
      .value("rceil", ScaleRule::rceil);
  nb::enum_<mxfp4::GemmPath>(m, "GemmPath", "Kernel path of the CUDA GEMM.")
      .value("fused", mxfp4::GemmPath::fused)
      .value("splitk", mxfp4::GemmPath::splitk)
      .value("tiled", mxfp4::GemmPath::tiled)
      .value("fp8", mxfp4::GemmPath::fp8)
      .value("gemv", mxfp4::GemmPath::gemv);

  nb::class_<mxfp4::GemmConfig>(m, "GemmConfig", "Tile configuration of one GEMM launch.")
      .def(nb::init<>())
      .def_rw("path", &mxfp4::GemmConfig::path)
      .def_rw("block_n", &mxfp4::GemmConfig::block_n)
      .def_rw("block_m", &mxfp4::GemmConfig::block_m)
      .def_rw("split_k", &mxfp4::GemmConfig::split_k)
      .def_rw("warps", &mxfp4::GemmConfig::warps)
      .def("__str__", [](const mxfp4::GemmConfig& c) { return mxfp4::describe(c); })
      .def("__repr__", [](const mxfp4::GemmConfig& c) { return "GemmConfig(" + mxfp4::describe(c) + ")"; });

  nb::class_<mxfp4::DeviceInfo>(m, "DeviceInfo", "Properties of a device that the dispatcher reads.")
      .def(nb::init<>())
      .def_rw("name", &mxfp4::DeviceInfo::name)
      .def_rw("cc_major", &mxfp4::DeviceInfo::cc_major)
      .def_rw("cc_minor", &mxfp4::DeviceInfo::cc_minor)
      .def_rw("sm_count", &mxfp4::DeviceInfo::sm_count)
      .def_rw("smem_optin_bytes", &mxfp4::DeviceInfo::smem_optin_bytes)
      .def("__repr__", [](const mxfp4::DeviceInfo& d) {
        return "DeviceInfo(name='" + d.name + "', cc=" + std::to_string(d.cc_major) + "." +
               std::to_string(d.cc_minor) + ", sm_count=" + std::to_string(d.sm_count) +
               ", smem_optin_bytes=" + std::to_string(d.smem_optin_bytes) + ")";
      });

  m.attr("PACKED_LAYOUT_VERSION") = mxfp4::kPackedLayoutVersion;
  m.attr("FP8_IMAGE_LAYOUT") = mxfp4::kFp8ImageLayout;
  m.attr("BLOCK_SIZE") = mxfp4::kBlockSize;

  m.def("version", &mxfp4::version, "Library version string.");
  m.def("built_with_cuda", &mxfp4::built_with_cuda, "True when compiled with the CUDA backend.");
  m.def("cuda_device_count", &mxfp4::cuda_device_count, "Usable CUDA devices (0 without CUDA).");
  m.def("cuda_device_info", &mxfp4::cuda_device_info, "index"_a, "Properties of CUDA device `index`.");
  m.def("packed_bytes", &mxfp4::packed_bytes, "N"_a, "K"_a, "Bytes of the packed layout (version PACKED_LAYOUT_VERSION) for B [N, K].");
  m.def("fp8_weights_bytes", &mxfp4::fp8_weights_bytes, "N"_a, "K"_a,
        "Bytes of the FP8 image of B [N, K] (prepack_fp8; docs/fp8-path.md).");
  m.def("shuffled_scales_bytes", &mxfp4::shuffled_scales_bytes, "rows"_a, "kblocks"_a,
        "Bytes of an e8m0_shuffle'd scale buffer.");
  m.def("choose_gemm_config", &mxfp4::choose_gemm_config, "M"_a, "N"_a, "K"_a, "dev"_a,
        "Pure dispatcher: configuration for (M, N, K) on `dev`.");
  m.def("config_without_fp8", &mxfp4::config_without_fp8, "M"_a, "N"_a, "K"_a, "dev"_a,
        "Pure dispatcher: configuration the CUDA gemm() runs for (M, N, K) on `dev` instead of a path fp8 one "
        "(choose_gemm_config's or a tune cache entry's) when B has no FP8 image: the small-M kernel's (fused or "
        "splitk) for M <= 128, path tiled beyond; never path fp8 or gemv. Its gemm_workspace_bytes(M, K, config) "
        "never exceeds a path fp8 configuration's; gemm_workspace_bytes(M, N, K, config) can (path splitk's split-K "
        "scratch at M <= 16). `dev`: a DeviceInfo (cuda_device_info(index) for a real GPU). Raises ValueError for "
        "M, N or K outside [1, 2^40].");
  m.def("config_for_weights", &mxfp4::config_for_weights, "chosen"_a, "fp8_image"_a, "M"_a, "N"_a, "K"_a, "dev"_a,
        "Pure: the configuration gemm() runs when `chosen` (dispatcher's or tune cache's) meets weights with "
        "(`fp8_image`) or without an FP8 image: config_without_fp8 in place of a path fp8 choice without one, else "
        "`chosen`. Raises ValueError for M, N or K outside [1, 2^40] where it substitutes.");
  m.def("describe", static_cast<std::string (*)(const mxfp4::GemmConfig&)>(&mxfp4::describe), "config"_a,
        "One-line description of a configuration.");
  m.def("describe",
        static_cast<std::string (*)(const mxfp4::GemmConfig&, int64_t, int64_t, int64_t)>(&mxfp4::describe),
        "config"_a, "M"_a, "N"_a, "K"_a,
        "describe(config) for (M, N, K) on CUDA, with how split-K is reduced (' reduce=workspace' or "
        "' reduce=clusters').");
  m.def("gemm_workspace_bytes",
        static_cast<size_t (*)(int64_t, int64_t, const mxfp4::GemmConfig&)>(&mxfp4::gemm_workspace_bytes), "M"_a,
        "K"_a, "config"_a,
        "Device scratch bytes the GEMM needs for (M, K) with `config` (path splitk then reduces split-K through "
        "clusters).");
  m.def("gemm_workspace_bytes",
        static_cast<size_t (*)(int64_t, int64_t, int64_t, const mxfp4::GemmConfig&)>(&mxfp4::gemm_workspace_bytes),
        "M"_a, "N"_a, "K"_a, "config"_a,
        "Device scratch bytes for (M, N, K) with `config`, with path splitk's split-K scratch where it reduces "
        "through the workspace (split_k 8, K >= 4096, M <= 16; bitwise the same result).");
  m.def("explain_gemm", &explain_gemm, "M"_a, "N"_a, "K"_a, "backend"_a, "device"_a = 0, "fp8_image"_a = true,
        "Configuration gemm() would use for (M, N, K) on `backend` (CUDA: device index `device`) for weights "
        "with an FP8 image, or without one (`fp8_image` false: config_for_weights).");

  m.def("quantize", &quantize, "x"_a, "dtype"_a, "codes"_a, "scales"_a, "rule"_a, "scale_layout"_a, "stream"_a = 0,
        "x [rows, K] -> codes (rows*K/2 bytes), scales (plain rows*K/32 or shuffled bytes).");
  m.def("dequantize", &dequantize, "codes"_a, "scales"_a, "rows"_a, "K"_a, "code_layout"_a, "scale_layout"_a,
        "out"_a, "out_dtype"_a, "stream"_a = 0, "MXFP4 [rows, K] -> out [rows, K] (float32 or bf16).");
  m.def("shuffle_scales", &shuffle_scales, "plain"_a, "rows"_a, "kblocks"_a, "shuffled"_a, "stream"_a = 0);
  m.def("unshuffle_scales", &unshuffle_scales, "shuffled"_a, "rows"_a, "kblocks"_a, "plain"_a, "stream"_a = 0);
  m.def("shuffle_weight", &weight_layout<true>, "plain"_a, "N"_a, "K"_a, "shuffled"_a, "stream"_a = 0);
  m.def("unshuffle_weight", &weight_layout<false>, "shuffled"_a, "N"_a, "K"_a, "plain"_a, "stream"_a = 0);
  m.def("prepack", &prepack, "codes"_a, "scales"_a, "N"_a, "K"_a, "code_layout"_a, "scale_layout"_a, "out"_a,
        "stream"_a = 0, "Packs MXFP4 B [N, K] into `out` (packed_bytes(N, K)); returns the layout version.");
  m.def("prepack_dense", &prepack_dense, "w"_a, "dtype"_a, "out"_a, "tmp"_a, "rule"_a, "stream"_a = 0,
        "Quantizes dense w [N, K] and packs it into `out`; returns the layout version.");
  m.def("prepack_fp8", &prepack_fp8, "packed"_a, "N"_a, "K"_a, "version"_a, "out"_a, "stream"_a = 0,
        "Builds the FP8 image of packed B [N, K] into `out` (fp8_weights_bytes(N, K) bytes).");
  m.def("unpack", &unpack, "packed"_a, "N"_a, "K"_a, "version"_a, "codes"_a, "scales"_a, "stream"_a = 0);
  m.def("gemm", &gemm_packed, "a"_a, "packed"_a, "N"_a, "K"_a, "version"_a, "out"_a, "rule"_a,
        "config"_a = nb::none(), "workspace"_a = nb::none(), "stream"_a = 0, "fp8"_a = nb::none(),
        "weights_static"_a = false,
        "out [M, N] (bf16, or float32 for the unrounded fp32 result) = quantize(a [M, K] bf16) * B^T, B prepacked; "
        "fp8: B's FP8 image (prepack_fp8) for the CUDA FP8 path; weights_static: GemmOptions::weights_static.");
  m.def("gemm_mx", &gemm_mx, "a"_a, "codes"_a, "scales"_a, "N"_a, "code_layout"_a, "scale_layout"_a, "out"_a,
        "rule"_a, "stream"_a = 0, "out (bf16 or float32) = quantize(a) * B^T with B as codes/scales (CPU backend).");
  m.def("gemm_quantized", &gemm_quantized, "a_codes"_a, "a_scales"_a, "M"_a, "b_codes"_a, "b_scales"_a, "N"_a, "K"_a,
        "out"_a, "out = A_q * B^T, both plain MXFP4 (CPU backend).");
  m.def("gemm_reference", &gemm_reference, "a_codes"_a, "a_scales"_a, "M"_a, "b_codes"_a, "b_scales"_a, "N"_a,
        "K"_a, "out"_a, "out_f64"_a = nb::none(), "out_abs"_a = nb::none(),
        "Exact CPU reference GEMM (fp64 accumulation) of plain MXFP4 operands.");
}
