#!/usr/bin/env python3
"""Adds a per-warp globaltimer timeline to path gemv's kernel (src/cuda/gemm_gemv.cu), for the
steady state of a CUDA graph (a measurement aid, never committed instrumented; gemv_run.sh runs
it in a scratch copy). Lane 0 of every warp stamps into shared memory (no registers held across the kernel) and,
at its end, takes the call's number from its own counter (atomicAdd on g_gv_calls[cta][warp]:
no barrier added) and copies the stamps to g_gv_trace[call % 64][cta][warp]:
  0 start     kernel entry
  1 waited    griddepcontrol.wait returned (the previous kernel is complete)
  2 quantA    the warp's part of A's quantization is done (before the __syncthreads)
  3 synced    past the __syncthreads: A is in shared memory
  4 batch0    the first batch multiplied (its loads returned)
  9 batch1    the second batch multiplied
 10 batch2    the third batch multiplied
 11 copied    (kernel <., true>) the wait for the weights' bulk copies returned, the first time
  5 loopend   the K loop is done
  6 reddone   past the reduction's __syncthreads (every warp's partial tile is in)
  7 end       the warp's stores are issued
  8 smid      the SM the CTA ran on
gemv_trace.cu reads them back. Each anchor must match exactly once; the script fails loudly
when the kernel changed.

Usage: python3 tools/dev/timeline/gemv_instrument.py src/cuda/gemm_gemv.cu
"""
import sys

EDITS = [
    ("constexpr int kBatch = 2;  // K chunks per warp whose loads are in flight, per register set\n",
     "constexpr int kBatch = 2;  // K chunks per warp whose loads are in flight, per register set\n"
     "__device__ unsigned long long g_gv_trace[64][256][16][12];\n"
     "__device__ unsigned g_gv_calls[256][16];\n"
     "__device__ __forceinline__ unsigned long long gv_time() {\n"
     "  unsigned long long t;\n  asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t));\n  return t;\n}\n"),
    ("  const int g = lane / 4, t = lane % 4;\n  uint32_t* sa = smem;",
     "  const int g = lane / 4, t = lane % 4;\n"
     "  __shared__ unsigned long long gv[16][12];  // stamps in shared memory: no registers held\n"
     "  if (lane == 0 && warp < 16) gv[warp][0] = gv_time(), gv[warp][4] = gv[warp][9] = gv[warp][10] = gv[warp][11] = 0;\n"
     "  uint32_t* sa = smem;"),
    ("  grid_dependency_wait();  // the previous kernel may write A, C (and B unless kStatic)\n  grid_dependents_launch();\n",
     "  grid_dependency_wait();  // the previous kernel may write A, C (and B unless kStatic)\n  grid_dependents_launch();\n"
     "  if (lane == 0 && warp < 16) gv[warp][1] = gv_time();\n"),
    ("    load_batch(wc0, sc0, kw);\n  }\n  __syncthreads();\n",
     "    load_batch(wc0, sc0, kw);\n  }\n  if (lane == 0 && warp < 16) gv[warp][2] = gv_time();\n  __syncthreads();\n"
     "  if (lane == 0 && warp < 16) gv[warp][3] = gv_time();\n"),
    ("    multiply_batch(wc0, sc0, first);\n    if (first + step >= kcs) break;\n",
     "    multiply_batch(wc0, sc0, first);\n    if (first == kw && lane == 0 && warp < 16) gv[warp][4] = gv_time();\n"
     "    if (first == kw + 2 * step && lane == 0 && warp < 16) gv[warp][10] = gv_time();\n"
     "    if (first + step >= kcs) break;\n"),
    ("    multiply_batch(wc1, sc1, first + step);\n",
     "    multiply_batch(wc1, sc1, first + step);\n    if (first == kw && lane == 0 && warp < 16) gv[warp][9] = gv_time();\n"),
    (" mbarrier_wait(wbar, 0u);\n",
     " {\n      mbarrier_wait(wbar, 0u);\n"
     "      if (lane == 0 && warp < 16 && gv[warp][11] == 0) gv[warp][11] = gv_time();\n    }\n"),
    ("  // D fragment: d0, d1",
     "  if (lane == 0 && warp < 16) {\n    gv[warp][5] = gv_time();\n    for (int i : {4, 9, 10, 11}) if (gv[warp][i] == 0) gv[warp][i] = gv[warp][5];\n  }\n"
     "  // D fragment: d0, d1"),
    ("  __syncthreads();\n  for (int i = int(threadIdx.x); i < kTile * p.slabs_per_cta;",
     "  __syncthreads();\n  if (lane == 0 && warp < 16) gv[warp][6] = gv_time();\n  for (int i = int(threadIdx.x); i < kTile * p.slabs_per_cta;"),
    ("      static_cast<uint16_t*>(p.C)[m * p.ldc + n] = fmt::f32_to_bf16(v);\n    }\n  }\n}\n",
     "      static_cast<uint16_t*>(p.C)[m * p.ldc + n] = fmt::f32_to_bf16(v);\n    }\n  }\n"
     "  if (lane == 0 && blockIdx.x < 256 && warp < 16) {\n"
     "    gv[warp][7] = gv_time();\n"
     "    unsigned smid;\n    asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(smid));\n    gv[warp][8] = smid;\n"
     "    const unsigned call = atomicAdd(&g_gv_calls[blockIdx.x][warp], 1u) % 64;\n"
     "    for (int i = 0; i < 12; ++i) g_gv_trace[call][blockIdx.x][warp][i] = gv[warp][i];\n"
     "  }\n}\n"),
    # The stamps' 1280 bytes of static shared memory come on top of the dynamic limit.
    ("cudaFuncAttributeMaxDynamicSharedMemorySize, int(kGemvSmemLimit)",
     "cudaFuncAttributeMaxDynamicSharedMemorySize, int(kGemvSmemLimit) - 2048"),
    ("void gemm_gemv(const uint16_t* A,",
     "void debug_gemv_trace_read(unsigned long long* host) {\n"
     "  cudaMemcpyFromSymbol(host, g_gv_trace, sizeof(g_gv_trace));\n}\n"
     "void debug_gemv_trace_clear() {\n"
     "  static unsigned long long z[64][256][16][12];\n  static unsigned zc[256][16];\n"
     "  cudaMemcpyToSymbol(g_gv_trace, z, sizeof(z));\n  cudaMemcpyToSymbol(g_gv_calls, zc, sizeof(zc));\n}\n\n"
     "void gemm_gemv(const uint16_t* A,"),
]


def main() -> int:
    srcs = {path: open(path).read() for path in sys.argv[1:]}
    for anchor, replacement in EDITS:
        n = sum(src.count(anchor) for src in srcs.values())
        if n != 1:
            sys.exit(f"gemv_instrument.py: anchor found {n} times (kernel changed?): {anchor!r}")
        path = next(p for p, src in srcs.items() if anchor in src)
        srcs[path] = srcs[path].replace(anchor, replacement)
    for path, src in srcs.items():
        open(path, "w").write(src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
