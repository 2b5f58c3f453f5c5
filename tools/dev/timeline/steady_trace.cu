// The small-M kernel's per-CTA timeline (paths fused and splitk) in the benchmark's steady
// state (instrument.py --steady, which defines the stamps; run by run.sh with STEADY=1): a CUDA
// graph of gemm calls over weight copies rotated past L2 (graph_trace.hpp), replayed 5 times;
// the last 64 calls' stamps are read back and summarised per stamp over the call's CTAs
// (times from the call's first CTA start: thread 0, after the index math), with the period,
// how long after the previous call's GEMM ended the call's CTAs started, and when the first PDL
// wait returned after that (the quantizer's run, on path splitk), and on path splitk the
// quantizer's CTAs between the two GEMMs. globaltimer steps in 0.256
// us on the H200. A measurement aid: not built by CMake.
// Usage: steady_trace M N K [splitk(0|1) block_n warps split_k]
#include <cstdlib>

#include "graph_trace.hpp"
namespace mxfp4::cuda {
void debug_read_trace(unsigned long long*, int);
void debug_clear_trace();
void debug_qtrace_read(unsigned long long*);  // the quantizer's ring (instrument.py QUANT)
void debug_qtrace_clear();
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
  auto clear = [] {
    mxfp4::cuda::debug_clear_trace();
    mxfp4::cuda::debug_qtrace_clear();
  };
  const double us = s.run_graph(replays, clear);
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
  auto gat = [&](long c, int cta, int k) { return t[(size_t(c % kSlots) * kCtas + cta) * kStamps + k]; };
  trace::analyse(long(replays) * s.calls, kSlots, std::min(ctas, kCtas), st, gat, "CTA");
  // Path splitk's quantizer (one launch per call, before the GEMM): its CTAs' entry, wait
  // return and end, and the GEMM's first start and first wait return, all from the previous
  // call's last GEMM end (the chain between two GEMMs), medians over calls.
  std::vector<unsigned long long> q(size_t(kSlots) * kCtas * 3);
  mxfp4::cuda::debug_qtrace_read(q.data());
  auto qat = [&](long c, int cta, int k) { return q[(size_t(c % kSlots) * kCtas + cta) * 3 + k]; };
  int qctas = 0;
  while (qctas < kCtas && qat(long(replays) * s.calls - 1, qctas, 0) != 0) ++qctas;
  if (qctas == 0) return 0;
  const long total = long(replays) * s.calls, first = std::max(0L, total - kSlots) + 4, last = total - 4;
  std::vector<std::vector<double>> v(6);
  for (long c = first; c < last; ++c) {
    unsigned long long prev_end = 0, g_start = ~0ull, g_wait = ~0ull;
    for (int u = 0; u < std::min(ctas, kCtas); ++u) {
      prev_end = std::max(prev_end, gat(c - 1, u, 6));
      g_start = std::min(g_start, gat(c, u, 0));
      g_wait = std::min(g_wait, gat(c, u, 1));
    }
    unsigned long long q_start = ~0ull, q_wait0 = ~0ull, q_wait1 = 0, q_end = 0;
    for (int u = 0; u < qctas; ++u) {
      q_start = std::min(q_start, qat(c, u, 0));
      q_wait0 = std::min(q_wait0, qat(c, u, 1));
      q_wait1 = std::max(q_wait1, qat(c, u, 1));
      q_end = std::max(q_end, qat(c, u, 2));
    }
    const unsigned long long at[6] = {q_start, q_wait0, q_wait1, q_end, g_start, g_wait};
    for (int k = 0; k < 6; ++k) v[k].push_back((double(at[k]) - double(prev_end)) / 1000.0);
  }
  printf("quantizer (%d CTAs), us after the previous GEMM's last end (medians over calls): first entry %.2f,"
         " first wait return %.2f, last %.2f, last end %.2f; GEMM first start %.2f, first wait return %.2f\n",
         qctas, trace::median(v[0]), trace::median(v[1]), trace::median(v[2]), trace::median(v[3]),
         trace::median(v[4]), trace::median(v[5]));
  return 0;
}
