#include "analyzer/base/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace perftracker::analyzer {
namespace {

std::string Duration(double s) {
  char buf[32];
  const long t = std::lround(s);
  if (t < 60) {
    std::snprintf(buf, sizeof buf, "%lds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  }
  return buf;
}

}  // namespace

std::string FormatProgress(size_t done, size_t total, double elapsed_s, size_t width) {
  const size_t filled = total == 0 ? width : std::min(width, done * width / total);
  std::string out(1, '[');  // appended, not prepended: GCC bug 105329 (false -Wrestrict at -O3)
  out.append(filled, '#').append(width - filled, '.').push_back(']');
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  char buf[96];
  std::snprintf(buf, sizeof buf, "  %zu/%zu files  %.1f files/s  ETA ", done, total, rate);
  out += buf;
  out += rate > 0 ? Duration(static_cast<double>(total - std::min(done, total)) / rate) : "?";
  return out;
}

std::ostream* TerminalOrNull(std::ostream& err) {
  return &err == &std::cerr && isatty(STDERR_FILENO) ? &err : nullptr;
}

ProgressBar::ProgressBar(std::ostream* out, size_t total)
    : out_(out),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      next_draw_(start_ + std::chrono::seconds(1)) {}

void ProgressBar::Update(size_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (out_ == nullptr || now < next_draw_) return;
  next_draw_ = now + std::chrono::milliseconds(250);
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // \r and erase-to-end: a shorter line leaves nothing of the longer one before it.
  *out_ << "\rperftracker: " << FormatProgress(done, total_, elapsed) << "\x1b[K" << std::flush;
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) *out_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

}  // namespace perftracker::analyzer
