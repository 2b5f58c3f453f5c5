// Timeline harness for the small-M kernel (see instrument.py): warms up 40 calls over 32 weight
// copies, clears the trace, times one more call (on copy 8, last read 31 calls earlier: not in
// L2) and prints percentiles of each timestamp relative to the first CTA start. A measurement
// aid: not built by CMake.
#include <cuda_runtime.h>
#include <cstdio>
#include <map>
#include <vector>
#include <algorithm>
#include <random>
#include "mxfp4/mxfp4.hpp"
namespace mxfp4::cuda { void debug_read_trace(unsigned long long*, int); void debug_clear_trace(); }
using namespace mxfp4;
int main(int argc, char** argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  std::mt19937 rng(1); std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> codes(size_t(N) * K / 2), scales(size_t(N) * K / 32);
  for (auto& c : codes) c = d(rng); for (auto& s : scales) s = 120 + d(rng) % 10;
  std::vector<uint16_t> a(size_t(M) * K); for (auto& x : a) x = 0x3F80 + d(rng);
  uint8_t *dc, *ds, *dp; uint16_t *da, *dC;
  cudaMalloc(&dc, codes.size()); cudaMalloc(&ds, scales.size()); cudaMalloc(&da, a.size() * 2); cudaMalloc(&dC, size_t(M) * N * 2);
  const int64_t pb = packed_bytes(N, K); const int copies = 32;
  cudaMalloc(&dp, pb * copies);
  cudaMemcpy(dc, codes.data(), codes.size(), cudaMemcpyHostToDevice); cudaMemcpy(ds, scales.data(), scales.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  Exec ex; ex.backend = Backend::cuda;
  for (int c = 0; c < copies; ++c) prepack(MxMatrix{dc, ds, N, K}, dp + c * pb, ex);
  GemmConfig cfg = explain_gemm(M, N, K, ex);
  if (argc > 4) { cfg.path = atoi(argv[4]) ? GemmPath::splitk : GemmPath::fused; cfg.block_n = atoi(argv[5]); cfg.warps = atoi(argv[6]); cfg.split_k = atoi(argv[7]); }
  printf("%s\n", describe(cfg).c_str());
  GemmOptions opt; opt.config = &cfg;
  for (int it = 0; it < 40; ++it) {
    PackedWeights w{dp + (it % copies) * pb, N, K, kPackedLayoutVersion};
    gemm(da, M, K, K, w, dC, N, opt, ex);
  }
  cudaDeviceSynchronize();
  mxfp4::cuda::debug_clear_trace();
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  PackedWeights w{dp + (40 % copies) * pb, N, K, kPackedLayoutVersion};
  cudaEventRecord(e0); gemm(da, M, K, K, w, dC, N, opt, ex); cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  std::vector<unsigned long long> t(8192 * 11); mxfp4::cuda::debug_read_trace(t.data(), 8192);
  int n = 0; unsigned long long base = ~0ull;
  for (int i = 0; i < 8192; ++i) if (t[i * 11]) { ++n; base = std::min(base, t[i * 11]); }
  printf("event %.2f us, CTAs traced %d\n", ms * 1000, n);
  const char* names[] = {"start", "depwait", "data0", "datalast", "loopend", "clustbar", "end", "smid", "quantA", "reddone", "pulled"};
  for (int k : {0, 1, 8, 2, 3, 4, 9, 5, 10, 6}) {
    std::vector<double> v; for (int i = 0; i < 8192; ++i) if (t[i * 11]) v.push_back((double(t[i * 11 + k]) - double(base)) / 1000.0);
    std::sort(v.begin(), v.end());
    printf("%-8s min %6.2f p10 %6.2f med %6.2f p90 %6.2f max %6.2f\n", names[k], v[0], v[v.size() / 10], v[v.size() / 2], v[v.size() * 9 / 10], v.back());
  }
  // The same CTAs grouped by how many traced CTAs ran on their SM: do SMs with more CTAs (more
  // weight bytes) get their data later?
  std::map<unsigned long long, int> per_sm;
  for (int i = 0; i < 8192; ++i) if (t[i * 11]) ++per_sm[t[i * 11 + 7]];
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < 8192; ++i) if (t[i * 11]) groups[per_sm[t[i * 11 + 7]]].push_back(i);
  for (const auto& [ctas, members] : groups) {
    printf("SMs with %d CTA(s): %zu CTAs", ctas, members.size());
    for (int k : {2, 3, 6}) {
      std::vector<double> v;
      for (int i : members) v.push_back((double(t[i * 11 + k]) - double(base)) / 1000.0);
      std::sort(v.begin(), v.end());
      printf("  %s med %6.2f max %6.2f", names[k], v[v.size() / 2], v.back());
    }
    printf("\n");
  }
}
