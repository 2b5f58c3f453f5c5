// Launchers of the small-M kernel (gemm_fused_kernel.cuh): shared-memory plan per shape,
// cluster or workspace split-K, programmatic dependent launch, and the explicit, bounded list
// of instantiations.
#include <algorithm>
#include <string>

#include "cuda/common.cuh"
#include "cuda/gemm_fused_kernel.cuh"
#include "cuda/gemm_kernels.hpp"
#include "dispatch/path_name.hpp"

namespace mxfp4::cuda {
namespace {

template <int N8, int SLABS, int KW, bool PREQUANT, bool WS>
void launch_fused(FusedArgs args, cudaStream_t stream) {
  using R = Ring<N8, SLABS, PREQUANT>;
  const bool ws_split = WS && args.split > 1;
  const bool push = push_reduce<N8, WS, PREQUANT>(args.split);  // its receive buffer comes off the ring's budget
  const int budget = kSmemBudget - (push ? R::kRecv : 0);
  const int64_t chunks_per_rank = ceil_div(args.geo.k_chunks, args.split);
  const int nstages = int(ceil_div(chunks_per_rank, kG));
  // Path "fused" quantizes all of the rank's A at once when it fits in half the budget.
  const int all_chunks = nstages * kG;
  args.a_chunks = R::abuf_bytes(all_chunks) <= budget / 2 ? all_chunks : kG;
  // ... and then stages A's raw rows when they fit too and A's rows are 16-byte aligned.
  const int stage_rows = int(std::min<int64_t>(args.M, 8 * N8));
  const bool aligned = reinterpret_cast<uintptr_t>(args.A) % 16 == 0 && args.lda % 8 == 0;
  args.a_stage_rows = !PREQUANT && args.a_chunks == all_chunks && aligned &&
                              R::abuf_bytes(all_chunks) + R::astage_bytes(all_chunks, stage_rows) <= budget / 2
                          ? stage_rows
                          : 0;
  const int fit = (budget - R::abuf_bytes(args.a_chunks) - R::astage_bytes(args.a_chunks, args.a_stage_rows)) / R::kSlot;
  args.stages = std::max(1, std::min({nstages, kMaxStages, fit}));
  int smem = R::bytes(args.stages, args.a_chunks, args.a_stage_rows);
  if (push) args.recv_off = smem, smem += R::kRecv;
  auto kernel = gemm_fused_kernel<N8, SLABS, KW, PREQUANT, WS>;
  // The limit is the instantiation's largest need (stages * slot + A buffer never exceeds the
  // budget), the same for every shape: host threads launching different shapes concurrently
  // can never lower it under another's launch. Per device and cheap; not a stream operation,
  // so also legal during graph capture.
  constexpr int kSmemMax = R::kHeader + (kSmemBudget > R::kRed + R::kRecv ? kSmemBudget : R::kRed + R::kRecv);
  static_assert(kSmemMax <= 227 * 1024, "small-M kernel exceeds the opt-in shared memory of sm_90");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax),
        "cudaFuncSetAttribute(gemm_fused_kernel)");
  if (smem > kSmemMax) throw Error("gemm_fused: shared memory plan of " + std::to_string(smem) + " bytes exceeds its limit");
  const int64_t tiles = ceil_div(args.geo.rows_padded, 16 * SLABS);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles * args.split), unsigned(ceil_div(args.M, kBlockM)));
  cfg.blockDim = dim3(SLABS * KW * 32);
  cfg.dynamicSmemBytes = smem;
  // Without clusters the block scheduler may stack three CTAs on an SM and leave others with
  // one, the more so when they are launched early (PDL) next to quantize_fragments' CTAs:
  // then the whole call waits for the stacked SMs. When the grid needs 2 or 3 CTAs per SM,
  // padding the shared memory so that no more fit spreads it evenly (sm_90: 228 KB of shared
  // memory per SM, 1 KB reserved per CTA; CUDA C++ Programming Guide, compute capability 9.0).
  // At 1 CTA per SM the padding would exceed kSmemMax, and beyond 3 it is not needed for the
  // dispatcher's shapes; neither is padded. Session 9 (call_split, quantizer and GEMM):
  // 16x2112x7168 12.75 -> 11.19 us per call, 8x2112x7168 11.44 -> 10.33.
  if (ws_split && args.sm_count > 0) {
    const int64_t ctas = int64_t(cfg.gridDim.x) * cfg.gridDim.y;
    const int64_t per_sm = ceil_div(ctas, int64_t(args.sm_count));
    const int padded = per_sm <= 3 ? int(228 * 1024 / (per_sm + 1) - 1024 + 256) : 0;
    if (padded > smem && padded <= kSmemMax) cfg.dynamicSmemBytes = padded;
  }
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (args.split > 1 && !ws_split) {  // split-K through a cluster
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(args.split);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  // Programmatic dependent launch: path "splitk" streams its weights while quantize_fragments
  // runs; path "fused" hides its launch behind the previous kernel's tail (common.cuh launch_pdl).
  attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[n].val.programmaticStreamSerializationAllowed = 1;
  ++n;
  cfg.attrs = attr;
  cfg.numAttrs = n;
#if MXFP4_EXP_EXIT_AT_WAIT == 2
  // A measurement only (with the timeline tool's --steady instrumentation, which makes path
  // splitk's CTAs leave right after their entry wait; docs/perf-notes.md plan item s): the same
  // grid with no dynamic shared memory and no cluster, as the PDL probe's synthetic kernels.
  if constexpr (PREQUANT) {
    cfg.dynamicSmemBytes = 0;
    attr[0] = attr[n - 1];  // the PDL attribute only
    cfg.numAttrs = 1;
  }
#endif
  check(cudaLaunchKernelEx(&cfg, kernel, args), "cudaLaunchKernelEx(gemm_fused_kernel)");
}

/// The explicit, bounded list of instantiations: token tiles N8 (1, 2, 4, 8) x (slabs, warps
/// per slab) in {(4,1), (4,2), (4,4), (8,1), (8,2)} x path (fused, splitk): 40 kernels, plus
/// path splitk's split-K through the workspace for N8 = 1 and 2 (splitk_scratch): 10 more.
template <int SLABS, int KW, bool PREQUANT>
void dispatch_n8(const FusedArgs& args, cudaStream_t stream) {
  const bool ws = args.partials != nullptr;  // splitk_scratch: path splitk, M <= 16
  switch (small_m_tile_rows(args.M)) {  // 8 * N8 token rows (the workspace's split-K scratch agrees)
    case 8:
      return ws ? launch_fused<1, SLABS, KW, PREQUANT, PREQUANT>(args, stream)
                : launch_fused<1, SLABS, KW, PREQUANT, false>(args, stream);
    case 16:
      return ws ? launch_fused<2, SLABS, KW, PREQUANT, PREQUANT>(args, stream)
                : launch_fused<2, SLABS, KW, PREQUANT, false>(args, stream);
    case 32: return launch_fused<4, SLABS, KW, PREQUANT, false>(args, stream);
    default: return launch_fused<8, SLABS, KW, PREQUANT, false>(args, stream);
  }
}

template <bool PREQUANT>
void dispatch_fused(const FusedArgs& args, const GemmConfig& cfg, cudaStream_t stream) {
  const int slabs = cfg.block_n / 16, kw = cfg.warps / slabs;
  if (slabs == 8) {
    return kw == 2 ? dispatch_n8<8, 2, PREQUANT>(args, stream) : dispatch_n8<8, 1, PREQUANT>(args, stream);
  }
  if (kw == 4) return dispatch_n8<4, 4, PREQUANT>(args, stream);
  return kw == 2 ? dispatch_n8<4, 2, PREQUANT>(args, stream) : dispatch_n8<4, 1, PREQUANT>(args, stream);
}

}  // namespace

bool splitk_uses_wgmma(int64_t M) { return M > 16; }  // N8 >= 4 (dispatch_n8)

void gemm_fused(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, void* C, bool c_f32,
                int64_t ldc, const GemmConfig& cfg, ScaleRule rule, const uint32_t* frags, float* partials,
                int* counters, int sm_count, cudaStream_t stream) {
  const FusedArgs args{A,     M,    K,     lda,          B.data,
                       PackedGeometry::of(B.N, B.K), B.N, C, c_f32, ldc, rule, cfg.split_k, /*stages=*/1,
                       /*a_chunks=*/kG, /*a_stage_rows=*/0, frags, partials, counters, sm_count,
                       /*recv_off=*/0};
  if (frags != nullptr) {
    dispatch_fused<true>(args, cfg, stream);
  } else {
    dispatch_fused<false>(args, cfg, stream);
  }
}

}  // namespace mxfp4::cuda
