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

// For writer ticks (recorder.h AddWriterTick), which run on the writer thread: the open window's
// hardware and host signals (null before the writer started).
SignalSet* WriterSignals();
// True in a helper process of a rank (identity.h): it records its own calls, not the host's.
bool WriterIsHelper();

}  // namespace perftracker::preload
