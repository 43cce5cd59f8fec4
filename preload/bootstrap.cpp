// Start-up of libperftracker.so. The library stays passive — pure pass-through, no thread, no
// file — unless this process is a training rank (RANK or LOCAL_RANK set) and PERFTRACKER_ENABLE
// is not 0. The collectors (CUDA runtime, NCCL, CPython) attach here as they land.
#include <cstdlib>

#include "preload/config.h"
#include "preload/log.h"
#include "schemas/format/version.h"

namespace perftracker::preload {
namespace {

bool IsTrainingRank() {
  return std::getenv("RANK") != nullptr || std::getenv("LOCAL_RANK") != nullptr;
}

[[gnu::constructor]] void Start() {
  const Config config = LoadConfig();
  if (config.verbose) PrintConfig(config);
  if (!config.enable || !IsTrainingRank()) return;
}

}  // namespace
}  // namespace perftracker::preload

extern "C" [[gnu::visibility("default")]] const char* perftracker_version() {
  return perftracker::format::kLibraryVersion;
}
