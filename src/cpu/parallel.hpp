// Minimal fork-join over std::thread for the CPU backend (no pool: every call is coarse).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "mxfp4/mxfp4.hpp"

namespace mxfp4::cpu {

/// Worker count for Exec::threads (0 = hardware concurrency, at least 1).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

/// Calls fn(begin, end) on contiguous chunks of [0, n) using at most `threads` threads, each
/// chunk holding at least `min_items` items where possible. The calling thread runs the first
/// chunk. The first exception thrown by any chunk is rethrown after all have finished.
template <class F>
void parallel_for(int64_t n, int threads, int64_t min_items, F&& fn) {
  if (n <= 0) return;
  const int64_t by_work = std::max<int64_t>(1, n / std::max<int64_t>(1, min_items));
  const int64_t t = std::min<int64_t>({int64_t(std::max(threads, 1)), by_work, n});
  if (t <= 1) {
    fn(int64_t(0), n);
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
  auto run = [&](int64_t i) {
    try {
      fn(n * i / t, n * (i + 1) / t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(t - 1));
  try {
    for (int64_t i = 1; i < t; ++i) pool.emplace_back(run, i);
  } catch (const std::system_error& e) {
    for (auto& th : pool) th.join();
    throw Error(std::string("mxfp4: could not start a CPU worker thread: ") + e.what());
  }
  run(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace mxfp4::cpu
