// Where a programmatic dependent launch (PDL) boundary spends its time (a measurement aid for
// path splitk, not built by CMake; docs/perf-notes.md session 32). Session 32's QSPIN timelines
// found the GEMM's griddepcontrol.wait returning 1.53 us after quantize_fragments' last CTA
// ends, while the quantizer's own wait returns 0.77 us after the previous GEMM's end. This
// probe alternates two synthetic kernels X, Y in a CUDA graph, both launched with PDL, each CTA
// stamping %globaltimer at entry, at its wait's return and at its end, and varies one property
// of Y (or X) per case: grid, threads, dynamic shared memory, cluster size, global stores
// before exit, where it triggers its dependents. Prints, per case, the medians over the
// graph's boundaries of (next kernel's first start, first wait return) after the previous
// kernel's last end, for X -> Y and Y -> X. Usage (GPU machine):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a tools/dev/probes/pdl_gap.cu -o /tmp/pg && /tmp/pg
// --bulk (session 34): how soon a bulk copy of L2-resident bytes (A for a self-quantizing GEMM)
// lands after the wait, with and without weight copies in flight.
// --heavy (session 34): Y with the real splitk GEMM's registers and code size (a never-run path),
// its grids and residency, and a GEMM-like X = Y (the timeline's NO_QUANTIZER chain).
// With the real quantizer as X (after scripts/device-check.sh built build-device; session 32
// call 6 built only the library: cmake --build B --target mxfp4):
//   nvcc ... -DWITH_LIB -DMXFP4_WITH_CUDA=1 -Iinclude -Isrc tools/dev/probes/pdl_gap.cu build-device/libmxfp4.a
//        -lcublas -lcublasLt $(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-device/CMakeCache.txt)
//        -o /tmp/pgl && /tmp/pgl --lib
#include <cuda_runtime.h>
#ifdef WITH_LIB  // X may be the library's quantize_fragments (fn 9): link build-device/libmxfp4.a
#include "cuda/quantize_kernels.cuh"
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// One kernel's shape and behaviour. trigger: 0 none (dependents launch at exit), 1 right after
/// the wait, 2 before the wait (unsafe in real code; here nothing is shared). load_bytes: per
/// CTA, 16-byte cp.async copies from a 512 MiB buffer (a new window per node: HBM, like path
/// splitk's weights) into shared memory, issued before the wait (load_before) or after it, and
/// waited for after it. atomic: thread 0 ends with an atomicAdd whose result it uses (the
/// timeline tool's per-CTA call counter).
struct Kind {
  int grid, threads, smem, cluster, spin_ns, store_words, trigger;
  int load_bytes = 0, load_before = 1, atomic = 0;
  // load_before 2: the copies are waited for before the wait; 3: warp 0 issues none and waits
  // at once (path splitk's waiter warp), the stamp is thread 0's. small: the copies come from
  // a 4 MiB window (L2-resident after the first calls).
  int small = 0;
  // fn: 0 the first kernel function, 1 a second one (same code), 2 the second with 1 KiB more
  // parameters: do X and Y differ in the real code by being two functions?
  int fn = 0;
  // fn 3, 4, 5 (session 34): the second function with a never-taken path (heavy_path) that gives
  // it the real splitk GEMM's register count and code size (~80-110 registers, ~45 KB of SASS):
  // 3 both, 4 the code only, 5 the registers only. The kernels' register counts are printed.
  // mimic: like quantize_fragments' body: each thread reads 16 bytes (ld.global.nc) of a 1 MiB
  // window, passes them through 4 KiB of static shared memory between two barriers and stores
  // 16 bytes (store_words counts 16-byte pieces then).
  int mimic = 0;
  // bulk (session 34): after the wait (and trigger), thread 0 bulk-copies this many bytes from
  // the start of `big` (the same bytes for every CTA and call, so L2-resident: like A's
  // fragments, or A itself for a self-quantizing GEMM) into shared memory after the load area,
  // on one mbarrier that every thread waits for; the run prints the median of end - wait over
  // Y's CTAs ("Y wait->end"), which with spin_ns = 0 and no stores is that copy's landing.
  int bulk = 0;
  // copies: CTA b reads copy b % copies of those bytes (copies 64 KiB apart): do replicas
  // spread the reads that every CTA makes of the same lines over more of L2?
  int copies = 1;
};

struct Args {
  Kind k;                      // this node's kernel
  unsigned long long* stamps;  // [node][cta][3]
  int node, max_ctas;
  unsigned* buf;
  const char* big;    // 512 MiB
  unsigned* counter;  // per CTA, for `atomic`
};

constexpr size_t kBig = size_t(512) << 20;

__device__ __forceinline__ void issue_loads(const Args& a, char* smem) {
  const Kind& k = a.k;
  const size_t window = k.small ? (size_t(4) << 20) : kBig;
  const size_t base = (size_t(a.node) * 64 + blockIdx.x) * size_t(k.load_bytes) % (window - size_t(k.load_bytes));
  const int t0 = k.load_before == 3 ? 32 : 0;  // the waiter warp issues none
  if (int(threadIdx.x) < t0) return;
  for (int i = 16 * (int(threadIdx.x) - t0); i < k.load_bytes; i += 16 * (int(blockDim.x) - t0)) {
    const unsigned d = unsigned(__cvta_generic_to_shared(smem + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(a.big + ((base + i) & ~size_t(15))) : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int Pad>
struct Padded {
  Args a;
  char pad[Pad];
};
template <>
struct Padded<0> {
  Args a;
};

/// Never run (node < 0), not removable: Regs live words through Reps unrolled rounds of
/// arithmetic, for a kernel with many registers (Regs) and much code (Regs * Reps).
template <int Regs, int Reps>
__device__ __forceinline__ void heavy_path(const Args& a) {
  unsigned r[Regs];
#pragma unroll
  for (int i = 0; i < Regs; ++i) r[i] = a.buf[i * 37 + threadIdx.x];
#pragma unroll
  for (int j = 0; j < Reps; ++j)
#pragma unroll
    for (int i = 0; i < Regs; ++i)
      r[i] = __funnelshift_l(r[i], r[(i + j + 1) % Regs], unsigned(i + j)) ^ (r[(i * 7 + j) % Regs] * 0x9E3779B1u + unsigned(j));
#pragma unroll
  for (int i = 0; i < Regs; ++i) a.buf[i * 37 + threadIdx.x + 4096] = r[i];
}

template <int Tag, int Pad, int Regs = 0, int Reps = 0>
__global__ void __launch_bounds__(256, 2) node_kernel(Padded<Pad> ap) {
  const Args& a = ap.a;
  const Kind& k = a.k;
  extern __shared__ __align__(16) char smem[];
  const unsigned long long t0 = gtime();
  if constexpr (Regs > 0) {
    if (a.node < 0) heavy_path<Regs, Reps>(a);
  }
  if (k.trigger == 2) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (k.load_bytes > 0 && k.load_before) issue_loads(a, smem);
  if (k.load_before == 2) asm volatile("cp.async.wait_all;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned long long tw = gtime();
  if (k.trigger == 1) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (k.load_bytes > 0 && !k.load_before) issue_loads(a, smem);
  if (k.bulk > 0) {
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = unsigned(__cvta_generic_to_shared(&bar));
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(b) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(b), "r"(k.bulk) : "memory");
      for (int off = 0; off < k.bulk; off += 4096) {
        const unsigned dst = unsigned(__cvta_generic_to_shared(smem + k.load_bytes + off));
        const int n = k.bulk - off < 4096 ? k.bulk - off : 4096;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                     "l"(a.big + size_t(blockIdx.x % unsigned(k.copies)) * 65536 + off), "r"(n), "r"(b)
                     : "memory");
      }
    }
    unsigned done = 0;
    while (!done)
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done)
                   : "r"(b)
                   : "memory");
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  while (gtime() - tw < unsigned(k.spin_ns)) {
  }
  if (k.mimic) {
    __shared__ uint4 tile[256];
    for (int first = 0; first < k.store_words; first += int(blockDim.x)) {  // uniform: barriers inside
      const int i = first + int(threadIdx.x);
      if (i < k.store_words) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.big) + (size_t(blockIdx.x) * k.store_words + i) % 65536);
        tile[threadIdx.x % 256] = make_uint4(v.x ^ a.node, v.y, v.z, v.w);
      }
      __syncthreads();
      if (i < k.store_words)
        reinterpret_cast<uint4*>(a.buf)[size_t(blockIdx.x) * k.store_words + i] = tile[(threadIdx.x + 1) % 256];
      __syncthreads();
    }
  } else {
    for (int i = int(threadIdx.x); i < k.store_words; i += int(blockDim.x))
      a.buf[size_t(blockIdx.x) * k.store_words + i] = unsigned(i) ^ unsigned(a.node);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned long long te = gtime();
    // The atomic's result is used (added to a stamp as 0 or 1 ns), so that it is a round trip
    // like the timeline tool's, not a fire-and-forget reduction.
    const unsigned slot = k.atomic ? atomicAdd(a.counter + blockIdx.x, 1u) % 2 : 0;
    unsigned long long* s = a.stamps + (size_t(a.node) * a.max_ctas + blockIdx.x) * 3;
    s[0] = t0 + slot, s[1] = tw, s[2] = te;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

uint16_t* g_a = nullptr;
uint32_t* g_frags = nullptr;

void launch(const Kind& k, Args a, cudaStream_t s) {
#ifdef WITH_LIB
  if (k.fn == 9) {  // the real quantizer at M = 8, K = 7168 (28 CTAs), as path splitk calls it
    mxfp4::cuda::quantize_fragments(g_a, 8, 7168, 7168, g_frags, mxfp4::ScaleRule::aiter, s);
    return;
  }
#endif
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(k.grid));
  cfg.blockDim = dim3(unsigned(k.threads));
  cfg.dynamicSmemBytes = size_t(k.smem);
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  int n = 0;
  attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[n++].val.programmaticStreamSerializationAllowed = 1;
  if (k.cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(k.cluster);
    attr[n].val.clusterDim.y = attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  a.k = k;
  if (k.fn == 0) cudaLaunchKernelEx(&cfg, node_kernel<0, 0>, Padded<0>{a});
  if (k.fn == 1) cudaLaunchKernelEx(&cfg, node_kernel<1, 0>, Padded<0>{a});
  if (k.fn == 3) cudaLaunchKernelEx(&cfg, node_kernel<1, 0, 64, 16>, Padded<0>{a});
  if (k.fn == 4) cudaLaunchKernelEx(&cfg, node_kernel<1, 0, 16, 64>, Padded<0>{a});
  if (k.fn == 5) cudaLaunchKernelEx(&cfg, node_kernel<1, 0, 64, 1>, Padded<0>{a});
  if (k.fn == 2) {
    Padded<1024> ap{};
    ap.a = a;
    cudaLaunchKernelEx(&cfg, node_kernel<1, 1024>, ap);
  }
}

char* g_big = nullptr;
unsigned* g_counter = nullptr;

void run_case(const char* name, const Kind& x, const Kind& y) {
  constexpr int kPairs = 40, kNodes = 2 * kPairs;
  const int max_ctas = std::max(x.grid, y.grid);
  unsigned long long* stamps;
  unsigned* buf;
  cudaMalloc(&stamps, sizeof(unsigned long long) * 3 * kNodes * max_ctas);
  cudaMalloc(&buf, 16 * size_t(max_ctas) * std::max({x.store_words, y.store_words, 1}));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < kNodes; ++i) launch(i % 2 ? y : x, Args{{}, stamps, i, max_ctas, buf, g_big, g_counter}, s);
  cudaStreamEndCapture(s, &g);
  if (cudaGraphInstantiate(&e, g, 0) != cudaSuccess) {
    std::printf("%-28s instantiate failed: %s\n", name, cudaGetErrorString(cudaGetLastError()));
    return;
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int r = 0; r < 3; ++r) cudaGraphLaunch(e, s);
  cudaEventRecord(e0, s);
  cudaGraphLaunch(e, s);
  cudaEventRecord(e1, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) {
    std::printf("%-28s failed: %s\n", name, cudaGetErrorString(cudaGetLastError()));
    return;
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  std::vector<unsigned long long> h(size_t(3) * kNodes * max_ctas);
  cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost);
  std::vector<double> start[2], wait[2], chain, ybody;
  auto at = [&](int node, int cta, int w) { return double(h[(size_t(node) * max_ctas + cta) * 3 + w]); };
  for (int i = 5; i < kNodes; i += 2)
    for (int c = 0; c < y.grid; ++c) ybody.push_back((at(i, c, 2) - at(i, c, 1)) / 1e3);
  for (int i = 5; i < kNodes; i += 2) {  // Y's end to the next Y's first wait return, across an X
    double end = 0, w0 = 1e30;
    for (int c = 0; c < y.grid; ++c) end = std::max(end, at(i - 2, c, 2)), w0 = std::min(w0, at(i, c, 1));
    chain.push_back((w0 - end) / 1e3);
  }
  for (int i = 4; i < kNodes; ++i) {  // boundary i-1 -> i
    const Kind& prev = i % 2 ? x : y;
    const Kind& next = i % 2 ? y : x;
    double end = 0, s0 = 1e30, w0 = 1e30;
    for (int c = 0; c < prev.grid; ++c) end = std::max(end, at(i - 1, c, 2));
    for (int c = 0; c < next.grid; ++c) s0 = std::min(s0, at(i, c, 0)), w0 = std::min(w0, at(i, c, 1));
    start[i % 2].push_back((s0 - end) / 1e3);
    wait[i % 2].push_back((w0 - end) / 1e3);
  }
  std::printf("%-28s %7.2f us/pair | X->Y start %6.2f wait %5.2f | Y->X start %6.2f wait %5.2f | Y end -> Y wait %5.2f"
              " | Y wait->end %5.2f\n",
              name, 1e3 * ms / kPairs, median(start[1]), median(wait[1]), median(start[0]), median(wait[0]),
              median(chain), median(ybody));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFree(stamps);
  cudaFree(buf);
}

}  // namespace

int main(int argc, char** argv) {
  cudaMalloc(&g_a, size_t(8) * 7168 * 2);
  cudaMemset(g_a, 0x3F, size_t(8) * 7168 * 2);
  cudaMalloc(&g_frags, size_t(8) * 7168 * 2);
  cudaFuncSetAttribute(node_kernel<0, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  cudaFuncSetAttribute(node_kernel<1, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  cudaFuncSetAttribute(node_kernel<1, 1024>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  {
    auto heavy = [](const char* name, auto fn) {
      cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
      cudaFuncAttributes at{};
      cudaFuncGetAttributes(&at, fn);
      std::printf("kernel %s: %d registers, %zu B local\n", name, at.numRegs, at.localSizeBytes);
    };
    heavy("fn 0", node_kernel<0, 0>);
    heavy("fn 3 (regs + code)", node_kernel<1, 0, 64, 16>);
    heavy("fn 4 (code)", node_kernel<1, 0, 16, 64>);
    heavy("fn 5 (regs)", node_kernel<1, 0, 64, 1>);
  }
  cudaMalloc(&g_big, kBig);
  cudaMemset(g_big, 1, kBig);
  cudaMalloc(&g_counter, 4096 * sizeof(unsigned));
  // X is quantize_fragments at 8x2112x7168 (28 CTAs of 256 threads, ~1 us, 28 x 1 KB of
  // fragments); Y the splitk GEMM (264 CTAs of 256 threads, ~3 us, C's partial tiles).
  const Kind qx{28, 256, 0, 1, 700, 256, 1};
  const Kind gy{264, 256, 100 * 1024, 1, 3000, 256, 1};
  auto with = [](Kind k, auto f) { f(k); return k; };
  if (argc > 1 && std::string(argv[1]) == "--bulk") {  // session 34: A by bulk copy after the wait
    std::printf("times in us, as below; Y wait->end: the bulk copy's landing after Y's wait (median over CTAs)\n");
    const Kind q8{8, 256, 0, 1, 700, 256, 1};            // 32x4096x512's quantizer grid
    const Kind y0{128, 256, 0, 2, 0, 0, 1, 0, 1};        // its GEMM: 128 CTAs in clusters of 2
    auto by = [&](int bulk, int weights) {
      return with(y0, [&](Kind& k) { k.bulk = bulk; k.load_bytes = weights; k.load_before = 3; k.smem = bulk + weights; });
    };
    for (int rep = 0; rep < 2; ++rep) {
      run_case("Y no copy", q8, y0);
      run_case("Y bulk 4K (fragments)", q8, by(4096, 0));
      run_case("Y bulk 16K (A, bf16)", q8, by(16384, 0));
      run_case("Y bulk 64K", q8, by(65536, 0));
      run_case("Y bulk 16K, 28K weights", q8, by(16384, 28 * 1024));
      run_case("Y bulk 16K, 96K weights", q8, by(16384, 96 * 1024));
      run_case("Y bulk 16K, X spin 3000", with(q8, [](Kind& k) { k.spin_ns = 3000; }), by(16384, 28 * 1024));
      for (int copies : {2, 4, 8, 16, 128})
        run_case(("Y bulk 16K, " + std::to_string(copies) + " copies").c_str(), q8,
                 with(by(16384, 0), [&](Kind& k) { k.copies = copies; }));
      run_case("Y bulk 4K, 8 copies", q8, with(by(4096, 0), [&](Kind& k) { k.copies = 8; }));
      run_case("Y bulk 16K, 8 copies, 28K w", q8, with(by(16384, 28 * 1024), [&](Kind& k) { k.copies = 8; }));
      run_case("Y cp.async 16K after, L2", q8, with(y0, [](Kind& k) { k.load_bytes = 16384; k.load_before = 0; k.small = 1; k.smem = 16384; }));
    }
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--heavy") {  // session 34: the GEMM's static properties
    std::printf("times in us, as below\n");
    const Kind q56{56, 256, 0, 1, 700, 256, 1};  // 16x2112x7168's quantizer grid
    const Kind g2{264, 256, 77056, 1, 3000, 256, 1};  // its GEMM: 2 CTAs per SM, padded shared memory
    for (int rep = 0; rep < 2; ++rep) {
      run_case("like splitk", qx, gy);
      run_case("Y regs + code", qx, with(gy, [](Kind& k) { k.fn = 3; }));
      run_case("Y code", qx, with(gy, [](Kind& k) { k.fn = 4; }));
      run_case("Y regs", qx, with(gy, [](Kind& k) { k.fn = 5; }));
      run_case("Y regs + code, 28K before", qx, with(gy, [](Kind& k) { k.fn = 3; k.load_bytes = 28 * 1024; k.load_before = 3; }));
      run_case("16x2112 grids", q56, g2);
      run_case("16x2112 grids, Y regs + code", q56, with(g2, [](Kind& k) { k.fn = 3; }));
      // X's CTA leaves no room for a second Y CTA on its SM until it exits (shared memory).
      run_case("X blocks a Y CTA", with(q56, [](Kind& k) { k.smem = 80 * 1024; }), g2);
      run_case("X 80K smem, Y 1 per SM", with(q56, [](Kind& k) { k.smem = 80 * 1024; }), with(g2, [](Kind& k) { k.grid = 132; }));
      // GEMM -> GEMM (the timeline's NO_QUANTIZER chain): X = Y = 32x4096x512's grid (128 CTAs
      // in clusters of 2), the GEMM's registers and code, 28 KiB of weights issued before the
      // wait by all warps but the waiter.
      const Kind gg{128, 256, 120 * 1024, 2, 2000, 256, 1, 28 * 1024, 3, 0, 0, 3};
      run_case("GEMM-like X = Y", gg, gg);
      run_case("GEMM-like X = Y, no loads", with(gg, [](Kind& k) { k.load_bytes = 0; }), with(gg, [](Kind& k) { k.load_bytes = 0; }));
      run_case("GEMM-like X = Y, no cluster", with(gg, [](Kind& k) { k.cluster = 1; }), with(gg, [](Kind& k) { k.cluster = 1; }));
    }
    return 0;
  }
  if (argc > 1) {  // --lib: the real quantizer as X (its own stamps absent: only the Y -> Y chain counts)
    const Kind real{28, 256, 0, 1, 0, 0, 1, 0, 1, 0, 0, 9};
    const Kind y28 = with(gy, [](Kind& k) { k.load_bytes = 28 * 1024; });
    run_case("synthetic X", qx, gy);
    run_case("real quantizer X", real, gy);
    run_case("synthetic X, Y 28K before", qx, y28);
    run_case("real quantizer X, Y 28K", real, y28);
    // If the real quantizer is the slow side: a synthetic X with its body's kind of work.
    run_case("mimic X, 256 pieces", with(qx, [](Kind& k) { k.mimic = 1; k.store_words = 256; k.spin_ns = 300; }), gy);
    run_case("mimic X, 1024 pieces", with(qx, [](Kind& k) { k.mimic = 1; k.store_words = 1024; k.spin_ns = 0; }), gy);
    return 0;
  }
  std::printf("times in us; start/wait: the next kernel's first CTA start / first wait return after "
              "the previous kernel's last CTA end (medians over boundaries)\n");
  run_case("symmetric 28x256", qx, Kind{28, 256, 0, 1, 700, 256, 1});
  run_case("like splitk", qx, gy);
  run_case("Y smem 0", qx, with(gy, [](Kind& k) { k.smem = 0; }));
  run_case("Y smem 200K", qx, with(gy, [](Kind& k) { k.smem = 200 * 1024; }));
  run_case("Y grid 28", qx, with(gy, [](Kind& k) { k.grid = 28; }));
  run_case("Y grid 132", qx, with(gy, [](Kind& k) { k.grid = 132; }));
  run_case("Y 512 threads", qx, with(gy, [](Kind& k) { k.threads = 512; }));
  run_case("Y cluster 2", qx, with(gy, [](Kind& k) { k.cluster = 2; }));
  run_case("Y cluster 8", qx, with(gy, [](Kind& k) { k.cluster = 8; }));
  run_case("Y no trigger", qx, with(gy, [](Kind& k) { k.trigger = 0; }));
  run_case("Y trigger before wait", qx, with(gy, [](Kind& k) { k.trigger = 2; }));
  run_case("X no trigger", with(qx, [](Kind& k) { k.trigger = 0; }), gy);
  run_case("X trigger before wait", with(qx, [](Kind& k) { k.trigger = 2; }), gy);
  run_case("X no stores", with(qx, [](Kind& k) { k.store_words = 0; }), gy);
  run_case("X 64 KB stores per CTA", with(qx, [](Kind& k) { k.store_words = 16384; }), gy);
  run_case("X spin 3000", with(qx, [](Kind& k) { k.spin_ns = 3000; }), gy);
  run_case("X grid 264, smem 100K", with(qx, [](Kind& k) { k.grid = 264; k.smem = 100 * 1024; }), gy);
  // The timeline tool's atomics, then path splitk's weight copies before / after the wait.
  const Kind qa = with(qx, [](Kind& k) { k.atomic = 1; });
  const Kind ga = with(gy, [](Kind& k) { k.atomic = 1; });
  run_case("both atomic", qa, ga);
  run_case("atomic, Y loads 28K before", qa, with(ga, [](Kind& k) { k.load_bytes = 28 * 1024; }));
  run_case("atomic, Y loads 28K after", qa, with(ga, [](Kind& k) { k.load_bytes = 28 * 1024; k.load_before = 0; }));
  run_case("Y loads 28K before", qx, with(gy, [](Kind& k) { k.load_bytes = 28 * 1024; }));
  run_case("Y loads 96K before", qx, with(gy, [](Kind& k) { k.load_bytes = 96 * 1024; }));
  run_case("Y loads 96K after", qx, with(gy, [](Kind& k) { k.load_bytes = 96 * 1024; k.load_before = 0; }));
  run_case("Y loads 96K before, X spin 3000", with(qx, [](Kind& k) { k.spin_ns = 3000; }),
           with(gy, [](Kind& k) { k.load_bytes = 96 * 1024; }));
  const Kind y28 = with(gy, [](Kind& k) { k.load_bytes = 28 * 1024; });
  const Kind x3 = with(qx, [](Kind& k) { k.spin_ns = 3000; });
  const Kind x6 = with(qx, [](Kind& k) { k.spin_ns = 6000; });
  run_case("Y 28K before, X spin 3000", x3, y28);
  run_case("Y 28K before, X spin 6000", x6, y28);
  run_case("Y 28K done before wait", qx, with(y28, [](Kind& k) { k.load_before = 2; }));
  run_case("Y 28K done before, X 3000", x3, with(y28, [](Kind& k) { k.load_before = 2; }));
  run_case("Y 28K waiter warp", qx, with(y28, [](Kind& k) { k.load_before = 3; }));
  run_case("Y 28K waiter warp, X 3000", x3, with(y28, [](Kind& k) { k.load_before = 3; }));
  run_case("Y 28K before, L2", qx, with(y28, [](Kind& k) { k.small = 1; }));
  run_case("Y 28K before, L2, X 3000", x3, with(y28, [](Kind& k) { k.small = 1; }));
  run_case("Y 4K before", qx, with(gy, [](Kind& k) { k.load_bytes = 4096; }));
  run_case("Y 4K before, X 3000", x3, with(gy, [](Kind& k) { k.load_bytes = 4096; }));
  // X and Y as two kernel functions (the real quantizer and GEMM are), Y with 1 KiB more
  // parameters.
  run_case("Y second function", qx, with(gy, [](Kind& k) { k.fn = 1; }));
  run_case("Y second fn, 1K params", qx, with(gy, [](Kind& k) { k.fn = 2; }));
  run_case("Y second fn, X 3000", x3, with(gy, [](Kind& k) { k.fn = 1; }));
  run_case("Y 2nd fn, 28K before", qx, with(y28, [](Kind& k) { k.fn = 1; }));
  run_case("Y 2nd fn, 28K before, X 3000", x3, with(y28, [](Kind& k) { k.fn = 1; }));
  run_case("X loads 4K after", with(qx, [](Kind& k) { k.load_bytes = 4096; k.load_before = 0; k.smem = 4096; }), gy);
  return 0;
}
