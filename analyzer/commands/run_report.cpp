#include "analyzer/commands/run_report.h"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace perftracker::analyzer {
namespace fs = std::filesystem;

RunRegistry::RunRegistry() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/perftracker-run-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

RunRegistry::~RunRegistry() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

namespace {

RunEntries ReadEntries(const std::string& dir) {
  RunEntries entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t dot = name.find('.');
    if (name.starts_with(".") || dot == std::string::npos) continue;  // written aside, unfinished
    std::ifstream in(e.path());
    std::stringstream detail;
    detail << in.rdbuf();
    entries[name.substr(0, dot)].push_back(detail.str());
  }
  return entries;
}

std::vector<std::string> EntriesFor(const RunEntries& entries, const char* role) {
  const auto it = entries.find(role);
  return it == entries.end() ? std::vector<std::string>{} : it->second;
}

// "N rank files in HOST_DIR (rank-0.ptr, ...)" per host directory, then the analyze command per
// job directory (a host directory's parent: analyze reads every host of the job under it).
std::vector<std::string> WhereFilesAre(std::vector<std::string> files) {
  std::sort(files.begin(), files.end());
  std::map<std::string, std::vector<std::string>> by_host;
  std::set<std::string> jobs;
  for (const std::string& f : files) {
    const fs::path p(f);
    by_host[p.parent_path().string()].push_back(p.filename().string());
    jobs.insert(p.parent_path().parent_path().string());
  }
  std::vector<std::string> lines;
  for (const auto& [host, names] : by_host) {
    std::string line = "perftracker: " + std::to_string(names.size()) + " rank file" +
                       (names.size() == 1 ? "" : "s") + " in " + host + " (";
    for (size_t i = 0; i < names.size() && i < 4; ++i) line += (i ? ", " : "") + names[i];
    line += names.size() > 4 ? ", ...)" : ")";
    lines.push_back(line);
  }
  for (const std::string& job : jobs)
    lines.push_back("perftracker: next: perftracker analyze " + job);
  return lines;
}

}  // namespace

std::vector<std::string> DescribeRun(const RunEntries& entries, const std::string& command) {
  std::vector<std::string> files = EntriesFor(entries, "rank");
  // Ranks come first: a lone one yields to them.
  if (files.empty()) files = EntriesFor(entries, "lone");
  if (!files.empty()) return WhereFilesAre(files);
  const std::string none = "perftracker: no process recorded: ";
  if (const auto refused = EntriesFor(entries, "refused"); !refused.empty()) {
    return {none + refused.front()};
  }
  if (const auto launcher = EntriesFor(entries, "launcher"); !launcher.empty()) {
    return {none + command + " is a launcher (" + launcher.front() +
            ") and none of the processes it started was a rank (RANK or LOCAL_RANK set)"};
  }
  if (!EntriesFor(entries, "candidate").empty()) {
    return {none + command +
            " ended before it made a call perftracker records (Python, CUDA, NCCL)"};
  }
  return {none + "libperftracker.so did not start in " + command +
          " (a static or set-user-ID program ignores LD_PRELOAD)"};
}

void RunRegistry::Report(const std::string& command, std::ostream& err) const {
  if (path_.empty()) return;
  const char* enable = std::getenv("PERFTRACKER_ENABLE");
  if (enable != nullptr && std::strcmp(enable, "0") == 0) {
    err << "perftracker: no process recorded: PERFTRACKER_ENABLE=0\n";
    return;
  }
  const RunEntries entries = ReadEntries(path_);
  // A lone process killed between a rank's start and its next check could not remove its file.
  if (!EntriesFor(entries, "rank").empty()) {
    std::error_code ec;
    for (const std::string& stale : EntriesFor(entries, "lone")) fs::remove(stale, ec);
  }
  for (const std::string& line : DescribeRun(entries, command)) err << line << "\n";
}

}  // namespace perftracker::analyzer
