#!/usr/bin/env python3
"""Adds a per-stage trace to path fp8's GEMM kernel, src/cuda/gemm_fp8_kernel.cuh, and two
read-back functions to its launcher src/cuda/gemm_fp8.cu (a measurement aid, never committed
instrumented): who waits for whom in the stage ring. For the CTAs blockIdx.x < kTraceCtas and
their stage iterations it < kTraceIters (`it` counts the CTA's stage iterations across its
tiles, the same number on the producer and the consumer side), five stamps per iteration:
  [0] producer thread of part --part (Part in the kernel: 0 B's atoms, 1 B's metadata, 2 A's
      atoms, 3 A's metadata; default 3): its empty-wait for the slot returned; in the prologue
      (the first min(kStages, iterations) iterations, no wait) the time it started to issue
      (weight parts: before griddepcontrol.wait; activation parts: after it)
  [1] the same thread: its part's bulk copies are all issued
  [2] consumer warpgroup 0, thread 0: its full-wait for the stage returned
  [3] consumer warpgroup 0, thread 0: just before it arrives on the stage's empty barrier
      (release_stage(), after its wgmma wait and the promotion); the slot is free only when
      every consumer thread of the CTA (PAIR: of both CTAs) has arrived, so this is a lower
      bound of the slot's release. A narrow slice whose chain goes on is held: its stage is
      released in the NEXT iteration, after that one's full-wait and wgmma issue, so [3] of
      `it` comes after [2] of it + 1
  [4] consumer warpgroup 0, thread 0: arriving at the full-wait (just before mbarrier_wait): with
      held releases the previous [3] no longer marks the consumer's arrival
each in %globaltimer ns (g_fp8_trace[kTraceCtas][kTraceIters][5]) and in %clock64 cycles
(g_fp8_clock, same shape: the SM's cycle counter, meaningful only as differences within one
CTA; globaltimer ticked in 0.256 us steps on the H200 in sessions 5 and 10, docs/perf-notes.md,
too coarse for ~1 us stages). Per CTA (g_fp8_cta[kTraceCtas][12]): 0 start (thread 0, kernel
entry, globaltimer), 1 %smid, 2 the griddepcontrol.wait return of A's atoms thread, 3 consumer
warpgroup 0 thread 0 past its last tile (globaltimer), 4 the CTA's stage iterations, 5 / 6 / 7
the clock64 twins of 0 / 3 / 2, 8 P::kStages, 9 stage iterations per tile (j1 - j0), 10 kCons,
11 1 for a PAIR instantiation. A stamp is three special-register reads (%ctaid.x, %clock64,
%globaltimer) and two global stores by one thread: no barrier, fence or arrival is added (the
synchronization is unchanged).
fp8_trace.cu reads them back through debug_fp8_trace_shape / debug_read_fp8_trace /
debug_clear_fp8_trace, added to gemm_fp8.cu.

Usage (fp8_run.sh does all of it in a scratch copy; the repository itself is never modified):
    python3 tools/dev/timeline/fp8_instrument.py [--ctas 8] [--iters 512] [--part 3] \\
        src/cuda/gemm_fp8_kernel.cuh src/cuda/gemm_fp8.cu
Each anchor must match exactly once over the files given; the script fails loudly when the
kernel changed.
"""
import argparse
import sys

HEADER = r"""// ---- fp8 timeline instrumentation (tools/dev/timeline/fp8_instrument.py) ----
constexpr int kTraceCtas = @CTAS@, kTraceIters = @ITERS@;
/// [cta][it]: 0 producer empty-wait return (prologue: issue start), 1 producer issue end,
/// 2 consumer wg 0 thread 0 full-wait return, 3 consumer wg 0 thread 0 before its release
/// (held slices: in iteration it + 1), 4 consumer wg 0 thread 0 arriving at the full-wait.
__device__ unsigned long long g_fp8_trace[kTraceCtas][kTraceIters][5];  // %globaltimer ns
__device__ unsigned long long g_fp8_clock[kTraceCtas][kTraceIters][5];  // %clock64 cycles
/// [cta]: start, smid, depwait, tiles done, iterations, clock64 of start / done / depwait,
/// kStages, iterations per tile, kCons, PAIR.
__device__ unsigned long long g_fp8_cta[kTraceCtas][12];
__device__ __forceinline__ unsigned long long fp8_gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long fp8_clock() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}
__device__ __forceinline__ bool fp8_traced() { return int(blockIdx.x) < kTraceCtas; }
/// Stamp k of iteration `it` of this CTA (callers pick the one thread that stamps). The CTA
/// index is read anew (volatile) at each stamp so that ptxas does not keep the row's address
/// live across the loops: with blockIdx.x the 32-register producer of the 20-warp kernel and
/// the PAIR kernel's producer spilled more than uninstrumented; with this, no new spills.
__device__ __forceinline__ void fp8_stamp(int it, int k) {
  unsigned b;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(b));
  if (b < unsigned(kTraceCtas) && unsigned(it) < unsigned(kTraceIters)) {
    const unsigned long long c = fp8_clock(), g = fp8_gtime();
    g_fp8_clock[b][it][k] = c;
    g_fp8_trace[b][it][k] = g;
  }
}
// ---- end of the fp8 timeline instrumentation ----

"""

EDITS = [
    # The trace arrays and helpers, before the kernel's first definition (inside its namespaces).
    ("#ifndef MXFP4_EXP_FP8_NOWAIT  // a measurement only",
     "@HEADER@#ifndef MXFP4_EXP_FP8_NOWAIT  // a measurement only"),
    # Kernel start and SM id (thread 0; before the barrier initialisation).
    ("  const int wg = int(threadIdx.x) / 128;\n  const uint32_t rank = PAIR ? cluster_rank() : 0;\n",
     "  if (threadIdx.x == 0 && fp8_traced()) {\n"
     "    unsigned smid;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid));\n"
     "    g_fp8_cta[blockIdx.x][5] = fp8_clock();\n    g_fp8_cta[blockIdx.x][0] = fp8_gtime();\n"
     "    g_fp8_cta[blockIdx.x][1] = smid;\n  }\n"
     "  const int wg = int(threadIdx.x) / 128;\n  const uint32_t rank = PAIR ? cluster_rank() : 0;\n"),
    # Producer part @PART@ ([0], [1]) and the PDL wait's return (A's atoms thread).
    ("  bool waited = !weights;\n  if (waited) wait_for_image<FIX>();\n",
     "  bool waited = !weights;\n  if (waited) wait_for_image<FIX>();\n"
     "  if (part == kAAtoms && fp8_traced()) {\n    g_fp8_cta[blockIdx.x][7] = fp8_clock();\n"
     "    g_fp8_cta[blockIdx.x][2] = fp8_gtime();\n  }\n"),
    ("    if (it >= P::kStages) mbarrier_wait(&empty[s], uint32_t((it / P::kStages) - 1) & 1u);\n",
     "    if (it >= P::kStages) mbarrier_wait(&empty[s], uint32_t((it / P::kStages) - 1) & 1u);\n"
     "    if (part == @PART@) fp8_stamp(it, 0);\n"),
    ("    if (++j == j1) {\n      j = j0, id += clusters;\n",
     "    if (part == @PART@) fp8_stamp(it, 1);\n    if (++j == j1) {\n      j = j0, id += clusters;\n"),
    # Consumer: [4] arriving at the full-wait, [2] after it (before the __syncwarp that
    # reconverges for wgmma).
    ("        if constexpr (!kExpMmaOnly) mbarrier_wait(&full[s], uint32_t(it / P::kStages) & 1u);\n",
     "        if (wg == 0 && threadIdx.x == 0) fp8_stamp(it, 4);\n"
     "        if constexpr (!kExpMmaOnly) mbarrier_wait(&full[s], uint32_t(it / P::kStages) & 1u);\n"
     "        if (wg == 0 && threadIdx.x == 0) fp8_stamp(it, 2);\n"),
    # Consumer: [3] at the top of release_stage (every caller: data-only, chain goes on, finish).
    ("        auto release_stage = [&](int rit) {\n",
     "        auto release_stage = [&](int rit) {\n"
     "          if (wg == 0 && threadIdx.x == 0) fp8_stamp(rit, 3);\n"),
    # Consumer warpgroup 0 thread 0 past its last tile: end time, iterations and the plan.
    ("    }\n    if constexpr (FIX) close_cluster(first < tiles_total);",
     "    }\n"
     "    if (wg == 0 && threadIdx.x == 0 && fp8_traced()) {\n"
     "      g_fp8_cta[blockIdx.x][6] = fp8_clock();\n      g_fp8_cta[blockIdx.x][3] = fp8_gtime();\n"
     "      g_fp8_cta[blockIdx.x][4] = unsigned(it);\n      g_fp8_cta[blockIdx.x][8] = P::kStages;\n"
     "      g_fp8_cta[blockIdx.x][9] = unsigned(j1 - j0);\n      g_fp8_cta[blockIdx.x][10] = kCons;\n"
     "      g_fp8_cta[blockIdx.x][11] = PAIR ? 1 : 0;\n    }\n"
     "    if constexpr (FIX) close_cluster(first < tiles_total);"),
    # Host read-back (gemm_fp8.cu, namespace mxfp4::cuda).
    ("void gemm_fp8(const uint16_t* A,",
     "void debug_fp8_trace_shape(int* ctas, int* iters) { *ctas = kTraceCtas, *iters = kTraceIters; }\n"
     "/// host: g_fp8_trace (kTraceCtas * kTraceIters * 5 words), then g_fp8_clock (as many), then\n"
     "/// g_fp8_cta (kTraceCtas * 12).\n"
     "void debug_read_fp8_trace(unsigned long long* host) {\n"
     "  const size_t n = size_t(kTraceCtas) * kTraceIters * 5;\n"
     "  check(cudaMemcpyFromSymbol(host, g_fp8_trace, n * 8), \"debug_read_fp8_trace\");\n"
     "  check(cudaMemcpyFromSymbol(host + n, g_fp8_clock, n * 8), \"debug_read_fp8_trace\");\n"
     "  check(cudaMemcpyFromSymbol(host + 2 * n, g_fp8_cta, size_t(kTraceCtas) * 12 * 8), \"debug_read_fp8_trace\");\n"
     "}\n"
     "void debug_clear_fp8_trace() {\n"
     "  void* p;\n"
     "  check(cudaGetSymbolAddress(&p, g_fp8_trace), \"debug_clear_fp8_trace\");\n"
     "  check(cudaMemset(p, 0, sizeof(g_fp8_trace)), \"debug_clear_fp8_trace\");\n"
     "  check(cudaGetSymbolAddress(&p, g_fp8_clock), \"debug_clear_fp8_trace\");\n"
     "  check(cudaMemset(p, 0, sizeof(g_fp8_clock)), \"debug_clear_fp8_trace\");\n"
     "  check(cudaGetSymbolAddress(&p, g_fp8_cta), \"debug_clear_fp8_trace\");\n"
     "  check(cudaMemset(p, 0, sizeof(g_fp8_cta)), \"debug_clear_fp8_trace\");\n"
     "  check(cudaDeviceSynchronize(), \"debug_clear_fp8_trace\");\n"
     "}\n\n"
     "void gemm_fp8(const uint16_t* A,"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctas", type=int, default=8, help="traced CTAs: blockIdx.x < CTAS (default 8)")
    ap.add_argument("--iters", type=int, default=512, help="traced stage iterations per CTA (default 512)")
    ap.add_argument("--part", type=int, default=3, choices=range(4),
                    help="the producer part whose thread stamps [0] and [1] (default 3, A's metadata)")
    ap.add_argument("files", nargs="+", help="gemm_fp8_kernel.cuh and gemm_fp8.cu (a scratch copy)")
    args = ap.parse_args()
    if args.ctas < 1 or args.iters < 1 or args.ctas * args.iters > (1 << 22):
        sys.exit(f"fp8_instrument.py: --ctas {args.ctas} x --iters {args.iters} out of range")
    header = HEADER.replace("@CTAS@", str(args.ctas)).replace("@ITERS@", str(args.iters))
    srcs = {path: open(path).read() for path in args.files}
    for path, src in srcs.items():
        if "g_fp8_trace" in src:
            sys.exit(f"fp8_instrument.py: {path} is already instrumented")
    for anchor, replacement in EDITS:
        n = sum(src.count(anchor) for src in srcs.values())
        if n != 1:
            sys.exit(f"fp8_instrument.py: anchor found {n} times (kernel changed?): {anchor!r}")
        path = next(p for p, src in srcs.items() if anchor in src)
        srcs[path] = srcs[path].replace(anchor, replacement.replace("@HEADER@", header).replace("@PART@", str(args.part)))
    for path, src in srcs.items():
        open(path, "w").write(src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
