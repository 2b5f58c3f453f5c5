// Helpers for GPU tests: owning device buffers and host<->device copies. Tests that include
// this are compiled only with the CUDA backend (MXFP4_WITH_CUDA); elsewhere they are skipped.
#pragma once

#if defined(MXFP4_WITH_CUDA)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {

inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Owning device allocation of `bytes` bytes, filled with `poison` on creation.
class DeviceBuf {
 public:
  explicit DeviceBuf(size_t bytes, int poison = 0xA5) : bytes_(bytes) {
    cuda_ok(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc");
    cuda_ok(cudaMemset(ptr_, poison, bytes ? bytes : 1), "cudaMemset");
  }
  template <typename T>
  explicit DeviceBuf(const std::vector<T>& host) : DeviceBuf(host.size() * sizeof(T)) {
    cuda_ok(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  ~DeviceBuf() { cudaFree(ptr_); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  template <typename T = uint8_t>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  template <typename T>
  std::vector<T> download() const {
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> out(bytes_ / sizeof(T));
    cuda_ok(cudaMemcpy(out.data(), ptr_, out.size() * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline Exec cuda_exec(cudaStream_t s = nullptr) { return Exec{Backend::cuda, s, 0}; }

#define MXFP4_REQUIRE_GPU()                                            \
  do {                                                                 \
    if (::mxfp4::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

}  // namespace mxfp4::test
#endif
