// The one place that names the on-disk format version (see schemas/FORMAT.md).
#pragma once

#include <cstdint>

namespace perftracker::format {

// Bumped when a change is not readable by older readers; additive schema changes keep it.
// 2: the table region (function names once per table, not once per window).
inline constexpr uint32_t kFormatVersion = 2;
// Oldest format version this code can still read.
inline constexpr uint32_t kOldestReadableVersion = 1;
// min_reader_version of a file with a table region: a format-1 reader would find its records'
// names missing. A file without one (RingOptions::table_size 0) stays readable by format 1.
inline constexpr uint32_t kTableReaderVersion = 2;
inline constexpr char kLibraryVersion[] = "0.1.0";

}  // namespace perftracker::format
