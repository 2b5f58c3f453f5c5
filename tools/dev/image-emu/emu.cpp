// CPU emulation of the FP8 image kernels of src/cuda/fp8_image.cu (a measurement-free check for
// machines without a GPU; written in session 21's review). run.sh copies the kernels' source
// verbatim into kernels.inc and compiles it here as host code: each CUDA thread of a CTA runs
// as a fiber (fibers.S switches stacks), and every __shfl_sync, __reduce_or_sync, __any_sync
// and __syncthreads is a real barrier over its participants, so a divergent or missing sync is
// reported (or deadlocks, reported too). bf16x2 arithmetic and prmt use the library's host
// models (src/core/qdq_bf16x2.hpp). For each shape: random A (per-block exponents in [-7, 7],
// rows of steady magnitude so chains continue, NaN, -Inf, zero and 2^-60 blocks), lda = K and
// K + 3 (unaligned loads), all three scale rules; every kernel kind writes into a poisoned buffer
// with guard bytes and is compared byte for byte with fp8::build_image of the CPU-quantized
// matrix; the weights' source (prepacked) likewise. Not modelled: data races, memory order,
// PDL. `launch` below mirrors launch_image's kernel choice: keep it in step with it.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>
#include <map>
#include <cmath>
#include <limits>
#include <array>

#include "mxfp4/format.hpp"
#include "mxfp4/mxfp4.hpp"
#include "core/fp8_layout.hpp"
#include "core/packed_layout.hpp"
#include "cpu/fp8_plan.hpp"

struct uint2 { uint32_t x, y; };
struct uint4 { uint32_t x, y, z, w; };
inline uint2 make_uint2(uint32_t a, uint32_t b) { return {a, b}; }
inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return {a, b, c, d}; }
struct Idx { unsigned x = 0, y = 0, z = 0; };
Idx threadIdx, blockIdx, blockDim;

// ---- fibers ----
extern "C" void fast_swap(void** save_sp, void* load_sp);
struct Fiber { void* sp = nullptr; std::vector<char> stack; bool done = false; unsigned tid = 0; };
static void* sched_sp = nullptr;
static std::vector<Fiber>* fibers = nullptr;
static int cur = -1;
static bool progress = false;
static void yield_() { fast_swap(&(*fibers)[cur].sp, sched_sp); threadIdx.x = (*fibers)[cur].tid; }
struct Bar { int n = 0, count = 0; long gen = 0; int line = -1; const char* what = ""; };
static Bar warpbar[32], ctabar;
static long total_errors = 0;
static void bar_wait(Bar& b, int line) {
  const long g = b.gen;
  progress = true;
  if (b.count == 0) b.line = line;
  else if (b.line != line) { if (total_errors++ < 20) fprintf(stderr, "DIVERGENT SYNC: lines %d vs %d (tid %u, block %u,%u)\n", b.line, line, threadIdx.x, blockIdx.x, blockIdx.y); }
  if (++b.count == b.n) { b.count = 0; b.gen++; return; }
  while (b.gen == g) yield_();
}
static uint32_t slots[1024];
static uint32_t exchange(uint32_t v, int line, const std::function<int(int)>& src_of) {
  const unsigned t = threadIdx.x, w = t / 32, lane = t % 32;
  slots[t] = v;
  bar_wait(warpbar[w], line);
  const uint32_t r = slots[w * 32 + src_of(lane)];
  bar_wait(warpbar[w], line);
  return r;
}
static void check_mask(unsigned mask) { if (mask != 0xFFFFFFFFu) { fprintf(stderr, "mask %x\n", mask); total_errors++; } }
template <class T> T __shfl_sync(unsigned mask, T v, int src, int width = 32, int line = __builtin_LINE()) {
  check_mask(mask);
  return T(exchange(uint32_t(v), line, [&](int lane) { return (lane / width) * width + (src % width); }));
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32, int line = __builtin_LINE()) {
  check_mask(mask);
  return T(exchange(uint32_t(v), line, [&](int lane) { int s = lane ^ m; return (s / width == lane / width) ? s : lane; }));
}
static uint32_t __reduce_or_sync(unsigned mask, uint32_t v, int line = __builtin_LINE()) {
  check_mask(mask);
  uint32_t r = 0;
  for (int l = 0; l < 32; ++l) r |= exchange(v, line, [&](int) { return l; });
  return r;
}
static int __any_sync(unsigned mask, int pred, int line = __builtin_LINE()) { return __reduce_or_sync(mask, pred != 0, line) != 0; }
static void __syncthreads_(int line) { bar_wait(ctabar, line); }
#define __syncthreads() __syncthreads_(__LINE__)
static uint4 __ldg(const uint4* p) { uint4 u; memcpy(&u, p, 16); return u; }

static std::function<void()> body;
static void fiber_entry() { body(); (*fibers)[cur].done = true; progress = true; fast_swap(&(*fibers)[cur].sp, sched_sp); abort(); }
static void run_cta(unsigned nthreads, const std::function<void()>& fn) {
  static std::vector<Fiber> fs(1024);
  for (auto& f : fs) if (f.stack.empty()) f.stack.resize(256 * 1024);
  fibers = &fs;
  body = fn;
  blockDim.x = nthreads;
  for (unsigned w = 0; w < 32; ++w) warpbar[w] = Bar{32};
  ctabar = Bar{int(nthreads)};
  for (unsigned t = 0; t < nthreads; ++t) {
    Fiber& f = fs[t];
    f.done = false, f.tid = t;
    // initial frame: [mxcsr/fcw pad][r15 r14 r13 r12 rbx rbp][ret = fiber_entry][align pad]
    uintptr_t top = (uintptr_t(f.stack.data() + f.stack.size()) & ~uintptr_t(15));
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                       // fake return address slot for alignment of fiber_entry frame
    *--sp = reinterpret_cast<void*>(&fiber_entry);
    for (int k = 0; k < 6; ++k) *--sp = nullptr;
    --sp;
    uint32_t csr[2]; __asm__ volatile("stmxcsr %0" : "=m"(csr[0])); __asm__ volatile("fnstcw %0" : "=m"(csr[1]));
    memcpy(sp, csr, 8);
    f.sp = sp;
  }
  unsigned live = nthreads;
  while (live > 0) {
    progress = false;
    for (unsigned t = 0; t < nthreads; ++t) {
      if (fs[t].done) continue;
      cur = int(t);
      threadIdx.x = t;
      fast_swap(&sched_sp, fs[t].sp);
      if (fs[t].done) --live;
    }
    if (!progress && live > 0) { fprintf(stderr, "DEADLOCK in block %u,%u (%u live)\n", blockIdx.x, blockIdx.y, live); total_errors++; exit(2); }
  }
}

// ---- device shims ----
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(x)
#define __shared__ static

namespace mxfp4::cuda {
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline uint32_t max(uint32_t a, uint32_t b) { return a > b ? a : b; }
inline uint32_t max_u16x2(uint32_t a, uint32_t b) {
  return std::max(a & 0xFFFFu, b & 0xFFFFu) | (std::max(a >> 16, b >> 16) << 16);
}
inline void grid_dependency_wait() {}
inline void grid_dependents_launch() {}
using PackedGeometry = packed::Geometry;
enum class ImageKernel { automatic, per_slice, per_chunk, per_window, per_two_slices };
namespace {
#include "kernels.inc"
}

template <class Source>
void launch(const Source& src, int64_t rows, int64_t K, uint8_t* out, ImageKernel kernel, int only_tiles_mask_from) {
  const fp8::ImageGeometry g = fp8::ImageGeometry::of(rows, K);
  const int64_t tiles = g.rows_padded / kImageRows, chunks = (g.slices + fp8::kChainSlices - 1) / fp8::kChainSlices;
  auto grid = [&](int64_t gy, unsigned nthreads, auto fn) {
    for (int64_t y = 0; y < gy; ++y)
      for (int64_t x = 0; x < tiles; ++x) {
        blockIdx.x = unsigned(x), blockIdx.y = unsigned(y);
        run_cta(nthreads, fn);
      }
  };
  (void)only_tiles_mask_from;
  if (kernel == ImageKernel::per_window)
    grid(kSerialW == fp8::kChainSlices ? chunks : (g.slices + kSerialW - 1) / kSerialW, kSerialThreads,
         [&] { fp8_image_serial_kernel<Source, kSerialW>(src, rows, K, out); });
  else if (kernel == ImageKernel::per_two_slices)
    grid((g.slices + 1) / 2, kSerialThreads, [&] { fp8_image_serial_kernel<Source, 2>(src, rows, K, out); });
  else if (kernel == ImageKernel::per_chunk)
    grid(chunks, kChunkThreads, [&] { fp8_image_chunk_kernel<Source>(src, rows, K, out); });
  else
    grid(g.slices, kSerialThreads, [&] { fp8_image_serial_kernel<Source, 1>(src, rows, K, out); });
}
}  // namespace mxfp4::cuda

using namespace mxfp4;

static uint16_t rand_bf16(std::mt19937_64& rng, int mode) {
  // mostly normal values with per-block exponent variation, sometimes zeros / tiny / special
  std::normal_distribution<float> nd(0.f, 1.f);
  float x = nd(rng);
  return fmt::f32_to_bf16(x);
}

static const char* kname(cuda::ImageKernel k) {
  switch (k) { case cuda::ImageKernel::per_slice: return "per_slice"; case cuda::ImageKernel::per_chunk: return "per_chunk";
    case cuda::ImageKernel::per_window: return "window"; case cuda::ImageKernel::per_two_slices: return "serial2"; default: return "?"; }
}

static std::string where(const fp8::ImageGeometry& g, int64_t i) {
  char b[160];
  if (i < g.meta_offset()) snprintf(b, sizeof b, "codes");
  else if (i < g.flag_offset()) {
    const int64_t o = i - g.meta_offset(), blk = o / fp8::kMetaBlockBytes, at = o % fp8::kMetaBlockBytes, atoms = g.rows_padded / 64;
    const char* what = at < fp8::kMetaExponents ? "scale" : at < fp8::kMetaRecord ? "exponent" : "record";
    snprintf(b, sizeof b, "%s j=%lld atom=%lld byte %lld", what, (long long)(blk / atoms), (long long)(blk % atoms), (long long)at);
  }
  else snprintf(b, sizeof b, "flag");
  return b;
}

static long compare(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu, const fp8::ImageGeometry& g, const char* tag) {
  long bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (cpu[i] != gpu[i] && bad++ < 5) fprintf(stderr, "%s: byte %zu (%s) cpu %02x gpu %02x\n", tag, i, where(g, int64_t(i)).c_str(), cpu[i], gpu[i]);
  return bad;
}

int main(int argc, char** argv) {
  const cuda::ImageKernel kernels[] = {cuda::ImageKernel::per_slice, cuda::ImageKernel::per_chunk, cuda::ImageKernel::per_window, cuda::ImageKernel::per_two_slices};
  std::vector<std::pair<int64_t,int64_t>> shapes;
  for (int i = 1; i + 1 < argc; i += 2) shapes.push_back({atoll(argv[i]), atoll(argv[i + 1])});
  long fails = 0;
  for (auto [M, K] : shapes) {
    std::mt19937_64 rng(1234 + M * 7919 + K);
    const int64_t lda_list[2] = {K, K + 3};
    const fp8::ImageGeometry g = fp8::ImageGeometry::of(M, K);
    for (int li = 0; li < 2; ++li) {
      const int64_t lda = lda_list[li];
      // A with per-block exponents in [-7, 7] (narrow/wide/breaks), a few special rows
      std::vector<uint16_t> A(size_t((M - 1) * lda + K) + 8, 0);
      std::uniform_int_distribution<int> ed(-7, 7);
      for (int64_t r = 0; r < M; ++r)
        for (int64_t b = 0; b < K / 32; ++b) {
          const bool steady = (r / 16) % 2 == 0;
          int mode = int(rng() % 16);
          int e = (r % 3 == 0) ? 0 : ed(rng);
          if (steady) { mode = 8; e = int(rng() % 2); if (((b / 4) % 5) == 3 && r % 16 == 5) e = 6; }
          for (int64_t k = 32 * b; k < 32 * b + 32; ++k) {
            float x = std::ldexp(fmt::bf16_to_f32(rand_bf16(rng, 0)), e);
            if (mode == 0) x = 0.f;
            A[size_t(r * lda + k)] = fmt::f32_to_bf16(x);
          }
          if (mode == 1) A[size_t(r * lda + 32 * b + rng() % 32)] = 0x7FC0;  // NaN
          if (mode == 2) A[size_t(r * lda + 32 * b + rng() % 32)] = 0xFF80;  // -Inf
          if (mode == 3) for (int64_t k = 32 * b; k < 32 * b + 32; ++k) A[size_t(r * lda + k)] = fmt::f32_to_bf16(std::ldexp(1.f, -60));
        }
      // rows of constant magnitude (chains): rows with r % 3 == 0 already have e = 0 everywhere.
      // Rules: aiter with the unaligned stride; floor (even M) or rceil (odd M) with the aligned one.
      for (ScaleRule rule : {li == 1 ? ScaleRule::aiter : M % 2 ? ScaleRule::rceil : ScaleRule::floor}) {
        std::vector<uint8_t> codes(size_t(M * K / 2)), scales(size_t(M * K / 32));
        quantize(A.data(), DType::bf16, M, K, lda, codes.data(), scales.data(), rule, Exec{Backend::cpu, nullptr, 1});
        std::vector<uint8_t> cpu(size_t(g.total_bytes()));
        fp8::build_image(MxMatrix{codes.data(), scales.data(), M, K}, cpu.data());
        { long brk0 = 0, brk1 = 0; for (int64_t j = 0; j < g.slices; ++j) for (int64_t t = 0; t < g.rows_padded / 64; ++t) for (int q = 0; q < 4; ++q) { if (cpu[size_t(g.record_at(t, j) + 4 + q)]) ++brk1; else ++brk0; }
          if (getenv("STATS")) fprintf(stderr, "M=%lld K=%lld: quarters continuing %ld, breaking %ld\n", (long long)M, (long long)K, brk0, brk1); }
        for (auto kern : kernels) {
          for (uint8_t poison : {uint8_t(0xA5)}) {
            std::vector<uint8_t> gpu(cpu.size() + 64, poison);
            if (rule == ScaleRule::floor)
              cuda::launch(cuda::Bf16Source<ScaleRule::floor>{A.data(), M, K, lda}, M, K, gpu.data() + 32, kern, 0);
            else if (rule == ScaleRule::rceil)
              cuda::launch(cuda::Bf16Source<ScaleRule::rceil>{A.data(), M, K, lda}, M, K, gpu.data() + 32, kern, 0);
            else
              cuda::launch(cuda::Bf16Source<ScaleRule::aiter>{A.data(), M, K, lda}, M, K, gpu.data() + 32, kern, 0);
            for (int i = 0; i < 32; ++i) if (gpu[size_t(i)] != poison || gpu[gpu.size() - 1 - size_t(i)] != poison) { fprintf(stderr, "OOB write\n"); ++fails; break; }
            std::vector<uint8_t> img(gpu.begin() + 32, gpu.end() - 32);
            char tag[128];
            snprintf(tag, sizeof tag, "bf16 M=%lld K=%lld lda=%lld rule=%d %s", (long long)M, (long long)K, (long long)lda, int(rule), kname(kern));
            const long bad = compare(cpu, img, g, tag);
            if (bad) { ++fails; fprintf(stderr, "%s: %ld bad bytes\n", tag, bad); }
          }
        }
        if (li == 0) {  // weights from the same quantized matrix
          std::vector<uint8_t> packed(size_t(packed_bytes(M, K)));
          const PackedWeights pw = prepack(MxMatrix{codes.data(), scales.data(), M, K}, packed.data(), Exec{Backend::cpu, nullptr, 1});
          for (auto kern : kernels) {
            std::vector<uint8_t> gpu(cpu.size() + 64, 0xA5);
            cuda::launch(cuda::PackedSource{pw.data, M, K}, M, K, gpu.data() + 32, kern, 0);
            std::vector<uint8_t> img(gpu.begin() + 32, gpu.end() - 32);
            char tag[128];
            snprintf(tag, sizeof tag, "packed N=%lld K=%lld %s", (long long)M, (long long)K, kname(kern));
            const long bad = compare(cpu, img, g, tag);
            if (bad) { ++fails; fprintf(stderr, "%s: %ld bad bytes\n", tag, bad); }
          }
        }
      }
    }
    fprintf(stderr, "M=%lld K=%lld done (fails so far %ld, sync errors %ld)\n", (long long)M, (long long)K, fails, total_errors);
  }
  printf("fails %ld sync errors %ld\n", fails, total_errors);
  return fails || total_errors;
}
