// The dispatcher's choice per shape, without a GPU (tools/dev/tune-regret.py builds and runs it):
// reads "M N K" lines from stdin, prints "M N K " and mxfp4::describe(config) ("path=P block_n=BN
// block_m=BM split_k=S warps=W"), the format of `mxfp4 tune --verbose`'s candidate lines.
// Argument: the SM count (default 132).
// Build: g++ -std=c++20 -O2 -Iinclude -Isrc tools/dev/dispatch-query.cpp src/dispatch/dispatch.cpp
//        src/dispatch/config.cpp src/dispatch/fp8_rules.cpp -o /tmp/dispatch-query
#include <cstdio>
#include <cstdlib>

#include "mxfp4/mxfp4.hpp"

int main(int argc, char** argv) {
  mxfp4::DeviceInfo dev;
  dev.sm_count = argc > 1 ? std::atoi(argv[1]) : 132;
  long long M = 0, N = 0, K = 0;
  while (std::scanf("%lld %lld %lld", &M, &N, &K) == 3) {
    const mxfp4::GemmConfig c = mxfp4::choose_gemm_config(M, N, K, dev);
    std::printf("%lld %lld %lld %s\n", M, N, K, mxfp4::describe(c).c_str());
  }
  return 0;
}
