#include "analyzer/base/format_text.h"

#include <cmath>
#include <cstdio>

namespace perftracker::analyzer {

std::string FormatNumber(const char* fmt, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string FormatSeconds(double s) {
  const double a = std::abs(s);
  if (a >= 100) return FormatNumber("%.0f s", s);
  if (a >= 1) return FormatNumber("%.2f s", s);
  if (a >= 1e-3) return FormatNumber("%.1f ms", s * 1e3);
  return FormatNumber("%.0f us", s * 1e6);
}

}  // namespace perftracker::analyzer
