// Start-up of libperftracker.so. The library stays passive — pure pass-through, no thread, no
// file — unless PERFTRACKER_ENABLE is not 0 and this process is a training rank (RANK or
// LOCAL_RANK set), a helper of one, or the lone process `perftracker run` started without a
// launcher (core/run_session.h). Hook families resolve their own symbols in their own
// constructors and test Active().
#include "preload/core/config.h"
#include "preload/core/identity.h"
#include "preload/core/log.h"
#include "preload/core/output_dir.h"
#include "preload/core/recorder_state.h"
#include "preload/core/run_session.h"
#include "preload/core/writer.h"
#include "preload/nccl/net_links.h"
#include "schemas/format/version.h"

namespace perftracker::preload {
namespace {

// Neither a rank nor a helper: whether this is the process `perftracker run` started, to record
// as rank 0 of 1. A launcher it recognizes stays passive and says so to `run`.
bool IsLoneProcess() {
  if (!IsRunTopProcess()) return false;
  if (const char* launcher = KnownLauncher()) {
    RegisterRun("launcher", launcher);
    return false;
  }
  return true;
}

// Runs before the hook families' constructors (priority 101 < default): they see Active().
[[gnu::constructor(101)]] void Start() {
  const Config& config = ProcessConfig();
  if (config.verbose) PrintConfig(config);
  if (!config.enable) return;
  const bool rank = IsTrainingRank();
  const bool lone = !rank && IsLoneProcess();
  if (!rank && !lone) return;
  const format::Identity identity = DetectIdentity(config);
  if (identity.helper_of == 0) {
    MarkRankProcess();
  } else if (!config.helpers) {
    return;
  }
  OutputDir dir = OpenOutputDir(config, identity);
  if (dir.fd < 0) {
    Warn("%s; not recording (PERFTRACKER_DIR chooses another directory)", dir.error.c_str());
    if (identity.helper_of == 0) RegisterRun("refused", dir.error);
    return;
  }
  InitRecorder(static_cast<uint32_t>(config.max_functions), config.thread_events);
  if (!StartWriter(config, identity, std::move(dir), lone)) return;
  SetActive(true);
  ConfigureNcclProfilerPlugin();
}

}  // namespace
}  // namespace perftracker::preload

extern "C" [[gnu::visibility("default")]] const char* perftracker_version() {
  return perftracker::format::kLibraryVersion;
}
