#include "analyzer/ingest/select.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace perftracker::analyzer {
namespace {

bool ParseCount(const std::string& text, uint64_t* v) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  *v = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

}  // namespace

bool ParseDuration(const std::string& text, uint64_t* ns) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(value) || value <= 0) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  if (unit == "ms") scale = 1e6;
  if (unit == "m" || unit == "min") scale = 60e9;
  if (unit == "h") scale = 3600e9;
  if (unit == "d") scale = 86400e9;
  if (scale == 0 || value * scale >= 1.8e19) return false;
  *ns = static_cast<uint64_t>(value * scale);
  return *ns > 0;
}

bool ParseIterations(const std::string& text, WindowSelection* selection) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.size() == 1) return false;
  const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
  uint64_t begin = 0, end = std::numeric_limits<uint64_t>::max();
  if (!a.empty() && !ParseCount(a, &begin)) return false;
  if (!b.empty() && !ParseCount(b, &end)) return false;
  if (begin >= end) return false;
  selection->iter_begin = begin;
  selection->iter_end = end;
  return true;
}

// --last, --since, --iterations; false and *error on a malformed value.
bool ParseSelectionFlag(const std::string& flag, const std::string& value, WindowSelection* s,
                        std::string* error) {
  bool ok = false;
  if (flag == "--last") {
    ok = value.find_first_not_of("0123456789") == std::string::npos && !value.empty() &&
         (s->last = std::strtoull(value.c_str(), nullptr, 10)) > 0;
  } else if (flag == "--since") {
    ok = ParseDuration(value, &s->since_ns);
  } else {
    ok = ParseIterations(value, s);
  }
  if (!ok) {
    *error = "bad " + flag + " value '" + value + "' (" +
             (flag == "--last"    ? std::string("a number of windows, at least 1")
              : flag == "--since" ? std::string("a duration: 90s, 15m, 2h, 1d")
                                  : std::string("A:B, A: or :B with A < B")) +
             ")";
  }
  return ok;
}

}  // namespace perftracker::analyzer
