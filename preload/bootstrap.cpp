// Start-up of libperftracker.so. The library stays passive — pure pass-through, no thread, no
// file — unless this process is a training rank (RANK or LOCAL_RANK set) and PERFTRACKER_ENABLE
// is not 0. Hook families resolve their own symbols in their own constructors and test Active().
#include "preload/core/config.h"
#include "preload/core/identity.h"
#include "preload/core/log.h"
#include "preload/core/output_dir.h"
#include "preload/core/recorder_state.h"
#include "preload/core/writer.h"
#include "preload/nccl/net_links.h"
#include "schemas/format/version.h"

namespace perftracker::preload {
namespace {

// Runs before the hook families' constructors (priority 101 < default): they see Active().
[[gnu::constructor(101)]] void Start() {
  const Config& config = ProcessConfig();
  if (config.verbose) PrintConfig(config);
  if (!config.enable || !IsTrainingRank()) return;
  const format::Identity identity = DetectIdentity(config);
  if (identity.helper_of == 0) {
    MarkRankProcess();
  } else if (!config.helpers) {
    return;
  }
  OutputDir dir = OpenOutputDir(config, identity);
  if (dir.fd < 0) {
    Warn("%s; not recording (PERFTRACKER_DIR chooses another directory)", dir.error.c_str());
    return;
  }
  InitRecorder(static_cast<uint32_t>(config.max_functions), config.thread_events);
  if (!StartWriter(config, identity, std::move(dir))) return;
  SetActive(true);
  ConfigureNcclProfilerPlugin();
}

}  // namespace
}  // namespace perftracker::preload

extern "C" [[gnu::visibility("default")]] const char* perftracker_version() {
  return perftracker::format::kLibraryVersion;
}
