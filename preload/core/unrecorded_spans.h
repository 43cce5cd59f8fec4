// When Python functions went unrecorded: another tool's frame evaluator held the PEP 523 slot
// without calling ours, or reset it to the default (python/cpython_install.cpp). The CPython
// check writes a span per loss (GIL held: one writer at a time); the writer thread flags every
// window that overlaps one (format::Window::python_unrecorded).
//
// Times, not a "lost since the last window" bit: the writer builds a window a drain period after
// its last iteration ended, and a loss that begins in that gap belongs to the next window only.
// A seqlock, not a mutex: the check runs in gc callbacks, also in a forked child whose writer
// thread is gone, and must never wait for the writer.
#pragma once

#include <atomic>
#include <cstdint>

namespace perftracker::preload {

class UnrecordedSpans {
 public:
  // Spans kept: windows are built in order, a fraction of a second behind, so only the spans of
  // the last moments can still overlap an unbuilt window; older ones are overwritten.
  static constexpr uint32_t kKept = 16;

  // A loss that may have begun as early as `begin_ns` (the last check that saw us called).
  void Begin(uint64_t begin_ns) {
    Write([&] {
      const uint32_t n = count_.load(std::memory_order_relaxed);
      spans_[n % kKept].begin.store(begin_ns, std::memory_order_release);
      spans_[n % kKept].end.store(kOpen, std::memory_order_release);
      count_.store(n + 1, std::memory_order_release);
    });
  }
  // The open span, if any, ends: Python is recorded again from `end_ns`.
  void End(uint64_t end_ns) {
    Write([&] {
      const uint32_t n = count_.load(std::memory_order_relaxed);
      if (n == 0) return;
      Span& s = spans_[(n - 1) % kKept];
      if (s.end.load(std::memory_order_relaxed) == kOpen) {
        s.end.store(end_ns, std::memory_order_release);
      }
    });
  }
  // Whether a kept span overlaps [start_ns, end_ns). Writer thread; never blocks the check.
  // Release stores and acquire loads order the sequence number around the spans without fences
  // (which TSan cannot see): a load that sees a store of an update sees that update's odd number.
  // An update never finishing (the thread that made it stopped mid-way in a fork) flags the window.
  bool Overlaps(uint64_t start_ns, uint64_t end_ns) const {
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const uint32_t before = seq_.load(std::memory_order_acquire);
      if (before & 1) continue;  // a check is mid-update (a few stores)
      bool overlaps = false;
      const uint32_t n = count_.load(std::memory_order_acquire);
      for (uint32_t i = n > kKept ? n - kKept : 0; i < n; ++i) {
        const Span& s = spans_[i % kKept];
        const uint64_t begin = s.begin.load(std::memory_order_acquire);
        const uint64_t end = s.end.load(std::memory_order_acquire);
        overlaps |= begin < end_ns && end > start_ns;
      }
      if (seq_.load(std::memory_order_relaxed) == before) return overlaps;
    }
    return true;
  }

 private:
  static constexpr uint64_t kOpen = ~uint64_t{0};
  static constexpr int kAttempts = 1 << 20;
  struct Span {
    std::atomic<uint64_t> begin{0};
    std::atomic<uint64_t> end{0};
  };
  template <typename F>
  void Write(F update) {
    const uint32_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    update();
    seq_.store(s + 2, std::memory_order_release);
  }
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> count_{0};
  Span spans_[kKept];
};

inline UnrecordedSpans g_python_unrecorded;

}  // namespace perftracker::preload
