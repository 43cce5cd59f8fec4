#include "preload/hw/text_file.h"

#include <fcntl.h>
#include <unistd.h>

namespace perftracker::preload::hw {

std::optional<std::string_view> ReadText(const char* path, char* buf, size_t cap) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  size_t used = 0;
  while (used + 1 < cap) {
    const ssize_t n = read(fd, buf + used, cap - 1 - used);
    if (n < 0) {
      close(fd);
      return std::nullopt;  // sysfs says "no value now" with an error (a down link's speed)
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  buf[used] = '\0';
  return std::string_view(buf, used);
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
