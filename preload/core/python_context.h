// The Python context of native calls, for the other hook families (CUDA runtime, NCCL): which
// Python function the calling thread is in, read from the CPython hook's shadow stack.
//
// Safe from any thread, with or without the GIL, on a hot path: it reads one thread_local
// (no allocation, no lock, no Python call). Threads that never ran Python, processes that are
// not Python, and calls before the hook is installed get kNoSlot.
#pragma once

#include "preload/core/recorder.h"

namespace perftracker::preload {

// The slot of the innermost recorded Python function running on the calling thread (the caller
// at the bound of PERFTRACKER_PY_DEPTH), or kNoSlot.
Slot CurrentPythonSlot();

}  // namespace perftracker::preload
