// mxfp4 info: library version, build options, backends and CUDA devices.
#include <cstdio>
#include <memory>

#include "common.hpp"

namespace mxfp4cli {

namespace {
int run_info() {
  const bool cuda = mxfp4::built_with_cuda();
  const int ndev = mxfp4::cuda_device_count();
  std::printf("mxfp4 version: %s\n", mxfp4::version());
  std::printf("built with CUDA: %s\n", cuda ? "yes" : "no");
  std::printf("backends: cpu%s\n", cuda ? (ndev > 0 ? ", cuda" : ", cuda (no device available)") : "");
  std::printf("packed layout version: %d\n", mxfp4::kPackedLayoutVersion);
  std::printf("CUDA devices: %d\n", ndev);
  for (int i = 0; i < ndev; ++i) {
    const mxfp4::DeviceInfo d = mxfp4::cuda_device_info(i);
    std::printf("  [%d] %s, sm_%d%d, %d SMs, %lld KiB shared memory per block (opt-in)\n", i, d.name.c_str(),
                d.cc_major, d.cc_minor, d.sm_count, (long long)(d.smem_optin_bytes / 1024));
  }
  return 0;
}
}  // namespace

Command add_info(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("info", "Print version, build options and CUDA devices");
  return {sub, [] { return run_info(); }};
}

}  // namespace mxfp4cli
