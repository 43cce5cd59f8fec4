// Every PERFTRACKER_* environment variable, in one table: name, type, default, documentation.
// The README's configuration table is checked against this list by test/unit/config_test.cpp.
// Read once in the constructor, without allocating: strings point into the environment.
#pragma once

#include <cstdint>

namespace perftracker::preload {

#define PERFTRACKER_CONFIG(X)                                                                    \
  X(ENABLE, Bool, enable, true, "`0` turns every hook into a pure pass-through")                \
  X(DIR, String, dir, nullptr, "output root; default `${TMPDIR:-/tmp}/perftracker`")            \
  X(JOB_ID, String, job_id, nullptr,                                                           \
    "job id; default `TORCHELASTIC_RUN_ID`, then `SLURM_JOB_ID`, else generated")               \
  X(RING_MB, Uint, ring_mb, 64, "size of each rank's ring file in MiB (at least 1)")            \
  X(VERBOSE, Bool, verbose, false, "`1` prints the resolved configuration at start-up")

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
// Writes "PERFTRACKER_NAME=value" lines to stderr.
void PrintConfig(const Config& config);

}  // namespace perftracker::preload
