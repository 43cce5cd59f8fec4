#include "preload/core/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace perftracker::preload {

void Warn(const char* format, ...) {
  // One write(2) per line so that lines of concurrent ranks sharing a terminal never interleave.
  char line[512];
  int n = std::snprintf(line, sizeof line, "perftracker: ");
  va_list args;
  va_start(args, format);
  n += std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n), format, args);
  va_end(args);
  if (n > static_cast<int>(sizeof line) - 2) n = static_cast<int>(sizeof line) - 2;
  line[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, static_cast<size_t>(n));
  (void)ignored;
}

}  // namespace perftracker::preload
