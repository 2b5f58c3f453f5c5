// Helpers shared by the libFuzzer targets in fuzz/ (docs/hardening.md, "Fuzzing").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mxfp4::fuzz {

/// A failed property: prints the message and aborts, so that libFuzzer records the input.
#define FUZZ_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fprintf(stderr, "\n");                                                    \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

/// Consumes a fuzz input from the front: parameters first, then raw bytes. Reads past the end
/// give zeros, so every input is usable.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  uint16_t u16() { return uint16_t(u8() | (u8() << 8)); }
  uint32_t u32() { return uint32_t(u16()) | (uint32_t(u16()) << 16); }
  uint64_t u64() { return uint64_t(u32()) | (uint64_t(u32()) << 32); }
  /// An integer in [lo, hi] (hi - lo < 2^16).
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(u16() % uint64_t(hi - lo + 1)); }
  bool flag() { return (u8() & 1) != 0; }
  size_t left() const { return i_ < n_ ? n_ - i_ : 0; }
  /// The remaining bytes, repeated to fill `n` bytes (zeros when nothing is left).
  std::vector<uint8_t> fill(size_t n) {
    std::vector<uint8_t> out(n, 0);
    const size_t m = left();
    if (m > 0)
      for (size_t k = 0; k < n; ++k) out[k] = p_[i_ + k % m];
    return out;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

/// Canary byte pattern written around outputs; any change means an out-of-bounds write.
inline uint8_t canary(size_t i) { return uint8_t(0xA5 ^ (i * 0x3B)); }

inline void poison(uint8_t* p, size_t n, size_t salt = 0) {
  for (size_t i = 0; i < n; ++i) p[i] = canary(i + salt);
}

/// True when [p, p + n) still holds the canary pattern written by poison(p, n, salt).
inline bool intact(const uint8_t* p, size_t n, size_t salt = 0) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != canary(i + salt)) return false;
  return true;
}

}  // namespace mxfp4::fuzz
