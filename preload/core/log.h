// Start-up and error messages of the injected library: one line each on stderr, prefixed
// "perftracker:". Never called on a hot path.
#pragma once

namespace perftracker::preload {

[[gnu::format(printf, 1, 2), gnu::cold]] void Warn(const char* format, ...);

}  // namespace perftracker::preload
