#include "analyzer/selftest/checks.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

namespace perftracker::selftest {
namespace {

namespace fs = std::filesystem;

// Calls the library records under the workload's own name for them: the count in the profile
// must equal the count in the transcript. Everything else the workload calls is only compared
// between runs (a return code the library changed is a failure too).
bool Recorded(const std::string& name) {
  static const char* const kPrefixes[] = {"cudaLaunchKernel",
                                          "cudaGraphLaunch",
                                          "cudaMemcpy",
                                          "cudaMemsetAsync",
                                          "cudaEventRecord",
                                          "cudaEventSynchronize",
                                          "cudaStreamSynchronize",
                                          "cudaStreamWaitEvent",
                                          "cudaDeviceSynchronize",
                                          "cudaMalloc",
                                          "cudaFree"};
  for (const char* p : kPrefixes) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

constexpr std::string_view kCaptured = " (captured)";

long Number(const std::string& s) {
  try {
    return std::stol(s);
  } catch (...) {
    return -1;
  }
}

std::string FirstDifference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)";
    const std::string y = i < b.size() ? b[i] : "(nothing)";
    if (x != y) return "plain '" + x + "', here '" + y + "'";
  }
  return {};
}

}  // namespace

ParsedTranscript ParseTranscript(const std::string& text) {
  ParsedTranscript t;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    const std::string tag = line.substr(0, space),
                      rest = space == line.npos ? "" : line.substr(space + 1);
    const size_t last = rest.rfind(' ');
    const std::string head = rest.substr(0, last),
                      tail = last == rest.npos ? "" : rest.substr(last + 1);
    if (tag == "fatal") {
      t.fatal = rest;
    } else if (tag == "call") {
      // "call NAME rc=R xN": NAME may hold spaces.
      t.compared.push_back(line);
      const size_t rc = head.rfind(" rc=");
      if (rc != head.npos && tail.starts_with("x"))
        t.calls[head.substr(0, rc)] += Number(tail.substr(1));
    } else if (tag == "result") {
      t.results[head] = tail;
    } else if (tag == "ran") {
      t.compared.push_back(line);
      t.ran[head] = Number(tail);
    } else if (tag == "skip") {
      t.compared.push_back(line);
      t.skips.push_back(rest);
    } else if (tag == "runtime") {
      t.compared.push_back(line);
    } else if (tag == "info" && rest.starts_with("cupti ")) {
      const std::string what = rest.substr(6);
      if (what.starts_with("counting ") || what.starts_with("skip ")) {
        t.cupti_note = what;
      } else {
        t.cupti[head.substr(6)] = Number(tail);
      }
    } else if (tag == "info" && head == "launch_ns") {
      t.launch_ns = Number(tail);
    }
  }
  return t;
}

Profile ReadProfile(const std::string& dir) {
  Profile p;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().filename() != "rank-0.ptr") continue;
    format::RingReader reader;
    if (reader.OpenFile(it->path().string(), &p.error) != format::ReadStatus::kOk) return p;
    p.found = true;
    reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
      format::Window w;
      if (!format::DecodeWindow(bytes, &w)) return true;
      p.dropped_events += w.health.dropped_events;
      for (const format::FunctionPattern& f : w.functions) {
        Profile::Counts* c = f.kind == format::FunctionKind::kKernel ? &p.kernels[f.name]
                             : f.parent < 0                          ? &p.functions[f.name]
                                                                     : nullptr;
        if (c == nullptr) continue;
        c->count += f.count;
        c->captured += f.captured;
      }
      for (const format::CollectivePattern& c : w.collectives) p.collectives[c.name] += c.count;
      return true;
    });
  }
  if (!p.found && p.error.empty()) p.error = "no rank-0.ptr under " + dir;
  return p;
}

Report Check(const std::vector<RunResult>& runs, const RunResult* cupti, long warn_ns) {
  Report r;
  for (const RunResult& run : runs) r.columns.push_back(run.label);
  const size_t n = runs.size();
  std::vector<ParsedTranscript> t;
  for (const RunResult& run : runs) t.push_back(ParseTranscript(run.out));
  auto add = [&](std::string check, std::vector<std::string> cells, std::string verdict) {
    if (verdict == "FAIL") r.failed = true;
    r.rows.push_back({std::move(check), std::move(cells), std::move(verdict)});
  };

  std::vector<std::string> cells;
  bool ok = true;
  for (const RunResult& run : runs) {
    cells.push_back(run.status);
    if (!run.ok) {
      ok = false;
      r.notes.push_back(run.label + ": the workload did not finish (" + run.status +
                        "); stderr: " + run.err_path);
    }
  }
  add("workload exit", cells, ok ? "ok" : "FAIL");

  // Calls and return codes, skips: what the program saw must not depend on the library.
  cells = {std::to_string(t[0].compared.size()) + " lines"};
  ok = true;
  for (size_t i = 1; i < n; ++i) {
    const std::string diff = FirstDifference(t[0].compared, t[i].compared);
    cells.push_back(diff.empty() ? "same" : "differ");
    if (!diff.empty()) {
      ok = false;
      r.notes.push_back(runs[i].label + ": calls differ from the plain run: " + diff);
    }
  }
  add("calls and return codes", cells, ok ? "ok" : "FAIL");

  // Results: FNV digests of what the device computed.
  for (const auto& [name, digest] : t[0].results) {
    cells = {digest.substr(0, 8)};
    ok = true;
    for (size_t i = 1; i < n; ++i) {
      const auto it = t[i].results.find(name);
      const std::string got = it == t[i].results.end() ? "missing" : it->second;
      cells.push_back(got == digest ? "same" : got.substr(0, 8));
      if (got != digest) {
        ok = false;
        r.notes.push_back(runs[i].label + ": result '" + name + "' differs from the plain run's");
      }
    }
    add("result " + name, cells, ok ? "ok" : "FAIL");
  }

  // Counts: the profile against what the workload called.
  std::vector<Profile> profiles(n);
  cells = {"-"};
  ok = true;
  for (size_t i = 1; i < n; ++i) {
    profiles[i] = ReadProfile(runs[i].ring_dir);
    cells.push_back(profiles[i].found ? "read" : "missing");
    if (!profiles[i].found) {
      ok = false;
      r.notes.push_back(runs[i].label + ": " + profiles[i].error);
    }
  }
  add("profile written", cells, ok ? "ok" : "FAIL");
  struct Expected {
    std::string check;
    long count;
    uint64_t (*get)(const Profile&, const std::string&);
    std::string key;
  };
  std::vector<Expected> expected;
  const auto function_count = [](const Profile& p, const std::string& k) -> uint64_t {
    const auto it = p.functions.find(k);
    return it == p.functions.end() ? 0 : it->second.count;
  };
  const auto function_captured = [](const Profile& p, const std::string& k) -> uint64_t {
    const auto it = p.functions.find(k);
    return it == p.functions.end() ? 0 : it->second.captured;
  };
  const auto kernel_count = [](const Profile& p, const std::string& k) -> uint64_t {
    uint64_t sum = 0;
    for (const auto& [name, c] : p.kernels) sum += name.starts_with(k) ? c.count : 0;
    return sum;
  };
  const auto kernel_captured = [](const Profile& p, const std::string& k) -> uint64_t {
    const auto it = p.kernels.find(k);
    return it == p.kernels.end() ? 0 : it->second.captured;
  };
  const auto collective_count = [](const Profile& p, const std::string& k) -> uint64_t {
    const auto it = p.collectives.find(k);
    return it == p.collectives.end() ? 0 : it->second;
  };
  for (const auto& [name, count] : t[0].calls) {
    if (!Recorded(name)) continue;
    if (name.ends_with(kCaptured)) {
      const std::string base = name.substr(0, name.size() - kCaptured.size());
      expected.push_back({name, count, function_captured, base});
    } else {
      expected.push_back({name, count, function_count, name});
    }
  }
  // The workload's one kernel: every launch is a launch of it.
  if (const auto it = t[0].calls.find("cudaLaunchKernel"); it != t[0].calls.end()) {
    expected.push_back({"kernel selftest_saxpy", it->second, kernel_count, "selftest_saxpy"});
  }
  if (const auto it = t[0].calls.find("cudaLaunchKernel (captured)"); it != t[0].calls.end()) {
    expected.push_back(
        {"kernel selftest_saxpy (captured)", it->second, kernel_captured, "selftest_saxpy"});
  }
  if (const auto it = t[0].calls.find("cublasSgemm_v2"); it != t[0].calls.end()) {
    expected.push_back({"cublasSgemm", it->second, kernel_count, "cublasSgemm "});
  }
  if (const auto it = t[0].calls.find("ncclAllReduce"); it != t[0].calls.end()) {
    expected.push_back({"collective ncclAllReduce", it->second, collective_count, "ncclAllReduce"});
  }
  for (const Expected& e : expected) {
    cells = {std::to_string(e.count)};
    ok = true;
    for (size_t i = 1; i < n; ++i) {
      if (!profiles[i].found) {
        cells.push_back("-");
        continue;
      }
      const uint64_t got = e.get(profiles[i], e.key);
      cells.push_back(std::to_string(got));
      if (got != uint64_t(e.count)) {
        ok = false;
        r.notes.push_back(runs[i].label + ": the profile has " + std::to_string(got) + " of '" +
                          e.check + "', the workload made " + std::to_string(e.count));
      }
    }
    add("count " + e.check, cells, ok ? "ok" : "FAIL");
  }
  cells = {"-"};
  ok = true;
  for (size_t i = 1; i < n; ++i) {
    cells.push_back(std::to_string(profiles[i].dropped_events));
    ok = ok && profiles[i].dropped_events == 0;
  }
  add("events dropped", cells, ok ? "ok" : "warn");
  if (!ok)
    r.notes.push_back("dropped events: per-thread buffers overflowed; counts can fall short");

  // CUPTI's activity records: what the device ran, counted by an independent observer.
  if (cupti != nullptr) {
    const ParsedTranscript c = ParseTranscript(cupti->out);
    if (!cupti->ok || c.compared != t[0].compared || c.results != t[0].results) {
      add("CUPTI counting run", {cupti->status}, "FAIL");
      r.notes.push_back("CUPTI counting run: did not reproduce the plain run (" + cupti->status +
                        ", stderr: " + cupti->err_path + ")");
    } else if (!c.cupti_note.starts_with("counting")) {
      r.notes.push_back("skip: CUPTI: " + c.cupti_note.substr(c.cupti_note.find(' ') + 1));
    } else {
      for (const auto& [what, count] : t[0].ran) {
        const std::string key = what.starts_with("copy ") ? what : "kernel " + what;
        const auto it = c.cupti.find(key);
        const long got = it == c.cupti.end() ? 0 : it->second;
        std::vector<std::string> row = {std::to_string(got)};
        row.resize(n, "-");
        const bool match = got == count;
        add("CUPTI " + what + " (ran " + std::to_string(count) + ")", row, match ? "ok" : "FAIL");
        if (!match) {
          r.notes.push_back("CUPTI recorded " + std::to_string(got) + " of '" + what +
                            "', the workload ran " + std::to_string(count));
        }
      }
      if (const auto it = c.cupti.find("dropped"); it != c.cupti.end() && it->second > 0) {
        r.notes.push_back("CUPTI dropped " + std::to_string(it->second) + " records");
      }
    }
  }

  // Cost per launch: warned about, never failed (a shared node's noise would decide).
  if (t[0].launch_ns >= 0) {
    cells = {std::to_string(t[0].launch_ns) + " ns"};
    ok = true;
    for (size_t i = 1; i < n; ++i) {
      const long added = t[i].launch_ns - t[0].launch_ns;
      // Appended, not prepended to a temporary: GCC bug 105329 (false -Wrestrict at -O3).
      cells.push_back(t[i].launch_ns < 0 ? "-"
                                         : std::string(added >= 0 ? "+" : "")
                                               .append(std::to_string(added))
                                               .append(" ns"));
      if (added > warn_ns) {
        ok = false;
        r.notes.push_back(runs[i].label + ": a launch costs " + std::to_string(added) +
                          " ns more than without the library (every call device-timed here)");
      }
    }
    add("cudaLaunchKernel cost", cells, ok ? "ok" : "warn");
  }
  for (const std::string& s : t[0].skips) r.notes.push_back("skip: " + s);
  return r;
}

void PrintReport(const Report& report, std::ostream& out) {
  size_t w0 = 5;
  for (const Row& row : report.rows) w0 = std::max(w0, row.check.size());
  std::vector<size_t> w;
  for (const std::string& c : report.columns) w.push_back(std::max<size_t>(c.size(), 8));
  for (const Row& row : report.rows) {
    for (size_t i = 0; i < row.cells.size() && i < w.size(); ++i)
      w[i] = std::max(w[i], row.cells[i].size());
  }
  out << std::left << std::setw(int(w0)) << "check";
  for (size_t i = 0; i < w.size(); ++i) out << " | " << std::setw(int(w[i])) << report.columns[i];
  out << " | verdict\n";
  for (const Row& row : report.rows) {
    out << std::setw(int(w0)) << row.check;
    for (size_t i = 0; i < w.size(); ++i) {
      out << " | " << std::setw(int(w[i])) << (i < row.cells.size() ? row.cells[i] : "");
    }
    out << " | " << row.verdict << "\n";
  }
  for (const std::string& note : report.notes) out << note << "\n";
  out << (report.failed ? "selftest FAILED\n" : "selftest passed\n");
}

}  // namespace perftracker::selftest
