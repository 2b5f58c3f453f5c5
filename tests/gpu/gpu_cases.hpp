// Helpers shared by the GPU hardening tests (canaries, alignment, concurrency, 64-bit
// indexing, sanitizer cases): forced configurations for every kernel path, prepacked weights
// on the device, and guarded device buffers whose bytes outside the logical region must stay
// as they were. Public API only.
#pragma once

#if defined(MXFP4_WITH_CUDA)
#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#include <utility>

#include "common/test_util.hpp"
#include "dispatch/path_name.hpp"
#include "gpu/gpu_util.hpp"

namespace mxfp4::test {

/// A forced configuration of `path`: fused/splitk with `slabs` 16-row weight slabs (4 or 8) and
/// `per_slab` warps per slab (block_n = 16 * slabs, warps = slabs * per_slab); tiled with its
/// only tile shape.
inline GemmConfig forced_cfg(GemmPath path, int split = 1, int slabs = 4, int per_slab = 1) {
  GemmConfig c;
  c.path = path;
  c.split_k = split;
  c.block_n = 16 * slabs;
  c.warps = slabs * per_slab;
  if (path == GemmPath::tiled) c.block_n = c.block_m = 128, c.split_k = 1, c.warps = 8;
  return c;
}

/// A forced fp8-path configuration with a block_m x block_n tile (each 64 or 128, or 256 x 128:
/// the 2-CTA cluster); `quarters`: one consumer warpgroup per 64 x 64 sub-tile (block_n 128);
/// `split`: split-K clusters of that many CTAs per tile.
inline GemmConfig fp8_cfg(int block_m, int block_n, bool quarters = false, int split = 1) {
  const int consumers = std::min(block_m, 128) / 64 * (quarters ? block_n / 64 : 1);
  return GemmConfig{GemmPath::fp8, block_n, block_m, split, 4 * (consumers + 1)};
}

/// Path gemv for M <= 16 where its shared memory fits K (none otherwise): one slab per CTA with
/// 4 and 16 warps, two slabs of 4 warps, four slabs of one warp each.
inline std::vector<GemmConfig> gemv_configs(int64_t M, int64_t K) {
  std::vector<GemmConfig> v;
  for (const auto& [block_n, warps] : {std::pair{16, 4}, std::pair{16, 16}, std::pair{32, 8}, std::pair{64, 4}}) {
    const GemmConfig c{GemmPath::gemv, block_n, 8, 1, warps};
    if (gemm_config_problem_for_shape(c, M, K).empty()) v.push_back(c);
  }
  return v;
}

/// Forced configurations covering every kernel variant: fused and splitk with and without a
/// cluster split (a power of two and not), 4 and 8 slabs, 1, 2 and 4 warps per slab; tiled;
/// path fp8's tiles; path gemv (gemv_configs) for M <= 16.
inline std::vector<GemmConfig> path_configs(int64_t M, int64_t K) {
  std::vector<GemmConfig> v = gemv_configs(M, K);
  v.push_back(forced_cfg(GemmPath::fused, 1, 4, 1));
  v.push_back(forced_cfg(GemmPath::fused, 4, 8, 1));
  v.push_back(forced_cfg(GemmPath::fused, 2, 8, 2));
  v.push_back(forced_cfg(GemmPath::splitk, 2, 4, 4));
  v.push_back(forced_cfg(GemmPath::splitk, 8, 8, 1));
  v.push_back(forced_cfg(GemmPath::splitk, 3, 8, 2));
  v.push_back(forced_cfg(GemmPath::tiled));
  v.push_back(fp8_cfg(128, 128));
  v.push_back(fp8_cfg(128, 128, true));
  v.push_back(fp8_cfg(128, 64, false, 4));
  v.push_back(fp8_cfg(128, 128, false, 4));  // split-K tiles of the dispatcher at 64 < M <= 128
  v.push_back(fp8_cfg(128, 64, false, 3));   // a split that does not divide the tile's rows
  v.push_back(fp8_cfg(64, 64));
  v.push_back(fp8_cfg(64, 128));  // the dispatcher's at M > 128 with few tiles and K >= 768
  v.push_back(fp8_cfg(256, 128));
  return v;
}

/// "forced <describe>" or "default config" for messages.
inline std::string cfg_name(const GemmConfig* cfg) { return cfg ? "forced " + describe(*cfg) : "default config"; }

/// Host MXFP4 weights prepacked into a fresh device buffer (16-byte aligned), with their FP8
/// image (prepack_fp8) so that every path, fp8 included, can run on them.
struct DevicePacked {
  std::unique_ptr<DeviceBuf> buf, fp8;
  PackedWeights pw;
  explicit DevicePacked(const HostMx& b) {
    DeviceBuf dc(b.codes), ds(b.scales);
    buf = std::make_unique<DeviceBuf>(size_t(packed_bytes(b.rows, b.K)));
    fp8 = std::make_unique<DeviceBuf>(size_t(fp8_weights_bytes(b.rows, b.K)));
    pw = prepack(MxMatrix{dc.get(), ds.get(), b.rows, b.K}, buf->get(), cuda_exec());
    pw = prepack_fp8(pw, fp8->get(), cuda_exec());
    cuda_ok(cudaDeviceSynchronize(), "sync");
  }
};

/// Seeded random bytes (poison that no kernel writes by accident).
inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng.next_u64();
    for (size_t j = 0; j < 8 && i + j < n; ++j) v[i + j] = uint8_t(r >> (8 * j));
  }
  return v;
}

/// A device allocation of guard + shift + bytes + guard bytes filled with `fill` (random
/// bytes when empty); data() is `guard + shift` bytes in (guard a multiple of 256, so the
/// alignment of data() is that of `shift`). initial() is the content before any call.
class Guarded {
 public:
  Guarded(size_t bytes, size_t shift, uint64_t seed, size_t guard = 4096)
      : guard_(guard), shift_(shift), bytes_(bytes),
        buf_(std::make_unique<DeviceBuf>(guard + shift + bytes + guard, NoInit{})),
        initial_(random_bytes(buf_->bytes(), seed)) {
    buf_->upload(0, initial_.data(), initial_.size());
  }
  /// Writes `host` into the logical region at byte offset `off` and records it as initial.
  void fill(size_t off, const void* host, size_t n) {
    buf_->upload(guard_ + shift_ + off, host, n);
    std::memcpy(initial_.data() + guard_ + shift_ + off, host, n);
  }
  /// Takes the current content as the initial one (after the buffer was filled by a call).
  void snapshot() { initial_ = now(); }
  /// The initial content of the logical region.
  std::vector<uint8_t> initial_logical() const {
    return {initial_.begin() + int64_t(guard_ + shift_), initial_.begin() + int64_t(guard_ + shift_ + bytes_)};
  }
  template <typename T = uint8_t>
  T* data() const { return reinterpret_cast<T*>(buf_->get() + guard_ + shift_); }
  size_t bytes() const { return bytes_; }
  /// The whole allocation now.
  std::vector<uint8_t> now() const { return buf_->download<uint8_t>(); }
  /// The logical region now (bytes() bytes from data()).
  std::vector<uint8_t> logical() const { return buf_->download_range(guard_ + shift_, bytes_); }
  /// Empty if every byte for which inside(offset from data()) is false still holds its
  /// initial value; otherwise a message naming the first changed byte and the count.
  template <class Inside>
  std::string changed_outside(const Inside& inside) const {
    const std::vector<uint8_t> cur = now();
    int64_t count = 0, first = 0;
    for (size_t i = 0; i < cur.size(); ++i) {
      if (cur[i] == initial_[i]) continue;
      const int64_t rel = int64_t(i) - int64_t(guard_ + shift_);
      if (rel >= 0 && rel < int64_t(bytes_) && inside(rel)) continue;
      if (count++ == 0) first = rel;
    }
    if (count == 0) return "";
    std::ostringstream os;
    os << count << " byte(s) outside the logical region changed, first at offset " << first
       << " from data() (allocation: " << guard_ << " guard + " << shift_ << " shift + " << bytes_ << " + " << guard_
       << " guard)";
    return os.str();
  }
  /// Empty if no byte at all changed.
  std::string changed_anywhere() const {
    return changed_outside([](int64_t) { return false; });
  }

 private:
  size_t guard_, shift_, bytes_;
  std::unique_ptr<DeviceBuf> buf_;
  std::vector<uint8_t> initial_;
};

/// inside() predicate of a strided matrix: `rows` rows of `row_bytes` bytes, `stride_bytes` apart.
struct StridedRegion {
  int64_t rows, row_bytes, stride_bytes;
  bool operator()(int64_t rel) const {
    return rel < (rows - 1) * stride_bytes + row_bytes && rel % stride_bytes < row_bytes;
  }
  int64_t span() const { return (rows - 1) * stride_bytes + row_bytes; }
};

}  // namespace mxfp4::test
#endif
