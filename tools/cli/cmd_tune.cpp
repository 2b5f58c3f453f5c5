// mxfp4 tune: searches GEMM configurations on the GPU and stores a tune cache.
// The GPU side (mxfp4::cuda::tune) is wired in CUDA builds by the CUDA backend owner;
// CPU-only builds report that tuning needs CUDA and exit 2.
#include <memory>

#include "common.hpp"

namespace mxfp4cli {

Command add_tune(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("tune", "Tune GEMM configurations on the GPU (CUDA builds only)");
  sub->allow_extras();  // options are defined by the CUDA side once wired
  return {sub, []() -> int {
            if (!mxfp4::built_with_cuda()) throw CliError("tune needs the CUDA backend", 2);
            throw CliError("tune is not available in this build yet", 2);
          }};
}

}  // namespace mxfp4cli
