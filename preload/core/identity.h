// Who this process is in the job, and where its ring file goes (the contract's path).
#pragma once

#include <string>

#include "preload/core/config.h"
#include "schemas/format/ring_file.h"

namespace perftracker::preload {

// True when the environment names this process a training rank (RANK or LOCAL_RANK set).
bool IsTrainingRank();

// Rank, local rank, world size, job id, host, pid and start times from the environment.
format::Identity DetectIdentity(const Config& config);

// $PERFTRACKER_DIR (default ${TMPDIR:-/tmp}/perftracker)/<job-id>/<hostname>/rank-<rank>.ptr
std::string RingPath(const Config& config, const format::Identity& identity);

}  // namespace perftracker::preload
