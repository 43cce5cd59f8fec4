// What the processes of one `perftracker run` registered (preload/core/run_session.h), and the
// lines `run` prints from it when the command ends.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace perftracker::analyzer {

// A private directory (mkdtemp under $TMPDIR, else /tmp) the command's processes register in;
// removed with everything in it when this goes out of scope.
class RunRegistry {
 public:
  RunRegistry();
  ~RunRegistry();
  RunRegistry(const RunRegistry&) = delete;
  RunRegistry& operator=(const RunRegistry&) = delete;

  // Empty when the directory could not be made: the command then runs without a lone process.
  const std::string& path() const { return path_; }

  // Where the ring files are and the `analyze` command for each job, or one line saying that no
  // process recorded and why.
  void Report(const std::string& command, std::ostream& err) const;

 private:
  std::string path_;
};

// role -> the details of every process that registered it ("rank" -> ring file paths).
using RunEntries = std::map<std::string, std::vector<std::string>>;

// The report's lines for these entries (a unit-testable part of Report).
std::vector<std::string> DescribeRun(const RunEntries& entries, const std::string& command);

}  // namespace perftracker::analyzer
