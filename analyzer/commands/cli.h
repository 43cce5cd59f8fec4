// The perftracker command line. Every command runs in-process against the given streams, so
// tests call RunCli directly. Exit codes: 0 ran and reported, 1 regression (diff), 2 usage or
// unreadable input, 3 a hang reported (watch --exit-on hang).
#pragma once

#include <ostream>
#include <span>
#include <string>

namespace perftracker::analyzer {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRegression = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitHang = 3;

int RunCli(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// Commands, one file each.
int AnalyzeCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int ReduceCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int DiffCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int ExportCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int DumpCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int WatchCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int SelftestCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// libperftracker.so: $PERFTRACKER_LIBRARY, else beside this binary as installed (../lib) or as
// built (../preload); empty when not found.
std::string FindPreloadLibrary();

}  // namespace perftracker::analyzer
