// The writer thread: drains every thread's ring, aggregates, and writes windows and the live slot.
#pragma once

#include <memory>
#include <string>

#include "preload/core/config.h"
#include "preload/core/output_dir.h"
#include "preload/core/signal_set.h"
#include "schemas/format/ring_file.h"

namespace perftracker::preload {

// Creates the ring file in `dir` and starts the writer thread; false (after one warning) when
// either fails, and the library stays passive. A rank whose file a live process still writes
// records as that process's helper instead; a helper's file is created at its first window.
// Installs the exit paths: C atexit, a SIGTERM handler that chains the previous one, and fork
// handlers (a forked child is passive). The final flushes mark the live slot's exit state:
// NormalExit from Flush (atexit), Sigterm from the handler; both wait at most
// PERFTRACKER_EXIT_WAIT_MS (SIGTERM 3 s) for the writer thread.
// A `lone` process (run_session.h) creates its file at its first window, as a helper does, and
// yields -- removes it and goes passive -- as soon as a rank of the run registers.
bool StartWriter(const Config& config, format::Identity identity, OutputDir dir,
                 bool lone = false);

// In a forked child that runs on without exec (a DataLoader or pool worker started by fork,
// Linux's default), from the interpreter's after-fork hook: records the child as a helper of the
// rank its parent records for, in a file of its own, with a writer thread of its own. False
// (the child stays passive) in any other process, or when helpers are not recorded.
bool RecordForkedChild();

// For an exit that skips the exit handlers (_exit: os._exit, which fork-started workers end
// with): asks this process's writer for the final flush and waits the bounded exit wait.
// Async-signal-safe; nothing in any other process (a vfork child shares our memory).
void FlushBeforeImmediateExit();

// For writer ticks (recorder.h AddWriterTick), which run on the writer thread: the open window's
// hardware and host signals (null before the writer started).
SignalSet* WriterSignals();
// True in a helper process of a rank (identity.h): it records its own calls, not the host's.
bool WriterIsHelper();

}  // namespace perftracker::preload
