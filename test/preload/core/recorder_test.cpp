// The recorder and writer, in-process: events from many threads become windows in a ring file.
// Concurrent parts (rings, registry, writer thread) also run under TSan (tools/test.sh).
#include "preload/core/recorder.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "preload/core/aggregator.h"
#include "preload/core/clock.h"
#include "preload/core/config.h"
#include "preload/core/identity.h"
#include "preload/core/recorder_state.h"
#include "preload/core/sched_stat.h"
#include "preload/core/segment_order.h"
#include "preload/core/thread_cpu.h"
#include "preload/core/writer.h"
#include "schemas/format/ring_file.h"

using namespace perftracker;
using namespace perftracker::preload;

namespace {

Event Call(Slot slot, uint64_t end, uint64_t duration) {
  return Event{slot, EventType::kCall, {}, end, duration, duration, 0, 0};
}
Event Iteration(uint64_t end, uint64_t epoch = 0) {
  return Event{0, EventType::kIteration, {}, end, epoch, 0, 0, 0};
}
// A native call of `api` at `site` launching `kernel`: timed (t = end) or untimed (epoch tag).
Event Native(Slot api, Slot site, Slot kernel, bool timed, uint64_t t, uint64_t duration) {
  return Event{api,
               EventType::kNativeCall,
               {static_cast<uint8_t>(timed ? 1 : 0), 0, 0},
               timed ? t : kEpochTag | t,
               uint64_t{site} | uint64_t{kernel} << 32,
               timed ? duration : 0,
               kNoSlot,
               0};
}

std::vector<format::Window> ReadWindows(const std::string& path, format::RingContents* contents) {
  format::RingReader reader;
  std::string error;
  REQUIRE(reader.OpenFile(path, &error) == format::ReadStatus::kOk);
  std::vector<format::Window> windows;
  reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
    format::Window w;
    REQUIRE(format::DecodeWindow(bytes, &w));
    windows.push_back(std::move(w));
    return true;
  });
  if (contents) *contents = reader.contents();
  return windows;
}

const format::FunctionPattern* Find(const format::Window& w, const std::string& name) {
  for (const auto& f : w.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// One process-wide recorder for the whole test binary (it is a process singleton by design).
struct Recording {
  std::string dir = "/tmp/perftracker-recorder-test-" + std::to_string(getpid());
  std::string path;
  Recording() {
    setenv("PERFTRACKER_WINDOW_ITERS", "10", 1);
    setenv("PERFTRACKER_WINDOW_S", "0", 1);
    setenv("PERFTRACKER_DRAIN_MS", "5", 1);
    setenv("PERFTRACKER_THREAD_EVENTS", "4096", 1);
    setenv("PERFTRACKER_RING_MB", "4", 1);
    setenv("RANK", "5", 1);
    setenv("PERFTRACKER_JOB_ID", "recorder-test", 1);
    setenv("PERFTRACKER_DIR", dir.c_str(), 1);
    const Config config = LoadConfig();
    const format::Identity id = DetectIdentity(config);
    OutputDir out = OpenOutputDir(config, id);
    REQUIRE(out.fd >= 0);
    path = out.path + "/" + RingFileName(id);
    InitRecorder(static_cast<uint32_t>(config.max_functions), config.thread_events);
    REQUIRE(StartWriter(config, id, std::move(out)));
    SetActive(true);
  }
  ~Recording() { std::filesystem::remove_all(dir); }
};

Recording& TheRecording() {
  static Recording recording;
  return recording;
}

}  // namespace

TEST_CASE("windows end every W iterations and carry per-iteration totals", "[aggregator]") {
  Tables& tables = GetTables();
  InitRecorder(1024, 1024);
  const Slot outer = InternFunction(format::FunctionKind::kPython, "agg.py:1:outer");
  const Slot inner = InternFunction(format::FunctionKind::kPython, "agg.py:9:inner", outer);
  CHECK(InternFunction(format::FunctionKind::kPython, "agg.py:9:inner", outer) == inner);
  CHECK(InternFunction(format::FunctionKind::kPython, "agg.py:9:inner") != inner);
  Aggregator agg(4, 0, 1000);
  uint64_t t = 1000;
  for (int it = 0; it < 9; ++it) {
    for (int c = 0; c < 3; ++c) agg.Add(Call(inner, t += 100, 100), tables);  // outer still runs
    agg.Add(Iteration(t += 50), tables);
  }
  auto w0 = agg.TakeFinished(t, tables);
  auto w1 = agg.TakeFinished(t, tables);
  REQUIRE(w0);
  REQUIRE(w1);
  CHECK_FALSE(agg.TakeFinished(t, tables));
  CHECK(w0->iter_begin == 0);
  CHECK(w0->iter_end == 4);
  CHECK(w1->iter_begin == 4);
  CHECK(w1->iter_end == 8);
  CHECK(w0->iterations.count == 4);
  CHECK(w0->iterations.min_ns == 350);
  REQUIRE(w0->functions.size() == 2);  // the running caller comes along for the call path
  CHECK(w0->functions[0].name == "agg.py:1:outer");
  CHECK(w0->functions[0].count == 0);
  CHECK(w0->functions[1].parent == 0);
  CHECK(w0->functions[1].count == 12);
  CHECK(w0->functions[1].per_iteration.Count() == 4);
  CHECK(w0->functions[1].per_iteration.Quantile(0.5) ==
        format::HistogramBucketValue(format::HistogramBucket(300)));
  const format::Window rest = agg.TakePartial(t, tables);
  CHECK(rest.iter_begin == 8);
  CHECK(rest.iter_end == 9);
}

TEST_CASE("sampled host time: exact counts, totals scaled from the timed calls", "[aggregator]") {
  Tables& tables = GetTables();
  InitRecorder(1024, 1024);
  const Slot api = InternFunction(format::FunctionKind::kCudaApi, "cudaLaunchKernel");
  const Slot site = InternFunction(format::FunctionKind::kCudaApi, "cudaLaunchKernel @ x", api);
  const Slot kernel = InternFunction(format::FunctionKind::kKernel, "gemm");
  Aggregator agg(2, 0, 0);
  uint64_t t = 0;
  for (int it = 0; it < 2; ++it) {
    // 40 launches an iteration, 1 in 8 timed at 1000 ns: estimated 40 x 1000 per iteration.
    for (int c = 0; c < 40; ++c) {
      t += 2000;
      agg.Add(Native(api, site, kernel, c % 8 == 0, c % 8 == 0 ? t : uint64_t(it), 1000), tables);
    }
    agg.Add(Iteration(t += 100), tables);
  }
  // An iteration with no timed launch at all: estimated from the mean of earlier timed ones.
  for (int c = 0; c < 10; ++c) agg.Add(Native(api, kNoSlot, kNoSlot, false, 2, 0), tables);
  agg.Add(Iteration(t += 100), tables);
  auto w = agg.TakeFinished(t, tables);
  REQUIRE(w);
  for (const std::string name : {"cudaLaunchKernel", "cudaLaunchKernel @ x", "gemm"}) {
    const format::FunctionPattern* f = Find(*w, name);
    REQUIRE(f != nullptr);
    CHECK(f->count == 80);
    CHECK(f->duration.Count() == 10);
    CHECK(f->total_ns == 80'000);
    CHECK(f->min_ns == 1000);
    CHECK(f->per_iteration.Count() == 2);
    CHECK(f->per_iteration.Quantile(0.5) ==
          format::HistogramBucketValue(format::HistogramBucket(40'000)));
  }
  const format::Window rest = agg.TakePartial(t, tables);
  const format::FunctionPattern* f = Find(rest, "cudaLaunchKernel");
  REQUIRE(f != nullptr);
  CHECK(f->count == 10);
  CHECK(f->duration.Count() == 0);
  CHECK(f->total_ns == 10'000);
  CHECK(f->per_iteration.Quantile(0.5) ==
        format::HistogramBucketValue(format::HistogramBucket(10'000)));
}

TEST_CASE("untimed Python calls: counted in bulk, their time estimated", "[aggregator]") {
  Tables& tables = GetTables();
  InitRecorder(1024, 1024);
  const Slot cheap = InternFunction(format::FunctionKind::kPython, "bulk.py:3:cheap");
  Aggregator agg(2, 0, 0);
  uint64_t t = 0;
  for (int it = 0; it < 2; ++it) {
    // 1 timed call of 50 ns and 15 counted ones an iteration: 16 x 50 ns.
    agg.Add(Call(cheap, t += 1000, 50), tables);
    agg.Add(Event{cheap, EventType::kCall, {kCallUntimed, 0, 0}, kEpochTag | 0, 15, 0, 0, 0},
            tables);
    agg.Add(Iteration(t += 1000), tables);
  }
  auto w = agg.TakeFinished(t, tables);
  REQUIRE(w);
  const format::FunctionPattern* f = Find(*w, "bulk.py:3:cheap");
  REQUIRE(f != nullptr);
  CHECK(f->count == 32);
  CHECK(f->duration.Count() == 2);
  CHECK(f->total_ns == 32 * 50);
  CHECK(f->self_ns == 32 * 50);
  CHECK(f->per_iteration.Count() == 2);
  CHECK(f->per_iteration.Quantile(0.5) ==
        format::HistogramBucketValue(format::HistogramBucket(16 * 50)));
}

TEST_CASE("untimed calls are ordered by epoch, timed ones by time", "[aggregator]") {
  // Boundaries at times 100 and 200 carry epochs 3 and 7.
  std::vector<Event> batch = {
      Native(1, kNoSlot, kNoSlot, false, 6, 0),  // epoch 6: after the first boundary
      Native(1, kNoSlot, kNoSlot, false, 2, 0),  // epoch 2: before it
      Iteration(100, 3),
      Native(1, kNoSlot, kNoSlot, true, 150, 5),  // time 150: between the two
      Iteration(200, 7),
      Native(1, kNoSlot, kNoSlot, false, 7, 0),  // epoch 7: after the second
      Native(1, kNoSlot, kNoSlot, false, 3, 0),  // epoch 3: after the first
  };
  SegmentScratch scratch;
  OrderBySegment(&batch, &scratch);
  std::vector<std::string> order;
  // A tag char then the number, appended: GCC 12 at -O3 reports a false -Wrestrict for
  // "x" + std::string&& (GCC bug 105329).
  const auto tagged = [](char tag, uint64_t n) {
    std::string s(1, tag);
    return s += std::to_string(n);
  };
  for (const Event& e : batch) {
    if (e.type == EventType::kIteration) {
      order.push_back(tagged('|', e.t));
    } else if ((e.t & kEpochTag) != 0) {
      order.push_back(tagged('e', e.t & ~kEpochTag));
    } else {
      order.push_back(tagged('t', e.t));
    }
  }
  CHECK(order == std::vector<std::string>{"e2", "|100", "e6", "t150", "e3", "|200", "e7"});

  // A boundary of unknown epoch: untimed calls go last ("now"), as before epochs existed.
  std::vector<Event> unknown = {Native(1, kNoSlot, kNoSlot, false, 0, 0), Iteration(100, 0),
                                Native(1, kNoSlot, kNoSlot, true, 50, 5)};
  OrderBySegment(&unknown, &scratch);
  CHECK(unknown[0].t == 50);
  CHECK(unknown[1].type == EventType::kIteration);
  CHECK((unknown[2].t & kEpochTag) != 0);
}

TEST_CASE("collectives: launch offsets within the iteration and live progress", "[aggregator]") {
  Tables& tables = GetTables();
  InitRecorder(1024, 1024);
  const Slot ar =
      InternCollective(77, 8, 3, format::CollectiveOp::kAllReduce, -1, 4096, "ncclAllReduce");
  Aggregator agg(100, 0, 0);
  agg.Add(Iteration(1'000'000), tables);
  agg.Add(Event{ar, EventType::kCollLaunch, {}, 1'250'000, 0, 900, 0, 0}, tables);
  agg.Add(Event{ar, EventType::kCollDone, {}, 1'300'000, 0, 40'000, 0, 0}, tables);
  agg.Add(Event{ar, EventType::kCollLaunch, {}, 1'600'000, 1, 900, 0, 0}, tables);
  format::LiveState live = agg.Live(2'000'000);
  REQUIRE(live.comms.size() == 1);
  CHECK(live.comms[0].last_seq_launched == 1);
  CHECK(live.comms[0].last_seq_completed == 0);
  CHECK(live.comms[0].inflight_op == uint8_t(format::CollectiveOp::kAllReduce));
  CHECK(live.comms[0].inflight_since_mono_ns == 1'600'000);
  const format::Window w = agg.TakePartial(2'000'000, tables);
  REQUIRE(w.collectives.size() == 1);
  const auto& c = w.collectives[0];
  CHECK(c.count == 2);
  CHECK(c.last_seq_launched == 1);
  CHECK(c.last_seq_completed == 0);
  CHECK(c.launch_offset.Quantile(0.0) ==
        format::HistogramBucketValue(format::HistogramBucket(250'000)));
  CHECK(c.device_ns == 40'000);

  // The host runs ahead: another call queued behind the first, then the first completes. The
  // communicator moved each time, so it has been waiting since its latest move, not since the
  // oldest call's launch.
  agg.Add(Event{ar, EventType::kCollLaunch, {}, 2'100'000, 2, 900, 0, 0}, tables);
  live = agg.Live(2'200'000);
  CHECK(live.comms[0].inflight_since_mono_ns == 2'100'000);
  agg.Add(Event{ar, EventType::kCollDone, {}, 2'500'000, 1, 40'000, 0, 0}, tables);
  live = agg.Live(2'600'000);
  CHECK(live.comms[0].last_seq_completed == 1);
  CHECK(live.comms[0].inflight_op == uint8_t(format::CollectiveOp::kAllReduce));
  CHECK(live.comms[0].inflight_since_mono_ns == 2'500'000);
}

// A side thread's CPU time lands on the Python functions its events name, by their share of
// its self time; a drain with no Python time reads nothing (the next one takes the time in
// between), and a thread whose events are all native is never read.
TEST_CASE("a side thread's CPU time is charged to its Python functions", "[sched]") {
  if (access("/proc/thread-self/schedstat", R_OK) != 0) {
    WARN("no schedstat in this kernel: nothing to check");
    return;
  }
  Tables& tables = GetTables();
  InitRecorder(1024, 1024);
  const Slot body = InternFunction(format::FunctionKind::kPython, "side.py:1:exporter");
  const Slot leaf = InternFunction(format::FunctionKind::kPython, "side.py:9:encode", body);
  const Slot api = InternFunction(format::FunctionKind::kCudaApi, "cudaMemcpyAsync");
  std::atomic<pid_t> tid{0};
  std::atomic<int> phase{0};
  std::atomic<uint64_t> spun_ns{0};
  std::thread side([&] {
    tid = gettid();
    while (phase.load() == 0) sched_yield();
    const auto cpu = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
    };
    const uint64_t start = cpu();
    while (cpu() - start < 40'000'000) {
    }
    spun_ns = cpu() - start;
    phase = 2;
    while (phase.load() != 3) sched_yield();
  });
  while (tid.load() == 0) sched_yield();
  ThreadRing ring;
  ThreadCpu threads;
  Aggregator agg(100, 0, 0);
  const std::vector<Event> python = {Call(body, 10, 300), Call(leaf, 20, 100)};
  threads.Charge(&ring, tid, python, tables, &agg);  // the baseline
  phase = 1;
  while (phase.load() != 2) sched_yield();
  threads.Charge(&ring, tid, std::vector<Event>{Native(api, kNoSlot, kNoSlot, true, 30, 5)},
                 tables, &agg);  // no Python time: nothing read
  threads.Charge(&ring, tid, python, tables, &agg);
  phase = 3;
  side.join();
  const format::Window w = agg.TakePartial(1'000'000'000, tables);
  const auto* b = Find(w, "side.py:1:exporter");
  const auto* l = Find(w, "side.py:9:encode");
  REQUIRE(b != nullptr);
  REQUIRE(l != nullptr);
  CHECK(Find(w, "cudaMemcpyAsync") == nullptr);
  const double total = static_cast<double>(b->thread_cpu_ns + l->thread_cpu_ns);
  // Everything the thread spun between the two reads, and little else (its start and stop).
  CHECK(total >= 0.95 * static_cast<double>(spun_ns.load()));
  CHECK(total <= static_cast<double>(spun_ns.load()) + 20e6);
  CHECK(static_cast<double>(b->thread_cpu_ns) ==
        Approx(3.0 * static_cast<double>(l->thread_cpu_ns)).epsilon(0.01));
}

TEST_CASE("events from many threads reach the ring file exactly once", "[writer]") {
  Recording& rec = TheRecording();
  const Slot work = InternFunction(format::FunctionKind::kPython, "mt.py:3:work");
  constexpr int kThreads = 4, kCalls = 3000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int c = 0; c < kCalls; ++c) {
        RecordCall(work, NowNs(), 1000, 1000);
        if (c % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  for (int it = 0; it < 25; ++it) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MarkIteration(NowNs());
  }
  for (auto& t : threads) t.join();
  Flush();
  format::RingContents contents;
  const auto windows = ReadWindows(rec.path, &contents);
  REQUIRE(windows.size() >= 3);
  CHECK(windows[0].iter_end == 10);
  CHECK(windows[1].iter_begin == 10);
  CHECK(windows[1].iter_end == 20);
  uint64_t calls = 0, dropped = 0;
  for (const auto& w : windows) {
    if (const auto* f = Find(w, "mt.py:3:work")) calls += f->count;
    dropped += w.health.dropped_events;
  }
  CHECK(calls + dropped == uint64_t{kThreads} * kCalls);
  CHECK(calls > 0);
  REQUIRE(contents.live);
  CHECK(contents.live->iteration == 25);
  CHECK(contents.identity.rank == 5);
  CHECK(contents.identity.job_id == "recorder-test");
}

TEST_CASE("a full ring drops and counts instead of waiting", "[writer]") {
  Recording& rec = TheRecording();
  const Slot burst = InternFunction(format::FunctionKind::kPython, "burst.py:1:burst");
  constexpr uint64_t kEvents = 200'000;  // far more than 4096 between two drains
  std::thread([&] {
    for (uint64_t i = 0; i < kEvents; ++i) RecordCall(burst, NowNs(), 10, 10);
  }).join();
  Flush();
  uint64_t calls = 0, dropped = 0;
  for (const auto& w : ReadWindows(rec.path, nullptr)) {
    if (const auto* f = Find(w, "burst.py:1:burst")) calls += f->count;
    dropped += w.health.dropped_events;
  }
  CHECK(dropped > 0);
  CHECK(calls + dropped >= kEvents);  // earlier tests' drops may add to the total
}

TEST_CASE("a full ring keeps room for iteration markers", "[ring]") {
  std::vector<Event> storage(1024);
  ThreadRing ring;
  ring.capacity = storage.size();
  ring.limit = ring.capacity - kBoundaryReserve;
  ring.events = storage.data();
  const Event call{1, EventType::kCall, {}, 1, 1, 1, 0, 0};
  const Event marker{0, EventType::kIteration, {}, 2, 1, 0, 0, 0};
  uint64_t calls = 0;
  while (ring.Push(call)) ++calls;
  CHECK(calls == ring.limit);
  uint64_t markers = 0;
  while (ring.PushBoundary(marker)) ++markers;
  CHECK(markers == kBoundaryReserve);
  CHECK_FALSE(ring.Push(call));
  // Drained, the ring takes ordinary events again.
  uint64_t seen_markers = 0;
  CHECK(ring.Drain([&](const Event& e) { seen_markers += e.type == EventType::kIteration; }) ==
        calls + markers);
  CHECK(seen_markers == kBoundaryReserve);
  CHECK(ring.Push(call));
}

TEST_CASE("rings of exited threads are reused", "[writer]") {
  TheRecording();
  const Slot s = InternFunction(format::FunctionKind::kPython, "churn.py:1:f");
  auto count_rings = [] {
    int n = 0;
    for (ThreadRing* r = FirstRing(); r != nullptr; r = r->next) ++n;
    return n;
  };
  for (int round = 0; round < 50; ++round) {
    std::thread([&] { RecordCall(s, NowNs(), 5, 5); }).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(12));  // > drain interval
  }
  CHECK(count_rings() <= 8);
}

TEST_CASE("the TSC clock agrees with CLOCK_MONOTONIC and never runs backwards", "[clock]") {
  TheRecording();  // the writer thread calibrates within its first 200 ms
  const uint64_t deadline = MonotonicNs() + 2'000'000'000ull;
  bool switched = false;
  while (!(switched = TscCalibrated()) && MonotonicNs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string text((std::istreambuf_iterator<char>(cpuinfo)), {});
  const bool invariant = text.find(" constant_tsc") != std::string::npos &&
                         text.find(" nonstop_tsc") != std::string::npos;
  CHECK(switched == invariant);
  uint64_t last = NowNs();
  for (int i = 0; i < 100000; ++i) {
    const uint64_t now = NowNs();
    REQUIRE(now >= last);
    last = now;
  }
  // Over 50 ms the two clocks agree to within 0.1% (plus reading jitter). Each reading of ours
  // is bracketed by two monotonic ones, retried until no preemption fell between them.
  auto paired = [](uint64_t* ours, uint64_t* mono) {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const uint64_t before = MonotonicNs();
      *ours = NowNs();
      const uint64_t after = MonotonicNs();
      *mono = before + (after - before) / 2;
      if (after - before < 5'000) return;
    }
  };
  uint64_t a0, m0, a1, m1;
  paired(&a0, &m0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  paired(&a1, &m1);
  const double da = double(a1 - a0), dm = double(m1 - m0);
  CHECK(std::abs(da - dm) < dm * 0.001 + 20'000);
  CHECK(std::llabs(int64_t(a1) - int64_t(m1)) < 1'000'000);  // same time base
}

TEST_CASE("schedstat lines parse and nothing else does", "[sched]") {
  uint64_t cpu = 0, delay = 0;
  CHECK(ParseSchedStat("123456789 42 7\n", &cpu, &delay));
  CHECK(cpu == 123456789);
  CHECK(delay == 42);
  CHECK_FALSE(ParseSchedStat("", &cpu, &delay));
  CHECK_FALSE(ParseSchedStat("12", &cpu, &delay));
  CHECK_FALSE(ParseSchedStat("12 x 3", &cpu, &delay));
}

// The training loop's thread shares one CPU with a spinning thread, so it both runs and waits in
// the run queue. What the windows say is judged against the same thread's counters read around
// the loop, not against the wall clock: on a loaded machine other processes take the CPU too, and
// how much is theirs to decide. The windows after the first flush hold at most what the span
// between the two flushes did, and most of what the loop did: the writer samples the thread at
// its drains, so the last drain period's share goes to the window after the loop's.
TEST_CASE("windows carry the training loop's CPU time and run-queue delay", "[writer][sched]") {
  Recording& rec = TheRecording();
  if (access("/proc/thread-self/schedstat", R_OK) != 0) {
    WARN("no schedstat in this kernel: nothing to check");
    return;
  }
  const auto counters = [] {
    std::ifstream is("/proc/thread-self/schedstat");
    std::string text((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
    std::pair<double, double> out;
    uint64_t cpu = 0, delay = 0;
    REQUIRE(ParseSchedStat(text.c_str(), &cpu, &delay));
    out = {static_cast<double>(cpu), static_cast<double>(delay)};
    return out;
  };
  const auto before_flush = counters();
  Flush();
  uint64_t first_iter = 0;
  for (const auto& w : ReadWindows(rec.path, nullptr))
    first_iter = std::max(first_iter, w.iter_end);
  cpu_set_t saved, one;
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const auto loop_start = counters();
  for (int it = 0; it < 30; ++it) {
    const uint64_t until = NowNs() + 5'000'000;
    while (NowNs() < until) {
    }
    MarkIteration(NowNs());
  }
  const auto loop_end = counters();
  stop = true;
  spinner.join();
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof saved, &saved) == 0);
  Flush();
  const auto after_flush = counters();
  double cpu = 0, delay = 0;
  for (const auto& w : ReadWindows(rec.path, nullptr)) {
    if (w.iter_begin < first_iter) continue;
    cpu += static_cast<double>(w.thread_cpu_ns);
    delay += static_cast<double>(w.run_delay_ns);
  }
  const double loop_cpu = loop_end.first - loop_start.first;
  const double loop_delay = loop_end.second - loop_start.second;
  INFO("windows: cpu " << cpu << " delay " << delay << "; the thread in the loop: cpu "
                       << loop_cpu << " delay " << loop_delay << "; between the flushes: cpu "
                       << after_flush.first - before_flush.first << " delay "
                       << after_flush.second - before_flush.second);
  // The loop spun 150 ms on a CPU it shared: it ran, and it waited.
  REQUIRE(loop_cpu > 0);
  REQUIRE(loop_delay > 0);
  CHECK(cpu >= 0.5 * loop_cpu);
  CHECK(cpu <= after_flush.first - before_flush.first);
  CHECK(delay >= 0.5 * loop_delay);
  CHECK(delay <= after_flush.second - before_flush.second);
}

// A call site's calls repeat each iteration: one attention launcher, 8 forward then 8 backward
// launches a step. Timed on n % 64, every sample fell on a forward launch and the backward
// kernel was never timed; the rule must time every position of a period, and 1 in N overall.
TEST_CASE("device sampling: 1 in N calls, every position of a repeating pattern", "[sampling]") {
  CHECK(SampledCall(0, 64));  // the first call of a site, kernel or GEMM class
  for (uint32_t n = 0; n < 1000; ++n) {
    CHECK(SampledCall(n, 1));
    CHECK_FALSE(SampledCall(n, 0));
  }
  for (const uint32_t every : {2u, 16u, 64u, 1000u}) {
    constexpr uint32_t kCalls = 1 << 20;
    uint32_t sampled = 0;
    for (uint32_t n = 0; n < kCalls; ++n) sampled += SampledCall(n, every);
    INFO("every " << every);
    CHECK(std::abs(static_cast<double>(sampled) * every / kCalls - 1) < 0.01);
  }
  for (const uint32_t period : {2u, 4u, 16u, 32u, 64u, 160u}) {
    // Calls in steps of `period` (a step's launches through one site), 1 in 64 timed: each
    // position in the step is timed about as often as any other.
    std::vector<uint32_t> at(period);
    constexpr uint32_t kSteps = 4096;
    for (uint32_t n = 0; n < period * kSteps; ++n) at[n % period] += SampledCall(n, 64);
    const double each = static_cast<double>(kSteps) / 64;
    INFO("period " << period);
    CHECK(*std::min_element(at.begin(), at.end()) >= 0.5 * each);
    CHECK(*std::max_element(at.begin(), at.end()) <= 1.5 * each);
  }
}
