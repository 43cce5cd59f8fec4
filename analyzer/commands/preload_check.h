// Whether the dynamic loader here accepts libperftracker.so in LD_PRELOAD. It does not stop a
// program over a preload it refuses: it prints one line ("cannot be preloaded ...: ignored", a
// missing symbol version, a missing library) and runs the program without it, so a job would
// run for hours unrecorded. `perftracker run` asks first and starts nothing when it refuses.
#pragma once

#include <string>

namespace perftracker::analyzer {

// Empty when the library loads; else the loader's reason, one line. Runs `/bin/sh -c :` (this
// binary's `--version` where there is no shell) once with only `library` preloaded and the
// library's hooks off (PERFTRACKER_ENABLE=0), as a job's processes would start: the same
// loader, search path and environment, a few milliseconds.
std::string PreloadRefusal(const std::string& library);

}  // namespace perftracker::analyzer
