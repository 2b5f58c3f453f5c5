// Shared by gemv_trace.cu and steady_trace.cu (measurement aids, not built by CMake): a CUDA
// graph of gemm calls over weight copies rotated past L2 (as `mxfp4 bench`), and the statistics
// of per-unit stamps (a CTA's or a warp's) that the instrumented kernel keeps in a ring of the
// last 64 calls (gemv_instrument.py, instrument.py --steady).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace trace {

inline double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}
inline double median(std::vector<double> v) { return pct(std::move(v), 0.5); }

/// M x K bf16 activations near 1, N x K random e2m1 codes with scales 2^-7 .. 2^2, and enough
/// prepacked copies of the weights to pass 256 MiB; `cfg` is the dispatcher's choice.
struct Setup {
  int M, N, K;
  uint8_t *dc = nullptr, *ds = nullptr, *dp = nullptr;
  uint16_t *da = nullptr, *dC = nullptr;
  int64_t pb = 0;
  int copies = 0, calls = 0;
  cudaStream_t stream = nullptr;
  mxfp4::Exec ex;
  mxfp4::GemmConfig cfg;

  Setup(int m, int n, int k) : M(m), N(n), K(k) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> d(0, 255);
    std::vector<uint8_t> codes(size_t(N) * K / 2), scales(size_t(N) * K / 32);
    for (auto& c : codes) c = uint8_t(d(rng));
    for (auto& s : scales) s = uint8_t(120 + d(rng) % 10);
    std::vector<uint16_t> a(size_t(M) * K);
    for (auto& x : a) x = uint16_t(0x3F80 + d(rng));
    cudaMalloc(&dc, codes.size());
    cudaMalloc(&ds, scales.size());
    cudaMalloc(&da, a.size() * 2);
    cudaMalloc(&dC, size_t(M) * N * 2);
    pb = mxfp4::packed_bytes(N, K);
    copies = int(std::clamp<int64_t>((int64_t(256) << 20) / pb + 1, 1, 4096));
    calls = std::max(copies, 20);
    cudaMalloc(&dp, size_t(pb) * copies);
    cudaMemcpy(dc, codes.data(), codes.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(ds, scales.data(), scales.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    ex.backend = mxfp4::Backend::cuda;
    ex.stream = stream;
    for (int c = 0; c < copies; ++c) mxfp4::prepack(mxfp4::MxMatrix{dc, ds, N, K}, dp + c * pb, ex);
    cfg = mxfp4::explain_gemm(M, N, K, ex);
  }

  /// One warm-up call, then a graph of `calls` calls (call i on weight copy i % copies),
  /// `clear()` (the trace's reset), `replays` replays. Returns the median us per call, or a
  /// negative number after a CUDA error.
  double run_graph(int replays, void (*clear)()) {
    mxfp4::GemmOptions opt;
    opt.config = &cfg;
    const char* ws = std::getenv("WEIGHTS_STATIC");  // 1: GemmOptions::weights_static
    opt.weights_static = ws != nullptr && ws[0] == '1';
    auto call = [&](int i) {
      mxfp4::PackedWeights w{dp + (i % copies) * pb, N, K, mxfp4::kPackedLayoutVersion};
      mxfp4::gemm(da, M, K, K, w, dC, N, opt, ex);
    };
    call(0);
    cudaStreamSynchronize(stream);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < calls; ++i) call(i);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    clear();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
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
    return cudaGetLastError() == cudaSuccess ? median(per_call) : -1.0;
  }
};

/// Which stamps to show and what they mean: stamp indices in time order with their names, and
/// the indices of each unit's start, end and PDL wait's return.
struct Stamps {
  std::vector<int> order;
  std::vector<const char*> names;
  int start, end, wait;
};

/// Prints, for the calls [total - slots + 4, total - 4) of the ring (total: calls made since
/// the clear), per stamp the median over calls of its p10 / median / p90 / max over `units`
/// units (us from the call's first unit start), then the period (first start to the next
/// call's), the span, how long before the previous call's last end the call started, and when
/// its first wait returned after that end. at(c, u, k): stamp k of unit u in call c.
inline void analyse(long total, int slots, int units, const Stamps& st,
                    const std::function<unsigned long long(long, int, int)>& at, const char* unit) {
  const size_t shown = st.order.size();
  std::vector<std::vector<double>> stat(shown * 4);
  std::vector<double> period, overlap, wait_after, span;
  const long first = std::max(0L, total - slots) + 4, last = total - 4;
  for (long c = first; c < last; ++c) {
    unsigned long long base = ~0ull, prev_end = 0, next_base = ~0ull, end = 0, waited = ~0ull;
    for (int u = 0; u < units; ++u) {
      base = std::min(base, at(c, u, st.start));
      prev_end = std::max(prev_end, at(c - 1, u, st.end));
      next_base = std::min(next_base, at(c + 1, u, st.start));
      end = std::max(end, at(c, u, st.end));
      waited = std::min(waited, at(c, u, st.wait));
    }
    for (size_t k = 0; k < shown; ++k) {
      std::vector<double> v;
      for (int u = 0; u < units; ++u) v.push_back((double(at(c, u, st.order[k])) - double(base)) / 1000.0);
      stat[4 * k].push_back(pct(v, 0.1));
      stat[4 * k + 1].push_back(pct(v, 0.5));
      stat[4 * k + 2].push_back(pct(v, 0.9));
      stat[4 * k + 3].push_back(pct(v, 1.0));
    }
    period.push_back((double(next_base) - double(base)) / 1000.0);
    overlap.push_back((double(prev_end) - double(base)) / 1000.0);
    wait_after.push_back((double(waited) - double(prev_end)) / 1000.0);
    span.push_back((double(end) - double(base)) / 1000.0);
  }
  printf("%ld calls analysed; us from the call's first %s start, medians over calls\n", last - first, unit);
  printf("%-8s %7s %7s %7s %7s\n", "stamp", "p10", "med", "p90", "max");
  for (size_t k = 0; k < shown; ++k)
    printf("%-8s %7.2f %7.2f %7.2f %7.2f\n", st.names[k], median(stat[4 * k]), median(stat[4 * k + 1]),
           median(stat[4 * k + 2]), median(stat[4 * k + 3]));
  printf("period (first start to the next call's) med %.2f p10 %.2f p90 %.2f\n", median(period), pct(period, 0.1),
         pct(period, 0.9));
  printf("span (first start to last end) med %.2f; started before the previous call's last end by %.2f;"
         " first wait returned %.2f after it\n",
         median(span), median(overlap), median(wait_after));
}

}  // namespace trace
