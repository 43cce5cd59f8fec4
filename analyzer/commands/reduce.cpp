// perftracker reduce DIR -o FILE [--jobs N] [--last N] [--since DURATION] [--iterations A:B]:
// one node's ring files (or reduced files: reductions compose) into one reduced file, run by the
// cluster's scheduler as a task per node, so only reduced files cross the network
// (examples/launch: slurm.sbatch, reduce_daemonset.yaml, reduce_nodes.sh).
#include <unistd.h>

#include "analyzer/base/atomic_file.h"
#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/ingest/ingest.h"
#include "analyzer/base/progress.h"
#include "analyzer/ingest/reduced.h"
#include "analyzer/base/format_text.h"

namespace perftracker::analyzer {
namespace {

struct ReduceOptions {
  std::string dir, output;
  int threads = 0;
  WindowSelection selection;
};

std::string Mib(double bytes) { return FormatNumber("%.1f MiB", bytes / (1 << 20)); }

}  // namespace

int ReduceCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  ReduceOptions o;
  CommandLine cl("reduce", "One node's ring files (or reduced files) as one small file for analyze.");
  cl.Argument("DIR", &o.dir, "the node's directory of ring files");
  cl.Option("-o,--output", &o.output, "the reduced file to write (FILE.ptrd), atomically");
  cl.Require("--output");
  cl.Option("--jobs", &o.threads, "threads reading (0: every core)");
  AddSelectionOptions(cl, &o.selection);
  if (const auto code = cl.Parse(args, out, err)) return *code;
  std::string error;
  Dataset ds;
  FileSet set;
  set.ranks = ReadFiles(o.dir, {o.threads, TerminalOrNull(err)}, &ds, &error, o.selection);
  if (set.ranks.empty()) {
    err << "perftracker reduce: " << error << "\n";
    return kExitUsage;
  }
  set.ring_files = ds.files;
  std::vector<uint32_t> fn_map, coll_map;  // identity maps: `set` starts with an empty catalog
  set.catalog.Merge(ds.catalog, &fn_map, &coll_map);
  set.diagnostics.Merge(ds.diagnostics);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::vector<uint8_t> bytes = EncodeReduced(set, host);
  if (bytes.empty() ||
      !WriteFileAtomically(o.output, {reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                           &error)) {
    err << "perftracker reduce: " << (bytes.empty() ? "cannot encode" : error) << "\n";
    return kExitUsage;
  }
  double records = 0;
  for (const RankData& r : set.ranks) records += static_cast<double>(r.stats.record_bytes);
  out << "perftracker reduce: " << set.ring_files << " ring files, " << set.ranks.size()
      << " ranks, " << Mib(records) << " of records -> " << o.output << " ("
      << Mib(static_cast<double>(bytes.size())) << ")";
  if (ds.diagnostics.Total() > 0) out << "; " << ds.diagnostics.Total() << " input problems kept";
  out << "\n";
  if (!o.output.ends_with(kReducedExtension)) {
    err << "perftracker reduce: warning: " << o.output << " does not end in " << kReducedExtension
        << ": analyze finds reduced files under a directory by that name\n";
  }
  return kExitOk;
}

}  // namespace perftracker::analyzer
