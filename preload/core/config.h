// Every PERFTRACKER_* environment variable, in one table: name, type, default, documentation.
// The README's configuration table is checked against this list by test/unit/config_test.cpp.
// Read once in the constructor, without allocating: strings point into the environment.
#pragma once

#include <cstdint>

namespace perftracker::preload {

#define PERFTRACKER_CONFIG(X)                                                                    \
  X(ENABLE, Bool, enable, true, "`0` turns every hook into a pure pass-through")                \
  X(DIR, String, dir, nullptr,                                                                 \
    "output root; default `${TMPDIR:-/tmp}/perftracker-$UID` (directories 0750, files 0640)")  \
  X(JOB_ID, String, job_id, nullptr,                                                           \
    "job id; default `TORCHELASTIC_RUN_ID`, then `SLURM_JOB_ID`, else generated")               \
  X(RING_MB, Uint, ring_mb, 64, "size of each rank's ring file in MiB (at least 1)")            \
  X(HELPERS, Bool, helpers, true,                                                              \
    "processes a rank starts (spawned DataLoader workers, compile workers, subprocesses) "      \
    "record into small files of their own beside the rank's; `0` keeps them passive")          \
  X(HELPER_RING_MB, Uint, helper_ring_mb, 4, "size of each helper process's ring file in MiB") \
  X(EXIT_WAIT_MS, Uint, exit_wait_ms, 2000,                                                     \
    "how long exit waits for the last window to be written (and for the device-timer thread) " \
    "before leaving without it")                                                               \
  X(WINDOW_ITERS, Uint, window_iters, 10,                                                       \
    "the shortest window, in iterations: a window is this times a power of two iterations "     \
    "long and ends on a multiple of its length, alike on every rank (schemas/FORMAT.md)")      \
  X(WINDOW_S, Uint, window_s, 20,                                                               \
    "a window lasts at least this many seconds: its iteration count doubles, from the step "   \
    "time, until it does; without recognized iterations, windows of this length; `0` = "       \
    "windows of exactly `PERFTRACKER_WINDOW_ITERS` iterations")                                \
  X(DRAIN_MS, Uint, drain_ms, 20, "how often the writer thread drains the per-thread buffers")   \
  X(THREAD_EVENTS, Uint, thread_events, 65536,                                                  \
    "events buffered per thread between drains (48 bytes each); more are dropped and counted")  \
  X(MAX_FUNCTIONS, Uint, max_functions, 16384,                                                  \
    "distinct functions (call paths, kernels, call sites) recorded per process")                \
  X(SAMPLE_EVERY, Uint, sample_every, 64,                                                       \
    "device time of 1 in N kernel launches / copies per call site, and of its first in each "  \
    "window (timing events); 0 = none")                                                         \
  X(HOST_SAMPLE_EVERY, Uint, host_sample_every, 8,                                              \
    "host time of 1 in N non-blocking CUDA calls per thread on average (the rest are counted); "\
    "1 = every call")                                                                          \
  X(CUPTI, Bool, cupti, false,                                                                  \
    "`1` times every kernel and copy with CUPTI activity records (off if another CUPTI user)")  \
  X(DRIVER, Bool, driver, false,                                                                \
    "`1` records kernels launched through the driver API (NCCL >= 2.22, cuBLAS, Triton) by "   \
    "interposing `dlsym` and wrapping `cuGetProcAddress`")                                     \
  X(VERBOSE, Bool, verbose, false, "`1` prints the resolved configuration at start-up")        \
  X(PYTHON, Bool, python, true, "`0` leaves Python functions unrecorded")                      \
  X(PY_DEPTH, Uint, py_depth, 12,                                                              \
    "call-path depth of Python functions; deeper calls fold into their ancestor")              \
  X(MODE, String, mode, nullptr,                                                               \
    "`light` (default): cheap leaf Python functions fold into their caller, except recognized "\
    "ones; `detailed`: every function, always")                                                \
  X(LIGHT_MIN_US, Uint, light_min_us, 10,                                                       \
    "light mode: a leaf Python function whose mean inclusive time over its first 32 calls is " \
    "below this folds into its caller; 0 = none")                                              \
  X(PY_TIME_EVERY, Uint, py_time_every, 16,                                                    \
    "Python functions averaging under 2 us per call: 1 call in N is timed (all are counted; "  \
    "the others' time is estimated from those); 1 = time every call")                         \
  X(DETAILED_WINDOWS, Uint, detailed_windows, 3,                                                \
    "windows a triggered detailed period lasts (from the next window boundary)")                \
  X(STEP_FUNCTION, String, step_function, nullptr,                                             \
    "comma-separated globs of the iteration function (qualname or `file:qualname`); "          \
    "default: optimizers' `step`")                                                             \
  X(PY_INCLUDE, String, py_include, nullptr,                                                   \
    "comma-separated `[kind=]glob`s: without a kind, record only matching Python functions; "  \
    "with one (`dataloader`, `sync`, `collective`, `gc`, `python`), recognize them as it")     \
  X(PY_FORCE_VERSION, String, py_force_version, nullptr,                                       \
    "testing: treat the interpreter as this `3.N` version (an unknown one: pass-through)")     \
  X(SIGNAL_MS, Uint, signal_ms, 1000,                                                          \
    "how often the writer samples GPU (NVML), NIC (sysfs) and host (procfs) signals; 0 = never") \
  X(SYSFS_ROOT, String, sysfs_root, nullptr, "testing: read `/sys` paths under this directory") \
  X(PROCFS_ROOT, String, procfs_root, nullptr,                                                 \
    "testing: read `/proc` paths (`/proc/self/cgroup` too) under this directory")                \
  X(TEST_WRITE_DELAY_MS, Uint, test_write_delay_ms, 0,                                          \
    "testing: the writer sleeps this long before each ring-file write (a slow disk)")          \
  X(TEST_WATCH_MS, Uint, test_watch_ms, 1000,                                                   \
    "testing: how often the writer thread runs its periodic checks (Python's frame evaluator "     \
    "still ours, a CUDA runtime the hooks can see)")

struct Config {
#define PERFTRACKER_CONFIG_FIELD(NAME, TYPE, field, def, doc) TYPE##Value field = def;
  using BoolValue = bool;
  using StringValue = const char*;
  using UintValue = uint64_t;
  PERFTRACKER_CONFIG(PERFTRACKER_CONFIG_FIELD)
#undef PERFTRACKER_CONFIG_FIELD
};

// Parses the environment. Malformed values keep their default and print one warning each.
Config LoadConfig();
// The process's configuration: parsed once, on first use, so its warnings appear once however
// many hook families read it.
const Config& ProcessConfig();
// Writes "PERFTRACKER_NAME=value" lines to stderr.
void PrintConfig(const Config& config);

}  // namespace perftracker::preload
