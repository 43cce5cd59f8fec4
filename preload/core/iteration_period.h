// Iterations from the period of the collective sequence, for processes without Python step
// markers (a C++ trainer, an unrecognized loop).
//
// Every rank of a communicator launches the same collectives in the same order, so the sequence
// of collective patterns (op, bytes, peer) indexed by the per-communicator sequence number is the
// same everywhere. After a warm-up prefix (DDP's initial broadcasts, a first iteration with other
// buckets) it repeats with the iteration. The detector finds the smallest symbol period p whose
// run has lasted kConfirmPeriods more periods (and kMinLaunches launches), then picks the
// iteration length L and the boundary collective:
//  - launch gaps first: the forward pass leaves the largest gap between two launches. When the
//    big gaps (at least half the largest, every other gap at most a third of it) recur every D
//    launches, D a multiple of p, over kConfirmPeriods+1 occurrences, then L = D and the boundary
//    is the launch before each big gap. This resolves all-equal collectives (p = 1) and
//    iterations that repeat a pattern (D = m * p).
//  - without such gaps (or when D == p), L = p and the boundary is the last launch of each
//    period counted from the start of the periodic part: symbols only, so ranks agree exactly.
// Boundaries are sequence numbers, not times: iteration k ends at the k-th boundary counted from
// the start of the periodic part (found from symbols alone), so every rank numbers them alike
// whenever it happens to confirm the period; boundaries that passed before confirmation are
// reported then, with their own launch times. A launch that breaks the pattern (or a missing
// sequence number) drops the lock; numbering continues at the next lock.
//
// Single-threaded (the writer thread). Memory: per communicator a history of at most
// kMaxHistory launches while searching and kMaxPeriod run counters; none once locked but the
// pattern itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perftracker::preload {

struct IterationBoundary {
  uint64_t iteration;  // 0, 1, 2, ...
  uint64_t seq;        // sequence number of the boundary collective on its communicator
  uint64_t t_ns;       // its launch time: the end of the iteration
};

// One communicator. Feed launches in sequence-number order.
class PeriodDetector {
 public:
  static constexpr uint32_t kMaxPeriod = 1024;
  static constexpr uint32_t kConfirmPeriods = 3;
  static constexpr uint32_t kMinLaunches = 16;
  static constexpr size_t kMaxHistory = 16384;

  // Appends the boundaries this launch reveals (several at once when the period is confirmed).
  void Feed(uint64_t seq, uint32_t symbol, uint64_t t_ns, std::vector<IterationBoundary>* out);

  bool locked() const { return length_ != 0; }
  uint32_t length() const { return length_; }  // L while locked, else 0
  uint64_t next_iteration() const { return next_iteration_; }
  uint64_t locks() const { return locks_; }

 private:
  void Search(uint64_t seq, std::vector<IterationBoundary>* out);
  bool TryLock(uint32_t p, uint64_t seq, std::vector<IterationBoundary>* out);
  void Lock(uint32_t length, uint64_t start, uint64_t boundary, uint64_t last,
            std::vector<IterationBoundary>* out);
  void Restart(uint64_t seq);

  bool started_ = false;
  uint64_t next_seq_ = 0;
  uint64_t next_iteration_ = 0;
  uint64_t locks_ = 0;
  // Searching: launches base_, base_+1, ...; run_[p]: how many latest launches equal the one p
  // before them.
  uint64_t base_ = 0;
  std::vector<uint32_t> symbols_;
  std::vector<uint64_t> times_;
  std::vector<uint32_t> run_;
  uint64_t next_try_ = 0;
  // Locked: pattern_[k] is the symbol of seq origin_ + k (mod L).
  uint32_t length_ = 0;
  uint64_t origin_ = 0;
  uint64_t next_boundary_ = 0;
  std::vector<uint32_t> pattern_;
};

// All communicators of a process. The first one to lock (in launch order: program order, the
// same on every rank of an SPMD job) becomes the process's iteration source; the others are
// dropped. At most kMaxComms communicators are searched at once.
class IterationPeriod {
 public:
  static constexpr size_t kMaxComms = 8;

  void Feed(uint64_t comm_id, uint64_t seq, uint32_t symbol, uint64_t t_ns,
            std::vector<IterationBoundary>* out);
  // The source communicator, once chosen.
  bool has_source() const { return source_ >= 0; }
  uint64_t source_comm() const { return has_source() ? comms_[source_].id : 0; }

 private:
  struct Comm {
    uint64_t id;
    PeriodDetector detector;
  };
  std::vector<Comm> comms_;
  int source_ = -1;
};

}  // namespace perftracker::preload
