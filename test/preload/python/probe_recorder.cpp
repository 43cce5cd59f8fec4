// A test double of preload/core/recorder.h for the CPython hook tests: exact per-slot totals, no
// windows, no ring file. Linked with the real hook sources into libperftracker_cpython_probe.so,
// preloaded like the real library. At exit (and on every Flush) it writes
// $PERFTRACKER_DIR/probe-rank-$RANK.tsv:
//   fn <slot> <kind> <parent slot> <count> <total_ns> <self_ns> <name> <timed calls>
//   iterations <n>
//   stack <frame>          (the PythonStackProvider's frames, outermost first, read from a
//                          separate thread when the first iteration ended)
//   context <slot>         (CurrentPythonSlot() of the flushing thread)
// A mutex is fine here: this is a test double, not the hot path under test.
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "preload/core/python_context.h"
#include "preload/core/recorder.h"
#include "preload/core/writer.h"

namespace perftracker::preload {
namespace {

struct Function {
  format::FunctionKind kind;
  std::string name;
  Slot parent;
  uint64_t count = 0, total_ns = 0, self_ns = 0;
  uint64_t timed = 0;  // calls with a measured time (RecordCall), of `count`
};

std::mutex g_mutex;
std::vector<Function>* g_functions = new std::vector<Function>();  // immortal: used at exit
uint64_t g_iterations = 0;
PythonStackProvider g_provider = nullptr;
bool g_written_once = false;
std::vector<std::string>* g_first_stack = new std::vector<std::string>();

void Write() {
  const char* dir = std::getenv("PERFTRACKER_DIR");
  const char* rank = std::getenv("RANK");
  if (!Active() || dir == nullptr || rank == nullptr) return;
  std::lock_guard lock(g_mutex);
  const std::vector<std::string>& stack = *g_first_stack;
  const std::string path = std::string(dir) + "/probe-rank-" + rank + ".tsv";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  for (size_t i = 0; i < g_functions->size(); ++i) {
    const Function& fn = (*g_functions)[i];
    std::fprintf(f, "fn\t%zu\t%d\t%d\t%llu\t%llu\t%llu\t%s\t%llu\n", i, static_cast<int>(fn.kind),
                 fn.parent == kNoSlot ? -1 : static_cast<int>(fn.parent),
                 static_cast<unsigned long long>(fn.count),
                 static_cast<unsigned long long>(fn.total_ns),
                 static_cast<unsigned long long>(fn.self_ns), fn.name.c_str(),
                 static_cast<unsigned long long>(fn.timed));
  }
  std::fprintf(f, "iterations\t%llu\n", static_cast<unsigned long long>(g_iterations));
  for (const std::string& frame : stack) std::fprintf(f, "stack\t%s\n", frame.c_str());
  const Slot context = CurrentPythonSlot();
  std::fprintf(f, "context\t%d\n", context == kNoSlot ? -1 : static_cast<int>(context));
  std::fclose(f);
  g_written_once = true;
}

void OnForkChild() { g_recorder_active.store(false); }

[[gnu::constructor]] void Start() {
  const char* enable = std::getenv("PERFTRACKER_ENABLE");
  g_recorder_active = (std::getenv("RANK") || std::getenv("LOCAL_RANK")) &&
                      !(enable && std::strcmp(enable, "0") == 0);
  pthread_atfork(nullptr, nullptr, &OnForkChild);
}

// Kept and run like the recorder's exit paths do: the hook flushes its untimed calls there.
FlushCallback g_flush_callback = nullptr;
void RunFlushCallback() {
  if (g_flush_callback != nullptr) g_flush_callback();
}

[[gnu::destructor]] void Stop() {
  RunFlushCallback();
  if (!g_written_once) Write();
}

}  // namespace

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

Slot InternFunction(format::FunctionKind kind, std::string_view name, Slot parent) {
  std::lock_guard lock(g_mutex);
  for (size_t i = 0; i < g_functions->size(); ++i) {
    const Function& f = (*g_functions)[i];
    if (f.kind == kind && f.parent == parent && f.name == name) return static_cast<Slot>(i);
  }
  g_functions->push_back(Function{kind, std::string(name), parent});
  return static_cast<Slot>(g_functions->size() - 1);
}

Slot InternCollective(uint64_t, uint32_t, uint32_t, format::CollectiveOp, int32_t, uint64_t,
                      std::string_view) {
  return kNoSlot;
}

void SetPythonStackProvider(PythonStackProvider provider) { g_provider = provider; }
void AddWriterTick(WriterTick, uint64_t) {}  // no writer thread here: the gc-time check alone

void RecordCall(Slot slot, uint64_t, uint64_t duration_ns, uint64_t self_ns, uint64_t, uint64_t) {
  std::lock_guard lock(g_mutex);
  Function& f = (*g_functions)[slot];
  ++f.count;
  ++f.timed;
  f.total_ns += duration_ns;
  f.self_ns += self_ns;
}

// Calls without time: the aggregator estimates their time; this double adds none.
void RecordUntimedCalls(Slot slot, uint64_t calls, uint64_t) {
  std::lock_guard lock(g_mutex);
  (*g_functions)[slot].count += calls;
}

// Time without a call, as the aggregator counts it.
void RecordSlice(Slot slot, uint64_t, uint64_t duration_ns, uint64_t self_ns) {
  std::lock_guard lock(g_mutex);
  Function& f = (*g_functions)[slot];
  f.total_ns += duration_ns;
  f.self_ns += self_ns;
}

void RecordDeviceTime(Slot, uint64_t) {}
void RecordCollectiveLaunch(Slot, uint64_t, uint64_t, uint64_t) {}
void RecordCollectiveDone(Slot, uint64_t, uint64_t) {}
// Reads the main thread's stack from another thread, like the writer thread does.
void* ReadStack(void*) {
  if (g_provider != nullptr) g_provider(g_first_stack);
  return nullptr;
}

void MarkIteration(uint64_t) {
  // As the recorder does: the running frames report slices, so the exact counts of these tests
  // also prove that slices never count as calls.
  g_slice_epoch.fetch_add(1, std::memory_order_relaxed);
  bool first = false;
  {
    std::lock_guard lock(g_mutex);
    first = g_iterations++ == 0;
  }
  pthread_t reader;
  if (first && pthread_create(&reader, nullptr, &ReadStack, nullptr) == 0) {
    pthread_join(reader, nullptr);
  }
}
void RecordHookOverhead(uint64_t, uint64_t) {}
void AddFlushCallback(FlushCallback callback) { g_flush_callback = callback; }
void Flush() {
  RunFlushCallback();
  Write();
}
// No writer here: a forked child stays passive (OnForkChild).
bool RecordForkedChild() { return false; }

}  // namespace perftracker::preload
