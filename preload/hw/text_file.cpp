#include "preload/hw/text_file.h"

#include <fcntl.h>
#include <unistd.h>

namespace perftracker::preload::hw {

std::optional<std::string_view> ReadText(const char* path, char* buf, size_t cap) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  // One read: sysfs and procfs hand over a small file (and /proc/stat its first page) in one,
  // so no second read to see the end. An error is sysfs saying "no value now" (a down link's
  // speed).
  const ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return std::nullopt;
  buf[n] = '\0';
  return std::string_view(buf, static_cast<size_t>(n));
}

bool ParseU64(std::string_view text, uint64_t* out) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i == text.size() || text[i] < '0' || text[i] > '9') return false;
  uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  *out = v;
  return true;
}

std::string Rooted(const char* root, const char* fallback, std::string_view path) {
  std::string s = root != nullptr && *root != '\0' ? root : fallback;
  s += path;
  return s;
}

}  // namespace perftracker::preload::hw
