// Independent, deliberately simple implementation of spec §2 for tests (double arithmetic,
// exhaustive nearest search; shares no code with include/mxfp4/format.hpp).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::test {

struct RefBlock {
  uint8_t scale = 0;
  std::array<uint8_t, 32> codes{};
};

/// e2m1 magnitude table of spec §1.1.
inline constexpr double kE2m1Mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

/// Value of an e2m1 code per the spec table.
inline double ref_e2m1(uint8_t code) { return (code & 8) ? -kE2m1Mag[code & 7] : kE2m1Mag[code & 7]; }

/// Shared exponent s of spec §2 for a finite block maximum amax under `rule`.
inline int ref_shared_exponent(double amax, ScaleRule rule) {
  if (amax == 0.0) return -127;
  int e = 0;
  const double f = std::frexp(amax, &e);  // amax = f 2^e, f in [0.5, 1)
  const int fl = e - 1;
  const double m = 2.0 * f;  // amax = m 2^fl, m in [1, 2)
  int s = 0;
  if (rule == ScaleRule::aiter) {
    const int rounded = fl + (m >= 1.75 ? 1 : 0);  // amax rounded to one significand bit
    if (rounded >= 128) return 127;                // exponent field 255
    s = rounded - 2;
  } else if (rule == ScaleRule::floor) {
    s = fl - 2;
  } else {  // rceil: smallest s with amax / 2^s <= 6
    s = fl - 4;
    while (std::ldexp(amax, -s) > 6.0) ++s;
  }
  return s < -127 ? -127 : (s > 127 ? 127 : s);
}

/// Nearest e2m1 magnitude code of a >= 0, ties to the even code, saturating at 6.
inline uint8_t ref_round_mag(double a) {
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(a - kE2m1Mag[c]), db = std::fabs(a - kE2m1Mag[best]);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return uint8_t(best);
}

/// Quantizes one 32-element block (values exactly representable in double).
inline RefBlock ref_quantize(const double* x, ScaleRule rule) {
  RefBlock out;
  double amax = 0.0;
  for (int i = 0; i < 32; ++i) {
    if (!std::isfinite(x[i])) {
      out.scale = 0xFF;
      return out;  // codes all 0 (spec §2.1)
    }
    amax = std::max(amax, std::fabs(x[i]));
  }
  const int s = ref_shared_exponent(amax, rule);
  out.scale = uint8_t(s + 127);
  for (int i = 0; i < 32; ++i) {
    const double y = std::ldexp(x[i], -s);
    out.codes[size_t(i)] = uint8_t(ref_round_mag(std::fabs(y)) | (std::signbit(x[i]) ? 8 : 0));
  }
  return out;
}

/// Hex digit string ("764202E8...") -> one code per digit; spaces ignored.
inline std::vector<uint8_t> parse_nibbles(const std::string& s) {
  std::vector<uint8_t> out;
  for (char ch : s) {
    if (ch == ' ') continue;
    out.push_back(uint8_t(std::stoi(std::string(1, ch), nullptr, 16)));
  }
  return out;
}

/// "67 24 20 8E" -> bytes.
inline std::vector<uint8_t> parse_bytes(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(uint8_t(std::stoi(s.substr(i, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

/// Repeats a string n times.
inline std::string rep(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " " : "") + s;
  return out;
}

/// Exact fp32 -> IEEE binary16 bits, or nothing when v is not a binary16 value (table built
/// from an independent decoder).
inline std::optional<uint16_t> exact_f16(float v) {
  static const std::map<uint32_t, uint16_t> table = [] {
    std::map<uint32_t, uint16_t> t;
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const uint32_t e = (h >> 10) & 31, m = h & 1023;
      if (e == 31) continue;
      const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), int(e) - 25);
      const float f = float((h & 0x8000) ? -mag : mag);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      t[u] = uint16_t(h);
    }
    return t;
  }();
  uint32_t u;
  std::memcpy(&u, &v, 4);
  auto it = table.find(u);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

/// Exact fp32 -> bf16 bits, or nothing when v is not a bf16 value.
inline std::optional<uint16_t> exact_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0xFFFFu) != 0) return std::nullopt;
  return uint16_t(u >> 16);
}

}  // namespace mxfp4::test
