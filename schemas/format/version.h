// The one place that names the on-disk format version (see schemas/FORMAT.md).
#pragma once

#include <cstdint>

namespace perftracker::format {

// Bumped when a change is not readable by older readers; additive schema changes keep it.
inline constexpr uint32_t kFormatVersion = 1;
// Oldest format version this code can still read.
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr char kLibraryVersion[] = "0.1.0";

}  // namespace perftracker::format
