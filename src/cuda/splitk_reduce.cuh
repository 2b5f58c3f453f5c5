#pragma once
// Split-K reductions of the small-M kernel (gemm_fused_kernel.cuh): the S = split ranks of one
// output tile each hold a partial tile `red` in shared memory ([rows][kP] fp32, kQuads quads of
// 4 consecutive outputs per row, complete and visible to the whole CTA when these are called).
// Every variant sums the ranks in rank order 0..S-1 starting from 0.f, so all give the same
// bits (deterministic). Called by every thread of the CTA; `store4(m, nl, v)` writes the 4
// outputs of row m, columns nl..nl+3 of the tile. Included only by gemm_fused_kernel.cuh.

#include <cooperative_groups.h>

#include "cuda/bulk_copy.cuh"

namespace mxfp4::cuda {
namespace {

/// Through the workspace (no cluster): every rank stores its partial tile ([rows][kQuads * 4]
/// fp32 at tile_partials + rank * kTileFloats) and counts itself on the tile's counter; the last
/// to arrive sums all ranks' partials in rank order (its own from shared memory: the same
/// values) and stores C. The count is an acq_rel atomic at GPU scope: it releases the rank's
/// stores before its arrival, and the last rank acquires them all before its loads (L2, .cg).
/// The counter must be 0 on entry; the last rank resets it.
template <int kThreads, int kQuads, int kP, int kTileFloats, class Store>
__device__ __forceinline__ void splitk_reduce_workspace(const float* red, int quads, int rank, int split,
                                                        float* tile_partials, int* counter, Store& store4) {
  constexpr int kBlockN = 4 * kQuads;
  __shared__ int last_rank;
  for (int q = threadIdx.x; q < quads; q += kThreads) {
    const int m = q / kQuads, nl = 4 * (q % kQuads);
    *reinterpret_cast<float4*>(tile_partials + rank * kTileFloats + m * kBlockN + nl) =
        *reinterpret_cast<const float4*>(red + m * kP + nl);
  }
  // One GPU-scope release per CTA, not per thread (a MEMBAR.GPU per thread cost 1-3 us in
  // session 9's first try): the barrier orders every thread's stores before thread 0's
  // atomic, whose release is cumulative; the last rank's thread 0 acquires with the same
  // atomic, and the barrier passes that on to its readers. One acq_rel atomic compiles to
  // MEMBAR.ALL.GPU before the ATOMG, where __threadfence() is fence.sc.gpu (MEMBAR.SC.GPU),
  // and the last rank needed a second one after its atomic.
  __syncthreads();
  if (threadIdx.x == 0) {
    int prev;
    asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;"
                 : "=r"(prev)
                 : "l"(__cvta_generic_to_global(counter))
                 : "memory");
    last_rank = prev == split - 1;
    // Every rank has counted itself: reset for the next call, which reads the counter only
    // after its wait for this grid's completion (quantize_fragments zeroes the counters too,
    // for a fresh or caller-provided workspace).
    if (last_rank) *counter = 0;
  }
  __syncthreads();
  if (!last_rank) return;
  for (int q = threadIdx.x; q < quads; q += kThreads) {
    const int m = q / kQuads, nl = 4 * (q % kQuads);
    float4 part[8] = {};  // part[rank] stays unread: its values come from shared memory
#pragma unroll
    for (int r = 0; r < 8; ++r)
      if (r < split && r != rank)
        part[r] = __ldcg(reinterpret_cast<const float4*>(tile_partials + r * kTileFloats + m * kBlockN + nl));
    const float4 own = *reinterpret_cast<const float4*>(red + m * kP + nl);
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      if (r >= split) continue;
      const float4 v = r == rank ? own : part[r];
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    store4(m, nl, sum);
  }
}

/// The receiving reductions' last step (push and bulk copy): rank `rank` waits until the other
/// ranks' shares of its rows [rank * rpr, +own_rows) are in `recv` (slot r: rpr rows of kP
/// floats from rank r, counted on `recv_bar`), then sums ranks 0..split-1 in that order from 0.f
/// (its own rows from `red`: the pull's bits) and stores them.
template <int kThreads, int kQuads, int kP, class Store>
__device__ __forceinline__ void splitk_sum_received(const float* red, const float* recv, uint64_t* recv_bar, int rpr,
                                                    int own_rows, int rank, int split, Store& store4) {
  if (own_rows <= 0) return;
  mbarrier_wait<WaitScope::cluster>(recv_bar, 0u);  // the other ranks' bytes
  for (int q = threadIdx.x; q < own_rows * kQuads; q += kThreads) {
    const int i = q / kQuads, nl = 4 * (q % kQuads), m = rank * rpr + i;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int r = 0; r < split; ++r) {
      const float4 v = *reinterpret_cast<const float4*>(r == rank ? red + m * kP + nl : recv + (r * rpr + i) * kP + nl);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    store4(m, nl, sum);
  }
}

/// Through a cluster by push: rank r owns token rows [r * rpr, +own_rows). Every quad of a row
/// that another rank owns goes to that rank's receive buffer `recv` (slot = my rank, rpr rows
/// of kP floats) by st.async, counted on its `recv_bar` (which expects (split - 1) * own_rows
/// * kQuads * 16 bytes; initialised before the cluster barrier arrival that cluster_wait
/// completes). Then each rank waits for its rows and sums all ranks in rank order. Nobody
/// reads another rank's shared memory and every rank waits for all bytes sent to it, so no
/// barrier follows.
template <int kThreads, int kQuads, int kP, class Store>
__device__ __forceinline__ void splitk_reduce_push(const float* red, float* recv, uint64_t* recv_bar, int quads,
                                                   int rpr, int own_rows, int rank, int split, Store& store4) {
  cluster_wait();  // every rank's recv_bar is initialised
  for (int q = threadIdx.x; q < quads; q += kThreads) {
    const int m = q / kQuads, nl = 4 * (q % kQuads), owner = m / rpr;
    if (owner == rank) continue;
    st_async_cluster_f4(recv + (rank * rpr + m - owner * rpr) * kP + nl, recv_bar, uint32_t(owner),
                        *reinterpret_cast<const float4*>(red + m * kP + nl));
  }
  splitk_sum_received<kThreads, kQuads, kP>(red, recv, recv_bar, rpr, own_rows, rank, split, store4);
}

/// Through a cluster by bulk copy: rank r owns token rows [r * rpr, +own_rows) of the tile
/// (fewer or none at the end). After a cluster barrier (every rank's K loop is over, so its ring,
/// where `recv` lies, is free, and its recv_bar initialised), one thread of each rank copies
/// the rows that each other rank owns, whole rows of kP floats, into that rank's `recv` (slot =
/// my rank, rpr rows) with one bulk copy, counted on its `recv_bar` (which expects
/// (split - 1) * own_rows * kP * 4 bytes); each rank waits for its rows and sums all ranks in
/// rank order (the pull's bits). The data moves through the async proxy with its mbarrier, so
/// neither cluster barrier needs release semantics at GPU scope: the pull's first barrier
/// compiled to a GPU-scope fence, which cost ~0.5 us per call (docs/perf-notes.md, session 41).
/// The closing barrier keeps every rank resident until its copies have been received. The
/// copies write into the receiver's ring after its K loop accessed it: every thread releases
/// its ring accesses to the async proxy before the barrier and the copying thread acquires
/// after it (fence_async_release_cta_shared / fence_async_acquire_cluster_shared, PTX's
/// sync_restrict form; the init of recv_bar is published by fence_mbarrier_init and the same
/// relaxed arrival, PTX's documented pattern).
template <int kThreads, int kQuads, int kP, class Store>
__device__ __forceinline__ void splitk_reduce_copy(const float* red, float* recv, uint64_t* recv_bar, int rows,
                                                   int rpr, int own_rows, int rank, int split, Store& store4) {
  fence_proxy_async_shared();        // my partial tile's stores, for my bulk copies below
  fence_async_release_cta_shared();  // my ring's accesses, before the other ranks' copies into it
  __syncthreads();
  cluster_sync_relaxed();
  if (threadIdx.x == 0) {
    fence_async_acquire_cluster_shared();
    for (int r = 0; r < split; ++r) {
      const int first = r * rpr, n = min(rows, first + rpr) - first;
      if (r != rank && n > 0)
        bulk_copy_s2cluster(recv + rank * rpr * kP, red + first * kP, uint32_t(n * kP * 4), recv_bar, uint32_t(r));
    }
  }
  splitk_sum_received<kThreads, kQuads, kP>(red, recv, recv_bar, rpr, own_rows, rank, split, store4);
  cluster_sync_relaxed();  // every copy has landed: no rank leaves while its shared memory is read
}

/// Through a cluster by pull: rank r sums its share of the tile's quads from every rank's
/// shared memory, all remote loads of a thread issued before the (rank-ordered) sum, between
/// two cluster barriers.
template <int kThreads, int kQuads, int kP, class Store>
__device__ __forceinline__ void splitk_reduce_pull(const float* red, int quads, int rank, int split, Store& store4) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster_sync_shared();  // every rank's partial tile is in its shared memory
  const float* src[8];
#pragma unroll
  for (int r = 0; r < 8; ++r) src[r] = cluster.map_shared_rank(red, r < split ? r : 0);
  const int per_rank = (quads + split - 1) / split;
  const int q_end = min(quads, (rank + 1) * per_rank);
  for (int q = rank * per_rank + threadIdx.x; q < q_end; q += kThreads) {
    const int m = q / kQuads, nl = 4 * (q % kQuads);
    float4 part[8];
#pragma unroll
    for (int r = 0; r < 8; ++r)
      if (r < split) part[r] = *reinterpret_cast<const float4*>(src[r] + m * kP + nl);
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int r = 0; r < 8; ++r)
      if (r < split) sum.x += part[r].x, sum.y += part[r].y, sum.z += part[r].z, sum.w += part[r].w;
    store4(m, nl, sum);
  }
  cluster_sync_relaxed();  // keep shared memory alive until every rank has read it
}

}  // namespace
}  // namespace mxfp4::cuda
