// Launchers of the FP8 prefill path (path "fp8", docs/fp8-path.md; internal). Arguments are
// validated by the API layer; every launcher queues work on `stream` and throws CudaError when
// a launch fails.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cuda {

/// Which image kernel runs (src/cuda/fp8_image.cu): all write the same bytes. per_slice: a
/// CTA per (16 rows, slice); per_chunk: 1024 threads per (16 rows, chain chunk), 2 slices per
/// thread; per_chunk_serial: 256 threads per (16 rows, chain chunk), 8 slices per thread.
/// `automatic` picks per_chunk_serial when its CTAs fill the GPU a few times over, per_chunk
/// when they fill a good part of it, else per_slice; tests and probes force one.
enum class ImageKernel { automatic, per_slice, per_chunk, per_chunk_serial };

/// 8-bit image (core/fp8_layout.hpp) of bf16 activations A [M, K] (row stride lda) quantized
/// under `rule` (spec §2), into `out` (ImageGeometry::of(M, K).total_bytes() bytes).
void fp8_image_from_bf16(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, uint8_t* out,
                         cudaStream_t stream, ImageKernel kernel = ImageKernel::automatic);

/// 8-bit image of packed weights B (layout v3) into `out` (ImageGeometry::of(B.N, B.K).total_bytes()).
void fp8_image_from_packed(const PackedWeights& B, uint8_t* out, cudaStream_t stream,
                           ImageKernel kernel = ImageKernel::automatic);

/// C [M, N] = A * B^T on s8 wgmma from the two 8-bit images (a_img: activations, B.fp8:
/// weights); tile cfg.block_m x cfg.block_n (64 or 128 each, or the 256 x 128 cluster pair),
/// a persistent grid of at most `sm_count` CTAs, or split-K clusters. Flagged groups
/// contribute zero: call fp8_fixup afterwards.
void gemm_fp8(const uint8_t* a_img, int64_t M, int64_t K, const PackedWeights& B, void* C, bool c_f32, int64_t ldc,
              const GemmConfig& cfg, int sm_count, cudaStream_t stream);

/// The work units of path fp8's persistent GEMM in tail-split mode (the experiment
/// -DMXFP4_EXP_FP8_TAIL_SPLIT=1, gemm_fp8_kernel.cuh; docs/fp8-path.md, "Tail split"): the grid
/// is `ctas` = R CTAs in clusters of 2; CTA b first takes the whole tiles b, b + R, ... below
/// tail_from = F * R (F = T / R rounds: exactly F tiles for every CTA), then, as its last unit,
/// cluster b / 2 (%clusterid.x) takes tail tile tail_from + b / 2 (if it is below T), its rank
/// k in {0, 1} slices [k S / 2, (k + 1) S / 2). Plain constexpr (the library's CUDA sources
/// build with --expt-relaxed-constexpr), so that the kernel and a host test
/// (GpuFp8.TailSplitWalkCoversEveryTileOnce) walk the same code.
struct Fp8TailWalk {
  int ctas = 0;       ///< R: CTAs of the grid (an even count: clusters of 2)
  int tail_from = 0;  ///< F * R, the first tile split over a cluster; 0: no tail split
  int tiles = 0;      ///< T: tiles of C
  int slices = 0;     ///< S: 128-K slices of a tile

  /// The walk for T = `tiles` on R = `ctas` resident CTAs: used when F >= 1 and the last
  /// partial round's r = T - F R tiles fit one per cluster (0 < r <= R / 2), and a tile has at
  /// least 2 slices (each half gets one); else none (on() is false: launch as today).
  static constexpr Fp8TailWalk plan(int64_t tiles, int ctas, int slices) {
    if (ctas < 2 || ctas % 2 != 0 || slices < 2 || tiles > int64_t{0x7FFFFFFF}) return {};
    const int64_t f = tiles / ctas, r = tiles - f * ctas;
    if (f < 1 || r == 0 || r > ctas / 2) return {};
    return Fp8TailWalk{ctas, int(f * ctas), int(tiles), slices};
  }
  constexpr bool on() const { return tail_from > 0; }
  /// The tile after unit `id` of a CTA of cluster `cluster` (CTA b starts at tile b, below
  /// tail_from as F >= 1; its cluster is b / 2): its next whole tile, then its cluster's tail
  /// tile, then none (tiles).
  constexpr int next(int id, int cluster) const {
    if (id >= tail_from) return tiles;  // the tail unit was the last
    if (id < tail_from - ctas) return id + ctas;
    const int t = tail_from + cluster;
    return t < tiles ? t : tiles;
  }
  /// Slices [j0, j1) of unit `id` for cluster rank `rank`: all S of a whole tile, a half of
  /// a tail tile (the split-K formula with split 2).
  constexpr void range(int id, int rank, int& j0, int& j1) const {
    if (id < tail_from) {
      j0 = 0, j1 = slices;
    } else {
      j0 = int(int64_t(slices) * rank / 2), j1 = int(int64_t(slices) * (rank + 1) / 2);
    }
  }
};

/// Rewrites, exactly (exact block products, fp32 sums of 2^(sa+sb)-scaled block sums), every
/// row of C whose activation row has a flagged group in a_img and every column whose weight
/// row has one in B.fp8, reading A (bf16, quantized again under `rule`) and B (packed). Costs
/// one launch that reads the images' tile flags when nothing is flagged.
void fp8_fixup(const uint16_t* A, int64_t M, int64_t K, int64_t lda, ScaleRule rule, const uint8_t* a_img,
               const PackedWeights& B, void* C, bool c_f32, int64_t ldc, cudaStream_t stream);

}  // namespace mxfp4::cuda
