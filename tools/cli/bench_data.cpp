// Inputs and correctness check of `mxfp4 bench` (see bench_data.hpp).
#include "bench_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>

namespace mxfp4cli::bench {

std::vector<Shape> read_shapes(const std::string& path) {
  std::error_code ec;  // a directory opens as a stream that reads nothing: say so
  if (std::filesystem::is_directory(path, ec)) throw CliError("--shapes " + path + ": is a directory, not a file");
  std::ifstream f(path);
  if (!f) throw CliError("--shapes " + path + ": cannot open");
  std::vector<Shape> shapes;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::vector<std::string> tok;
    for (std::string t; in >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    const std::string where = path + ":" + std::to_string(lineno);
    if (tok.size() != 3) throw CliError("--shapes " + where + ": expected 'M N K', got '" + line + "'");
    int64_t v[3];
    for (int i = 0; i < 3; ++i) {
      size_t used = 0;
      try {
        v[i] = std::stoll(tok[i], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != tok[i].size() || v[i] < 1)
        throw CliError("--shapes " + where + ": '" + tok[i] + "' is not a positive integer");
    }
    if (v[2] % 32 != 0) throw CliError("--shapes " + where + ": K = " + tok[2] + " is not a multiple of 32");
    // Every operand (M*K, N*K, M*N elements) must be addressable: 2^40 elements (2 TB of bf16)
    // is far beyond any machine, and keeps every later size product free of overflow.
    constexpr int64_t kMaxElems = int64_t(1) << 40;
    const char* names[3][2] = {{"M", "K"}, {"N", "K"}, {"M", "N"}};
    const int64_t pairs[3][2] = {{v[0], v[2]}, {v[1], v[2]}, {v[0], v[1]}};
    for (int i = 0; i < 3; ++i)
      if (pairs[i][0] > kMaxElems / pairs[i][1])
        throw CliError("--shapes " + where + ": " + names[i][0] + " * " + names[i][1] + " = " +
                       std::to_string(pairs[i][0]) + " * " + std::to_string(pairs[i][1]) +
                       " elements is too large (limit 2^40)");
    shapes.push_back({v[0], v[1], v[2]});
  }
  if (shapes.empty()) throw CliError("--shapes " + path + ": no shapes in the file");
  return shapes;
}

std::vector<uint16_t> randn_bf16(int64_t rows, int64_t cols, uint64_t seed, const std::vector<uint64_t>& tag) {
  const size_t n = size_t(rows * cols);
  constexpr size_t kChunk = size_t(1) << 20;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint16_t> out(n);
  auto fill = [&](size_t c) {
    std::vector<uint32_t> words = {uint32_t(seed), uint32_t(seed >> 32), uint32_t(c), uint32_t(c >> 32)};
    for (uint64_t t : tag) {
      words.push_back(uint32_t(t));
      words.push_back(uint32_t(t >> 32));
    }
    std::seed_seq sq(words.begin(), words.end());
    std::mt19937_64 gen(sq);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const size_t end = std::min(n, (c + 1) * kChunk);
    for (size_t i = c * kChunk; i < end; ++i) out[i] = mxfp4::fmt::f32_to_bf16(dist(gen));
  };
  const size_t nthreads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), chunks));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < nthreads; ++t)
    pool.emplace_back([&, t] {
      for (size_t c = t; c < chunks; c += nthreads) fill(c);
    });
  for (auto& th : pool) th.join();
  return out;
}

void flag_rows(std::vector<uint16_t>& x, int64_t rows, int64_t K, int64_t count) {
  if (count < 0 || count > rows)
    throw CliError("flagged rows: " + std::to_string(count) + " is not in [0, " + std::to_string(rows) + "]");
  if (count > 0 && K < 64) throw CliError("flagged rows need K >= 64, got K = " + std::to_string(K));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = i * rows / count;
    for (int64_t k = 0; k < 64; ++k) {
      uint16_t& v = x[size_t(r * K + k)];
      v = mxfp4::fmt::f32_to_bf16(std::ldexp(mxfp4::fmt::bf16_to_f32(v), k < 32 ? -60 : 60));
    }
  }
}

void widen_groups(std::vector<uint16_t>& x, int64_t rows, int64_t K) {
  if (K < 64) throw CliError("wide groups need K >= 64, got K = " + std::to_string(K));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k0 = 0; k0 < K; k0 += 128) {
      if (k0 + 32 >= K) break;  // a slice of one block cannot span
      for (int64_t k = k0; k < k0 + 32; ++k) {
        uint16_t& v = x[size_t(r * K + k)];
        v = mxfp4::fmt::f32_to_bf16(std::ldexp(mxfp4::fmt::bf16_to_f32(v), 8));
      }
    }
}

HostMx quantize_bf16(const std::vector<uint16_t>& x, int64_t rows, int64_t K) {
  HostMx m;
  m.rows = rows;
  m.K = K;
  m.codes.resize(size_t(rows * K / 2));
  m.scales.resize(size_t(rows * K / 32));
  mxfp4::quantize(x.data(), mxfp4::DType::bf16, rows, K, K, m.codes.data(), m.scales.data());
  return m;
}

std::vector<int64_t> sample_rows(int64_t M, int64_t N, int64_t K) {
  std::vector<int64_t> rows;
  constexpr double kAllRowsWork = double(int64_t(1) << 27);  // M*N*K up to this: check every row
  if (M <= 16 || double(M) * double(N) * double(K) <= kAllRowsWork) {
    for (int64_t r = 0; r < M; ++r) rows.push_back(r);
    return rows;
  }
  for (int i = 0; i < 16; ++i) rows.push_back(int64_t(std::llround(double(i) * double(M - 1) / 15.0)));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

Reference reference_rows(const HostMx& Aq, const HostMx& B, const std::vector<int64_t>& rows) {
  // The sampled rows of A gathered into one matrix: one reference call decodes B once and
  // runs the rows in parallel (a call per row decoded all of B each time).
  HostMx a;
  a.rows = int64_t(rows.size());
  a.K = Aq.K;
  const size_t cb = size_t(Aq.K / 2), sb = size_t(Aq.K / 32);
  for (int64_t r : rows) {
    a.codes.insert(a.codes.end(), Aq.codes.begin() + ptrdiff_t(size_t(r) * cb), Aq.codes.begin() + ptrdiff_t(size_t(r + 1) * cb));
    a.scales.insert(a.scales.end(), Aq.scales.begin() + ptrdiff_t(size_t(r) * sb),
                    Aq.scales.begin() + ptrdiff_t(size_t(r + 1) * sb));
  }
  Reference ref;
  ref.rows = rows;
  ref.N = B.rows;
  const size_t n = rows.size() * size_t(B.rows);
  ref.cref.assign(n, 0);
  ref.f64.assign(n, 0);
  ref.sabs.assign(n, 0);
  if (!rows.empty()) mxfp4::gemm_reference(a.view(), B.view(), ref.cref.data(), B.rows, ref.f64.data(), ref.sabs.data());
  return ref;
}

CheckResult check_gemm(const Reference& ref, const std::vector<uint16_t>& C) {
  const int64_t N = ref.N;
  CheckResult res;
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    const int64_t m = ref.rows[i];
    for (int64_t c = 0; c < N; ++c) {
      const size_t j = i * size_t(N) + size_t(c);
      const uint16_t bits = C[size_t(m * N + c)];
      const float got = mxfp4::fmt::bf16_to_f32(bits);
      const double r = ref.f64[j];
      const double bound = std::ldexp(std::fabs(r), -8) + std::ldexp(ref.sabs[j], -12);
      bool ok;
      double ratio;
      if (std::isnan(r) || std::isnan(got)) {
        ok = std::isnan(r) && std::isnan(got);
        ratio = ok ? 0 : std::numeric_limits<double>::infinity();
      } else if (std::isinf(got)) {
        ok = ref.cref[j] == bits;
        ratio = ok ? 0 : std::numeric_limits<double>::infinity();
      } else {
        const double err = std::fabs(double(got) - r);
        ratio = bound > 0 ? err / bound : (err == 0 ? 0 : std::numeric_limits<double>::infinity());
        ok = err <= bound;
      }
      res.max_err_ratio = std::max(res.max_err_ratio, ratio);
      if (!ok && res.correct) {
        std::ostringstream s;
        s.precision(9);
        s << "C[" << m << ", " << c << "] = " << got << ", ref = " << r << ", bound = " << bound;
        res.first_failure = s.str();
      }
      res.correct = res.correct && ok;
    }
  }
  res.rows_checked = int64_t(ref.rows.size());
  return res;
}

CheckResult check_gemm(const HostMx& Aq, const HostMx& B, const std::vector<uint16_t>& C,
                       const std::vector<int64_t>& rows) {
  return check_gemm(reference_rows(Aq, B, rows), C);
}

}  // namespace mxfp4cli::bench
