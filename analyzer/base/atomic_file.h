// Files other programs pick up while we may still be writing them (a reduced file on shared
// storage, a Prometheus textfile): written beside the target and renamed over it.
#pragma once

#include <string>
#include <string_view>

namespace perftracker::analyzer {

// Writes `bytes` to a temporary file beside `path` (same filesystem, so the rename is atomic; a
// name the textfile collector ignores, it reads *.prom only), flushes it to disk, then renames
// it over `path`: a reader never sees half a file, and a failed write leaves none. False and a
// one-line *error on failure.
bool WriteFileAtomically(const std::string& path, std::string_view bytes, std::string* error);

}  // namespace perftracker::analyzer
