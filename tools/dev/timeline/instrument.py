#!/usr/bin/env python3
"""Adds a per-CTA globaltimer timeline to the small-M kernel, src/cuda/gemm_fused_kernel.cuh and
its launchers in src/cuda/gemm_fused.cu (a measurement aid, never committed instrumented):
thread 0 of every CTA records kernel start, the return of griddepcontrol.wait and the
prologue's copy issue, the arrival of the first and of the last stage, the end of the K loop,
the partial tile's completion in shared memory (reddone), the end of the kernel and, on path
fused, the end of its in-kernel quantization of A (= the wait's return on path splitk; with
warp 0 as the waiter, session 31, thread 0's stamp also covers its fragment copies' issue, and
"the prologue's copy issue" is then about the same time, as thread 0 issues no weights), plus
its SM id, into a __device__ array that trace.cu reads back. The split-K reductions live in
src/cuda/splitk_reduce.cuh and are not stamped inside: "clustbar" is the K loop's end and
"pulled" the kernel's end (session 10 found that a cold call's per-phase stamps there did not
predict what a change saves in a graph). Since that move, the ranks of the workspace
reduction that do not sum the tile are traced too (before, they returned before the stamp).

Usage (on the GPU machine, in a scratch copy or with `git stash` afterwards):
    python3 tools/dev/timeline/instrument.py [--steady] src/cuda/gemm_fused_kernel.cuh src/cuda/gemm_fused.cu \\
        [src/cuda/quantize.cu]   (with --steady: the quantizer's CTAs too)
    bash scripts/device-check.sh --no-tests --no-bench
    nvcc -std=c++17 -arch=sm_90a -Iinclude tools/dev/timeline/trace.cu build-device/libmxfp4.a \\
         -lcublas -lcublasLt -lopenblas -o /tmp/trace
    /tmp/trace M N K [splitk(0|1) block_n warps split_k]
Each anchor must match exactly once over the files given; the script fails loudly when the
kernel changed.
"""
import sys

EDITS = [
    ("/// One CTA: SLABS 16-row weight slabs",
     "__device__ unsigned long long g_trace[8192][11];\n"
     "__device__ __forceinline__ unsigned long long gtime() {\n"
     "  unsigned long long t;\n  asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t));\n  return t;\n}\n"
     "/// One CTA: SLABS 16-row weight slabs"),
    ("  const int prologue = min(nstages, p.stages);\n",
     "  const unsigned long long t0 = gtime();\n  unsigned long long tw = 0;  // path splitk: its PDL wait returned\n"
     "  const int cta = blockIdx.y * gridDim.x + blockIdx.x;\n"
     "  const int prologue = min(nstages, p.stages);\n"),
    ("  if (threadIdx.x == 0 && !wait_warp)\n    for (int s = 0; s < prologue; ++s) issue_frags(s, s);\n",
     "  if (threadIdx.x == 0 && !wait_warp)\n    for (int s = 0; s < prologue; ++s) issue_frags(s, s);\n"
     "  const unsigned long long t1 = gtime();\n  unsigned long long t2 = 0, tl = 0, tq = 0;\n"),
    ("  if constexpr (!PREQUANT) __syncthreads();  // A's first batch is in abuf\n",
     "  if constexpr (!PREQUANT) __syncthreads();  // A's first batch is in abuf\n"
     "  tq = PREQUANT ? tw : gtime();  // path splitk: its wait; path fused: A's first batch\n"),
    ("    grid_dependents_launch();\n  } else if (quantizer) {",  # after path splitk's wait
     "    tw = gtime();\n    grid_dependents_launch();\n  } else if (quantizer) {"),
    ("    mbarrier_wait(&full[slot], phase);\n",
     "    mbarrier_wait(&full[slot], phase);\n    if (s == 0) t2 = gtime();\n    tl = gtime();\n"),
    ("  // Epilogue: the KW warps",
     "  const unsigned long long t3 = gtime();\n  unsigned long long tc = t3, tp = 0;\n  // Epilogue: the KW warps"),
    ("  const int64_t n0 = slab0 * 16;\n",
     "  const unsigned long long tr = gtime();\n  const int64_t n0 = slab0 * 16;\n"),
    ("    splitk_reduce_pull<kThreads, kQuads, kP>(red, quads, rank, p.split, store4);\n  }\n}\n",
     "    splitk_reduce_pull<kThreads, kQuads, kP>(red, quads, rank, p.split, store4);\n  }\n"
     "  const unsigned long long tend = gtime();  // before --steady's atomicAdd (its round trip)\n"
     "  if (threadIdx.x == 0 && cta < 8192) {\n"
     "    unsigned smid;\n    asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(smid));\n"
     "    g_trace[cta][0] = t0, g_trace[cta][1] = t1, g_trace[cta][2] = t2, g_trace[cta][3] = tl;\n"
     "    g_trace[cta][4] = t3, g_trace[cta][5] = tc, g_trace[cta][6] = tend, g_trace[cta][7] = smid;\n"
     "    g_trace[cta][8] = tq, g_trace[cta][9] = tr, g_trace[cta][10] = tp ? tp : tend;\n  }\n}\n"),
    ("void gemm_fused(const uint16_t* A,",
     "void debug_read_trace(unsigned long long* host, int n) {\n"
     "  cudaMemcpyFromSymbol(host, g_trace, size_t(n) * 11 * 8);\n}\n"
     "void debug_clear_trace() {\n  static unsigned long long z[8192][11];\n"
     "  cudaMemcpyToSymbol(g_trace, z, sizeof(z));\n}\n\n"
     "void gemm_fused(const uint16_t* A,"),
]


# --steady: the stamps of the last 64 calls of every CTA (< 1024), for a CUDA graph's steady
# state (steady_trace.cu): a per-CTA call counter picks the slot at the kernel's end.
STEADY = [
    ("__device__ unsigned long long g_trace[8192][11];",
     "__device__ unsigned long long g_trace[64][1024][11];\n__device__ unsigned g_calls[1024];"),
    ("  if (threadIdx.x == 0 && cta < 8192) {\n",
     "  if (threadIdx.x == 0 && cta < 1024) {\n    const unsigned slot = atomicAdd(&g_calls[cta], 1u) % 64;\n"),
    ("cudaMemcpyFromSymbol(host, g_trace, size_t(n) * 11 * 8);",
     "(void)n;\n  cudaMemcpyFromSymbol(host, g_trace, sizeof(g_trace));"),
    ("  static unsigned long long z[8192][11];\n  cudaMemcpyToSymbol(g_trace, z, sizeof(z));\n",
     "  static unsigned long long z[64][1024][11];\n  cudaMemcpyToSymbol(g_trace, z, sizeof(z));\n"
     "  static unsigned zc[1024];\n  cudaMemcpyToSymbol(g_calls, zc, sizeof(zc));\n"),
    # -DMXFP4_EXP_EXIT_AT_WAIT (with -DMXFP4_EXP_WAIT_AT_ENTRY=1; gemm_fused.cu): path splitk's
    # CTAs stamp every field with their start (= the wait's return), signal and leave.
    ("  const int cta = blockIdx.y * gridDim.x + blockIdx.x;\n",
     "  const int cta = blockIdx.y * gridDim.x + blockIdx.x;\n"
     "#if MXFP4_EXP_EXIT_AT_WAIT\n"
     "  if constexpr (PREQUANT) {\n"
     "    if (threadIdx.x == 0 && cta < 1024) {\n"
     "      const unsigned xslot = atomicAdd(&g_calls[cta], 1u) % 64;\n"
     "      unsigned xsm;\n      asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(xsm));\n"
     "      for (int k = 0; k < 11; ++k) g_trace[xslot][cta][k] = k == 7 ? xsm : t0;\n"
     "    }\n"
     "    grid_dependents_launch();\n"
     "    return;\n"
     "  }\n"
     "#endif\n"),
]


# --steady with src/cuda/quantize.cu among the files: the quantizer's CTAs too (path splitk's
# first kernel): thread 0's kernel entry, the return of its PDL wait and its end, per CTA
# (< 1024) in a ring of the last 64 calls like the GEMM's (steady_trace.cu reads both).
QUANT = [
    ("template <FragOrder O>\n__global__ void __launch_bounds__(kThreads) quantize_fragments_kernel(",
     "__device__ unsigned long long g_qtrace[64][1024][3];\n__device__ unsigned g_qcalls[1024];\n"
     "__device__ __forceinline__ unsigned long long qtime() {\n"
     "  unsigned long long t;\n  asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t));\n  return t;\n}\n"
     "template <FragOrder O>\n__global__ void __launch_bounds__(kThreads) quantize_fragments_kernel("),
    ("  if (trigger_first) grid_dependents_launch();\n  grid_dependency_wait();\n"
     "  if (!trigger_first) grid_dependents_launch();\n  // The GEMM's split-K tile counters",
     "  if (trigger_first) grid_dependents_launch();\n  const unsigned long long q0 = qtime();\n  grid_dependency_wait();\n"
     "  const unsigned long long q1 = qtime();\n  if (!trigger_first) grid_dependents_launch();\n"
     "  // The GEMM's split-K tile counters"),
    ("    __syncthreads();  // the tile is rewritten by the next token tile\n  }\n}\n",
     "    __syncthreads();  // the tile is rewritten by the next token tile\n  }\n"
     "  const unsigned long long q2 = qtime();\n  const unsigned qcta = blockIdx.y * gridDim.x + blockIdx.x;\n"
     "  if (threadIdx.x == 0 && qcta < 1024) {\n    const unsigned slot = atomicAdd(&g_qcalls[qcta], 1u) % 64;\n"
     "    g_qtrace[slot][qcta][0] = q0, g_qtrace[slot][qcta][1] = q1, g_qtrace[slot][qcta][2] = q2;\n  }\n}\n"),
    ("void quantize(const void* x, DType dtype,",
     "void debug_qtrace_read(unsigned long long* host) { cudaMemcpyFromSymbol(host, g_qtrace, sizeof(g_qtrace)); }\n"
     "void debug_qtrace_clear() {\n  static unsigned long long z[64][1024][3];\n  static unsigned zc[1024];\n"
     "  cudaMemcpyToSymbol(g_qtrace, z, sizeof(z));\n  cudaMemcpyToSymbol(g_qcalls, zc, sizeof(zc));\n}\n\n"
     "void quantize(const void* x, DType dtype,"),
]


def main() -> int:
    args = sys.argv[1:]
    steady = "--steady" in args
    # --qspin-ns N (with --steady and quantize.cu): every quantizer CTA spins N ns after its
    # work, before its end stamp, so that its grid completes N ns later while its trigger (right
    # after its wait) stays where it was: does the GEMM start after the trigger or after the
    # quantizer's completion? (docs/perf-notes.md, plan item p)
    qspin = 0
    if "--qspin-ns" in args:
        i = args.index("--qspin-ns")
        qspin = int(args[i + 1])
        del args[i:i + 2]
    srcs = {path: open(path).read() for path in args if path != "--steady"}
    quant = steady and any(p.endswith("quantize.cu") for p in srcs)
    edits = EDITS + (STEADY if steady else []) + (QUANT if quant else [])
    if qspin and quant:
        spin = (f"  {{ const unsigned long long s0 = qtime(); while (qtime() - s0 < {qspin}ull) {{}} }}\n"
                "  const unsigned long long q2 = qtime();")
        edits = [(a, r.replace("  const unsigned long long q2 = qtime();", spin)) for a, r in edits]
    elif qspin:
        sys.exit("instrument.py: --qspin-ns needs --steady and src/cuda/quantize.cu")
    for anchor, replacement in edits:
        n = sum(src.count(anchor) for src in srcs.values())
        if n != 1:
            sys.exit(f"instrument.py: anchor found {n} times (kernel changed?): {anchor!r}")
        path = next(p for p, src in srcs.items() if anchor in src)
        srcs[path] = srcs[path].replace(anchor, replacement)
    if steady:
        srcs = {p: s.replace("g_trace[cta][", "g_trace[slot][cta][") for p, s in srcs.items()}
    for path, src in srcs.items():
        open(path, "w").write(src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
