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

/// Tag for a DeviceBuf left uninitialised (compute-sanitizer initcheck then reports any read
/// of a byte nothing wrote).
struct NoInit {};

/// Owning device allocation of `bytes` bytes, filled with `poison` on creation.
class DeviceBuf {
 public:
  explicit DeviceBuf(size_t bytes, int poison = 0xA5) : bytes_(bytes) {
    cuda_ok(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc");
    fill(poison);
  }
  DeviceBuf(size_t bytes, NoInit) : bytes_(bytes) { cuda_ok(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc"); }
  template <typename T>
  explicit DeviceBuf(const std::vector<T>& host) : DeviceBuf(host.size() * sizeof(T), NoInit{}) {
    upload(0, host.data(), bytes_);
  }
  ~DeviceBuf() { cudaFree(ptr_); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  /// Sets every byte to `byte` and waits for it. cudaMemset runs on the legacy default stream,
  /// asynchronously to the host, and a cudaStreamNonBlocking stream does not wait for it: a
  /// kernel on such a stream could otherwise write C before the poison lands on it (session
  /// 42: a correct GEMM's output read back as all poison).
  void fill(int byte) const {
    cuda_ok(cudaMemset(ptr_, byte, bytes_ ? bytes_ : 1), "cudaMemset");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemset");
  }
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
  /// Copies `n` host bytes to byte offset `off` and waits for them to land: a cudaMemcpy from
  /// pageable memory may return once the bytes are staged, before the DMA on the legacy stream
  /// has written them, and a non-blocking stream does not wait for it (as fill()).
  void upload(size_t off, const void* host, size_t n) const {
    cuda_ok(cudaMemcpy(static_cast<uint8_t*>(ptr_) + off, host, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemcpy H2D");
  }
  /// Bytes [off, off + n) after a device synchronisation.
  std::vector<uint8_t> download_range(size_t off, size_t n) const {
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<uint8_t> out(n);
    cuda_ok(cudaMemcpy(out.data(), static_cast<uint8_t*>(ptr_) + off, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline Exec cuda_exec(cudaStream_t s = nullptr) { return Exec{Backend::cuda, s, 0}; }

/// Free memory of the current device in bytes (0 if the query fails).
inline size_t free_device_bytes() {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
  return free_b;
}

/// Skips the test unless the device has `bytes` free (plus 1 GiB of headroom).
#define MXFP4_REQUIRE_GPU_MEMORY(bytes)                                                              \
  do {                                                                                              \
    const size_t need_ = size_t(bytes) + (size_t(1) << 30), free_ = ::mxfp4::test::free_device_bytes(); \
    if (free_ < need_)                                                                              \
      GTEST_SKIP() << "needs " << (need_ >> 20) << " MiB of free GPU memory, the device has " << (free_ >> 20) \
                   << " MiB free";                                                                 \
  } while (0)

#define MXFP4_REQUIRE_GPU()                                            \
  do {                                                                 \
    if (::mxfp4::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

}  // namespace mxfp4::test
#endif
