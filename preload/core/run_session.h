// What `perftracker run` tells the processes it starts, and what they tell it back.
//
// `run` sets PERFTRACKER_RUN=<its pid>:<registry directory> in the command's environment. The
// command's own process (its parent is `run`; it keeps the mark across exec) is the *top
// process*. Started by hand, with no launcher, it has no RANK or LOCAL_RANK and would stay
// passive: instead it records as rank 0 of 1, a *lone process*, unless it is a launcher.
//
// A launcher's ranks carry RANK/LOCAL_RANK and record as always; the launcher must not. Known
// launchers (torchrun and `-m torch.distributed.run/launch`, srun, mpirun/mpiexec, deepspeed,
// accelerate, horovodrun) are named by their command line and stay passive from the start. Any
// other launcher is found by its ranks: a lone process creates its ring file only at its first
// window (as a helper does), and never once a rank has registered; a rank registering later makes
// it remove its file and go passive. A launcher spends its first window waiting (no iterations:
// PERFTRACKER_WINDOW_S), long after its ranks started, so it normally never writes at all.
//
// Every process that decides registers one file in the registry, `<role>.<pid>`, holding a path
// or a reason: `rank` and `lone` (its ring file), `launcher` (its name), `candidate` (a lone
// process that has not written a window yet), `refused` (why it records nothing). `run` reads
// them when the command ends to say where the files are, or why there are none.
// Start-up and the writer thread only: never on a hot path.
#pragma once

#include <string>

namespace perftracker::preload {

inline constexpr const char* kRunVariable = "PERFTRACKER_RUN";

// True when `perftracker run` started this process directly (the top process).
bool IsRunTopProcess();

// The launcher this process is, from its command line ("torchrun", "srun", ...), or null.
const char* KnownLauncher();

// Writes `<role>.<pid>` holding `detail` into the run's registry (nothing outside `run`).
// Replaces an earlier file of the same role; atomic for readers (written aside, then renamed).
void RegisterRun(const char* role, const std::string& detail);
void UnregisterRun(const char* role);

// Whether any process of the run registered as a rank (a lone process must then yield).
bool RunHasRanks();

// Whether `pid` is this run's lone process (registered as a candidate): a rank that finds its
// file name held by it registers and waits for it to yield (PERFTRACKER_JOB_ID shared by both).
bool IsRunLoneProcess(int pid);

}  // namespace perftracker::preload
