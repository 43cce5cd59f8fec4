#include "preload/core/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "preload/core/log.h"

namespace perftracker::preload {
namespace {

bool Parse(const char* name, const char* text, bool* out) {
  if (std::strcmp(text, "1") == 0 || std::strcmp(text, "true") == 0) return *out = true, true;
  if (std::strcmp(text, "0") == 0 || std::strcmp(text, "false") == 0) return *out = false, true;
  Warn("ignoring %s=%s (expected 0 or 1)", name, text);
  return false;
}

bool Parse(const char*, const char* text, const char** out) {
  *out = text;
  return true;
}

bool Parse(const char* name, const char* text, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') {
    Warn("ignoring %s=%s (expected a number)", name, text);
    return false;
  }
  *out = v;
  return true;
}

void Print(const char* name, bool v) { std::fprintf(stderr, "perftracker: %s=%d\n", name, v); }
void Print(const char* name, const char* v) {
  std::fprintf(stderr, "perftracker: %s=%s\n", name, v ? v : "(default)");
}
void Print(const char* name, uint64_t v) {
  std::fprintf(stderr, "perftracker: %s=%llu\n", name, static_cast<unsigned long long>(v));
}

}  // namespace

Config LoadConfig() {
  Config c;
#define PERFTRACKER_CONFIG_LOAD(NAME, TYPE, field, def, doc)                  \
  if (const char* text = std::getenv("PERFTRACKER_" #NAME); text && *text) { \
    Parse("PERFTRACKER_" #NAME, text, &c.field);                             \
  }
  PERFTRACKER_CONFIG(PERFTRACKER_CONFIG_LOAD)
#undef PERFTRACKER_CONFIG_LOAD
  if (c.ring_mb < 1) c.ring_mb = 1;
  if (c.helper_ring_mb < 1) c.helper_ring_mb = 1;
  // A block times 2^16 (window_schedule.h) and block numbers of 32 bits (py_mode.h) stay within
  // 64 bits of iterations.
  c.window_iters = std::clamp<uint64_t>(c.window_iters, 1, uint64_t{1} << 20);
  if (c.drain_ms < 1) c.drain_ms = 1;
  return c;
}

const Config& ProcessConfig() {
  static const Config config = LoadConfig();
  return config;
}

void PrintConfig(const Config& c) {
#define PERFTRACKER_CONFIG_PRINT(NAME, TYPE, field, def, doc) Print("PERFTRACKER_" #NAME, c.field);
  PERFTRACKER_CONFIG(PERFTRACKER_CONFIG_PRINT)
#undef PERFTRACKER_CONFIG_PRINT
}

}  // namespace perftracker::preload
