// Device queries for the CUDA backend.
#include <map>
#include <mutex>

#include "cuda/common.cuh"
#include "cuda/cuda_backend.hpp"

namespace mxfp4::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: report 0 and leave no sticky error
    return 0;
  }
  return n;
}

DeviceInfo device_info(int index) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  DeviceInfo d;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.smem_optin_bytes = int64_t(prop.sharedMemPerBlockOptin);
  return d;
}

const DeviceInfo& cached_device_info(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> infos;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = infos.find(device);
  if (it == infos.end()) it = infos.emplace(device, device_info(device)).first;
  return it->second;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

}  // namespace mxfp4::cuda
