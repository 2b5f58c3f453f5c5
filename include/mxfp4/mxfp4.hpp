// mxfp4: MXFP4 quantization and GEMM (C = quantize(A) * B^T) for CPUs and NVIDIA Hopper.
//
// The one header a user includes. Semantics: docs/semantics.md, this repository's copy of the
// project spec ("spec §n" below). All sizes are element counts unless they say bytes;
// all matrices are row-major with an explicit row stride (in elements of their own dtype).
//
// Memory: with Backend::cpu every pointer is host memory; with Backend::cuda every pointer
// is device memory and work is queued on Exec::stream without host synchronisation.
//
// Errors (every function): InvalidArgument for bad sizes, strides, null, misaligned or
// overlapping buffers (Python ValueError; alignment: dense elements at their own size, and on
// CUDA packed weights and the GEMM workspace at 16 bytes, docs/hardening.md); TypeMismatch for an unsupported dtype, layout or layout
// version (Python TypeError); Error for everything the caller cannot fix by other
// arguments, CudaError for a failed CUDA call (Python RuntimeError). Messages name the
// offending values. Nothing here aborts or prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxfp4/format.hpp"

namespace mxfp4 {

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// Runtime failure the caller cannot fix by changing arguments (maps to RuntimeError).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// A failed CUDA runtime / driver / cuBLAS call; the message has the call and CUDA's text.
class CudaError : public Error {
 public:
  using Error::Error;
};
/// Bad argument value: size, stride, null or overlapping buffer (maps to ValueError).
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};
/// Unsupported dtype, layout or layout version (maps to TypeError).
class TypeMismatch : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ---------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------

/// Element type of a dense floating-point matrix. bf16 and fp16 are passed as uint16 bit
/// patterns, fp32 as float.
enum class DType : int { bf16 = 0, fp16 = 1, fp32 = 2 };

/// Where the work runs (and so where every pointer of the call lives).
enum class Backend : int { cpu = 0, cuda = 1 };

/// Layout of packed e2m1 codes: plain [rows, K/2] (spec §1.1) or AITER's
/// shuffle_weight(layout=(16,16)) order (spec §4.2, needs rows % 16 == 0, K % 64 == 0).
enum class CodeLayout : int { plain = 0, aiter_shuffled = 1 };

/// Layout of E8M0 scales: plain [rows, K/32] or AITER's e8m0_shuffle order (spec §4.1,
/// rows padded to a multiple of 256 and K/32 to a multiple of 8; padding never read).
enum class ScaleLayout : int { plain = 0, aiter_shuffled = 1 };

/// Execution context of a call.
struct Exec {
  Backend backend = Backend::cpu;  ///< where to run; pointers must live there
  void* stream = nullptr;          ///< cudaStream_t for Backend::cuda (nullptr: default stream)
  int threads = 0;                 ///< CPU worker threads; 0 = std::thread::hardware_concurrency
};

/// An MXFP4 matrix [rows, K]: packed e2m1 codes and E8M0 scales (spec §1).
/// Plain layouts are dense: codes [rows, K/2] bytes, scales [rows, K/32] bytes.
struct MxMatrix {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t rows = 0;
  int64_t K = 0;
  CodeLayout code_layout = CodeLayout::plain;
  ScaleLayout scale_layout = ScaleLayout::plain;
};

// ---------------------------------------------------------------------------------------
// Quantization (spec §2)
// ---------------------------------------------------------------------------------------

/// Quantizes x [rows, K] (dtype bf16/fp16/fp32, row stride `x_stride` >= K elements) to
/// MXFP4 per 1x32 block along K: codes [rows, K/2] (element 2i in the low nibble) and E8M0
/// scales [rows, K/32] in `scale_layout` (plain: [rows, K/32]; aiter_shuffled: a buffer of
/// shuffled_scales_bytes(rows, K/32) bytes whose padding is left untouched).
/// Bit-exact with spec §2 under `rule`; NaN/Inf blocks get scale 0xFF and zero codes (§2.1).
/// Throws InvalidArgument (rows < 1, K < 32, K % 32 != 0, stride < K, null or overlapping
/// buffers), TypeMismatch (dtype), Error/CudaError (backend failures).
void quantize(const void* x, DType dtype, int64_t rows, int64_t K, int64_t x_stride, uint8_t* codes,
              uint8_t* scales, ScaleRule rule = ScaleRule::aiter, const Exec& exec = {},
              ScaleLayout scale_layout = ScaleLayout::plain);

/// Dequantizes an MXFP4 matrix to `out` [rows, K] with row stride `out_stride` (elements),
/// out_dtype fp32 (float) or bf16 (uint16 bits, exact except overflow). Values are
/// e2m1 * 2^(b-127) exactly (spec §1.3); scale 0xFF gives NaN; values of 2^128 and more
/// (byte 253 with |code| value >= 4 — the rceil rule can produce byte 253 — and byte 254 with
/// |code| value >= 2) overflow to +-Inf. Throws as quantize().
void dequantize(const MxMatrix& q, void* out, DType out_dtype, int64_t out_stride, const Exec& exec = {});

// ---------------------------------------------------------------------------------------
// AITER layouts (spec §4); host or device buffers per exec.backend
// ---------------------------------------------------------------------------------------

/// Bytes of an e8m0_shuffle'd scale buffer for `rows` x `kblocks` scales:
/// round_up(rows, 256) * round_up(kblocks, 8) (spec §4.1).
int64_t shuffled_scales_bytes(int64_t rows, int64_t kblocks);

/// plain [rows, kblocks] -> AITER shuffled (spec §4.1). Padding bytes of `shuffled` are not
/// written. Throws InvalidArgument for sizes < 1, null or overlapping buffers.
void shuffle_scales(const uint8_t* plain, int64_t rows, int64_t kblocks, uint8_t* shuffled, const Exec& exec = {});
/// AITER shuffled -> plain [rows, kblocks] (spec §4.1); padding is never read.
void unshuffle_scales(const uint8_t* shuffled, int64_t rows, int64_t kblocks, uint8_t* plain, const Exec& exec = {});

/// plain codes [N, K/2] -> shuffle_weight(layout=(16,16)) order (spec §4.2), N*K/2 bytes.
/// Throws InvalidArgument unless N % 16 == 0 and K % 64 == 0.
void shuffle_weight(const uint8_t* plain, int64_t N, int64_t K, uint8_t* shuffled, const Exec& exec = {});
/// Inverse of shuffle_weight (spec §4.2).
void unshuffle_weight(const uint8_t* shuffled, int64_t N, int64_t K, uint8_t* plain, const Exec& exec = {});

// ---------------------------------------------------------------------------------------
// Prepacked weights (the layout the GPU kernels read; docs/packed-layout.md)
// ---------------------------------------------------------------------------------------

/// Version of the packed layout produced by prepack(); packed buffers of another version are
/// rejected with TypeMismatch.
inline constexpr int kPackedLayoutVersion = 3;

/// A prepacked weight matrix B [N, K]: `data` holds packed_bytes(N, K) bytes in layout
/// `version` (docs/packed-layout.md). Non-owning; where it lives is the caller's Exec.
/// `fp8`, when set (prepack_fp8), holds fp8_weights_bytes(N, K) bytes: the weights' FP8
/// image (docs/fp8-path.md), which lets the CUDA GEMM take the FP8 prefill path; it must
/// describe the same weights as `data`.
struct PackedWeights {
  const uint8_t* data = nullptr;
  int64_t N = 0;
  int64_t K = 0;
  int version = kPackedLayoutVersion;
  const uint8_t* fp8 = nullptr;
};

/// Bytes of the packed layout for B [N, K] (N padded to 16, K to 64; docs/packed-layout.md).
int64_t packed_bytes(int64_t N, int64_t K);

/// Packs MXFP4 weights B (any code/scale layout) into `out` (packed_bytes(N, K) bytes, every
/// byte written, padding zero). Returns the descriptor of `out`. Throws InvalidArgument for
/// bad sizes or buffers.
PackedWeights prepack(const MxMatrix& b, uint8_t* out, const Exec& exec = {});

/// Quantizes a dense B [N, K] (dtype, row stride) under `rule` and packs it into `out`.
/// Uses `tmp` (N*K/2 + N*K/32 bytes, same memory as out) as scratch.
PackedWeights prepack_dense(const void* b, DType dtype, int64_t N, int64_t K, int64_t b_stride, uint8_t* out,
                            uint8_t* tmp, ScaleRule rule = ScaleRule::aiter, const Exec& exec = {});

/// Version of the 8-bit image layout built by prepack_fp8 (docs/fp8-path.md): 1 e4m3 codes
/// (sessions 3-16), 2 s8 codes, 3 s8 codes with chains (the records' break bytes), 4 the
/// same with each 64-row atom's scales, exponent words and record in one block (session 24). The image
/// itself carries no version: an image built by a library of another version is read wrongly,
/// so build images with the library that runs the GEMM rather than storing them (the Python
/// PackedTensor records this number when pickled and drops an image of another version).
inline constexpr int kFp8ImageLayout = 4;

/// Bytes of the 8-bit image of B [N, K] for path fp8 (docs/fp8-path.md): about 1.065 * N * K
/// (s8 codes, one fp32 scale and one word of four E8M0 block exponents per row and 128-K
/// slice, a 16-byte record per 64 rows and slice, one flag byte per 16 rows and slice; rows
/// padded to 256, K to 128). Throws InvalidArgument for N < 1 or K not a positive multiple of 32.
int64_t fp8_weights_bytes(int64_t N, int64_t K);

/// Builds the 8-bit image of the packed weights `p` into `out` (fp8_weights_bytes(p.N, p.K)
/// bytes, every byte written; on CUDA 16-byte aligned) and returns `p` with `fp8 = out`.
/// Each (row, 128-K slice) group is stored as exact s8 codes e2m1 * 2^(s - e): one e for the
/// whole group when its block exponents span <= 3 binades (narrow; chosen so that consecutive
/// slices of a row share it where they can, which lets the GEMM chain their integer sums),
/// else e = s - 1 per block (wide); groups with a NaN scale or a block exponent outside
/// [-47, 49] are flagged and computed exactly by the GEMM's fix-up instead. Layout version
/// kFp8ImageLayout.
/// Throws InvalidArgument for bad sizes or overlapping buffers, TypeMismatch for a packed
/// layout of another version.
PackedWeights prepack_fp8(const PackedWeights& p, uint8_t* out, const Exec& exec = {});

/// Exact inverse of prepack: plain codes [N, K/2] and plain scales [N, K/32].
void unpack(const PackedWeights& p, uint8_t* codes, uint8_t* scales, const Exec& exec = {});

// ---------------------------------------------------------------------------------------
// GEMM (spec §3): C[M, N] (bf16, or fp32) = quantize(A)[M, K] * B[N, K]^T
// ---------------------------------------------------------------------------------------

/// Kernel path of the CUDA GEMM (docs/dispatch.md).
///   fused:  small M, A quantized inside the GEMM kernel, one launch; K may be split over a
///           thread-block cluster (split_k > 1) with a deterministic DSMEM reduction;
///   splitk: small M, A quantized once by its own kernel, then the same cluster split-K GEMM;
///   tiled:  large M, A quantized once by its own kernel, then a tiled tensor-core GEMM.
///   fp8:    M > 64, and 32 < M <= 64 with N x K >= 10 Mi weights (docs/dispatch.md), on the
///           8-bit (s8) tensor cores (docs/fp8-path.md): A's 8-bit image built per call,
///           wgmma against the weights' image (PackedWeights::fp8, from prepack_fp8),
///           optionally split-K clusters,
///           then an exact fix-up of rows/columns with flagged groups. Without B.fp8 a
///           dispatcher or tune-cache choice of fp8 runs a bf16 path instead (the small-M
///           rule for M <= 128, tiled beyond); a forced one throws.
///   gemv:   M <= 16 (decode): one launch, one CTA per block_n / 16 slabs of 16 weight rows
///           over all of K (each slab's warps split K and sum in warp order), A quantized
///           inside the kernel into shared memory (bf16 fragments: M rounded up to 1, 2, 4, 8
///           or 16 rows x round_up(K, 64) x 2 bytes, plus 512 bytes per warp and token tile
///           of 8: at most 227 KiB, so M = 8 takes K <= 14016), mma.sync like fused/splitk,
///           no split-K across CTAs and no workspace.
/// Token CTAs run along grid.y (at most 65535), so fused/splitk take M <= 64 * 65535 and
/// tiled M <= 128 * 65535 = 8388480; a larger M throws InvalidArgument on Backend::cuda.
enum class GemmPath : int { fused = 0, splitk = 1, tiled = 2, fp8 = 3, gemv = 4 };

/// Tile configuration of one CUDA GEMM launch; chosen by choose_gemm_config() or tuning.
struct GemmConfig {
  GemmPath path = GemmPath::fused;
  int block_n = 64;   ///< weight rows (N) per CTA; multiple of 16 (fused/splitk: 64 or 128;
                      ///< tiled: 128; fp8: 64 or 128; gemv: 16, 32 or 64)
  int block_m = 16;   ///< tokens (M) per CTA; multiple of 8 (fused/splitk: informational, the
                      ///< kernel always takes up to 64 tokens per CTA, larger M in CTAs along
                      ///< grid.y; the dispatcher reports min(M, 64) rounded up to 8; tiled: 128;
                      ///< fp8: 64 or 128 (see warps for the consumer warpgroups); or 256 with
                      ///< block_n 128: a cluster of two 128-row CTAs sharing B's tile;
                      ///< gemv: 8, informational: one CTA takes all M <= 16 tokens)
  int split_k = 1;    ///< CTAs of a cluster sharing one output tile, each a share of K (1..8;
                      ///< fp8: 1 for block_m 192 and 256)
  int warps = 4;      ///< warps per CTA (fused/splitk: block_n/16 x 1, 2 or 4 warps per 16-row
                      ///< slab, splitting each K stage; 4 only with block_n = 64; tiled: 8;
                      ///< fp8: 4 * (consumer warpgroups + 1): one consumer per 64 tokens,
                      ///< or, for block_n 128, 4 * (block_m / 32 + 1): one per 64 x 64
                      ///< sub-tile; 12 for block_m 256, per CTA; gemv: 4, 8 or 16, at least
                      ///< block_n / 16: warp w takes slab w % S (S = block_n / 16) and every
                      ///< (warps / S)-th 64-wide K chunk of it)
};

/// Properties of a device that the dispatcher reads.
struct DeviceInfo {
  std::string name;
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  int64_t smem_optin_bytes = 227 * 1024;
};

/// Options of a GEMM call.
struct GemmOptions {
  ScaleRule rule = ScaleRule::aiter;  ///< rule used to quantize A
  const GemmConfig* config = nullptr; ///< force a configuration (nullptr: dispatcher/tune cache)
  void* workspace = nullptr;          ///< device scratch of paths splitk, tiled and fp8
                                      ///< (gemm_workspace_bytes; nullptr: cached)
  size_t workspace_bytes = 0;
  /// The caller's promise that B (PackedWeights::data) is not written while the call may run:
  /// every write of B (prepack() into it, a copy, a user kernel) completed before a host
  /// synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize, a completed event) that
  /// precedes the call, or the call is captured in a graph whose nodes never write B. Weights
  /// loaded at start-up and then only read, as in inference serving, qualify. Stream order
  /// alone does not: a kernel launched with programmatic dependent launch may let the stream's
  /// next kernel start before it has finished (docs/dispatch.md "Stream order"), so a writer
  /// of B anywhere earlier on the stream, or on another stream joined by an event inside a
  /// captured graph, is not enough. With the promise B may be read before the call's first
  /// programmatic-dependent-launch wait: path gemv (M <= 16) loads its weights into
  /// registers and shared memory while the previous kernel finishes (session 37, H100:
  /// 1x7168x2048 6.8 -> 5.6 us with 64-row CTAs, 1x2880x2880 4.8-5.0 -> 4.65-4.75, 4x2880x512
  /// 2.75 -> 2.6; since session 39 the dispatcher gives 1x7168x2048 32-row CTAs, 6.0 us with
  /// or without the promise), and
  /// path splitk's quantizer lets the GEMM launch, and stream its weights, before the
  /// quantizer's own wait (session 38, H100: 16x3072x1536 5.96 -> 5.03 us, 32x4096x512 5.37 ->
  /// 5.04, but 16x2112x7168 9.20 -> 9.42; docs/perf-notes.md). Results are bitwise the same
  /// either way; the other paths ignore it. Default false: every kernel waits for the stream's
  /// previous kernel before reading B.
  bool weights_static = false;
};

/// Pure dispatcher: the configuration the library uses for (M, N, K) on `dev` when no tune
/// cache entry exists. Deterministic; unit-tested on the CPU (docs/dispatch.md).
GemmConfig choose_gemm_config(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev);

/// The configuration gemm() runs for C [M, N] = quantize(A [M, K]) * B [N, K]^T on `dev` where
/// path fp8 was chosen (dispatcher or tune cache) but the weights have no FP8 image
/// (PackedWeights::fp8 == nullptr): the small-M kernel's rule for M <= 128 (path fused or
/// splitk), else the tiled kernel (128 x 128, 8 warps); never path fp8 or gemv. Its
/// gemm_workspace_bytes(M, K, cfg) never exceeds any path fp8 configuration's, so a workspace
/// sized for the fp8 choice serves it; gemm_workspace_bytes(M, N, K, cfg) can (path splitk's
/// split-K scratch at M <= 16, e.g. 16x4096x4096: 2,228,480 bytes against the fp8 image's
/// 1,116,672), so callers that allocate the workspace themselves size it with this
/// configuration for the faster reduction (the Python package does, through
/// explain_gemm(..., fp8_image = false)). Pure and deterministic.
/// Throws InvalidArgument for M, N or K outside [1, 2^40].
GemmConfig config_without_fp8(int64_t M, int64_t N, int64_t K, const DeviceInfo& dev);

/// The configuration gemm() runs when `chosen` (the dispatcher's or a tune cache entry's for
/// C [M, N] = quantize(A [M, K]) * B [N, K]^T) meets weights with (`fp8_image`) or without an
/// FP8 image: config_without_fp8(M, N, K, dev) in place of a path fp8 choice without an image,
/// else `chosen` unchanged. The one place of that rule (gemm() and explain_gemm use it). Pure.
/// Throws InvalidArgument for M, N or K outside [1, 2^40] where it substitutes.
GemmConfig config_for_weights(const GemmConfig& chosen, bool fp8_image, int64_t M, int64_t N, int64_t K,
                              const DeviceInfo& dev);

/// Human-readable one-line description of a configuration, e.g.
/// "path=splitk block_n=64 block_m=16 split_k=4 warps=4".
std::string describe(const GemmConfig& cfg);

/// describe(cfg) for a GEMM of (M, N, K) on the CUDA backend, followed for split_k > 1 on
/// paths fused, splitk and fp8 by how the split-K partial tiles are reduced with the
/// library's cached workspace: " reduce=workspace" (path splitk's split-K scratch,
/// gemm_workspace_bytes(M, N, K, cfg)) or " reduce=clusters" (thread-block clusters; also
/// what a caller's workspace of gemm_workspace_bytes(M, K, cfg) bytes gets). Throws
/// InvalidArgument for M, N or K outside [1, 2^40] or M * K > 2^60.
std::string describe(const GemmConfig& cfg, int64_t M, int64_t N, int64_t K);

/// Device scratch bytes the GEMM needs for (M, K) with `cfg` (0 for fused; for fp8 also
/// enough for the bf16 path that runs when the weights have no FP8 image: splitk for
/// M <= 128, tiled beyond, both needing A's bf16 fragments). With a workspace of this size,
/// path splitk reduces its split-K partial tiles through thread-block clusters; see the
/// (M, N, K, cfg) overload for the reduction through the workspace (faster where it
/// applies). Throws
/// InvalidArgument for M or K outside [1, 2^40], M * K > 2^60, or a cfg.path that is no
/// GemmPath enumerator.
size_t gemm_workspace_bytes(int64_t M, int64_t K, const GemmConfig& cfg);

/// Device scratch bytes for (M, N, K) with `cfg`, including, for path splitk with
/// split_k = 8, K >= 4096 and M <= 16, the split-K scratch: one counter per output tile and
/// every rank's fp32 partial tile (at most 16 x round_up(round_up(N, 16), block_n) x 8
/// floats), so that the last rank of a tile to finish sums the partials in rank order
/// (docs/dispatch.md; there this is faster than clusters of 8, which leave 8 of an H200's
/// SMs idle). The result is bitwise
/// the same as with the cluster reduction that a workspace of gemm_workspace_bytes(M, K, cfg)
/// bytes gets. Equal to that size for every other case; in particular a workspace sized for
/// a path fp8 configuration serves its bf16 fallback (weights without an FP8 image) with the
/// cluster reduction. Throws InvalidArgument for M, N or K outside [1, 2^40] or M * K > 2^60.
size_t gemm_workspace_bytes(int64_t M, int64_t N, int64_t K, const GemmConfig& cfg);

/// The configuration gemm() would use for this shape on exec's device (tune cache first,
/// then choose_gemm_config) for weights with an FP8 image, or (`fp8_image` false) without one
/// (config_for_weights: a bf16 path where path fp8 was chosen). Backend::cpu answers with the
/// CPU backend's fixed config {path=tiled, block_n=64, block_m=64, split_k=1, warps=0}
/// (informational only).
GemmConfig explain_gemm(int64_t M, int64_t N, int64_t K, const Exec& exec = {}, bool fp8_image = true);

/// C = quantize(A) * B^T with B given as an MXFP4 matrix (CPU backend only; for CUDA call
/// prepack() once and use the PackedWeights overload).
/// A: bf16 bits [M, K], row stride lda >= K. C: bf16 bits [M, N], row stride ldc >= N.
/// fp32 accumulation; result within spec §3's bound. Throws InvalidArgument for bad sizes,
/// strides, null or overlapping buffers (C may not overlap A or B), TypeMismatch for
/// unsupported layouts.
void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, uint16_t* C, int64_t ldc,
          const GemmOptions& opt = {}, const Exec& exec = {});

/// As above with B prepacked (CPU and CUDA backends). On CUDA: no allocation after the first
/// call for a shape class, no host synchronisation, capturable in a CUDA graph.
void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, uint16_t* C,
          int64_t ldc, const GemmOptions& opt = {}, const Exec& exec = {});

/// The two overloads above with an fp32 C [M, N] (row stride ldc >= N floats): the fp32
/// accumulation result without the final rounding to bf16. For partial products that are
/// summed afterwards, e.g. the K shards of a row-parallel layer added up by an all-reduce
/// (docs/tensor-parallel.md): rounding each partial to bf16 first would add one bf16 rounding
/// error per shard, which spec §3's bound does not allow for.
/// Accuracy: spec §3's bound without its final-rounding term,
///   |C - ref| <= 2^-12 sum_k |a_k b_k| + 2^-133
/// (the absolute 2^-133 covers products below fp32's normal range), NaN exactly where ref is
/// NaN, +-Inf beyond the fp32 range. CPU backend: when the scale bytes keep every fp32 partial
/// sum finite (all but extreme scales) bf16(C) equals the bf16 overload's C bit for bit; with
/// extreme scales both are the fp64 sum rounded once, to fp32 here and to bf16 there, so
/// bf16(C) may differ from it by one bf16 ulp at a bf16 tie (double rounding; both within
/// the bound). Validation and errors as the bf16 overloads (C aligned to 4 bytes).
void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const MxMatrix& B, float* C, int64_t ldc,
          const GemmOptions& opt = {}, const Exec& exec = {});
void gemm(const uint16_t* A, int64_t M, int64_t K, int64_t lda, const PackedWeights& B, float* C, int64_t ldc,
          const GemmOptions& opt = {}, const Exec& exec = {});

/// C = A_q * B^T with A already quantized (A_q: MxMatrix [M, K]); CPU backend.
/// Bit-identical to gemm() on the bf16 A that quantizes to A_q (bug kind K03).
void gemm_quantized(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, const Exec& exec = {});

/// Exact reference GEMM on the CPU (test oracle): exact products, fp64 accumulation, one
/// final round to bf16 (nearest even). `out_f64`, if non-null, receives the unrounded sums
/// [M, N] and `out_abs`, if non-null, sum_k |a_k b_k| [M, N] (for spec §3's bound).
void gemm_reference(const MxMatrix& A, const MxMatrix& B, uint16_t* C, int64_t ldc, double* out_f64 = nullptr,
                    double* out_abs = nullptr);

// ---------------------------------------------------------------------------------------
// Build and device information
// ---------------------------------------------------------------------------------------

/// Library version string ("MAJOR.MINOR.PATCH").
const char* version();
/// True when the library was compiled with the CUDA backend.
bool built_with_cuda();
/// Number of CUDA devices usable now (0 without CUDA build or driver; never throws).
int cuda_device_count();
/// Properties of CUDA device `index` (throws Error without CUDA, InvalidArgument for index).
DeviceInfo cuda_device_info(int index);

}  // namespace mxfp4
