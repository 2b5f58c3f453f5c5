// The small-M kernel's per-CTA timeline (paths fused and splitk) in the benchmark's steady
// state (instrument.py --steady, which defines the stamps; run by run.sh with STEADY=1): a CUDA
// graph of gemm calls over weight copies rotated past L2 (graph_trace.hpp), replayed 5 times;
// the last 64 calls' stamps are read back and summarised per stamp over the call's CTAs
// (times from the call's first CTA start: thread 0, after the index math), with the period,
// how long after the previous call's GEMM ended the call's CTAs started, and when the first PDL
// wait returned after that (the quantizer's run, on path splitk). globaltimer steps in 0.256
// us on the H200. A measurement aid: not built by CMake.
// Usage: steady_trace M N K [splitk(0|1) block_n warps split_k]
#include <cstdlib>

#include "graph_trace.hpp"
namespace mxfp4::cuda {
void debug_read_trace(unsigned long long*, int);
void debug_clear_trace();
}  // namespace mxfp4::cuda
using namespace mxfp4;

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: steady_trace M N K [splitk(0|1) block_n warps split_k]\n");
    return 2;
  }
  constexpr int kSlots = 64, kCtas = 1024, kStamps = 11;  // instrument.py --steady's g_trace
  trace::Setup s(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]));
  if (argc > 7) {
    s.cfg.path = atoi(argv[4]) ? GemmPath::splitk : GemmPath::fused;
    s.cfg.block_n = atoi(argv[5]), s.cfg.warps = atoi(argv[6]), s.cfg.split_k = atoi(argv[7]);
  }
  printf("%s, %d calls per graph over %d weight copies\n", describe(s.cfg).c_str(), s.calls, s.copies);
  if (s.cfg.path != GemmPath::splitk && s.cfg.path != GemmPath::fused) {
    printf("not the small-M kernel\n");
    return 0;
  }
  const int replays = 5;
  const double us = s.run_graph(replays, mxfp4::cuda::debug_clear_trace);
  if (us < 0) {
    printf("CUDA error\n");
    return 1;
  }
  printf("graph: %.2f us per call (median of %d replays, traced)\n", us, replays);
  std::vector<unsigned long long> t(size_t(kSlots) * kCtas * kStamps);
  mxfp4::cuda::debug_read_trace(t.data(), 0);
  const int ctas = int(((s.N + s.cfg.block_n - 1) / s.cfg.block_n) * s.cfg.split_k * ((s.M + 63) / 64));
  if (ctas > kCtas) printf("(only the first %d of %d CTAs are traced)\n", kCtas, ctas);
  // instrument.py's stamp indices in time order.
  const trace::Stamps st{{0, 1, 8, 2, 3, 4, 9, 5, 10, 6},
                         {"start", "depwait", "quantA", "data0", "datalast", "loopend", "reddone", "clustbar", "pulled", "end"},
                         0, 6, 1};
  trace::analyse(long(replays) * s.calls, kSlots, std::min(ctas, kCtas), st,
                 [&](long c, int cta, int k) { return t[(size_t(c % kSlots) * kCtas + cta) * kStamps + k]; }, "CTA");
  return 0;
}
