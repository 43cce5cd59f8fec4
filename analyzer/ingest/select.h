// Which windows an analysis covers (analyze --last N, --since DURATION, --iterations A:B): a live
// or very long job is analyzed over the period that matters. Each rank is selected alone, by its
// own newest window, so a rank that stopped early (a hang) keeps its last windows. A window must
// pass every selection given (--last 2 --iterations 0:100 is the newest two, if they are in
// 0..99); --last counts the ring's records, so the older ones are not even read.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "schemas/format/window.h"

namespace perftracker::analyzer {

struct WindowSelection {
  uint64_t last = 0;        // > 0: each rank's newest `last` records
  uint64_t since_ns = 0;    // > 0: windows that end at most this long before the rank's newest
  uint64_t iter_begin = 0;  // windows whose first iteration is in [iter_begin, iter_end)
  uint64_t iter_end = std::numeric_limits<uint64_t>::max();
  // Also each rank's open window, from its live slot (watch: windows last 20 s or more, and a
  // fault must not wait for the window that holds it to end).
  bool open = false;
  bool everything() const {
    return last == 0 && since_ns == 0 && iter_begin == 0 &&
           iter_end == std::numeric_limits<uint64_t>::max();
  }
};

// Parses "90s", "15m", "2h", "1d", "500ms" or plain seconds ("30", "2.5") into nanoseconds.
bool ParseDuration(const std::string& text, uint64_t* ns);
// Parses "A:B" (iterations A to B - 1), "A:" (from A on) or ":B" (before B), with A < B.
bool ParseIterations(const std::string& text, WindowSelection* selection);

// One of --last N, --since DURATION, --iterations A:B and its value into *selection; false and
// a one-line *error naming the flag and what it wants.
bool ParseSelectionFlag(const std::string& flag, const std::string& value,
                        WindowSelection* selection, std::string* error);

// The wall-clock time a window ended (its real start plus its monotonic length).
inline uint64_t WindowEndRealNs(const format::Window& w) {
  return w.start_real_ns + format::WindowLengthNs(w);
}

// Whether `w` is selected; `since_from` is the earliest end allowed (0: any).
inline bool Selected(const WindowSelection& s, const format::Window& w, uint64_t since_from) {
  return w.iter_begin >= s.iter_begin && w.iter_begin < s.iter_end &&
         WindowEndRealNs(w) >= since_from;
}

}  // namespace perftracker::analyzer
