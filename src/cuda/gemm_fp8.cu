// Launcher of path "fp8"'s GEMM kernel (gemm_fp8_kernel.cuh: the kernel, its design and its
// shared-memory plan): grid and cluster shape per configuration, and the list of
// instantiations (gemm_fp8).
#include <algorithm>
#include <atomic>

#include "cuda/fp8_kernels.hpp"
#include "cuda/gemm_fp8_kernel.cuh"

namespace mxfp4::cuda {
namespace {

/// Launches the GEMM: where the grid covers every tile with one CTA (PAIR: cluster) each, no
/// split-K, and kMayFix, the instantiation that fixes its own tiles (FIX, gemm_fp8_exact.cuh),
/// else the plain one. Returns whether it was FIX (else the caller launches fp8_fixup_kernel).
/// Split-K stays with the separate fix-up: its FIX form (session 44) lost 0.13-0.19 us at
/// 128x2112x7168 on an H100 (session 45; a guess at why: the plain kernel's early PDL signal lets the
/// next kernel start on the SMs the split grid leaves idle).
template <int BM, int BN, int WN, bool PAIR, bool kMayFix = true>
bool launch(const Fp8Params& p, int sm_count, cudaStream_t stream) {
  using P = Plan<BM, BN, WN>;
  constexpr int kCtas = PAIR ? 2 : 1;
  const auto plain = gemm_fp8_kernel<BM, BN, WN, PAIR, false>;
  // Same limit for every shape of an instantiation; a device attribute, legal during capture.
  check(cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, P::kBytes),
        "cudaFuncSetAttribute(gemm_fp8_kernel)");
  const int64_t tiles = int64_t(p.m_tiles) * p.n_tiles;
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(P::kThreads);
  cfg.dynamicSmemBytes = P::kBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;  // PDL after the A image kernel
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  const int ctas = PAIR ? 2 : p.split;  // CTAs per cluster
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = unsigned(ctas);
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = ctas > 1 ? 2 : 1;
  bool one_tile = false;
  if (p.split > 1) {  // split-K: one cluster per tile, as many waves as it takes
    cfg.gridDim = dim3(unsigned(tiles * p.split));
  } else {
    // Persistent: as many clusters as can be resident at once (pairs need two SMs of one GPC,
    // so fewer than sm_count / 2 may fit); the device's answer is cached per instantiation.
    int resident = std::max(1, sm_count / kCtas);
    if constexpr (PAIR) {
      static std::atomic<int> cached{0};
      if (cached.load() == 0) {
        int n = 0;
        cfg.gridDim = dim3(unsigned(resident * kCtas));
        check(cudaOccupancyMaxActiveClusters(&n, plain, &cfg), "cudaOccupancyMaxActiveClusters(gemm_fp8_kernel)");
        cached.store(std::max(1, n));
      }
      resident = std::min(resident, cached.load());
    }
    const int64_t clusters = std::min<int64_t>(tiles, resident);
    cfg.gridDim = dim3(unsigned(clusters * kCtas));
    one_tile = clusters == tiles;
  }
  if constexpr (kMayFix) {
    if (one_tile) {
      const auto fix = gemm_fp8_kernel<BM, BN, WN, PAIR, true>;
      check(cudaFuncSetAttribute(fix, cudaFuncAttributeMaxDynamicSharedMemorySize, P::kBytes),
            "cudaFuncSetAttribute(gemm_fp8_kernel)");
      check(cudaLaunchKernelEx(&cfg, fix, p), "cudaLaunchKernelEx(gemm_fp8_kernel)");
      return true;
    }
  }
  check(cudaLaunchKernelEx(&cfg, plain, p), "cudaLaunchKernelEx(gemm_fp8_kernel)");
  return false;
}

}  // namespace

void gemm_fp8(const uint16_t* A, int64_t lda, ScaleRule rule, const uint8_t* a_img, int64_t M, int64_t K,
              const PackedWeights& B, void* C, bool c_f32, int64_t ldc, const GemmConfig& cfg, int sm_count,
              cudaStream_t stream) {
  const fp8::ImageGeometry ga = fp8::ImageGeometry::of(M, K), gb = fp8::ImageGeometry::of(B.N, K);
  Fp8Params p{};
  p.a_img = a_img;
  p.b_img = B.fp8;
  p.M = M;
  p.N = B.N;
  p.a_rows = ga.rows_padded;
  p.b_rows = gb.rows_padded;
  p.slices = int(ga.slices);
  const int64_t m_tiles = ceil_div(M, cfg.block_m), n_tiles = ceil_div(B.N, cfg.block_n);
  if (m_tiles * n_tiles * cfg.split_k > int64_t(INT32_MAX))
    throw InvalidArgument("path fp8: M = " + std::to_string(M) + ", N = " + std::to_string(B.N) +
                          " need more than 2^31 - 1 CTAs (tiles of " + std::to_string(cfg.block_m) + " x " +
                          std::to_string(cfg.block_n) + ", split_k " + std::to_string(cfg.split_k) + ")");
  p.m_tiles = int(m_tiles);
  p.n_tiles = int(n_tiles);
  p.C = C;
  p.ldc = ldc;
  p.c_f32 = c_f32;
  const int elem = c_f32 ? 4 : 2;
  p.vec_store = ldc % 2 == 0 && reinterpret_cast<uintptr_t>(C) % (2 * elem) == 0;
  p.row16_store = !c_f32 && ldc % 8 == 0 && reinterpret_cast<uintptr_t>(C) % 16 == 0;
  p.split = cfg.split_k;
  p.A = A;
  p.lda = lda;
  p.K = K;
  p.rule = rule;
  p.b_packed = B.data;
  // The explicit list of instantiations (gemm_config_problem admits exactly these configs):
  // warps = 4 x (consumer warpgroups + 1); 20 warps on 128 x 128 and 12 on 64 x 128 select the
  // 64 x 64 consumer warpgroups.
  const int bm = cfg.block_m, bn = cfg.block_n, w = cfg.warps;
  bool fixed = false;
  if (bm == 256) {
    fixed = launch<128, 128, 128, true>(p, sm_count, stream);  // a 2-CTA cluster of 128 x 128 tiles sharing B
  } else if (bm == 192) {
    // three 64 x 128 consumer warpgroups (16 warps); no FIX instantiation (its 152-register
    // consumers spilled with the fix-up compiled in): always the separate fix-up kernel
    fixed = launch<192, 128, 128, false, false>(p, sm_count, stream);
  } else if (bm == 128 && bn == 128) {
    fixed = w == 20 ? launch<128, 128, 64, false>(p, sm_count, stream) : launch<128, 128, 128, false>(p, sm_count, stream);
  } else if (bm == 64 && bn == 128) {
    fixed = w == 12 ? launch<64, 128, 64, false>(p, sm_count, stream) : launch<64, 128, 128, false>(p, sm_count, stream);
  } else if (bm == 128) {
    fixed = launch<128, 64, 64, false>(p, sm_count, stream);
  } else {
    fixed = launch<64, 64, 64, false>(p, sm_count, stream);
  }
  if (!fixed)  // several tiles per CTA, split-K or 192 x 128: the separate fix-up (PDL after the GEMM)
    launch_pdl(fp8_fixup_kernel, dim3(kFixupGrid), dim3(kFixupThreads), stream, "cudaLaunchKernelEx(fp8_fixup_kernel)", p);
}

}  // namespace mxfp4::cuda
