#include "analyzer/commands/cli.h"

#include "schemas/format/version.h"

namespace perftracker::analyzer {
namespace {

struct Command {
  const char* name;
  int (*run)(std::span<const std::string>, std::ostream&, std::ostream&);
  const char* usage;
};

constexpr Command kCommands[] = {
    {"analyze", AnalyzeCommand,
     "analyze DIR [--json PATH|-] [--html PATH] [--top N] [--jobs N]\n"
     "                     [--last N] [--since DURATION] [--iterations A:B]\n"
     "                     [--link-gbps INTRA[,INTER]]\n"
     "                             rank root-cause candidates across every rank under DIR\n"
     "                             (ring files *.ptr and reduced files *.ptrd)"},
    {"reduce", ReduceCommand,
     "reduce DIR -o FILE.ptrd [--jobs N] [--last N] [--since DURATION]\n"
     "                     [--iterations A:B]\n"
     "                             one node's ring files as one small file for analyze"},
    {"watch", WatchCommand,
     "watch DIR [--interval S] [--exit-on hang] [--json-lines] [--prometheus FILE]\n"
     "                     [--windows K] [--top N] [--min-score X]\n"
     "                             re-analyze a running job's newest windows every S seconds\n"
     "                             (default 10); a line per candidate that appears, changes or\n"
     "                             clears, and per hang (exit 3 on one with --exit-on hang)"},
    {"diff", DiffCommand,
     "diff BASE_DIR CUR_DIR [--threshold PCT] [--json PATH|-]\n"
     "                             regressions of CUR against BASE (exit 1 on one)"},
    {"export", ExportCommand,
     "export DIR --perfetto PATH\n"
     "                             the aligned windows as a trace for ui.perfetto.dev"},
    {"dump", DumpCommand, "dump FILE                  print a ring file as JSON lines"},
    {"run", RunCommand, "run [--dir D] -- CMD...    run CMD with libperftracker.so preloaded"},
    {"selftest", SelftestCommand,
     "selftest [--lib PATH] [--launches N] [--keep]\n"
     "                             check the library on this node's GPU stack"},
};

void PrintUsage(std::ostream& os) {
  os << "usage: perftracker COMMAND [ARGS]\n\ncommands:\n";
  for (const Command& c : kCommands) os << "  " << c.usage << "\n";
  os << "\nperftracker COMMAND --help: the command's options and their defaults\n";
}

}  // namespace

int RunCli(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintUsage(args.empty() ? err : out);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    out << "perftracker " << format::kLibraryVersion << " (ring format " << format::kFormatVersion
        << ")\n";
    return kExitOk;
  }
  for (const Command& c : kCommands) {
    if (args[0] == c.name) return c.run(args.subspan(1), out, err);
  }
  err << "perftracker: unknown command '" << args[0] << "' (see perftracker --help)\n";
  return kExitUsage;
}

}  // namespace perftracker::analyzer
