#pragma once
// The small-M kernel's (paths "fused" and "splitk") arguments, split-K reduction rule and
// shared-memory plan. Included only by gemm_fused_kernel.cuh (the kernel, whose header comment
// has the design), itself included only by gemm_fused.cu; the anonymous namespace keeps
// everything in that one unit.
#include <cstdint>

#include "cuda/common.cuh"

namespace mxfp4::cuda {
namespace {

constexpr int kG = 4;                    // 64-wide K chunks per stage (K256)
constexpr int kMaxStages = 8;            // ring slots
constexpr int kSmemBudget = 112 * 1024;  // ring + A bytes per CTA: two CTAs per SM
constexpr int kBlockM = 64;              // tokens per CTA (grid.y covers larger M)

struct FusedArgs {
  const uint16_t* A;
  int64_t M, K, lda;
  const uint8_t* packed;
  PackedGeometry geo;
  int64_t N;
  void* C;  // bf16, or fp32 when c_f32
  bool c_f32;
  int64_t ldc;
  ScaleRule rule;
  int split;
  int stages;             // ring slots in use (1..kMaxStages)
  int a_chunks;           // path "fused": K chunks of A quantized per batch (a multiple of kG)
  int a_stage_rows;       // path "fused": token rows of A staged in shared memory (0: none)
  const uint32_t* frags;  // path "splitk": A as activation fragments (quantize_fragments layout)
  float* partials;        // path "splitk", split-K through the workspace: [tile][rank][rows][block_n]
  int* counters;          // ... and one arrival counter per tile (null: through clusters)
  int sm_count;           // SMs of the device: the grid through the workspace is spread evenly over them
  int recv_off;           // split-K through a cluster by push (push_reduce): the receive buffer's byte offset
};

/// True when kernel <N8, WS, PREQUANT> reduces split-K through its cluster of `split` CTAs by
/// push (every rank st.async's the rows that other ranks own into their receive buffers; no
/// cluster barrier at the end), false for the bulk copy or pull (two cluster barriers around
/// remote loads) or no cluster. The one rule for the launcher (receive buffer) and the kernel.
/// Push only in the 8/16-token cluster kernels (N8 <= 2, not WS): path fused at split >= 4,
/// path splitk at split 8. Session 10 measured both on every cluster shape: push won 0.07-0.16
/// us at split 4 and 8 (4x2880x512 4.50 -> 4.34 us) and lost 0.1-0.6 us at split 2 (32x4096x512
/// 5.61 -> 6.19); with the push code compiled in, the wgmma kernels' (N8 >= 4, mostly split 2)
/// pull calls ran 0.06-0.15 us slower, so they do not carry it (docs/perf-notes.md). Path
/// "splitk" (PREQUANT) has the bulk-copy reduction besides: session 42 measured it against
/// push, and push won only at split 8 (by 0.15-0.36 us; the bulk copy won split 4 by up to
/// 0.34, 16x7168x4096), so there push starts at 8.
template <int N8, bool WS, bool PREQUANT>
__host__ __device__ constexpr bool push_reduce(int split) {
  return N8 <= 2 && !WS && split >= (PREQUANT ? 8 : 4);
}

/// Shared-memory layout for a CTA of SLABS slabs and N8 token tiles: mbarriers, a ring of
/// `stages` slots (weights, plus A's fragments on path "splitk"), path "fused"'s A buffer; the
/// split-K reduction tile reuses the ring after the K loop.
template <int N8, int SLABS, bool PREQUANT>
struct Ring {
  static constexpr int kCodes = SLABS * kG * 512;       // [slab][chunk][512]
  static constexpr int kScales = SLABS * kG * 32;       // [slab][chunk][32]
  static constexpr int kFrags = N8 * kG * 4 * 256;      // [tile][K16 step][64 u32]
  static constexpr int kSlot = kCodes + kScales + (PREQUANT ? kFrags : 0);
  static constexpr int kRedPitch = 16 * SLABS + 4;      // floats per token row of the tile
  static constexpr int kRed = 8 * N8 * kRedPitch * 4;   // [8*N8 tokens][kRedPitch] fp32
  static constexpr int kHeader = 128;                   // mbarriers: kMaxStages slots, A's, the push's
  static_assert((kMaxStages + 2) * 8 <= kHeader, "the mbarriers overlap the ring");
  // Push reduction's receive buffer: one slot of ceil(rows / split) token rows of kRedPitch
  // floats per source rank, split * ceil(rows / split) <= 8 * N8 + 7 rows in all.
  static constexpr int kRecv = (8 * N8 + 8) * kRedPitch * 4;
  __host__ __device__ static int abuf_bytes(int a_chunks) { return PREQUANT ? 0 : N8 * a_chunks * 1024; }
  static int astage_bytes(int a_chunks, int rows) { return PREQUANT ? 0 : rows * a_chunks * 128; }
  static int bytes(int stages, int a_chunks, int stage_rows) {
    const int ring = stages * kSlot + abuf_bytes(a_chunks) + astage_bytes(a_chunks, stage_rows);
    return kHeader + (ring > kRed ? ring : kRed);
  }
};

}  // namespace
}  // namespace mxfp4::cuda
