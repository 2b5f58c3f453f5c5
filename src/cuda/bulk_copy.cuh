// Hopper asynchronous-copy primitives used by the small-M and tiled GEMMs: mbarriers, the 1-D
// bulk copy global -> shared (TMA engine, no tensor map), the per-thread 16-byte cp.async
// and its mbarrier completion, and programmatic dependent launch.
// Source: PTX ISA 8.x, sections "mbarrier", "cp.async", "cp.async.bulk" and "griddepcontrol".
#pragma once

#include <cstdint>

namespace mxfp4::cuda {

#if defined(__CUDACC__)

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Initialises an mbarrier expecting `count` arrivals per phase (one thread, before use).
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

/// Makes mbarrier initialisation visible to the async proxy (the bulk copies).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// Arrives once on `bar` and adds `bytes` to the transaction count of its current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

/// Arrives once on `bar` (no transaction bytes).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

/// Scope of the acquire with which an mbarrier wait returns (PTX ISA, "mbarrier.test_wait /
/// try_wait", .sem/.scope): `cta` for bytes written by this CTA's threads or copies, `cluster`
/// for bytes another CTA of the cluster delivered (st.async, cp.async.bulk to
/// shared::cluster), whose complete-tx releases at cluster scope (NVIDIA's st.async example in
/// the CCCL docs waits this way). The cluster form adds one L1 invalidation (CCTL.IVALL) per wait.
enum class WaitScope { cta, cluster };

/// Spins until the phase with parity `parity` of `bar` has completed, then acquires at `kScope`.
template <WaitScope kScope = WaitScope::cta>
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_addr(bar);
  uint32_t done = 0;
  while (!done) {
    if constexpr (kScope == WaitScope::cluster) {
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
          " selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
    } else {
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
    }
  }
}

/// 16-byte asynchronous copy global -> shared by this thread (PTX "cp.async", .cg: cached in
/// L2 only); both addresses 16-byte aligned.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}

/// Arrives on `bar` once every cp.async this thread has issued so far has completed, without
/// adding an expected arrival (PTX "cp.async.mbarrier.arrive.noinc": the mbarrier's count
/// must include this arrival).
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

/// Bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to this
/// CTA's shared memory, completing `bytes` transactions on `bar`.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

/// Multicast bulk copy: `bytes` from global memory to the same CTA-relative offset as `dst` in
/// the shared memory of every CTA of the cluster named in `cta_mask`, completing `bytes`
/// transactions on the mbarrier at `bar`'s offset in each of them (PTX "cp.async.bulk",
/// .multicast::cluster).
__device__ __forceinline__ void bulk_copy_g2s_multicast(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                                        uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
      "%4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "h"(cta_mask)
      : "memory");
}

/// This CTA's rank in its cluster (PTX special register %cluster_ctarank).
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// Arrives once on the mbarrier at `bar`'s offset in the shared memory of cluster CTA `rank`
/// (PTX "mapa", "mbarrier.arrive" on shared::cluster) with the instruction's default
/// semantics, release at CTA scope, as CUTLASS's ClusterBarrier::arrive does. For releasing a
/// stage buffer whose reads have completed (the caller has used every value it read from it),
/// so that the peer's next copy into it cannot overtake them. The cluster-scope release
/// (`.release.cluster`) puts a MEMBAR before every arrival: in path fp8's 2-CTA pair, whose
/// consumers arrive on both CTAs' empty barriers every stage, that fence took a third of the
/// stall samples and made the pair 2x slower than unpaired tiles (ncu, session 23).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

/// The 16 bytes at `local`'s offset in the shared memory of cluster CTA `rank` (PTX "mapa",
/// "ld.shared::cluster"; the caller orders the read after the owner's writes, e.g. with
/// cluster_sync_shared).
__device__ __forceinline__ float4 ld_shared_cluster_f4(const float* local, uint32_t rank) {
  uint32_t remote;
  float4 v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

/// Cluster barrier whose arrival releases this thread's prior shared-memory writes to the
/// cluster and whose wait acquires the other CTAs' (PTX "barrier.cluster" .release /
/// .acquire; the compiler may emit stronger fences).
__device__ __forceinline__ void cluster_sync_acq_rel() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/// Cluster barrier that orders this thread's prior shared::cta accesses (its own CTA's shared
/// memory) before the other CTAs' later shared::cluster accesses after the barrier, e.g. a
/// partial tile written locally and then read remotely. PTX ISA 8.6 "membar / fence":
/// fence.release.sync_restrict::shared::cta.cluster, whose effect applies only to operations
/// on shared::cta objects, then a relaxed arrival (a release pattern with the fence); the wait
/// acquires, then fence.acquire.sync_restrict::shared::cluster.cluster. It compiles to
/// MEMBAR.ALL.CTA where cluster_sync_acq_rel's releasing arrival compiles to MEMBAR.ALL.GPU,
/// which waits for the thread's global memory traffic too (~0.5 us per call on path splitk's
/// pull, docs/perf-notes.md, session 41). Global writes before it are not released.
__device__ __forceinline__ void cluster_sync_shared() {
  asm volatile(
      "fence.release.sync_restrict::shared::cta.cluster;\n"
      "barrier.cluster.arrive.relaxed.aligned;\n"
      "barrier.cluster.wait.aligned;\n"
      "fence.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
}

/// Cluster barrier with no memory ordering: for "every CTA is done reading my shared memory"
/// (the reads have completed once their values are used).
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}

/// The two halves of a cluster barrier, for an arrival early in the kernel and a wait much
/// later (PTX "barrier.cluster"): the arrival is relaxed (pair it with a release fence such as
/// fence_mbarrier_init), the wait acquires.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

/// Stores 16 bytes at `local`'s offset in the shared memory of cluster CTA `rank`, counted as
/// 16 transaction bytes on that CTA's mbarrier at `bar`'s offset (PTX "st.async" with
/// mbarrier::complete_tx): the owner sees the value once it has waited on that barrier's phase;
/// no fence. The barrier must be initialised before (a cluster barrier after the init), and
/// `rank` must not be the executing CTA (undefined for st.async with an mbarrier, PTX ISA).
__device__ __forceinline__ void st_async_cluster_f4(float* local, uint64_t* bar, uint32_t rank, float4 v) {
  uint32_t remote, remote_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
               ::"r"(remote), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar)
               : "memory");
}

/// Makes this thread's generic-proxy stores to shared memory visible to the async proxy, i.e. to
/// a bulk copy that reads them (PTX "fence.proxy.async.shared::cta"); every storing thread
/// fences, then a CTA barrier, then one thread issues the copy.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// The two halves of "my shared memory's earlier generic accesses happen before the other
/// cluster CTAs' later async-proxy writes into it" (PTX ISA 8.6, fence.proxy.async::generic
/// with .sync_restrict), around a relaxed cluster barrier: every accessing thread releases
/// before its arrival, the writer acquires after its wait, then issues its bulk copies. The
/// release compiles to MEMBAR.ALL.CTA and FENCE.VIEW.ASYNC.S, the acquire to nothing on
/// sm_90a (no GPU-scope fence).
__device__ __forceinline__ void fence_async_release_cta_shared() {
  asm volatile("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;" ::: "memory");
}
__device__ __forceinline__ void fence_async_acquire_cluster_shared() {
  asm volatile("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
}

/// Bulk copy (TMA engine) of `bytes` (a multiple of 16; both addresses 16-byte aligned) from
/// this CTA's shared memory at `src` to `dst`'s offset in the shared memory of cluster CTA
/// `rank`, counted as transaction bytes on that CTA's mbarrier at `bar`'s offset (PTX
/// cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes). The receiver sees
/// the bytes once it has waited on that barrier's phase: unlike a remote read after a cluster
/// barrier with release semantics, no GPU-scope fence (MEMBAR.ALL.GPU) is needed. The source
/// must stay unchanged, and this CTA resident, until the receiver has waited.
__device__ __forceinline__ void bulk_copy_s2cluster(const void* dst, const void* src, uint32_t bytes, const uint64_t* bar,
                                                    uint32_t rank) {
  uint32_t remote, remote_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(dst)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(remote), "r"(smem_addr(src)), "r"(bytes), "r"(remote_bar)
               : "memory");
}

/// Asks the TMA engine to bring `bytes` (a multiple of 16, 16-byte aligned) at `p` into L2
/// (PTX cp.async.bulk.prefetch.L2.global). No data comes back, so it may precede
/// griddepcontrol.wait: L2 is the point of coherence, and every load that returns data comes
/// after the wait.
__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

/// Programmatic dependent launch: wait until the preceding kernel of the stream has completed
/// and its writes are visible (a no-op when the kernel was launched without the attribute).
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

/// Programmatic dependent launch: lets the next kernel of the stream start its prologue.
__device__ __forceinline__ void grid_dependents_launch() { asm volatile("griddepcontrol.launch_dependents;"); }

#endif  // __CUDACC__

}  // namespace mxfp4::cuda
