// Path gemv's per-warp timeline in the benchmark's steady state (gemv_instrument.py defines the
// stamps; run by gemv_run.sh): a CUDA graph of gemm calls over weight copies rotated past L2
// (graph_trace.hpp), replayed 5 times; the last 64 calls' stamps are read back and summarised
// per stamp over the call's warps (times from the call's first warp start), with the period,
// how long before the previous call's last warp ended the call's warps started, and when the
// first wait returned after that end. globaltimer steps in 0.256 us on the H200. A measurement
// aid: not built by CMake. Usage: gemv_trace M N K [block_n warps]
#include <cstdlib>

#include "graph_trace.hpp"
namespace mxfp4::cuda {
void debug_gemv_trace_read(unsigned long long*);
void debug_gemv_trace_clear();
}  // namespace mxfp4::cuda
using namespace mxfp4;

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: gemv_trace M N K [block_n warps]\n");
    return 2;
  }
  constexpr int kSlots = 64, kCtas = 256, kWarps = 16, kStamps = 12;  // gemv_instrument.py's g_gv_trace
  trace::Setup s(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]));
  if (argc > 5) s.cfg.path = GemmPath::gemv, s.cfg.block_n = atoi(argv[4]), s.cfg.warps = atoi(argv[5]), s.cfg.split_k = 1;
  printf("%s, %d calls per graph over %d weight copies\n", describe(s.cfg).c_str(), s.calls, s.copies);
  if (s.cfg.path != GemmPath::gemv) {
    printf("not path gemv\n");
    return 0;
  }
  const int replays = 5;
  const double us = s.run_graph(replays, mxfp4::cuda::debug_gemv_trace_clear);
  if (us < 0) {
    printf("CUDA error\n");
    return 1;
  }
  printf("graph: %.2f us per call (median of %d replays, traced)\n", us, replays);
  std::vector<unsigned long long> t(size_t(kSlots) * kCtas * kWarps * kStamps);
  mxfp4::cuda::debug_gemv_trace_read(t.data());
  const int ctas = int((s.N + s.cfg.block_n - 1) / s.cfg.block_n), warps = std::min(s.cfg.warps, kWarps);
  if (ctas > kCtas) printf("(only the first %d of %d CTAs are traced)\n", kCtas, ctas);
  const trace::Stamps st{{0, 1, 2, 3, 4, 9, 10, 11, 5, 6, 7},
                         {"start", "waited", "quantA", "synced", "batch0", "batch1", "batch2", "copied", "loopend",
                          "reddone", "end"},
                         0, 7, 1};
  trace::analyse(long(replays) * s.calls, kSlots, std::min(ctas, kCtas) * warps, st,
                 [&](long c, int u, int k) {
                   return t[((size_t(c % kSlots) * kCtas + u / warps) * kWarps + u % warps) * kStamps + k];
                 },
                 "warp");
  return 0;
}
