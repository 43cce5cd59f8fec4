// The analysis's per-function work on several threads. Items are handed out one at a time, so a
// caller writes each item's result to its own slot and combines them in item order afterwards:
// the report is then the same for any thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace perftracker::analyzer {

// Runs fn(i, worker) for every i in [0, n) on up to `threads` threads, the calling thread among
// them; worker < threads tells a caller which of its per-thread scratch buffers to use. The first
// exception a call throws is rethrown here once every thread has stopped.
template <class Fn>
void ParallelFor(size_t n, int threads, Fn&& fn) {
  const size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  const auto run = [&](size_t worker) {
    try {
      for (size_t i; (i = next.fetch_add(1)) < n;) fn(i, worker);
    } catch (...) {
      next = n;  // the others stop at their next item
      const std::lock_guard lock(failure_mu);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < count; ++w) pool.emplace_back(run, w);
  run(0);
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace perftracker::analyzer
