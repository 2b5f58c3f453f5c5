// Per-stage trace of path fp8's persistent GEMM kernel (a measurement aid, not built by CMake;
// fp8_run.sh builds and runs it): who waits for whom in the stage ring. Needs a library built
// from a copy instrumented by fp8_instrument.py (its docstring defines the stamps [0]-[4]).
//
// Usage (GPU machine; fp8_run.sh does these steps in a scratch copy):
//   python3 tools/dev/timeline/fp8_instrument.py src/cuda/gemm_fp8_kernel.cuh src/cuda/gemm_fp8.cu
//   (build libmxfp4.a from that copy, as fp8_run.sh does, into build-tl/)
//   blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-tl/CMakeCache.txt)
//   nvcc -std=c++17 -O2 -arch=sm_90a -Iinclude tools/dev/timeline/fp8_trace.cu build-tl/libmxfp4.a
//        -lcublas -lcublasLt ${blas:+"$blas"} -o /tmp/fp8_trace    (one line)
//   /tmp/fp8_trace M N K [block_m block_n warps split_k]
//   /tmp/fp8_trace --selftest      (no GPU: the report of a synthetic trace, see selftest())
// Without the last four arguments it runs the configuration gemm() picks for (M, N, K) (the
// dispatcher's, or the tune cache's if one is installed); with them, that path fp8
// configuration (GemmConfig's fields). Shapes whose configuration is not path fp8 are refused.
//
// Inputs are like `mxfp4 bench`'s: A and B bf16 N(0, 1) (B quantized with the aiter rule, then
// prepack and prepack_fp8: narrow groups, long chains, no flagged group), the weights in
// enough copies (~256 MB) to rotate past the 50 MB L2. It runs 24 warm-up calls over the
// copies, clears the trace, and traces ONE call (eager, not in a graph; PDL after the A image
// kernel as always) on the copy used longest ago. So the numbers are those of one cold call:
// B comes from HBM, A's image was just written (in L2). Medians over many stages are robust;
// single stages are not.
//
// Output: per traced CTA (blockIdx.x < kTraceCtas, fp8_instrument.py --ctas) a header and one
// row per stage iteration `it` (< kTraceIters): the five stamps in us after that CTA's start
// (thread 0 at kernel entry), then per-row derived gaps; then the summary over every traced CTA
// and iteration, median and p90 (nearest rank) and the sample count, each metric from both
// clocks:
//   clock64: the SM's cycle counter (every stamp of one CTA is taken on one SM, so differences
//            within a CTA are exact to a few cycles), converted to ns with the clock rate
//            measured per CTA over its whole life against globaltimer (the median over the
//            traced CTAs is used; printed, with the spread). This is the column to read.
//   gtimer:  %globaltimer ns. The PTX ISA defines it as a nanosecond timer but not its update
//            rate; this project's H200 runs saw it advance in 0.256 us steps (docs/perf-notes.md,
//            sessions 5 and 10), so each gap there is +-0.26 us: a cross-check only. The
//            smallest nonzero step seen in this call's stamps is printed.
// Held releases: inside a chain of narrow slices the consumer issues the wgmmas of slice it + 1
// before those of slice it have finished, and releases the stage of it only after that, in
// iteration it + 1 (after its full-wait and issue). So [3] of it comes after [2] of it + 1, and a
// release no longer marks the consumer's arrival at the next full-wait: that has its own stamp.
// Metrics (t0..t4 = stamps [0]..[4] of iteration it: t4 arrival at the full-wait, t2 its
// return, t3 the release; t3' = [3] of it - 1; "consumer" is always warpgroup 0's thread 0: the
// other consumer warpgroups are not stamped):
//   producer issue         t1 - t0 for it >= kStages: the stamping producer thread's time to
//                          issue its part of one stage (fp8_instrument.py --part; address
//                          arithmetic included)
//   producer slot wait     t0 - t1(it-1), it >= kStages: how long the producer sat at the
//                          empty-wait for a free slot (the ring is full: consumers are the
//                          bottleneck when this is large)
//   slot release->wake     t0 - t3(it-kStages), only where the producer waited (> 50 ns): from
//                          warpgroup 0's release of the slot to the producer's wake; includes
//                          the other consumer warpgroups' (and PAIR: the peer CTA's) later
//                          releases, so it is an upper bound of the barrier's wake latency
//   consumer data wait     t2 - t4, not the first iteration of a tile: the consumer's wait for
//                          the stage's data. Large = starved
//   consumer slice period  t4(it+1) - t4(it), both in one tile: from one arrival at the wait to
//                          the next (the data wait, the issue, the previous slice's wgmma wait
//                          and release, or at a chain's end the wait and the promotion): the
//                          consumer's pace, the producer's when the consumer is starved
//   consumer busy          t4(it+1) - t2(it), both in one tile: the slice period less the data
//                          wait, the consumer's own time per slice
//   consumer release lag   t3 - t2: from the full-wait return to that stage's release (spans the
//                          next slice's full-wait and issue for chained slices; the wgmma wait
//                          and the promotion at a chain's end)
//   data latency (waited)  t2 - t1 where the consumer waited (t2 - t4 > 50 ns): it was at the
//                          wait before the data landed, so t2 is the landing (plus the wake):
//                          issue end -> all 4 copies in shared memory, the copy latency
//   data wait after issue  t2 - max(t1, t4) where the consumer waited: the part of that latency
//                          the consumer saw (all of it when it arrived before the issue)
//   issue -> full (all)    t2 - t1 for every iteration: an upper bound of the data latency
//                          (includes the consumer arriving late when it was busy)
//   tile switch            t4 - t3' at a tile's first iteration: the epilogue (C stores); a
//                          tile's last slice always ends its chain, so t3' is its release
//                          before the epilogue, never a held one
//   stages ahead           at the consumer's arrival (t4), how many of the stages it .. it +
//                          kStages - 1 the producer had already issued (kStages - 1: the ring
//                          is full, the producer waits for the slot of it - 1, which the
//                          consumer releases after this issue when it is held, or released
//                          just before; 0: the consumer waits for an issue). A count, not us
// Caveats: one cold call; only warpgroup 0's thread 0 stands for the consumers; the stamps cost
// a few instructions per stage in both roles (no synchronization is added, and ptxas shows no
// new spills, but timing changes a little); the prologue's [0] is the issue start (there is no
// wait) and its [1] comes after griddepcontrol.wait (the A image kernel's end), so prologue
// iterations are left out of the producer metrics; CTAs start before the A image kernel ends
// (PDL), so "depwait" in the CTA header is when the producer could issue A's copies.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {
void debug_fp8_trace_shape(int* ctas, int* iters);
void debug_read_fp8_trace(unsigned long long* host);
void debug_clear_fp8_trace();
}  // namespace mxfp4::cuda

using namespace mxfp4;

#define CK(x)                                                              \
  do {                                                                     \
    cudaError_t e_ = (x);                                                  \
    if (e_ != cudaSuccess) {                                               \
      printf("%s: %s\n", #x, cudaGetErrorString(e_));                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

namespace {

constexpr double kEps = 50.0;  ///< ns: a wait shorter than this counts as no wait

std::vector<uint16_t> randn_bf16(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = fmt::f32_to_bf16(dist(gen));
  return v;
}

/// The trace of one call as read back (fp8_instrument.py's layout: kStamps words per CTA and
/// iteration in g_fp8_trace, then as many in g_fp8_clock, then 12 per CTA in g_fp8_cta).
struct Trace {
  static constexpr int kStamps = 5;
  int ctas = 0, iters = 0;
  std::vector<unsigned long long> h;
  size_t stamps() const { return size_t(ctas) * iters * kStamps; }  ///< words per clock
  size_t words() const { return 2 * stamps() + size_t(ctas) * 12; }
  unsigned long long gt(int c, int i, int k) const { return h[(size_t(c) * iters + i) * kStamps + k]; }
  unsigned long long ck(int c, int i, int k) const { return h[stamps() + (size_t(c) * iters + i) * kStamps + k]; }
  unsigned long long cta(int c, int f) const { return h[2 * stamps() + size_t(c) * 12 + f]; }
  bool traced(int c) const { return cta(c, 0) != 0 && cta(c, 3) != 0; }
  int iterations(int c) const { return int(cta(c, 4)); }
  int stages(int c) const { return int(cta(c, 8)); }
  int per_tile(int c) const { return std::max(1, int(cta(c, 9))); }
  int shown(int c) const { return std::min(iterations(c), iters); }
};

/// Time of stamp k of (cta c, iteration i) in ns after the CTA's start, from either clock;
/// NaN where the stamp is missing.
struct Clock {
  const Trace& t;
  bool cycles;  ///< clock64 (converted with ghz) or globaltimer
  double ghz;
  double at(int c, int i, int k) const {
    if (cycles) {
      const unsigned long long v = t.ck(c, i, k);
      return v ? double(v - t.cta(c, 5)) / ghz : NAN;
    }
    const unsigned long long v = t.gt(c, i, k);
    return v ? double(v) - double(t.cta(c, 0)) : NAN;
  }
};

struct Metric {
  Metric(const char* n) : name(n) {}
  const char* name;
  std::vector<double> v[2];  ///< [0] clock64, [1] globaltimer; ns
};

double pct(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

/// Prints the per-CTA rows (unless !rows) and the summary of one call's trace (`ms`: the call's
/// event time).
int report(const Trace& tr, double ms, bool rows = true) {
  // Clock rate per CTA: cycles over globaltimer ns from its start to warpgroup 0's last tile.
  std::vector<int> ctas;
  std::vector<double> rates;
  for (int c = 0; c < tr.ctas; ++c) {
    if (!tr.traced(c)) {
      if (tr.cta(c, 0)) printf("CTA %d: started but not finished in the trace (skipped)\n", c);
      continue;
    }
    ctas.push_back(c);
    const double dg = double(tr.cta(c, 3) - tr.cta(c, 0)), dc = double(tr.cta(c, 6) - tr.cta(c, 5));
    if (dg > 0) rates.push_back(dc / dg);
  }
  if (ctas.empty()) {
    printf("no traced CTA (is the library instrumented? fp8_instrument.py)\n");
    return 1;
  }
  const double ghz = rates.empty() ? NAN : pct(rates, 0.5);
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess) khz = 0;
  // The smallest nonzero globaltimer step among this call's stamps.
  unsigned long long step = ~0ull;
  for (int c : ctas) {
    std::vector<unsigned long long> g;
    for (int i = 0; i < tr.shown(c); ++i)
      for (int k = 0; k < Trace::kStamps; ++k)
        if (tr.gt(c, i, k)) g.push_back(tr.gt(c, i, k));
    std::sort(g.begin(), g.end());
    for (size_t i = 1; i < g.size(); ++i)
      if (g[i] != g[i - 1]) step = std::min(step, g[i] - g[i - 1]);
  }
  unsigned long long first = ~0ull, last = 0;
  for (int c : ctas) first = std::min(first, tr.cta(c, 0)), last = std::max(last, tr.cta(c, 3));
  printf("event %.2f us (the whole call: A image, GEMM, fix-up); traced CTAs %zu (start to last tile %.2f us)\n",
         ms * 1000.0, ctas.size(), double(last - first) / 1000.0);
  printf("SM clock from clock64 / globaltimer: median %.3f GHz (CTAs %.3f-%.3f; device peak %s GHz); "
         "smallest globaltimer step seen %.0f ns\n",
         ghz, pct(rates, 0.0), pct(rates, 1.0), khz ? std::to_string(khz / 1e6).c_str() : "n/a",
         step == ~0ull ? NAN : double(step));

  const Clock clk{tr, true, ghz}, gtm{tr, false, 1.0};
  enum {
    kIssue, kSlotWait, kWake, kDataWait, kPeriod, kBusy, kReleaseLag, kLatency, kAfterIssue, kIssueFull,
    kTileSwitch, kAhead
  };
  Metric m[] = {{"producer issue"},        {"producer slot wait"},    {"slot release->wake"},
                {"consumer data wait"},    {"consumer slice period"}, {"consumer busy"},
                {"consumer release lag"},  {"data latency (waited)"}, {"data wait after issue"},
                {"issue -> full (all)"},   {"tile switch"},           {"stages ahead"}};
  int waited[2] = {0, 0}, waitable[2] = {0, 0}, pwaited[2] = {0, 0}, pwaitable[2] = {0, 0};
  for (int which = 0; which < 2; ++which) {
    const Clock& T = which == 0 ? clk : gtm;
    for (int c : ctas) {
      const int n = tr.shown(c), S = tr.stages(c), per = tr.per_tile(c);
      for (int i = 0; i < n; ++i) {
        const double t0 = T.at(c, i, 0), t1 = T.at(c, i, 1), t2 = T.at(c, i, 2), t3 = T.at(c, i, 3);
        const double t4 = T.at(c, i, 4);
        const bool tile_first = i % per == 0;
        auto add = [&](int k, double v) {
          if (!std::isnan(v)) m[k].v[which].push_back(v);
        };
        if (i >= S) {
          add(kIssue, t1 - t0);
          const double sw = t0 - T.at(c, i - 1, 1);
          add(kSlotWait, sw);
          if (!std::isnan(sw)) {
            ++pwaitable[which];
            if (sw > kEps) ++pwaited[which], add(kWake, t0 - T.at(c, i - S, 3));
          }
        }
        add(kReleaseLag, t3 - t2);
        add(kIssueFull, t2 - t1);
        if (i == 0) continue;
        if (tile_first) {  // the previous tile's last slice ended its chain: t3' precedes the epilogue
          add(kTileSwitch, t4 - T.at(c, i - 1, 3));
          continue;
        }
        add(kPeriod, t4 - T.at(c, i - 1, 4));  // slice it - 1's period (the same tile)
        add(kBusy, t4 - T.at(c, i - 1, 2));
        const double cw = t2 - t4;
        add(kDataWait, cw);
        if (!std::isnan(cw)) {
          ++waitable[which];
          if (cw > kEps) ++waited[which], add(kLatency, t2 - t1), add(kAfterIssue, t2 - std::max(t1, t4));
        }
        if (i + S <= n && !std::isnan(t4)) {
          int ahead = 0;
          for (int j = i; j < i + S; ++j) ahead += T.at(c, j, 1) <= t4 ? 1 : 0;
          m[kAhead].v[which].push_back(ahead);
        }
      }
    }
  }

  // Per-CTA rows (clock64, us after the CTA's start).
  for (int c : rows ? ctas : std::vector<int>{}) {
    const int n = tr.shown(c), S = tr.stages(c), per = tr.per_tile(c);
    const double dep = double(tr.cta(c, 7) - tr.cta(c, 5)) / ghz / 1000.0;
    const double done = double(tr.cta(c, 6) - tr.cta(c, 5)) / ghz / 1000.0;
    const std::string cut = tr.iterations(c) > tr.iters ? ", the first " + std::to_string(tr.iters) + " traced" : "";
    printf("\nCTA %d (SM %llu): %d stage iterations (%d per tile%s), kStages %d, %llu consumer warpgroups%s; "
           "start +%.2f us after the first traced CTA, depwait %.2f, last tile done %.2f us\n",
           c, tr.cta(c, 1), tr.iterations(c), per, cut.c_str(), S,
           tr.cta(c, 10), tr.cta(c, 11) ? ", PAIR" : "", double(tr.cta(c, 0) - first) / 1000.0, dep, done);
    // Per row: arrive = t4, dataw = t2 - t4, period = t4(it+1) - t4(it) within the tile (the
    // consumer's time for this slice); a tile's first row also shows its tile switch t4 - t3'.
    printf("  %4s %2s %8s %8s %8s %8s %8s | %7s %7s %7s %7s %7s\n", "it", "s", "empty", "issued", "arrive", "full",
           "release", "issue", "slotw", "dataw", "period", "iss>ful");
    for (int i = 0; i < n; ++i) {
      double t[Trace::kStamps];
      for (int k = 0; k < Trace::kStamps; ++k) t[k] = clk.at(c, i, k) / 1000.0;
      const double p1 = i > 0 ? clk.at(c, i - 1, 1) / 1000.0 : NAN, p3 = i > 0 ? clk.at(c, i - 1, 3) / 1000.0 : NAN;
      const double n4 = i + 1 < n && (i + 1) % per != 0 ? clk.at(c, i + 1, 4) / 1000.0 : NAN;
      const bool steady = i >= S;
      char tile[64] = "";
      if (i % per == 0 && i > 0) snprintf(tile, sizeof tile, "  <- tile (switch %.3f)", t[4] - p3);
      if (i == 0) snprintf(tile, sizeof tile, "  <- tile");
      printf("  %4d %2d %8.3f %8.3f %8.3f %8.3f %8.3f | %7.3f %7.3f %7.3f %7.3f %7.3f%s\n", i, i % S, t[0], t[1], t[4],
             t[2], t[3], steady ? t[1] - t[0] : NAN, steady ? t[0] - p1 : NAN, t[2] - t[4], n4 - t[4], t[2] - t[1],
             tile);
    }
  }

  printf("\nSummary over %zu CTAs, us (median / p90 / samples); clock64 first, globaltimer in brackets\n",
         ctas.size());
  for (const Metric& x : m) {
    const bool count = &x == &m[kAhead];
    const double f = count ? 1.0 : 1e-3;
    printf("  %-22s %8.3f / %8.3f / %5zu   [%8.3f / %8.3f / %5zu]%s\n", x.name, pct(x.v[0], 0.5) * f,
           pct(x.v[0], 0.9) * f, x.v[0].size(), pct(x.v[1], 0.5) * f, pct(x.v[1], 0.9) * f, x.v[1].size(),
           count ? "  (stages, not us)" : "");
  }
  printf("  consumer waited > %.0f ns in %d of %d stages [%d of %d]; producer waited in %d of %d [%d of %d]\n", kEps,
         waited[0], waitable[0], waited[1], waitable[1], pwaited[0], pwaitable[0], pwaited[1], pwaitable[1]);
  return 0;
}

/// `fp8_trace --selftest` (no GPU, no library call): report() on a synthetic trace of a modelled
/// ring whose gaps are known, to check the arithmetic. 6 stages, 40 iterations of 16 per tile
/// (32 traced), every tile one chain of narrow slices (held releases); copies issued in 0.30 us
/// and landing 1.00 us later, the producer wakes 0.10 after a slot's release, PDL wait until
/// 3.00, epilogue 2.00; SM clock 1.8 GHz, globaltimer in 256 ns steps. The consumer arrives at
/// the full-wait `compute` after the previous wait's return (a tile's first slice: 2.00 after
/// the previous release), and releases a held slice 0.05 after the next slice's wait returns (a
/// tile's last slice: `compute` after its own). Expected clock64 medians:
///   CTA 0, compute 0.80 (consumer-bound): data wait 0, slice period and busy 0.80, release lag
///     0.85, producer slot wait 0.50, release->wake 0.10, issue -> full 3.55, 5 stages ahead
///     (kStages - 1: the held slot is the one missing), no data latency samples;
///   CTA 1, compute 0.15 (producer-bound, the producer issues every 0.30): data wait 0.15 (but
///     not for the few slices after a tile switch, while the ring refills), data latency 1.00,
///     data wait after issue 0.15, slice period 0.30, busy 0.15, release lag 0.35, 3 stages
///     ahead, producer slot wait 0 (one wait, after the tile switch);
///   both: producer issue 0.30, tile switch 2.00 (to ~0.5%: each CTA's clock rate is measured
///   against the 256 ns globaltimer, as on the device).
/// The summary pools both CTAs, whose medians differ, so the summary of each CTA alone follows.
int selftest() {
  Trace tr;
  tr.ctas = 2, tr.iters = 32;
  tr.h.assign(tr.words(), 0);
  constexpr int S = 6, kPer = 16, kN = 40;
  constexpr double kGhz = 1.8;
  for (int c = 0; c < tr.ctas; ++c) {
    const double base = 1e9 + 700.0 * c, cbase = 5e6 + 1e5 * c;  // ns, cycles
    auto g = [&](double ns) { return (unsigned long long)(std::floor((base + ns) / 256.0) * 256.0); };
    auto k = [&](double ns) { return (unsigned long long)(cbase + ns * kGhz); };
    auto cta = [&](int f) -> unsigned long long& { return tr.h[2 * tr.stamps() + size_t(c) * 12 + f]; };
    auto put = [&](int i, int f, double ns) {
      if (i >= tr.iters) return;
      tr.h[(size_t(c) * tr.iters + i) * Trace::kStamps + f] = g(ns);
      tr.h[tr.stamps() + (size_t(c) * tr.iters + i) * Trace::kStamps + f] = k(ns);
    };
    const double compute = c == 0 ? 800 : 150, dep = 3000;
    double t0[kN], t1[kN], t2[kN], t3[kN], t4[kN];
    for (int i = 0; i < kN; ++i) {
      if (i < S) {
        t0[i] = 100 + 50 * i;
        t1[i] = dep + 300 * (i + 1);
      } else {
        t0[i] = std::max(t1[i - 1], t3[i - S] + 100);  // t3[i - S] is set by iteration i - S + 1 at the latest
        t1[i] = t0[i] + 300;
      }
      const bool first = i % kPer == 0, last = i % kPer == kPer - 1 || i == kN - 1;
      t4[i] = i == 0 ? 500 : first ? t3[i - 1] + 2000 : t2[i - 1] + compute;
      t2[i] = std::max(t4[i], t1[i] + 1000);
      if (!first) t3[i - 1] = t2[i] + 50;  // the held slice i - 1, after slice i's issue
      if (last) t3[i] = t2[i] + compute;   // the chain's end: its wgmma wait, promotion, release
    }
    for (int i = 0; i < kN; ++i)
      put(i, 0, t0[i]), put(i, 1, t1[i]), put(i, 2, t2[i]), put(i, 3, t3[i]), put(i, 4, t4[i]);
    const double done = t3[kN - 1] + 2000;
    cta(0) = g(0), cta(5) = k(0), cta(1) = 7 + c, cta(2) = g(dep), cta(7) = k(dep), cta(3) = g(done), cta(6) = k(done);
    cta(4) = kN, cta(8) = S, cta(9) = kPer, cta(10) = 2, cta(11) = 0;
  }
  int rc = report(tr, 0.0);
  for (int c = 0; c < tr.ctas && rc == 0; ++c) {
    Trace one;
    one.ctas = 1, one.iters = tr.iters;
    one.h.assign(one.words(), 0);
    for (int i = 0; i < tr.iters; ++i)
      for (int f = 0; f < Trace::kStamps; ++f) {
        one.h[size_t(i) * Trace::kStamps + f] = tr.gt(c, i, f);
        one.h[one.stamps() + size_t(i) * Trace::kStamps + f] = tr.ck(c, i, f);
      }
    for (int f = 0; f < 12; ++f) one.h[2 * one.stamps() + f] = tr.cta(c, f);
    printf("\nselftest: CTA %d alone (%s)\n", c, c == 0 ? "consumer-bound" : "producer-bound");
    rc = report(one, 0.0, false);
  }
  return rc;
}

int run(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--selftest") return selftest();
  if (argc != 4 && argc != 8) {
    fprintf(stderr, "usage: %s M N K [block_m block_n warps split_k] | --selftest\n", argv[0]);
    return 2;
  }
  const int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
  Exec ex;
  ex.backend = Backend::cuda;
  GemmConfig cfg = explain_gemm(M, N, K, ex);
  if (argc == 8) {
    cfg.path = GemmPath::fp8;
    cfg.block_m = atoi(argv[4]), cfg.block_n = atoi(argv[5]), cfg.warps = atoi(argv[6]), cfg.split_k = atoi(argv[7]);
  }
  printf("%lldx%lldx%lld: %s\n", (long long)M, (long long)N, (long long)K, describe(cfg, M, N, K).c_str());
  if (cfg.path != GemmPath::fp8) {
    printf("not path fp8: nothing to trace\n");
    return 1;
  }
  Trace tr;
  cuda::debug_fp8_trace_shape(&tr.ctas, &tr.iters);

  // Weights: bf16 N(0,1) quantized on the device, packed, with the FP8 image, in copies.
  const int64_t pb = packed_bytes(N, K), fb = fp8_weights_bytes(N, K);
  const int64_t pitch = (pb + fb + 255) / 256 * 256;
  const int copies = int(std::max<int64_t>(2, (256ll << 20) / pitch + 1));
  uint16_t *dB, *dA, *dC;
  uint8_t *codes, *scales, *wbuf;
  {
    const std::vector<uint16_t> b = randn_bf16(size_t(N * K), 1);
    CK(cudaMalloc(&dB, b.size() * 2));
    CK(cudaMemcpy(dB, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc(&codes, size_t(N * K / 2)));
  CK(cudaMalloc(&scales, size_t(N * K / 32)));
  quantize(dB, DType::bf16, N, K, K, codes, scales, ScaleRule::aiter, ex);
  CK(cudaMalloc(&wbuf, size_t(pitch) * copies));
  std::vector<PackedWeights> w;
  for (int c = 0; c < copies; ++c) {
    uint8_t* base = wbuf + size_t(pitch) * c;
    const PackedWeights p = prepack(MxMatrix{codes, scales, N, K}, base, ex);
    w.push_back(prepack_fp8(p, base + (pb + 255) / 256 * 256, ex));
  }
  {
    const std::vector<uint16_t> a = randn_bf16(size_t(M * K), 2);
    CK(cudaMalloc(&dA, a.size() * 2));
    CK(cudaMemcpy(dA, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc(&dC, size_t(M * N * 2)));
  CK(cudaDeviceSynchronize());

  GemmOptions opt;
  opt.config = &cfg;
  const int warm = std::max(24, copies);
  for (int i = 0; i < warm; ++i) gemm(dA, M, K, K, w[size_t(i % copies)], dC, N, opt, ex);
  CK(cudaDeviceSynchronize());
  cuda::debug_clear_fp8_trace();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  gemm(dA, M, K, K, w[size_t(warm % copies)], dC, N, opt, ex);  // last used `copies` calls ago
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  CK(cudaGetLastError());
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  tr.h.assign(tr.words(), 0);
  cuda::debug_read_fp8_trace(tr.h.data());

  const int rc = report(tr, ms);
  cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(codes), cudaFree(scales), cudaFree(wbuf);
  return rc;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a forced configuration the library rejects, a CUDA error
    printf("error: %s\n", e.what());
    return 1;
  }
}
