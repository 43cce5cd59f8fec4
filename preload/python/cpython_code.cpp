// Naming and recognizing Python functions: first sight of a code object (cold path, GIL held).
//
// Identity is "file:firstline:qualname" with the file made relative to site-packages /
// dist-packages / the stdlib directory / a compiler's cache, so every rank and every run of the
// same job names a function alike even from different virtual environments, and only the
// user's own files keep an absolute path (StableFile).
#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "preload/core/log.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload::cpython {

HookState g_hook;

namespace {

using format::FunctionKind;

// User patterns: comma-separated, kept as views into the environment (never freed).
struct Pattern {
  std::string_view glob;
  FunctionKind kind = FunctionKind::kUnknown;  // kUnknown: a plain include filter
};
constexpr int kMaxPatterns = 32;
struct Rules {
  Pattern step[kMaxPatterns];
  int steps = 0;
  Pattern include[kMaxPatterns];
  int includes = 0;
  bool include_filters = false;  // some include pattern without a kind: record only matches
} g_rules;

struct KindName {
  const char* name;
  FunctionKind kind;
};
constexpr KindName kKinds[] = {
    {"python", FunctionKind::kPython}, {"dataloader", FunctionKind::kDataLoader},
    {"sync", FunctionKind::kSync},     {"collective", FunctionKind::kCollective},
    {"gc", FunctionKind::kGc},         {"iteration", FunctionKind::kIteration},
};

int ParseList(const char* text, Pattern* out, bool with_kind) {
  int n = 0;
  std::string_view rest = text != nullptr ? text : "";
  while (!rest.empty() && n < kMaxPatterns) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    Pattern p;
    if (const size_t eq = item.find('='); with_kind && eq != std::string_view::npos) {
      const std::string_view kind = item.substr(0, eq);
      for (const KindName& k : kKinds) {
        if (kind == k.name) p.kind = k.kind;
      }
      if (p.kind == FunctionKind::kUnknown)
        Warn("PERFTRACKER_PY_INCLUDE: unknown kind in '%.*s'", static_cast<int>(item.size()),
             item.data());
      item = item.substr(eq + 1);
    }
    p.glob = item;
    if (!item.empty()) out[n++] = p;
  }
  return n;
}

bool Matches(std::string_view glob, const char* file, const char* qualname) {
  char pattern[256];
  const size_t n = std::min(glob.size(), sizeof pattern - 1);
  std::memcpy(pattern, glob.data(), n);
  pattern[n] = '\0';
  if (fnmatch(pattern, qualname, 0) == 0) return true;
  char both[512];
  const int length = std::snprintf(both, sizeof both, "%s:%s", file, qualname);
  (void)length;
  return fnmatch(pattern, both, 0) == 0;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The step rule of the paper (dataloader.next → optimizer.step): an optimizer's `step` method.
// LR schedulers also have a `step` and live under torch/optim: they are not the iteration.
bool DefaultStep(std::string_view file, std::string_view q) {
  if (!EndsWith(q, ".step") || Contains(q, "<locals>")) return false;
  if (Contains(file, "torch/optim/")) {
    return !Contains(file, "lr_scheduler") && !Contains(file, "swa_utils");
  }
  return Contains(file, "simtorch/optim.py");
}

constexpr std::string_view kCollectives[] = {"all_reduce",
                                             "all_reduce_coalesced",
                                             "broadcast",
                                             "barrier",
                                             "monitored_barrier",
                                             "all_gather",
                                             "all_gather_into_tensor",
                                             "_all_gather_base",
                                             "all_gather_coalesced",
                                             "reduce_scatter",
                                             "reduce_scatter_tensor",
                                             "_reduce_scatter_base",
                                             "reduce",
                                             "all_to_all",
                                             "all_to_all_single",
                                             "gather",
                                             "scatter",
                                             "send",
                                             "recv",
                                             "isend",
                                             "irecv",
                                             "batch_isend_irecv",
                                             "all_gather_object",
                                             "broadcast_object_list",
                                             "gather_object",
                                             "scatter_object_list"};

// Default recognition; `always` marks functions recorded beyond the depth bound.
FunctionKind DefaultKind(std::string_view file, std::string_view q, bool* always) {
  *always = true;
  if (EndsWith(q, ".__next__") &&
      (Contains(file, "torch/utils/data/") || Contains(file, "simtorch/data.py"))) {
    return FunctionKind::kDataLoader;
  }
  if (Contains(file, "torch/cuda/") || Contains(file, "simtorch/cuda.py")) {
    if (q == "synchronize" || EndsWith(q, ".synchronize") || EndsWith(q, ".item")) {
      return FunctionKind::kSync;
    }
  }
  if (EndsWith(file, "torch/distributed/distributed_c10d.py")) {
    for (std::string_view c : kCollectives) {
      if (q == c) return FunctionKind::kCollective;
    }
  }
  // Backward stays a Python function; recorded at any depth so it can always be found.
  *always = (EndsWith(file, "torch/autograd/__init__.py") && q == "backward") ||
            (EndsWith(file, "torch/_tensor.py") && q == "Tensor.backward");
  return FunctionKind::kPython;
}

// Strips the machine-specific prefix of a code file name. What is left is relative for every
// file that is not the user's own: installed packages, the standard library, and code a
// compiler generated into its cache (inductor's, TORCHINDUCTOR_CACHE_DIR or its default
// /tmp/torchinductor_<user>), which is the framework's however absolute its path; the analyzer
// names the user's frame that called it.
const char* StableFile(const char* file) {
  for (const char* marker : {"/site-packages/", "/dist-packages/"}) {
    if (const char* p = std::strstr(file, marker)) return p + std::strlen(marker);
  }
  if (const char* p = std::strstr(file, "/torchinductor_")) return p + 1;
  if (const char* cache = std::getenv("TORCHINDUCTOR_CACHE_DIR"); cache && *cache) {
    const size_t n = std::strlen(cache) - (cache[std::strlen(cache) - 1] == '/');
    if (std::strncmp(file, cache, n) == 0 && file[n] == '/') return file + n + 1;
  }
  if (const char* p = std::strstr(file, "/lib/python3")) {
    if (const char* slash = std::strchr(p + 5, '/')) return slash + 1;
  }
  return file;
}

// Reads a str attribute of `code` into `out`; "" when missing.
void StringAttr(PyObject* code, const char* attr, char* out, size_t size) {
  out[0] = '\0';
  PyObject* value = g_api.GetAttrString(code, attr);
  if (value == nullptr) return g_api.ErrClear();
  if (const char* s = g_api.UnicodeAsUTF8(value)) {
    const int length = std::snprintf(out, size, "%s", s);
    (void)length;
  } else {
    g_api.ErrClear();
  }
  g_api.DecRef(value);
}

void Classify(CodeInfo* info, const char* file, const char* qualname) {
  info->kind = DefaultKind(file, qualname, &info->always);
  if (g_rules.steps == 0) {
    info->step = DefaultStep(file, qualname);
  } else {
    for (int i = 0; i < g_rules.steps && !info->step; ++i) {
      info->step = Matches(g_rules.step[i].glob, file, qualname);
    }
  }
  bool included = !g_rules.include_filters;
  bool named = false;  // matched a user pattern: the user wants it, cheap or not
  for (int i = 0; i < g_rules.includes; ++i) {
    const Pattern& p = g_rules.include[i];
    if (!Matches(p.glob, file, qualname)) continue;
    included = true;
    named = true;
    if (p.kind != FunctionKind::kUnknown) {
      info->kind = p.kind;
      info->always = true;
    }
  }
  info->always = info->always || info->step;
  info->record = included || info->always;
  const bool plain = info->record && !info->always && !named;
  info->may_sample = plain && g_hook.time_every > 1;
  info->probe_left =
      plain && (g_hook.light_min_ns > 0 || info->may_sample) ? CodeInfo::kProbeCalls : 0;
}

}  // namespace

void InitRules(const char* step_function, const char* include) {
  g_rules.steps = ParseList(step_function, g_rules.step, false);
  g_rules.includes = ParseList(include, g_rules.include, true);
  for (int i = 0; i < g_rules.includes; ++i) {
    if (g_rules.include[i].kind == FunctionKind::kUnknown) g_rules.include_filters = true;
  }
}

CodeInfo* NewCodeInfo(PyObject* code) {
  // The hook may run while an exception is being thrown into a generator (throwflag): keep it.
  PyObject *type, *value, *traceback;
  g_api.ErrFetch(&type, &value, &traceback);
  char path[512];
  char qualname[160];
  StringAttr(code, "co_filename", path, sizeof path);
  StringAttr(code, g_hook.layout.minor >= 11 ? "co_qualname" : "co_name", qualname,
             sizeof qualname);
  long line = 0;
  if (PyObject* first = g_api.GetAttrString(code, "co_firstlineno")) {
    line = g_api.LongAsLong(first);
    g_api.DecRef(first);
  }
  g_api.ErrClear();
  g_api.ErrRestore(type, value, traceback);

  auto* info = new (std::nothrow) CodeInfo();
  if (info == nullptr) return nullptr;
  const char* file = StableFile(path);
  char number[24];
  const int digits = std::snprintf(number, sizeof number, ":%ld:", line);
  // Truncated to the buffer: long paths still give distinct names in practice.
  size_t at = 0;
  for (std::string_view part :
       {std::string_view(file), std::string_view(number, digits), std::string_view(qualname)}) {
    const size_t n = std::min(part.size(), sizeof info->name - 1 - at);
    std::memcpy(info->name + at, part.data(), n);
    at += n;
  }
  info->name[at] = '\0';
  Classify(info, file, qualname);
  return info;
}

void ProbeCost(CodeInfo* info, uint64_t inclusive_ns, bool had_callees) {
  info->probe_ns += inclusive_ns;
  info->probe_max_ns = std::max(info->probe_max_ns, inclusive_ns);
  info->had_callees = info->had_callees || had_callees;
  if (--info->probe_left != 0) return;
  const uint64_t mean = (info->probe_ns - info->probe_max_ns) / (CodeInfo::kProbeCalls - 1);
  info->light = !info->had_callees && mean < g_hook.light_min_ns;
  info->mean_ns = static_cast<uint32_t>(std::min<uint64_t>(mean, UINT32_MAX));
  info->sampled = info->may_sample && mean < kSampledBelowNs;
}

Slot InternSlot(CodeInfo* info, Slot parent) {
  const Slot slot = InternFunction(info->kind, info->name, parent);
  const int way = info->next_way;
  info->next_way = static_cast<uint8_t>((way + 1) % CodeInfo::kCacheWays);
  info->parents[way] = parent;
  info->slots[way] = slot;
  info->filled[way] = true;
  return slot;
}

}  // namespace perftracker::preload::cpython
