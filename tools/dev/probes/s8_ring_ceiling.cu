// The ceiling of path fp8's 128 x 128 tile on Hopper (a measurement aid, not built by CMake;
// docs/perf-notes.md, session 24): how fast two consumer warpgroups can run s8 wgmma
// m64n128k32 (both operands in shared memory, four k32 steps per 128-K slice, one group per
// slice, the next slice issued before the previous one is waited for, as gemm_fp8_kernel
// does) with none, some or all of the kernel's stage ring around them. One CTA per SM (132),
// 384 threads: warpgroups 0-1 consume, warpgroup 2 produces (lane 0 of its warps). Modes:
//   0 mma:       consumers only, on 6 resident stages (no producer, no barriers);
//   1 mma+copy:  as 0, while the producer streams 32 KB per slice (A and B atoms, bulk copies
//                from an L2-resident source) into the same stages, free-running (its own
//                mbarriers only): the shared-memory and L2 traffic without the handshake;
//   2 ring:      the full/empty handshake of the kernel (consumers wait for a stage, release
//                the previous one after wait_group 1; the producer waits for a free slot),
//                two copies (A, B atoms) per stage by two producer threads;
//   3 ring+meta3: as 2 with the metadata copies of image layout 3 too (per stage and operand:
//                scales 512 B, exponent words 512 B, records 32 B; 8 copies by four threads);
//   4 ring+meta1: the same bytes as one 1056-byte copy per operand (a metadata block per
//                (slice, atom): 4 copies by four threads);
//   5 ring+meta1/2t: as 4 by two threads (each its operand's atoms and metadata);
//   6 ring+padded: one copy per operand of its atoms and metadata, contiguous (a layout that
//                pads each atom's metadata to the next 1024 bytes: 2 copies).
// Compare the printed us per slice with gemm_fp8's ~0.54 (1024x7168x2048, 128 x 128 tiles,
// session 21's timeline) and 2 * 128^3 / (4096 MAC per cycle) = 512 cycles of s8 MMA.
// Usage (GPU machine):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -Isrc tools/dev/probes/s8_ring_ceiling.cu -o /tmp/s8r
//   /tmp/s8r [slices per CTA, default 2000]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/bulk_copy.cuh"
#include "cuda/wgmma.cuh"

using namespace mxfp4::cuda;

constexpr int kStages = 6, kAtoms = 16384, kStage = 36864, kMetaAt = 32768, kMetaBlock = 1056;
constexpr int kThreads = 384;
constexpr int kSmem = 1024 + kStages * kStage + 2 * kStages * 8;
constexpr int64_t kARegion = 2 << 20, kBRegion = 14 << 20, kMetaRegion = 1 << 20;

struct Src {
  const uint8_t* a;
  const uint8_t* b;
  const uint8_t* meta;
};

/// Producer threads per mode (lane 0 of producer warps 0 .. n-1).
__host__ __device__ constexpr int producers(int mode) { return mode == 1 ? 1 : mode == 2 || mode >= 5 ? 2 : 4; }
/// Where B's atoms start in a stage (mode 6: after A's atoms and metadata, 1024-aligned).
__host__ __device__ constexpr int b_at(int mode) { return mode == 6 ? 18432 : kAtoms; }

template <int MODE>
__global__ void __launch_bounds__(kThreads, 1) ceiling(Src src, int slices, long long* cycles) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* tiles = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  uint64_t* full = reinterpret_cast<uint64_t*>(tiles + kStages * kStage);
  uint64_t* empty = full + kStages;
  const int wg = int(threadIdx.x) / 128;
  constexpr int kProducers = producers(MODE);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], kProducers);
      mbarrier_init(&empty[s], 256);
    }
    fence_mbarrier_init();
  }
  // Resident stages hold data (modes 0 and 1 never copy into them before they start).
  for (int i = int(threadIdx.x); i < kStages * kStage / 4; i += kThreads)
    reinterpret_cast<uint32_t*>(tiles)[i] = 0x01020304u * uint32_t(i * 2654435761u >> 28);
  __syncthreads();
  const int c = int(blockIdx.x);
  if (wg == 2) {
    if (MODE == 0 || threadIdx.x % 32 != 0) return;
    const int part = (int(threadIdx.x) - 256) / 32;
    if (part >= kProducers) return;
    for (int it = 0; it < slices; ++it) {
      const int s = it % kStages;
      uint8_t* st = tiles + s * kStage;
      const int64_t ja = (c % 8 * 16 + it) % (kARegion / kAtoms), jb = (c / 8 * 16 + it) % (kBRegion / kAtoms);
      const uint8_t* ma = src.meta + (ja * 1056) % (kMetaRegion - 4096);
      const uint8_t* mb = src.meta + (jb * 1056) % (kMetaRegion - 4096);
      if (MODE == 1) {  // free-running: wait for this slot's own previous copies
        if (it >= kStages) mbarrier_wait(&full[s], uint32_t(it / kStages - 1) & 1u);
        mbarrier_arrive_expect_tx(&full[s], 2 * kAtoms);
        bulk_copy_g2s(st, src.a + ja * kAtoms, kAtoms, &full[s]);
        bulk_copy_g2s(st + kAtoms, src.b + jb * kAtoms, kAtoms, &full[s]);
        continue;
      }
      if (it >= kStages) mbarrier_wait(&empty[s], uint32_t(it / kStages - 1) & 1u);
      // Parts as in gemm_fp8_kernel: with 4 threads B atoms, B metadata, A atoms, A metadata;
      // with 2 (modes 2, 5, 6) B, A.
      const bool is_b = kProducers == 2 ? part == 0 : part < 2;
      const bool atoms = kProducers == 2 || part % 2 == 0, meta = MODE == 5 || (kProducers == 4 && part % 2 == 1);
      uint32_t bytes = (atoms ? kAtoms : 0) + (meta ? (MODE == 3 ? 1056 : kMetaBlock) : 0);
      if (MODE == 6) bytes = kAtoms + kMetaBlock;
      mbarrier_arrive_expect_tx(&full[s], bytes);
      if (MODE == 6) {  // one copy: atoms and their metadata contiguous (a padded image layout)
        bulk_copy_g2s(st + (is_b ? b_at(MODE) : 0), is_b ? src.b + jb * kAtoms : src.a + ja * kAtoms, bytes, &full[s]);
        continue;
      }
      if (atoms)
        bulk_copy_g2s(st + (is_b ? kAtoms : 0), (is_b ? src.b + jb * kAtoms : src.a + ja * kAtoms), kAtoms, &full[s]);
      if (meta) {
        uint8_t* m = st + kMetaAt + (is_b ? 2048 : 0);
        const uint8_t* g = is_b ? mb : ma;
        if (MODE == 3) {  // scales, exponent words, records: three copies (the layout of version 3)
          bulk_copy_g2s(m, g, 512, &full[s]);
          bulk_copy_g2s(m + 512, g + 512, 512, &full[s]);
          bulk_copy_g2s(m + 1024, g + 1024, 32, &full[s]);
        } else {  // one block per operand (two 528-byte atom blocks)
          bulk_copy_g2s(m, g, kMetaBlock, &full[s]);
        }
      }
    }
    return;
  }
  // Consumers: warpgroup wg holds tokens wg * 64 .. +63 of the 128 x 128 tile, all 128 columns.
  uint32_t sum0[32], sum1[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) sum0[i] = sum1[i] = 0u;
  const long long t0 = clock64();
  for (int it = 0; it < slices; ++it) {
    const int s = it % kStages;
    if (MODE >= 2) mbarrier_wait(&full[s], uint32_t(it / kStages) & 1u);
    __syncwarp();
    const uint64_t da = smem_desc_sw128(tiles + s * kStage + wg * 8192), db = smem_desc_sw128(tiles + s * kStage + b_at(MODE));
#pragma unroll
    for (int i = 0; i < 32; ++i) fence_operand(sum0[i]), fence_operand(sum1[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_m64n128k32_s8(sum0, sum1, da + 2 * kk, db + 2 * kk, 1);
    wgmma_commit();
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < 32; ++i) fence_operand(sum0[i]), fence_operand(sum1[i]);
    if (MODE >= 2 && it > 0) mbarrier_arrive(&empty[(it - 1) % kStages]);
  }
  wgmma_wait<0>();
  const long long t1 = clock64();
  uint32_t x = 0;
#pragma unroll
  for (int i = 0; i < 32; ++i) x ^= sum0[i] ^ sum1[i];
  if (threadIdx.x == 0) cycles[c] = t1 - t0;
  if (x == 0x12345678u) cycles[gridDim.x] = x;  // keep the sums alive
}

template <int MODE>
void run(const char* name, Src src, int slices, int ctas, long long* d_cycles) {
  auto k = ceiling<MODE>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  k<<<ctas, kThreads, kSmem>>>(src, 50, d_cycles);  // warm-up
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(e0);
    k<<<ctas, kThreads, kSmem>>>(src, slices, d_cycles);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    best = std::min(best, ms);
  }
  std::vector<long long> h(ctas);
  cudaMemcpy(h.data(), d_cycles, ctas * sizeof(long long), cudaMemcpyDeviceToHost);
  std::sort(h.begin(), h.end());
  const double med = double(h[ctas / 2]) / slices;
  printf("%-12s %3d CTAs: %.3f us per slice (kernel, best of 5), consumer %.0f cycles per slice (median CTA; "
         "min %.0f max %.0f), %.0f MAC per cycle per SM, L2->smem %.2f TB/s (%s)\n",
         name, ctas, best * 1e3 / slices, med, double(h[0]) / slices, double(h[ctas - 1]) / slices,
         2.0 * 128 * 128 * 128 / 2 / med * 1.0, MODE == 0 ? 0.0 : double(ctas) * slices * (2 * kAtoms + (MODE >= 3 ? 2 * kMetaBlock : 0)) / (best * 1e-3) / 1e12,
         cudaGetErrorString(cudaGetLastError()));
}

int main(int argc, char** argv) {
  const int slices = argc > 1 ? atoi(argv[1]) : 2000;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint8_t* buf;
  cudaMalloc(&buf, kARegion + kBRegion + kMetaRegion);
  cudaMemset(buf, 0x35, kARegion + kBRegion + kMetaRegion);
  long long* d_cycles;
  cudaMalloc(&d_cycles, (sms + 1) * sizeof(long long));
  const Src src{buf, buf + kARegion, buf + kARegion + kBRegion};
  for (int ctas : {1, sms}) {
    run<0>("mma", src, slices, ctas, d_cycles);
    run<1>("mma+copy", src, slices, ctas, d_cycles);
    run<2>("ring", src, slices, ctas, d_cycles);
    run<3>("ring+meta3", src, slices, ctas, d_cycles);
    run<4>("ring+meta1", src, slices, ctas, d_cycles);
    run<5>("ring+meta1/2t", src, slices, ctas, d_cycles);
    run<6>("ring+padded", src, slices, ctas, d_cycles);
  }
  return 0;
}
