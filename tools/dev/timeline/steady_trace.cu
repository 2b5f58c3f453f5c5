// The small-M kernel's per-CTA timeline (paths fused and splitk) in the benchmark's steady
// state (instrument.py --steady, which defines the stamps; run by run.sh with STEADY=1): a CUDA
// graph of `calls` gemm calls over weight copies rotated past L2 (as `mxfp4 bench`), replayed 5
// times; the last 64 calls' stamps are read back. For each of them (the first and last 4 left
// out), times are taken from the call's first CTA start (thread 0, after the index math), and
// the table prints, over those calls, the median of each stamp's p10 / median / p90 / max over
// the call's CTAs. Also: the period (one call's first start to the next's), how long the call's
// CTAs start before the previous call's GEMM has ended, and the first PDL wait's return after
// it (the quantizer's run, on path splitk). A measurement aid: not built by CMake.
// Usage: steady_trace M N K [splitk(0|1) block_n warps split_k]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "mxfp4/mxfp4.hpp"
namespace mxfp4::cuda {
void debug_read_trace(unsigned long long*, int);
void debug_clear_trace();
}  // namespace mxfp4::cuda
using namespace mxfp4;

namespace {
constexpr int kSlots = 64, kCtas = 1024, kStamps = 11;
double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}
double median(std::vector<double> v) { return pct(std::move(v), 0.5); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: steady_trace M N K [splitk(0|1) block_n warps split_k]\n");
    return 2;
  }
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> codes(size_t(N) * K / 2), scales(size_t(N) * K / 32);
  for (auto& c : codes) c = uint8_t(d(rng));
  for (auto& s : scales) s = uint8_t(120 + d(rng) % 10);
  std::vector<uint16_t> a(size_t(M) * K);
  for (auto& x : a) x = uint16_t(0x3F80 + d(rng));
  uint8_t *dc, *ds, *dp;
  uint16_t *da, *dC;
  cudaMalloc(&dc, codes.size());
  cudaMalloc(&ds, scales.size());
  cudaMalloc(&da, a.size() * 2);
  cudaMalloc(&dC, size_t(M) * N * 2);
  const int64_t pb = packed_bytes(N, K);
  const int copies = int(std::clamp<int64_t>((int64_t(256) << 20) / pb + 1, 1, 4096));
  const int calls = std::max(copies, 20);
  cudaMalloc(&dp, size_t(pb) * copies);
  cudaMemcpy(dc, codes.data(), codes.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(ds, scales.data(), scales.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  Exec ex;
  ex.backend = Backend::cuda;
  ex.stream = stream;
  for (int c = 0; c < copies; ++c) prepack(MxMatrix{dc, ds, N, K}, dp + c * pb, ex);
  GemmConfig cfg = explain_gemm(M, N, K, ex);
  if (argc > 7) {
    cfg.path = atoi(argv[4]) ? GemmPath::splitk : GemmPath::fused;
    cfg.block_n = atoi(argv[5]), cfg.warps = atoi(argv[6]), cfg.split_k = atoi(argv[7]);
  }
  printf("%s, %d calls per graph over %d weight copies\n", describe(cfg).c_str(), calls, copies);
  if (cfg.path != GemmPath::splitk && cfg.path != GemmPath::fused) {
    printf("not the small-M kernel\n");
    return 0;
  }
  GemmOptions opt;
  opt.config = &cfg;
  auto call = [&](int i) {
    PackedWeights w{dp + (i % copies) * pb, N, K, kPackedLayoutVersion};
    gemm(da, M, K, K, w, dC, N, opt, ex);
  };
  call(0);
  cudaStreamSynchronize(stream);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < calls; ++i) call(i);
  cudaStreamEndCapture(stream, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  mxfp4::cuda::debug_clear_trace();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int replays = 5;
  std::vector<double> per_call;
  for (int r = 0; r < replays; ++r) {
    cudaEventRecord(e0, stream);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    per_call.push_back(1000.0 * ms / calls);
  }
  if (cudaGetLastError() != cudaSuccess) {
    printf("CUDA error\n");
    return 1;
  }
  printf("graph: %.2f us per call (median of %d replays, traced)\n", median(per_call), replays);
  std::vector<unsigned long long> t(size_t(kSlots) * kCtas * kStamps);
  mxfp4::cuda::debug_read_trace(t.data(), 0);
  const long total = long(replays) * calls;  // calls made since the clear (the warm-up call came before it)
  const int ctas = int(((N + cfg.block_n - 1) / cfg.block_n) * cfg.split_k * ((M + 63) / 64));
  auto at = [&](long c, int cta, int /*w*/, int k) { return t[((size_t(c % kSlots) * kCtas + cta) * kStamps) + k]; };
  // Stamp indices of instrument.py in time order, and their names.
  const int order[] = {0, 1, 8, 2, 3, 4, 9, 5, 10, 6};
  const char* names[] = {"start", "depwait", "quantA", "data0", "datalast", "loopend", "reddone", "clustbar", "pulled", "end"};
  constexpr int kShown = 10, kEnd = 6, kWait = 1;
  const int n_ctas = std::min(ctas, kCtas), n_warps = 1;
  if (ctas > kCtas) printf("(only the first %d of %d CTAs are traced)\n", kCtas, ctas);
  std::vector<std::vector<double>> stat(kShown * 4);  // [stamp][p10, med, p90, max] over calls
  std::vector<double> period, overlap, wait_after, span;
  const long first = std::max(0L, total - kSlots) + 4, last = total - 4;
  for (long c = first; c < last; ++c) {
    unsigned long long base = ~0ull, prev_end = 0, next_base = ~0ull;
    for (int b = 0; b < n_ctas; ++b)
      for (int w = 0; w < n_warps; ++w) {
        base = std::min(base, at(c, b, w, 0));
        prev_end = std::max(prev_end, at(c - 1, b, w, kEnd));
        next_base = std::min(next_base, at(c + 1, b, w, 0));
      }
    unsigned long long end = 0, waited = ~0ull;
    for (int k = 0; k < kShown; ++k) {
      std::vector<double> v;
      for (int b = 0; b < n_ctas; ++b)
        for (int w = 0; w < n_warps; ++w) v.push_back((double(at(c, b, w, order[k])) - double(base)) / 1000.0);
      stat[4 * k].push_back(pct(v, 0.1));
      stat[4 * k + 1].push_back(pct(v, 0.5));
      stat[4 * k + 2].push_back(pct(v, 0.9));
      stat[4 * k + 3].push_back(pct(v, 1.0));
    }
    for (int b = 0; b < n_ctas; ++b)
      for (int w = 0; w < n_warps; ++w) end = std::max(end, at(c, b, w, kEnd)), waited = std::min(waited, at(c, b, w, kWait));
    period.push_back((double(next_base) - double(base)) / 1000.0);
    overlap.push_back((double(prev_end) - double(base)) / 1000.0);
    wait_after.push_back((double(waited) - double(prev_end)) / 1000.0);
    span.push_back((double(end) - double(base)) / 1000.0);
  }
  printf("%ld calls analysed; us from the call's first CTA start, medians over calls\n", last - first);
  printf("%-8s %7s %7s %7s %7s\n", "stamp", "p10", "med", "p90", "max");
  for (int k = 0; k < kShown; ++k)
    printf("%-8s %7.2f %7.2f %7.2f %7.2f\n", names[k], median(stat[4 * k]), median(stat[4 * k + 1]),
           median(stat[4 * k + 2]), median(stat[4 * k + 3]));
  printf("period (first start to the next call's) med %.2f p10 %.2f p90 %.2f\n", median(period), pct(period, 0.1),
         pct(period, 0.9));
  printf("span (first start to last end) med %.2f; started before the previous call's GEMM ended by %.2f;"
         " first wait returned %.2f after it\n",
         median(span), median(overlap), median(wait_after));
  return 0;
}
