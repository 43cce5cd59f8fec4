// The progress bar's line: filled share, done/total, rate and ETA (not its timing).
#include "analyzer/base/progress.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace perftracker::analyzer {
namespace {

TEST_CASE("progress line: bar, done/total, rate, ETA", "[analyzer][progress]") {
  CHECK(FormatProgress(0, 40, 0.5, 10) == "[..........]  0/40 files  0.0 files/s  ETA ?");
  CHECK(FormatProgress(10, 40, 2.0, 10) == "[##........]  10/40 files  5.0 files/s  ETA 6s");
  CHECK(FormatProgress(20, 40, 4.0, 8) == "[####....]  20/40 files  5.0 files/s  ETA 4s");
  CHECK(FormatProgress(40, 40, 8.0, 8) == "[########]  40/40 files  5.0 files/s  ETA 0s");
  // Minutes and hours once the rest takes that long.
  CHECK(FormatProgress(1, 1001, 1.0, 4) == "[....]  1/1001 files  1.0 files/s  ETA 16m40s");
  CHECK(FormatProgress(1, 16385, 2.0, 4) == "[....]  1/16385 files  0.5 files/s  ETA 9h06m");
  CHECK(FormatProgress(0, 0, 1.0, 4) == "[####]  0/0 files  0.0 files/s  ETA ?");
}

TEST_CASE("progress bar: silent off a terminal and in the first second", "[analyzer][progress]") {
  std::ostringstream not_stderr;
  CHECK(TerminalOrNull(not_stderr) == nullptr);
  ProgressBar silent(nullptr, 10);
  silent.Update(5);  // no stream: nothing to do, nothing to crash on
  std::ostringstream out;
  {
    ProgressBar quick(&out, 10);
    quick.Update(10);
  }
  CHECK(out.str().empty());
}

}  // namespace
}  // namespace perftracker::analyzer
