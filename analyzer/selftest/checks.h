// What `perftracker selftest` concludes from its runs of the workload: transcripts read back,
// the profiles read with the format module, and the rows of the table it prints.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace perftracker::selftest {

// One run of perftracker-selftest-workload.
struct RunResult {
  std::string label;     // the column: "plain", "library", ...
  std::string status;    // "0", "exit 3", "signal 11", "timeout"
  bool ok = false;       // exited 0
  std::string out;       // the transcript
  std::string ring_dir;  // PERFTRACKER_DIR of a library run, else empty
  std::string err_path;  // its stderr
};

struct ParsedTranscript {
  std::string fatal;                           // the workload could not run (no runtime, no device)
  std::vector<std::string> compared;           // call / ran / skip lines, in order
  std::map<std::string, std::string> results;  // digests by name
  std::map<std::string, long> calls;           // by recorded name, over every return code
  std::map<std::string, long> ran;             // "selftest_saxpy", "copy HtoD", ...
  std::vector<std::string> skips;
  std::map<std::string, long> cupti;  // "kernel NAME", "copy HtoD", "dropped"
  std::string cupti_note;             // "counting libcupti.so.13" or "skip <why>"
  long launch_ns = -1;
};
ParsedTranscript ParseTranscript(const std::string& text);

// A library run's profile, summed over every window of every rank-0 file under its directory.
struct Profile {
  bool found = false;
  std::string error;
  struct Counts {
    uint64_t count = 0;
    uint64_t captured = 0;
  };
  std::map<std::string, Counts> functions;  // top-level functions by name (API, copy, sync)
  std::map<std::string, Counts> kernels;    // kernel-kind functions by name (incl. cuBLAS GEMMs)
  std::map<std::string, uint64_t> collectives;
  uint64_t dropped_events = 0;
};
Profile ReadProfile(const std::string& dir);

struct Row {
  std::string check;
  std::vector<std::string> cells;  // one per run column
  std::string verdict;             // "ok", "FAIL", "warn", "skip"
};

struct Report {
  std::vector<std::string> columns;
  std::vector<Row> rows;
  std::vector<std::string> notes;  // what a FAIL or warn means, one line each
  bool failed = false;
};

// `runs[0]` is the plain run, the others run under the library; `cupti` is the plain run that
// counted with CUPTI (null when not run). Launch cost above `warn_ns` per call is a warning.
Report Check(const std::vector<RunResult>& runs, const RunResult* cupti, long warn_ns);
void PrintReport(const Report& report, std::ostream& out);

}  // namespace perftracker::selftest
