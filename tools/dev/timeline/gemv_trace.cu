// Path gemv's per-warp timeline in the benchmark's steady state (see gemv_instrument.py, which
// defines the stamps): a CUDA graph of `calls` gemm calls over weight copies rotated past L2
// (as `mxfp4 bench`), replayed 5 times; the last 64 calls' stamps are read back. For each of
// them (the first and last 4 left out), times are taken from the call's first warp start, and
// the table prints, over those calls, the median of each stamp's p10 / median / p90 / max over
// the call's warps. Also: the period (one call's first start to the next's), how long the
// call's warps start before the previous call has ended, and the wait's return after it.
// A measurement aid: not built by CMake. Usage: gemv_trace M N K [block_n warps]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "mxfp4/mxfp4.hpp"
namespace mxfp4::cuda {
void debug_gemv_trace_read(unsigned long long*);
void debug_gemv_trace_clear();
}  // namespace mxfp4::cuda
using namespace mxfp4;

namespace {
constexpr int kSlots = 64, kCtas = 256, kWarps = 16, kStamps = 9;
double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}
double median(std::vector<double> v) { return pct(std::move(v), 0.5); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: gemv_trace M N K [block_n warps]\n");
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
  if (argc > 5) cfg.path = GemmPath::gemv, cfg.block_n = atoi(argv[4]), cfg.warps = atoi(argv[5]), cfg.split_k = 1;
  printf("%s, %d calls per graph over %d weight copies\n", describe(cfg).c_str(), calls, copies);
  if (cfg.path != GemmPath::gemv) {
    printf("not path gemv\n");
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
  mxfp4::cuda::debug_gemv_trace_clear();
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
  std::vector<unsigned long long> t(size_t(kSlots) * kCtas * kWarps * kStamps);
  mxfp4::cuda::debug_gemv_trace_read(t.data());
  const long total = long(replays) * calls;  // calls made since the clear (the warm-up call came before it)
  const int ctas = int((N + cfg.block_n - 1) / cfg.block_n), warps = cfg.warps;
  auto at = [&](long c, int cta, int w, int k) {
    return t[(((size_t(c % kSlots) * kCtas + cta) * kWarps + w) * kStamps) + k];
  };
  const char* names[] = {"start", "waited", "quantA", "synced", "batch0", "loopend", "reddone", "end"};
  const int n_ctas = std::min(ctas, kCtas), n_warps = std::min(warps, kWarps);
  std::vector<std::vector<double>> stat(8 * 4);  // [stamp][p10, med, p90, max] over calls
  std::vector<double> period, overlap, wait_after, span;
  const long first = std::max(0L, total - kSlots) + 4, last = total - 4;
  for (long c = first; c < last; ++c) {
    unsigned long long base = ~0ull, prev_end = 0, next_base = ~0ull;
    for (int b = 0; b < n_ctas; ++b)
      for (int w = 0; w < n_warps; ++w) {
        base = std::min(base, at(c, b, w, 0));
        prev_end = std::max(prev_end, at(c - 1, b, w, 7));
        next_base = std::min(next_base, at(c + 1, b, w, 0));
      }
    unsigned long long end = 0, waited = ~0ull;
    for (int k = 0; k < 8; ++k) {
      std::vector<double> v;
      for (int b = 0; b < n_ctas; ++b)
        for (int w = 0; w < n_warps; ++w) v.push_back((double(at(c, b, w, k)) - double(base)) / 1000.0);
      stat[4 * k].push_back(pct(v, 0.1));
      stat[4 * k + 1].push_back(pct(v, 0.5));
      stat[4 * k + 2].push_back(pct(v, 0.9));
      stat[4 * k + 3].push_back(pct(v, 1.0));
    }
    for (int b = 0; b < n_ctas; ++b)
      for (int w = 0; w < n_warps; ++w) end = std::max(end, at(c, b, w, 7)), waited = std::min(waited, at(c, b, w, 1));
    period.push_back((double(next_base) - double(base)) / 1000.0);
    overlap.push_back((double(prev_end) - double(base)) / 1000.0);
    wait_after.push_back((double(waited) - double(prev_end)) / 1000.0);
    span.push_back((double(end) - double(base)) / 1000.0);
  }
  printf("%ld calls analysed; us from the call's first warp start, medians over calls\n", last - first);
  printf("%-8s %7s %7s %7s %7s\n", "stamp", "p10", "med", "p90", "max");
  for (int k = 0; k < 8; ++k)
    printf("%-8s %7.2f %7.2f %7.2f %7.2f\n", names[k], median(stat[4 * k]), median(stat[4 * k + 1]),
           median(stat[4 * k + 2]), median(stat[4 * k + 3]));
  printf("period (first start to the next call's) med %.2f p10 %.2f p90 %.2f\n", median(period), pct(period, 0.1),
         pct(period, 0.9));
  printf("span (first start to last end) med %.2f; started before the previous call's last end by %.2f;"
         " first wait returned %.2f after it\n",
         median(span), median(overlap), median(wait_after));
  return 0;
}
