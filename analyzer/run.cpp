// perftracker run [--dir D] -- COMMAND...: runs COMMAND with libperftracker.so preloaded, found
// beside the binary as installed (<prefix>/bin/perftracker -> <prefix>/lib/libperftracker.so).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "analyzer/cli.h"

namespace perftracker::analyzer {

std::string FindPreloadLibrary() {
  if (const char* explicit_path = std::getenv("PERFTRACKER_LIBRARY")) return explicit_path;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const char* rel : {"../lib/libperftracker.so", "../preload/libperftracker.so"}) {
    const auto candidate = exe.parent_path() / rel;
    if (std::filesystem::exists(candidate, ec)) {
      return std::filesystem::weakly_canonical(candidate, ec).string();
    }
  }
  return {};
}

int RunCommand(std::span<const std::string> args, std::ostream&, std::ostream& err) {
  std::string dir;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--dir" && i + 1 < args.size()) {
      dir = args[++i];
    } else {
      err << "usage: perftracker run [--dir D] -- COMMAND...\n";
      return kExitUsage;
    }
  }
  if (i + 1 >= args.size()) {
    err << "usage: perftracker run [--dir D] -- COMMAND...\n";
    return kExitUsage;
  }
  const std::string library = FindPreloadLibrary();
  if (library.empty()) {
    err << "perftracker: cannot find libperftracker.so next to this binary "
           "(set PERFTRACKER_LIBRARY)\n";
    return kExitUsage;
  }
  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!dir.empty()) setenv("PERFTRACKER_DIR", dir.c_str(), 1);
  std::vector<char*> argv;
  for (size_t j = i + 1; j < args.size(); ++j) argv.push_back(const_cast<char*>(args[j].c_str()));
  argv.push_back(nullptr);
  err.flush();
  execvp(argv[0], argv.data());
  err << "perftracker: cannot run " << args[i + 1] << ": " << std::strerror(errno) << "\n";
  return kExitUsage;
}

}  // namespace perftracker::analyzer
