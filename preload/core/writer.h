// The writer thread: drains every thread's ring, aggregates, and writes windows and the live slot.
#pragma once

#include <memory>
#include <string>

#include "preload/core/config.h"
#include "schemas/format/ring_file.h"

namespace perftracker::preload {

// Creates the ring file and starts the writer thread; false (after one warning) when either
// fails, and the library stays passive. Installs the exit paths: C atexit, a SIGTERM handler
// that chains the previous one, and fork handlers (a forked child is passive). The final
// flushes mark the live slot's exit state: NormalExit from Flush (atexit), Sigterm from the
// handler.
bool StartWriter(const Config& config, const format::Identity& identity, const std::string& path);

}  // namespace perftracker::preload
