// Who runs here: one background thread ("perftracker") owns every piece of WriterState; no other
// thread touches it, so nothing here is locked, and nothing a training thread waits on (a hook,
// fork, exit) is ever held across encoding, compression or I/O. The exit paths (atexit, the
// Python exit flush, SIGTERM) ask the thread for a final flush and wait a bounded time for it.
#include "preload/core/writer.h"

#include <fcntl.h>
#include <flatbuffers/flatbuffers.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "preload/core/aggregator.h"
#include "preload/core/clock.h"
#include "preload/core/collective_iterations.h"
#include "preload/core/critical_path.h"
#include "preload/core/identity.h"
#include "preload/core/log.h"
#include "preload/core/mode_trigger.h"
#include "preload/core/output_dir.h"
#include "preload/core/recorder_state.h"
#include "preload/core/run_session.h"
#include "preload/core/runtime_visibility.h"
#include "preload/core/sched_stat.h"
#include "preload/core/thread_cpu.h"
#include "preload/core/segment_order.h"

namespace perftracker::preload {
namespace {

struct RingCounters {
  ThreadRing* ring;
  uint64_t dropped, hook_ns, hook_calls;
};

struct WriterState {
  // The ring file, created at start for a rank; for a helper process at its first window, so a
  // short-lived tool the rank runs (git, a compiler) leaves no file behind.
  std::unique_ptr<format::RingWriter> ring;
  OutputDir dir;
  format::Identity identity;
  format::RingOptions options;
  bool ring_failed = false;
  bool lone = false;            // run_session.h: records until a rank of the run registers
  bool yielded = false;         // a lone process that found ranks: passive from then on
  uint64_t write_delay_ns = 0;  // PERFTRACKER_TEST_WRITE_DELAY_MS: a slow disk, for tests
  std::unique_ptr<Aggregator> aggregator;
  CollectiveIterations collective_iterations;  // iterations when Python marks none
  std::unique_ptr<ModeTrigger> mode_trigger;   // light / detailed Python recording
  format::WindowEncoder encoder;
  flatbuffers::FlatBufferBuilder live_builder;
  format::WindowEncoder live_encoder;  // the open window's, for the live slot
  std::vector<Event> batch;
  SegmentScratch segments;
  // The training loop's thread (the ring that marks iterations, else launches collectives) and
  // its critical path; the kCritical events it makes join the batch.
  CriticalPath critical_path;
  struct Drained {
    const ThreadRing* ring;
    size_t from, to;  // its events in batch
  };
  std::vector<Drained> drained;  // this round's rings, in drain order
  ThreadRing* iteration_ring = nullptr;
  std::vector<Event> critical;
  SchedStat sched;  // the iteration thread's CPU and run-queue time, per drain
  ThreadCpu side_threads;  // the other threads' CPU time, on their Python functions
  std::vector<RingCounters> counters;
  uint64_t drain_ns = 0;
  uint64_t last_live_ns = 0;
  uint64_t last_tick_ns = 0;
  uint64_t tick_ns = 1'000'000'000;                      // PERFTRACKER_TEST_WATCH_MS
  uint64_t last_family_tick_ns[WriterTicks::kMax] = {};  // AddWriterTick's, by index
  uint64_t windows_written = 0;
  uint64_t windows_failed = 0;
  bool warned_write = false;
  // Set by the final flushes and kept: later refreshes must not say "running" again.
  format::ExitState exit_state = format::ExitState::kRunning;
  uint64_t flushes_done = 0;    // requests handled (writer thread)
  int wake_fd = -1;             // eventfd: wakes the thread early (a flush request)
  int done_pipe[2] = {-1, -1};  // the thread writes a byte here after a requested flush
  pid_t pid = 0;                // a forked child inherits this state but must never write
};

WriterState* g_writer = nullptr;
// Flush requests, from any thread or a signal handler (lock-free atomics only): the count asked
// for and the count done, and the exit state the last request asked to record.
std::atomic<uint64_t> g_flush_requests{0};
std::atomic<uint64_t> g_flushes_done{0};
std::atomic<int> g_flush_state{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
struct sigaction g_previous_sigterm;

void SlowDisk(const WriterState& w) {
  if (w.write_delay_ns == 0) return;
  const timespec ts{static_cast<time_t>(w.write_delay_ns / 1'000'000'000),
                    static_cast<long>(w.write_delay_ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// A lone process whose run has ranks was their launcher: it leaves no file. The name is removed
// only while it is still our file (never another process's created since).
void Yield(WriterState& w) {
  w.yielded = true;
  SetActive(false);
  if (w.ring) {
    const std::string name = RingFileName(w.identity);
    struct stat mine, named;
    if (fstat(w.ring->fd(), &mine) == 0 &&
        fstatat(w.dir.fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        mine.st_dev == named.st_dev && mine.st_ino == named.st_ino) {
      unlinkat(w.dir.fd, name.c_str(), 0);
    }
    w.ring.reset();
  }
  UnregisterRun("lone");
  UnregisterRun("candidate");
  RegisterRun("yielded", w.dir.path);
}

bool YieldedToRanks(WriterState& w) {
  if (w.lone && !w.yielded && RunHasRanks()) Yield(w);
  return w.yielded;
}

bool EnsureRing(WriterState& w) {
  if (w.ring) return true;
  if (w.ring_failed) return false;
  std::string error;
  w.ring = format::RingWriter::CreateAt(w.dir.fd, w.dir.path, RingFileName(w.identity), w.identity,
                                        w.options, &error);
  if (!w.ring) {
    w.ring_failed = true;
    Warn("%s; this %s records nothing", error.c_str(), w.lone ? "process" : "helper process");
    if (w.lone) RegisterRun("refused", error);
  } else if (w.lone) {
    RegisterRun("lone", w.dir.path + "/" + RingFileName(w.identity));
  }
  return w.ring != nullptr;
}

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
  if (YieldedToRanks(w)) return;
  g_slice_epoch.fetch_add(1, std::memory_order_relaxed);  // iterations may not come from Python
  g_window_epoch.fetch_add(1, std::memory_order_relaxed);
  window.detailed = w.mode_trigger->Detailed(window.iter_begin);
  const auto bytes = w.encoder.Encode(window, format::LibraryDetails(window));
  SlowDisk(w);
  if (EnsureRing(w) &&
      w.ring->Append(bytes, w.encoder.static_tail_size(), w.encoder.detail_size())) {
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
  if (!w.ring) return;  // a helper before its first window
  format::LiveState live = w.aggregator->Live(now);
  live.windows_written = w.windows_written;
  live.exit_state = w.exit_state;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  live.update_real_ns = uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
  if (PythonStackProvider provider = GetPythonStackProvider()) provider(&live.python_stack);
  // The open window too: windows last PERFTRACKER_WINDOW_S or more, and `watch` would otherwise
  // see a fault only once the window that holds it ends. Left out where it does not fit.
  format::Window open = w.aggregator->Snapshot(now, GetTables());
  open.detailed = w.mode_trigger->Detailed(open.iter_begin);
  format::CompressOpenWindow(w.live_encoder.Encode(open, format::LibraryDetails(open)),
                             &live.open_window);
  std::span<const uint8_t> bytes = format::EncodeLiveState(live, w.live_builder);
  if (bytes.size() > w.ring->live_capacity()) {
    live.open_window.clear();
    bytes = format::EncodeLiveState(live, w.live_builder);
  }
  SlowDisk(w);
  w.ring->WriteLive(bytes);
  w.last_live_ns = now;
}

// The families' ticks that are due. After the windows finished this round were taken: what a
// tick adds (signal samples) belongs to the window open now.
void RunTicks(WriterState& w, uint64_t now) {
  WriterTicks& ticks = GetWriterTicks();
  const int n = ticks.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const uint64_t period = ticks.period_ns[i] != 0 ? ticks.period_ns[i] : w.tick_ns;
    if (w.last_family_tick_ns[i] != 0 && now - w.last_family_tick_ns[i] < period) continue;
    w.last_family_tick_ns[i] = now;
    ticks.ticks[i]();
  }
}

// One round: drain every ring, order, aggregate, write what is finished.
void Round(WriterState& w) {
  if (w.yielded) return;
  Tables& tables = GetTables();
  CalibrateTsc(200'000'000);
  const uint64_t now = NowNs();
  w.batch.clear();
  for (ThreadRing* r = FirstRing(); r != nullptr; r = r->next) {
    const RingState state = r->state.load(std::memory_order_acquire);
    if (state == RingState::kFree) continue;
    const size_t from = w.batch.size();
    r->Drain([&](const Event& e) { w.batch.push_back(e); });
    CollectHealth(w, r);
    bool marks = false, launches = false;
    for (size_t i = from; i < w.batch.size(); ++i) {
      w.critical_path.Learn(w.batch[i]);
      marks |= w.batch[i].type == EventType::kIteration;
      launches |= w.batch[i].type == EventType::kCollLaunch;
    }
    if (marks || (launches && w.iteration_ring == nullptr)) w.iteration_ring = r;
    w.drained.push_back({r, from, w.batch.size()});
    // Dead and drained: a new thread may adopt it. (The owner pushed its last event before
    // marking it dead, so nothing can arrive after this drain.)
    if (state == RingState::kDead) {
      w.side_threads.Forget(r);
      r->state.store(RingState::kFree, std::memory_order_release);
    }
  }
  // The device's queue is fed by every thread (autograd's, NCCL's, compiled code's launches),
  // then walked along the training loop's own events.
  for (const auto& d : w.drained) {
    if (d.ring != w.iteration_ring) {
      w.critical_path.Feed(d.ring, std::span(w.batch).subspan(d.from, d.to - d.from));
    }
  }
  for (const auto& d : w.drained) {
    if (d.ring == w.iteration_ring) {
      w.critical_path.Walk(std::span(w.batch).subspan(d.from, d.to - d.from), &w.critical);
    }
  }
  // Charged to the window open when this drain began: a boundary is off by one drain at most.
  // A helper marks no iterations; its main thread is its loop (a loader worker fetching), and
  // its account tells a worker that computes from one asleep on its index queue or its storage.
  const pid_t sampled = w.iteration_ring != nullptr
                            ? w.iteration_ring->tid.load(std::memory_order_relaxed)
                            : (w.identity.helper_of != 0 ? static_cast<pid_t>(w.identity.pid) : 0);
  if (sampled != 0) {
    uint64_t cpu = 0, delay = 0;
    if (w.sched.Sample(sampled, &cpu, &delay)) w.aggregator->AddSchedStat(cpu, delay);
  }
  // Every other thread, on the Python functions it ran (a freed ring's thread has exited).
  // Until the loop's thread is known (start-up), the main thread is taken to be it.
  const pid_t loop = sampled != 0 ? sampled : static_cast<pid_t>(w.identity.pid);
  for (const auto& d : w.drained) {
    const pid_t tid = d.ring->tid.load(std::memory_order_relaxed);
    if (tid == loop || d.to == d.from ||
        d.ring->state.load(std::memory_order_relaxed) == RingState::kFree) {
      continue;
    }
    w.side_threads.Charge(d.ring, tid, std::span(w.batch).subspan(d.from, d.to - d.from), tables,
                          w.aggregator.get());
  }
  w.drained.clear();
  w.batch.insert(w.batch.end(), w.critical.begin(), w.critical.end());
  w.critical.clear();
  w.collective_iterations.Synthesize(&w.batch, tables);
  OrderBySegment(&w.batch, &w.segments);
  for (const Event& e : w.batch) {
    if (e.type == EventType::kIteration) w.mode_trigger->OnIteration(e.t);
    w.aggregator->Add(e, tables);
  }
  w.mode_trigger->Poll(now);
  while (auto window = w.aggregator->TakeFinished(now, tables)) Append(w, *window);
  if (now - w.last_live_ns >= 1'000'000'000ull) WriteLive(w, now);
  RunTicks(w, now);
  if (now - w.last_tick_ns >= w.tick_ns) {
    w.last_tick_ns = now;
    CheckCudaRuntimeVisible();
    YieldedToRanks(w);
  }
}

void FlushAll(WriterState& w) {
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
    const uint64_t requested = g_flush_requests.load(std::memory_order_acquire);
    if (requested != w.flushes_done) {
      w.exit_state = static_cast<format::ExitState>(g_flush_state.load());
      FlushAll(w);
      w.flushes_done = requested;
      g_flushes_done.store(requested, std::memory_order_release);
      (void)!write(w.done_pipe[1], "x", 1);
    } else {
      Round(w);
    }
  }
  return nullptr;
}

// Asks the writer thread for a final flush recording `state` and waits for it at most
// `wait_ms`. Async-signal-safe (lock-free atomics, write, poll, read): the SIGTERM handler uses
// it. Several waiters may share the pipe's bytes, so each rechecks the count every 10 ms.
bool RequestFlush(format::ExitState state, uint64_t wait_ms) {
  g_flush_state.store(static_cast<int>(state));
  const uint64_t target = g_flush_requests.fetch_add(1, std::memory_order_acq_rel) + 1;
  const uint64_t one = 1;
  (void)!write(g_writer->wake_fd, &one, sizeof one);
  for (uint64_t waited = 0; g_flushes_done.load(std::memory_order_acquire) < target; waited += 10) {
    if (waited >= wait_ms) return false;
    pollfd p{g_writer->done_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 10) > 0) {
      char byte;
      (void)!read(g_writer->done_pipe[0], &byte, 1);
    }
  }
  return true;
}

// Wake the writer, wait a bounded time, then let the previous disposition (default: terminate)
// take over. A forked child has no writer thread: it goes straight on.
void OnSigterm(int sig) {
  if (getpid() == g_writer->pid) RequestFlush(format::ExitState::kSigterm, 3000);
  sigaction(sig, &g_previous_sigterm, nullptr);
  raise(sig);
}

// Once per process lineage: a forked child inherits the handlers (and this flag) with the rest.
void InstallExitPaths() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::atexit([] { Flush(); });
  struct sigaction sa {};
  sa.sa_handler = OnSigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &g_previous_sigterm);
  // A lock held by another thread at fork() stays locked forever in the child: take the one
  // hooks can take first. Its holders intern a name and let go (no I/O under it), so fork never
  // waits on the writer. The child is passive: no writer thread there, and the recorder's
  // per-thread state belongs to the parent's threads; one that runs on in Python records as a
  // helper from the interpreter's own after-fork hook (RecordForkedChild).
  pthread_atfork([] { GetTables().mu.lock(); }, [] { GetTables().mu.unlock(); },
                 [] {
                   GetTables().mu.unlock();
                   SetActive(false);
                 });
}

}  // namespace

bool StartWriter(const Config& config, format::Identity identity, OutputDir dir, bool lone) {
  format::RingOptions options;
  options.file_size = config.ring_mb << 20;
  options.zstd_level = format::kLibraryZstdLevel;
  std::unique_ptr<format::RingWriter> ring;
  if (identity.helper_of == 0 && !lone) {
    std::string error;
    int32_t holder = 0;
    ring = format::RingWriter::CreateAt(dir.fd, dir.path, RingFileName(identity), identity, options,
                                        &error, &holder);
    if (!ring && holder != 0 && IsRunLoneProcess(holder)) {
      // The run's lone process holds our name: it was our launcher, and yields (removes the
      // file) at its next check once we register. Start-up, not a hot path: a bounded wait.
      RegisterRun("rank", dir.path + "/" + RingFileName(identity));
      for (int tries = 0; !ring && tries < 100; ++tries) {
        usleep(50'000);
        ring = format::RingWriter::CreateAt(dir.fd, dir.path, RingFileName(identity), identity,
                                            options, &error, &holder);
      }
    }
    if (!ring && (holder == 0 || !config.helpers)) {
      Warn("%s; not recording (PERFTRACKER_ENABLE=0 silences this)", error.c_str());
      return false;
    }
    if (!ring) {  // RANK without our marker, beside a live rank: a helper whose parent scrubbed it
      Warn("%s; recording this process as its helper", error.c_str());
      identity.helper_of = holder;
    }
  }
  if (identity.helper_of != 0) options.file_size = config.helper_ring_mb << 20;
  if (ring) RegisterRun("rank", dir.path + "/" + RingFileName(identity));
  if (lone) RegisterRun("candidate", dir.path);
  auto* w = new WriterState();  // never destroyed: exit paths and hooks may use it to the end
  w->ring = std::move(ring);
  w->lone = lone;
  w->identity = identity;
  w->options = options;
  w->write_delay_ns = config.test_write_delay_ms * 1'000'000ull;
  w->aggregator = std::make_unique<Aggregator>(
      config.window_iters, config.window_s * 1'000'000'000ull, identity.start_mono_ns);
  w->drain_ns = config.drain_ms * 1'000'000ull;
  w->tick_ns = std::max<uint64_t>(config.test_watch_ms, 1) * 1'000'000ull;
  // $PERFTRACKER_DIR/<job>/trigger: the host directory's parent.
  w->mode_trigger =
      std::make_unique<ModeTrigger>(config, dir.path.substr(0, dir.path.rfind('/')) + "/trigger");
  w->mode_trigger->SetWindows(&w->aggregator->windows());
  w->dir = std::move(dir);
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

SignalSet* WriterSignals() { return g_writer ? &g_writer->aggregator->signals() : nullptr; }

bool WriterIsHelper() { return g_writer != nullptr && g_writer->identity.helper_of != 0; }

bool RecordForkedChild() {
  const WriterState* parent = g_writer;
  if (parent == nullptr || parent->pid == getpid() || parent->yielded) return false;
  const Config& config = ProcessConfig();
  if (!config.enable || !config.helpers) return false;
  format::Identity identity = DetectIdentity(config);
  identity.rank = parent->identity.rank;
  identity.local_rank = parent->identity.local_rank;
  identity.world_size = parent->identity.world_size;
  identity.job_id = parent->identity.job_id;
  identity.helper_of =
      parent->identity.helper_of != 0 ? parent->identity.helper_of : parent->pid;
  OutputDir dir{fcntl(parent->dir.fd, F_DUPFD_CLOEXEC, 0), parent->dir.path, {}};
  if (dir.fd < 0) return false;
  // The parent's writer is not here: its channels are closed, its flush count starts over.
  close(parent->wake_fd);
  close(parent->done_pipe[0]);
  close(parent->done_pipe[1]);
  g_flush_requests.store(0);
  g_flushes_done.store(0);
  ForgetParentThreads();
  if (!StartWriter(config, identity, std::move(dir), false)) return false;
  SetActive(true);
  return true;
}

void FlushBeforeImmediateExit() {
  const WriterState* w = g_writer;
  if (w == nullptr || getpid() != w->pid || !Active()) return;
  RequestFlush(format::ExitState::kNormalExit, ProcessConfig().exit_wait_ms);
}

void Flush() {
  if (g_writer == nullptr || getpid() != g_writer->pid) return;
  FlushCallbacks& callbacks = GetFlushCallbacks();
  for (int i = 0; i < callbacks.count.load(); ++i) callbacks.callbacks[i]();
  const uint64_t wait_ms = ProcessConfig().exit_wait_ms;
  if (!RequestFlush(format::ExitState::kNormalExit, wait_ms)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      Warn(
          "the last window was not written within %llu ms (a stalled disk?); exiting without "
          "it, the earlier windows are in the file",
          static_cast<unsigned long long>(wait_ms));
    }
  }
}

}  // namespace perftracker::preload
