// Who this process is in the job, and where its ring file goes (the contract's path).
#pragma once

#include <string>

#include "preload/core/config.h"
#include "schemas/format/ring_file.h"

namespace perftracker::preload {

// True when the environment names this process a training rank (RANK or LOCAL_RANK set) -- or a
// helper of one: every process a rank starts inherits its environment, and with it the mark of a
// lone process (run_session.h), which has no rank variables to pass on.
bool IsTrainingRank();

// Set by a rank in its own environment, which every process it starts inherits (subprocess,
// multiprocessing's spawn and forkserver, exec'd tools): "pid:RANK:LOCAL_RANK:WORLD_SIZE". A
// process that inherited it unchanged is that rank's helper. A launcher that starts a new rank
// (torchrun's agent, a Slurm requeue) is not a rank and never sets it, so a restarted rank is
// still a rank; and a child whose rank variables differ was started as a rank of its own.
inline constexpr const char* kRankPidVariable = "PERFTRACKER_RANK_PID";

// Marks this process as the rank in the environment its children inherit. Call from the
// constructor, before any thread of ours or the application's exists (setenv is not
// thread-safe).
void MarkRankProcess();

// Rank, local rank, world size, job id, host, pid and start times from the environment; for a
// helper process, the rank it belongs to (helper_of). Without RANK and LOCAL_RANK (a lone process
// and its helpers): rank 0 of 1.
format::Identity DetectIdentity(const Config& config);

}  // namespace perftracker::preload
