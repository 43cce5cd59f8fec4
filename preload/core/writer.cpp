// Who runs here: one background thread ("perftracker"), plus whichever thread calls Flush (exit
// paths). All aggregation state sits behind one mutex that no hook ever takes.
#include "preload/core/writer.h"

#include <fcntl.h>
#include <flatbuffers/flatbuffers.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "preload/core/aggregator.h"
#include "preload/core/clock.h"
#include "preload/core/collective_iterations.h"
#include "preload/core/log.h"
#include "preload/core/mode_trigger.h"
#include "preload/core/recorder_state.h"
#include "preload/core/segment_order.h"

namespace perftracker::preload {
namespace {

struct RingCounters {
  ThreadRing* ring;
  uint64_t dropped, hook_ns, hook_calls;
};

struct WriterState {
  std::mutex mu;
  std::unique_ptr<format::RingWriter> ring;
  std::unique_ptr<Aggregator> aggregator;
  CollectiveIterations collective_iterations;  // iterations when Python marks none
  std::unique_ptr<ModeTrigger> mode_trigger;   // light / detailed Python recording
  format::WindowEncoder encoder;
  flatbuffers::FlatBufferBuilder live_builder;
  std::vector<Event> batch;
  SegmentScratch segments;
  std::vector<RingCounters> counters;
  uint64_t drain_ns = 0;
  uint64_t last_live_ns = 0;
  uint64_t last_tick_ns = 0;
  uint64_t windows_written = 0;
  uint64_t windows_failed = 0;
  bool warned_write = false;
  // Set by the final flushes and kept: later refreshes must not say "running" again.
  format::ExitState exit_state = format::ExitState::kRunning;
  int wake_fd = -1;             // eventfd: wakes the thread early (SIGTERM)
  int done_pipe[2] = {-1, -1};  // the thread writes a byte here after a requested flush
  pid_t pid = 0;                // a forked child inherits this state but must never write
};

WriterState* g_writer = nullptr;
volatile sig_atomic_t g_flush_requested = 0;
struct sigaction g_previous_sigterm;

void CollectHealth(WriterState& w, ThreadRing* ring) {
  auto it = std::find_if(w.counters.begin(), w.counters.end(),
                         [&](const RingCounters& c) { return c.ring == ring; });
  if (it == w.counters.end()) {
    w.counters.push_back(RingCounters{ring, 0, 0, 0});
    it = w.counters.end() - 1;
  }
  const uint64_t dropped = ring->dropped.load(std::memory_order_relaxed);
  const uint64_t ns = ring->hook_ns.load(std::memory_order_relaxed);
  const uint64_t calls = ring->hook_calls.load(std::memory_order_relaxed);
  w.aggregator->AddHealth(dropped - it->dropped, ns - it->hook_ns, calls - it->hook_calls);
  *it = RingCounters{ring, dropped, ns, calls};
}

void Append(WriterState& w, format::Window& window) {
  g_slice_epoch.fetch_add(1, std::memory_order_relaxed);  // iterations may not come from Python
  window.detailed = w.mode_trigger->Detailed(window.iter_begin);
  const auto bytes = w.encoder.Encode(window);
  if (w.ring->Append(bytes, w.encoder.static_tail_size())) {
    ++w.windows_written;
    return;
  }
  ++w.windows_failed;
  if (!w.warned_write) {
    w.warned_write = true;
    Warn(
        "cannot write a window to the ring file; the job goes on (PERFTRACKER_ENABLE=0 to "
        "turn perftracker off)");
  }
}

void WriteLive(WriterState& w, uint64_t now) {
  format::LiveState live = w.aggregator->Live(now);
  live.windows_written = w.windows_written;
  live.exit_state = w.exit_state;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  live.update_real_ns = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
  if (PythonStackProvider provider = GetPythonStackProvider()) provider(&live.python_stack);
  w.ring->WriteLive(format::EncodeLiveState(live, w.live_builder));
  w.last_live_ns = now;
}

// One round: drain every ring, order, aggregate, write what is finished. Holds w.mu.
void Round(WriterState& w) {
  Tables& tables = GetTables();
  CalibrateTsc(200'000'000);
  const uint64_t now = NowNs();
  w.batch.clear();
  for (ThreadRing* r = FirstRing(); r != nullptr; r = r->next) {
    const RingState state = r->state.load(std::memory_order_acquire);
    if (state == RingState::kFree) continue;
    r->Drain([&](const Event& e) { w.batch.push_back(e); });
    CollectHealth(w, r);
    // Dead and drained: a new thread may adopt it. (The owner pushed its last event before
    // marking it dead, so nothing can arrive after this drain.)
    if (state == RingState::kDead) r->state.store(RingState::kFree, std::memory_order_release);
  }
  w.collective_iterations.Synthesize(&w.batch, tables);
  OrderBySegment(&w.batch, &w.segments);
  for (const Event& e : w.batch) {
    if (e.type == EventType::kIteration) w.mode_trigger->OnIteration(e.t);
    w.aggregator->Add(e, tables);
  }
  w.mode_trigger->Poll(now);
  while (auto window = w.aggregator->TakeFinished(now, tables)) Append(w, *window);
  if (now - w.last_live_ns >= 1'000'000'000ull) WriteLive(w, now);
  if (now - w.last_tick_ns >= 1'000'000'000ull) {
    w.last_tick_ns = now;
    if (WriterTick tick = GetWriterTick()) tick();
  }
}

void FlushLocked(WriterState& w) {
  Round(w);
  const uint64_t now = NowNs();
  format::Window partial = w.aggregator->TakePartial(now, GetTables());
  if (!partial.functions.empty() || !partial.collectives.empty() || partial.iterations.count) {
    Append(w, partial);
  }
  WriteLive(w, now);
}

void* WriterMain(void*) {
  WriterState& w = *g_writer;
  pthread_setname_np(pthread_self(), "perftracker");
  const int timeout_ms = static_cast<int>(std::max<uint64_t>(w.drain_ns / 1'000'000, 1));
  for (;;) {
    pollfd p{w.wake_fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      uint64_t ignored;
      (void)!read(w.wake_fd, &ignored, sizeof ignored);
    }
    std::lock_guard lock(w.mu);
    if (g_flush_requested) {
      w.exit_state = format::ExitState::kSigterm;
      FlushLocked(w);
      g_flush_requested = 0;
      (void)!write(w.done_pipe[1], "x", 1);
    } else {
      Round(w);
    }
  }
  return nullptr;
}

// Only async-signal-safe calls: wake the writer, wait a bounded time, then let the previous
// disposition (default: terminate) take over.
void OnSigterm(int sig) {
  g_flush_requested = 1;
  const uint64_t one = 1;
  (void)!write(g_writer->wake_fd, &one, sizeof one);
  pollfd p{g_writer->done_pipe[0], POLLIN, 0};
  poll(&p, 1, 3000);
  sigaction(sig, &g_previous_sigterm, nullptr);
  raise(sig);
}

void InstallExitPaths() {
  std::atexit([] { Flush(); });
  struct sigaction sa {};
  sa.sa_handler = OnSigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &g_previous_sigterm);
  // A lock held by another thread at fork() stays locked forever in the child: take ours first.
  pthread_atfork(
      [] {
        GetTables().mu.lock();
        g_writer->mu.lock();
      },
      [] {
        g_writer->mu.unlock();
        GetTables().mu.unlock();
      },
      [] {
        g_writer->mu.unlock();
        GetTables().mu.unlock();
        SetActive(false);  // no writer thread here, and the parent owns the ring file
      });
}

}  // namespace

bool StartWriter(const Config& config, const format::Identity& identity, const std::string& path) {
  format::RingOptions options;
  options.file_size = config.ring_mb << 20;
  std::string error;
  auto ring = format::RingWriter::Create(path, identity, options, &error);
  if (!ring) {
    Warn("%s; not recording (PERFTRACKER_ENABLE=0 silences this)", error.c_str());
    return false;
  }
  auto* w = new WriterState();  // never destroyed: exit paths and hooks may use it to the end
  w->ring = std::move(ring);
  w->aggregator = std::make_unique<Aggregator>(
      config.window_iters, config.window_s * 1'000'000'000ull, identity.start_mono_ns);
  w->drain_ns = config.drain_ms * 1'000'000ull;
  // $PERFTRACKER_DIR/<job>/trigger: two levels above the ring file (<job>/<host>/rank-N.ptr).
  const std::string host_dir = path.substr(0, path.rfind('/'));
  w->mode_trigger =
      std::make_unique<ModeTrigger>(config, host_dir.substr(0, host_dir.rfind('/')) + "/trigger");
  w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->wake_fd < 0 || pipe2(w->done_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    Warn("cannot create the writer's wake-up channel; not recording");
    return false;
  }
  w->pid = getpid();
  g_writer = w;
  // The writer thread takes no signals: a SIGTERM handled there would wait for itself.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const int rc = pthread_create(&thread, nullptr, WriterMain, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    Warn("cannot start the writer thread; not recording");
    g_writer = nullptr;
    return false;
  }
  pthread_detach(thread);
  InstallExitPaths();
  return true;
}

void Flush() {
  if (g_writer == nullptr || getpid() != g_writer->pid) return;
  FlushCallbacks& callbacks = GetFlushCallbacks();
  for (int i = 0; i < callbacks.count.load(); ++i) callbacks.callbacks[i]();
  std::lock_guard lock(g_writer->mu);
  g_writer->exit_state = format::ExitState::kNormalExit;  // only the exit paths call Flush
  FlushLocked(*g_writer);
}

}  // namespace perftracker::preload
