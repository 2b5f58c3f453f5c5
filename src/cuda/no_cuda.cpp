// CPU-only builds: the CUDA backend's entry points exist and report that CUDA is missing.
#include "cuda/cuda_backend.hpp"

namespace mxfp4::cuda {
namespace {
[[noreturn]] void missing() {
  throw Error("mxfp4 was built without the CUDA backend (no nvcc at configure time); use Backend::cpu");
}
}  // namespace

int device_count() { return 0; }
DeviceInfo device_info(int) { missing(); }
int current_device() { missing(); }
void quantize(const void*, DType, int64_t, int64_t, int64_t, uint8_t*, uint8_t*, ScaleRule, ScaleLayout, void*) {
  missing();
}
void dequantize(const MxMatrix&, void*, DType, int64_t, void*) { missing(); }
void shuffle_scales(const uint8_t*, int64_t, int64_t, uint8_t*, void*) { missing(); }
void unshuffle_scales(const uint8_t*, int64_t, int64_t, uint8_t*, void*) { missing(); }
void shuffle_weight(const uint8_t*, int64_t, int64_t, uint8_t*, void*) { missing(); }
void unshuffle_weight(const uint8_t*, int64_t, int64_t, uint8_t*, void*) { missing(); }
void prepack(const MxMatrix&, uint8_t*, void*) { missing(); }
void unpack(const PackedWeights&, uint8_t*, uint8_t*, void*) { missing(); }
void prepack_fp8(const PackedWeights&, uint8_t*, void*) { missing(); }
GemmConfig config_for(int64_t, int64_t, int64_t, bool) { missing(); }
void gemm(const uint16_t*, int64_t, int64_t, int64_t, const PackedWeights&, void*, bool, int64_t, const GemmConfig&,
          ScaleRule, void*, size_t, void*, bool) {
  missing();
}
}  // namespace mxfp4::cuda

#include "cuda/bench_gpu.hpp"
namespace mxfp4::cuda {
BenchResult bench_gemm(const uint16_t*, int64_t, int64_t, const MxMatrix&, int, int64_t, const GemmConfig*, bool, bool, bool) {
  throw Error("mxfp4 was built without the CUDA backend (no nvcc at configure time); GPU benchmark unavailable");
}
}  // namespace mxfp4::cuda
