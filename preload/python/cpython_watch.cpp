// Keeping the frame-evaluation slot (PEP 523) for the whole life of the process.
//
// Other tools take the slot and give it back, any number of times: Dynamo (torch.compile) saves
// the evaluator it finds, installs its own that calls the saved one for the frames it does not
// compile, and restores the saved one when it is disabled; a tool enabled before us restores the
// default evaluator and drops us; a debugger's evaluator may call nothing of ours. A check (GIL
// held) runs at every garbage collection and, scheduled as a pending call by the writer thread's
// watch, about once a second; it costs no frame anything. What it finds:
//  - us, or a foreign evaluator that calls us: recorded; a loss in progress ends;
//  - the default evaluator (a reset): we reinstall ourselves, chaining the default;
//  - a foreign evaluator that does not call us: on 3.12+ sys.monitoring records from then on;
//    before, Python goes unrecorded until the slot is given back (one warning per process).
// Frames evaluated between the loss and the check that ends it are missing: the span is written
// for the writer (core/unrecorded_spans.h), which flags every window overlapping it.
#include <atomic>

#include "preload/core/log.h"
#include "preload/core/unrecorded_spans.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload::cpython {
namespace {

std::atomic<bool> g_check_pending{false};
std::atomic<bool> g_python_exiting{false};
// sys.monitoring records (3.12+): it sees every frame whoever holds the slot, to the end of the
// process. It is never stopped for our hook again: frames it opened would be closed by nobody.
std::atomic<bool> g_monitored{false};
// The foreign evaluator that held the slot without calling us at the last check; nullptr while
// we are recorded. Written by the check; the watch reads it without the GIL.
std::atomic<EvalFrameFn> g_lost_to{nullptr};
PyInterpreterState* g_interp = nullptr;

// GIL held for these.
uint64_t g_last_called_ns = 0;  // the last check that found us called: where a loss may begin
bool g_warned_lost = false;
bool g_warned_reset = false;
// The slot and this thread's hook calls at this thread's previous check: the calls of another
// thread say nothing about the evaluator this thread saw.
thread_local EvalFrameFn t_last_seen [[gnu::tls_model("initial-exec")]] = nullptr;
thread_local uint64_t t_last_calls [[gnu::tls_model("initial-exec")]] = 0;

// Whether the installed (foreign) evaluator still reaches EvalHook: evaluates one frame of a
// function of ours, unrecorded, and looks for it. No hook call since the last check alone does
// not tell: a thread may just have been in C code (or in two gc.collect() calls in a row).
// Any Python error is cleared, and then the answer is "no".
bool CallsUs() {
  static PyObject* probe = nullptr;  // `lambda: None`, kept for the process
  PyObject *type, *value, *traceback;
  g_api.ErrFetch(&type, &value, &traceback);
  if (probe == nullptr) {
    PyObject* builtins = g_api.ImportModule("builtins");
    PyObject* name = g_api.UnicodeFromString("eval");
    PyObject* source = g_api.UnicodeFromString("lambda: None");
    PyObject* globals = g_api.DictNew();
    if (builtins && name && source && globals) {
      probe = g_api.CallMethodObjArgs(builtins, name, source, globals, nullptr);
    }
    PyObject* code = probe != nullptr ? g_api.GetAttrString(probe, "__code__") : nullptr;
    if (code == nullptr || g_api.CodeSetExtra(code, g_hook.extra_index, UnrecordedInfo()) != 0) {
      if (probe != nullptr) g_api.DecRef(probe);
      probe = nullptr;
    }
    for (PyObject* o : {code, globals, source, name, builtins}) {
      if (o != nullptr) g_api.DecRef(o);
    }
  }
  bool called = false;
  if (probe != nullptr) {
    const uint64_t before = ThreadHookCalls();
    PyObject* result = g_api.CallObject(probe, nullptr);
    called = ThreadHookCalls() != before;
    if (result != nullptr) g_api.DecRef(result);
  }
  g_api.ErrClear();
  g_api.ErrRestore(type, value, traceback);
  return called;
}

// Recorded now: a loss in progress ends (the evaluator gave the slot back, or chains to us).
void Called(uint64_t now) {
  g_last_called_ns = now;
  if (g_lost_to.exchange(nullptr) != nullptr) g_python_unrecorded.End(now);
}

// The slot holds the default evaluator: whoever held it gave it up, and took us out with it.
void Reinstall(PyInterpreterState* interp, uint64_t now) {
  // Chaining the default, not what we chained before: that tool is gone from the slot, and if it
  // comes back it saves what it finds (us) and calls it; chaining it too would recurse.
  g_hook.previous = g_api.eval_frame_default;
  g_api.SetEvalFrameFunc(interp, &EvalHook);
  const bool ends_loss = g_lost_to.load() != nullptr;
  // Frames since the last check that saw us called went unrecorded: a second at most.
  if (!ends_loss) g_python_unrecorded.Begin(g_last_called_ns);
  Called(now);
  g_python_unrecorded.End(now);
  // Once: it tells that some tool resets the slot; every later reset is in its windows' flags.
  // A reset that gives back a slot lost to a foreign evaluator is that loss's end, reported.
  if (!ends_loss && !g_warned_reset) {
    g_warned_reset = true;
    Warn("the Python frame evaluator was reset by another tool; reinstalled");
  }
}

// A foreign evaluator holds the slot and does not call us.
void Lost(EvalFrameFn current) {
  if (g_lost_to.load() != nullptr) {  // lost already (to another one): the same loss goes on
    g_lost_to.store(current);
    return;
  }
  int tool_id = 0;
  if (StartMonitoring(&tool_id)) {
    g_monitored.store(true);
    // Frames the foreign evaluator ran before this check were recorded by nobody.
    g_python_unrecorded.Begin(g_last_called_ns);
    g_python_unrecorded.End(NowNs());
    if (!g_warned_lost) {
      Warn(
          "another tool replaced the Python frame evaluator; recording through sys.monitoring "
          "(tool id %d)",
          tool_id);
    }
    g_warned_lost = true;
    return;
  }
  g_lost_to.store(current);
  g_python_unrecorded.Begin(g_last_called_ns);
  // Once for the process: a tool that swaps its evaluator in and out would repeat it forever;
  // each later loss is in its windows' python_unrecorded flag.
  if (!g_warned_lost) {
    g_warned_lost = true;
    Warn(
        "another tool replaced the Python frame evaluator and does not call ours; Python "
        "functions are not recorded while it holds it (windows flagged python_unrecorded)");
  }
}

int PendingCheck(void*) {
  g_check_pending.store(false);
  CheckEvalHook();
  return 0;
}

// The writer thread, about once a second, without the GIL: a gc may be rare (or disabled), so
// the slot is also watched from outside. Reading interp->eval_frame is a plain load; the check
// itself runs on the main thread with the GIL, at its next bytecode boundary. While the slot is
// lost it is checked every time: only a check sees it given back.
void WatchEvalHook() {
  if (g_python_exiting.load() || g_interp == nullptr || g_monitored.load()) return;
  if (g_api.GetEvalFrameFunc(g_interp) == &EvalHook && g_lost_to.load() == nullptr) return;
  if (!g_check_pending.exchange(true) && g_api.AddPendingCall(&PendingCheck, nullptr) != 0) {
    g_check_pending.store(false);  // the queue is full: next second
  }
}

}  // namespace

void StartEvalWatch() {
  g_interp = g_api.InterpreterGet();
  g_last_called_ns = NowNs();
  AddWriterTick(&WatchEvalHook);
}

void MarkPythonExiting() { g_python_exiting.store(true); }

void CheckEvalHook() {
  // Not installed, or sys.monitoring records whatever holds the slot; or a forked child, whose
  // recorder is off and whose hook passes through uncounted.
  if (g_hook.previous == nullptr || g_hook.monitoring || !Active()) return;
  PyInterpreterState* interp = g_api.InterpreterGet();
  const EvalFrameFn current = g_api.GetEvalFrameFunc(interp);
  const uint64_t now = NowNs();
  const bool same = current == t_last_seen;
  const bool progressed = ThreadHookCalls() != t_last_calls;
  t_last_seen = current;
  if (current == &EvalHook) {
    Called(now);
  } else if (current == g_api.eval_frame_default || current == nullptr) {
    Reinstall(interp, now);
  } else if (same && progressed && g_lost_to.load() == nullptr) {
    Called(now);  // the same evaluator as last time, and we were called since: it chains to us
  } else if (same && !progressed && g_lost_to.load() == current) {
    // Still lost to it, and nothing of ours ran since: nothing to probe.
  } else if (CallsUs()) {
    Called(now);
  } else {
    Lost(current);
  }
  t_last_calls = ThreadHookCalls();  // after the probe: its own call is no progress
}

}  // namespace perftracker::preload::cpython
