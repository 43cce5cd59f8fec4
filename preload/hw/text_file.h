// Small text files of sysfs and procfs, read whole each sample: a counter file may be replaced
// (tests rename over it) and procfs files are generated on read, so nothing is kept open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perftracker::preload::hw {

// The first `cap` - 1 bytes of `path`, in one read (enough for every file read here: the `cpu`
// line of /proc/stat comes first), or nullopt when it cannot be read. The view points into `buf`.
std::optional<std::string_view> ReadText(const char* path, char* buf, size_t cap);

// A decimal number at the start of `text` (after blanks); false if there is none.
bool ParseU64(std::string_view text, uint64_t* out);

// `root` + `path`; `root` null or empty means `fallback` ("/sys", "/proc").
std::string Rooted(const char* root, const char* fallback, std::string_view path);

}  // namespace perftracker::preload::hw
