// mxfp4 gemm --a A.npy --b-codes Q.npy --b-scales S.npy --out C.npy [--backend cpu|cuda]
//            [--rule aiter|floor|rceil] [--out-dtype bf16|f32] [--explain]
// C [M, N] = quantize(A)[M, K] * B[N, K]^T (spec §3): bf16 bits ('<u2'), or with --out-dtype f32
// the fp32 sums before the final rounding ('<f4'; the row-parallel partial sums of
// docs/tensor-parallel.md). A: '<u2' bf16 bits.
// On cuda: the operands are copied to the device, B is prepacked (plus its FP8 image when the
// library's configuration for the shape is path fp8, docs/fp8-path.md), the GEMM runs, C comes back.
#include <cstdio>
#include <memory>

#include "common.hpp"

#if defined(MXFP4_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace mxfp4cli {

namespace {
struct GemmArgs {
  std::string a, b_codes, b_scales, out, backend = "cpu", rule = "aiter", out_dtype = "bf16";
  bool explain = false;
};

#if defined(MXFP4_WITH_CUDA)
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw mxfp4::CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

// Device allocation owned for the duration of the command.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { cuda_check(cudaMalloc(&p_, bytes ? bytes : 1), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void upload(const void* src, size_t bytes) { cuda_check(cudaMemcpy(p_, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D"); }

 private:
  void* p_ = nullptr;
};

/// C [M, N] on the GPU: T = uint16_t (bf16 bits) or float (fp32 output).
template <class T>
void gemm_cuda(const std::vector<uint16_t>& A, int64_t M, const HostMx& B, std::vector<T>& C,
               const mxfp4::GemmOptions& opt) {
  const int64_t K = B.K, N = B.rows;
  mxfp4::Exec ex;
  ex.backend = mxfp4::Backend::cuda;
  DeviceBuffer dA(A.size() * 2), dQ(B.codes.size()), dS(B.scales.size()), dC(C.size() * sizeof(T));
  DeviceBuffer dP(size_t(mxfp4::packed_bytes(N, K)));
  dA.upload(A.data(), A.size() * 2);
  dQ.upload(B.codes.data(), B.codes.size());
  dS.upload(B.scales.data(), B.scales.size());
  mxfp4::MxMatrix bd;
  bd.codes = dQ.as<uint8_t>();
  bd.scales = dS.as<uint8_t>();
  bd.rows = N;
  bd.K = K;
  mxfp4::PackedWeights pw = mxfp4::prepack(bd, dP.as<uint8_t>(), ex);
  std::unique_ptr<DeviceBuffer> dF8;  // the FP8 image, only where the GEMM would read it
  if (mxfp4::explain_gemm(M, N, K, ex).path == mxfp4::GemmPath::fp8) {
    dF8 = std::make_unique<DeviceBuffer>(size_t(mxfp4::fp8_weights_bytes(N, K)));
    pw = mxfp4::prepack_fp8(pw, dF8->as<uint8_t>(), ex);
  }
  mxfp4::gemm(dA.as<uint16_t>(), M, K, K, pw, dC.as<T>(), N, opt, ex);
  cuda_check(cudaGetLastError(), "gemm launch");
  cuda_check(cudaMemcpy(C.data(), dC.as<void>(), C.size() * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}
#else
template <class T>
void gemm_cuda(const std::vector<uint16_t>&, int64_t, const HostMx&, std::vector<T>&, const mxfp4::GemmOptions&) {
  throw CliError("--backend cuda: this mxfp4 was built without the CUDA backend");
}
#endif

/// Runs the GEMM with output element type T (uint16_t: bf16 bits, float: fp32).
template <class T>
std::vector<T> run_typed(bool cuda, const std::vector<uint16_t>& A, int64_t M, const HostMx& B,
                         const mxfp4::GemmOptions& opt, const mxfp4::Exec& ex) {
  std::vector<T> C(size_t(M * B.rows));
  if (cuda)
    gemm_cuda(A, M, B, C, opt);
  else
    mxfp4::gemm(A.data(), M, B.K, B.K, B.view(), C.data(), B.rows, opt, ex);
  return C;
}

int run_gemm(const GemmArgs& a) {
  const bool cuda = a.backend == "cuda";
  const npy::Array an = load_matrix(a.a, "--a", {npy::Dtype::u2});
  const HostMx B = load_mx(a.b_codes, a.b_scales);
  const int64_t M = an.shape[0], K = an.shape[1], N = B.rows;
  if (M < 1 || K != B.K)
    throw CliError("--a " + a.a + ": shape " + npy::shape_str(an.shape) + " does not fit B with K = " +
                   std::to_string(B.K) + " (expected (M >= 1, " + std::to_string(B.K) + "))");
  mxfp4::Exec ex;
  ex.backend = cuda ? mxfp4::Backend::cuda : mxfp4::Backend::cpu;
  if (cuda && mxfp4::cuda_device_count() == 0)
    throw CliError(mxfp4::built_with_cuda() ? "--backend cuda: no CUDA device is available"
                                            : "--backend cuda: this mxfp4 was built without the CUDA backend");
  if (a.explain)
    std::printf("gemm M=%lld N=%lld K=%lld backend=%s: %s\n", (long long)M, (long long)N, (long long)K,
                a.backend.c_str(),
                (cuda ? mxfp4::describe(mxfp4::explain_gemm(M, N, K, ex), M, N, K)
                      : mxfp4::describe(mxfp4::explain_gemm(M, N, K, ex)))
                    .c_str());

  mxfp4::GemmOptions opt;
  opt.rule = parse_rule(a.rule);
  const std::vector<uint16_t> A = an.as<uint16_t>();
  if (a.out_dtype == "f32") {
    save_f32(a.out, run_typed<float>(cuda, A, M, B, opt, ex), M, N);
  } else {
    save_u16(a.out, run_typed<uint16_t>(cuda, A, M, B, opt, ex), M, N);
  }
  return 0;
}
}  // namespace

Command add_gemm(CLI::App& app) {
  auto a = std::make_shared<GemmArgs>();
  CLI::App* sub = app.add_subcommand("gemm", "C = quantize(A) * B^T with B in MXFP4 (bf16 in, bf16 or fp32 out)");
  sub->add_option("--a", a->a, "A.npy: '<u2' bf16 bits [M, K]")->required();
  sub->add_option("--b-codes", a->b_codes, "Q.npy: uint8 [N, K/2]")->required();
  sub->add_option("--b-scales", a->b_scales, "S.npy: uint8 [N, K/32]")->required();
  sub->add_option("--out,-o", a->out, "output C.npy [M, N]: '<u2' bf16 bits, or '<f4' with --out-dtype f32")->required();
  sub->add_option("--out-dtype", a->out_dtype, "bf16, or f32: the fp32 sums before the final rounding")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  sub->add_option("--backend", a->backend, "where to run")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--rule", a->rule, "scale rule used to quantize A")
      ->check(CLI::IsMember(kRuleNames))
      ->capture_default_str();
  sub->add_flag("--explain", a->explain, "print the kernel configuration the library chooses");
  return {sub, [a] { return run_gemm(*a); }};
}

}  // namespace mxfp4cli
