// A progress bar for reads that take a while (ingest of many ring files): on a terminal only,
// once the work has run over a second, redrawn at most four times a second and erased when done,
// so logs, pipes and quick runs see nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace perftracker::analyzer {

// "[#########...............]  12/40 files  3.2 files/s  ETA 9s": the bar `width` cells wide;
// the rate over `elapsed_s`; the ETA at that rate ("ETA ?" before anything is done).
std::string FormatProgress(size_t done, size_t total, double elapsed_s, size_t width = 24);

// `err` when it is the process's stderr and that is a terminal, else null (silent).
std::ostream* TerminalOrNull(std::ostream& err);

class ProgressBar {
 public:
  // Null `out`: every call does nothing.
  ProgressBar(std::ostream* out, size_t total);
  ~ProgressBar() { Finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Update(size_t done);
  void Finish();  // erases the bar, if it was drawn

 private:
  std::ostream* out_;
  size_t total_;
  std::chrono::steady_clock::time_point start_, next_draw_;
  bool drawn_ = false;
};

}  // namespace perftracker::analyzer
