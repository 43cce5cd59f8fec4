// Windows sized by time (preload/core/window_schedule.h): a block times a power of two
// iterations, ending on multiples of their length and where a detailed period begins and ends;
// the slowdown trigger schedules its periods over whole windows.
#include "preload/core/window_schedule.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "preload/core/aggregator.h"
#include "preload/core/mode_trigger.h"
#include "preload/core/py_mode.h"
#include "preload/core/recorder.h"
#include "preload/core/recorder_state.h"

using namespace perftracker::preload;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// Ends `n` iterations of `ns` each; returns the [begin, end) of every window finished meanwhile.
std::vector<std::pair<uint64_t, uint64_t>> Run(Aggregator* agg, uint64_t* t, int n, uint64_t ns) {
  Tables& tables = GetTables();
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (int i = 0; i < n; ++i) {
    agg->Add(Event{0, EventType::kIteration, {}, *t += ns, 0, 0, 0, 0}, tables);
    while (auto w = agg->TakeFinished(*t, tables)) out.emplace_back(w->iter_begin, w->iter_end);
  }
  return out;
}

using Windows = std::vector<std::pair<uint64_t, uint64_t>>;

}  // namespace

TEST_CASE("a window's length is the fewest doublings of a block that last the minimum",
          "[aggregator][windows]") {
  WindowSchedule s(10, kSecond);
  CHECK(s.end() == 10);  // the first window is one block: start-up says nothing of the step
  s.Closed(10, 1'000'000);  // 1 ms steps: 1 s takes 1,000 iterations, 10 x 2^7 = 1,280
  CHECK(s.length() == 1280);
  CHECK(s.end() == 1280);  // the next multiple of the length
  s.Closed(1280, 600'000);  // 1,280 x 0.6 ms = 0.77 s: longer at once
  CHECK(s.length() == 2560);
  CHECK(s.end() == 2560);
  s.Closed(2560, 1'100'000);  // 2,560 x 1.1 ms = 2.8 s: under four times the minimum, kept
  CHECK(s.length() == 2560);
  CHECK(s.end() == 5120);
  s.Closed(5120, 2'500'000);  // 2,560 x 2.5 ms = 6.4 s: shorter, to last 2-4 times the minimum
  CHECK(s.length() == 1280);
  CHECK(s.end() == 6400);
  s.Closed(6400, 60 * kSecond);  // a minute a step: one block
  CHECK(s.length() == 10);
  CHECK(s.end() == 6410);

  WindowSchedule fixed(10, 0);  // PERFTRACKER_WINDOW_S=0: every window is one block
  fixed.Closed(10, 1);
  CHECK(fixed.length() == 10);
  CHECK(fixed.end() == 20);
}

TEST_CASE("windows grow to the minimum duration, end on multiples of their length, and end "
          "where a detailed period begins and ends",
          "[aggregator][windows]") {
  g_py_mode.schedule.store(0);
  InitRecorder(1024, 1024);
  // Blocks of 4 iterations of 1 us, windows of at least 100 us: 4 x 2^5 = 128 iterations.
  Aggregator agg(4, 100'000, 0);
  uint64_t t = 0;
  CHECK(Run(&agg, &t, 256, 1000) == Windows{{0, 4}, {4, 128}, {128, 256}});
  CHECK(agg.windows().length() == 128);
  // A detailed period over blocks 70 and 71 (iterations 280-287), as the trigger file would
  // schedule one alone: the windows end where it begins and ends.
  g_py_mode.schedule.store(PackSchedule(70, 72));
  CHECK(Run(&agg, &t, 128, 1000) == Windows{{256, 280}, {280, 288}, {288, 384}});
  g_py_mode.schedule.store(0);
  // Steps 8 times longer: the window lasts 1 ms, ten times the minimum; 32 iterations last
  // 256 us, two and a half times.
  CHECK(Run(&agg, &t, 160, 8000) == Windows{{384, 512}, {512, 544}});
  CHECK(agg.windows().length() == 32);
}

TEST_CASE("a triggered detailed period begins at the next window end and lasts whole windows",
          "[aggregator][windows][mode]") {
  g_py_mode.schedule.store(0);
  g_py_mode.python_iterations.store(0);
  g_py_mode.forced.store(false);
  Config config;
  config.window_iters = 10;
  config.detailed_windows = 3;
  WindowSchedule windows(10, kSecond);
  windows.Closed(10, 10'000'000);  // 10 ms steps: 10 x 2^4 = 160 iterations last 1.6 s
  REQUIRE(windows.length() == 160);
  ModeTrigger trigger(config, "/nonexistent/trigger");
  trigger.SetWindows(&windows);
  uint64_t t = 0;
  for (int i = 0; i < 300; ++i) trigger.OnIteration(t += 10'000'000);
  CHECK(g_py_mode.schedule.load() == 0);
  // 20 ms steps from iteration 300: decided at the block boundary 310; the next window end is
  // 320, and three windows of 16 blocks follow.
  for (int i = 0; i < 10; ++i) trigger.OnIteration(t += 20'000'000);
  CHECK(g_py_mode.schedule.load() == PackSchedule(32, 80));
  g_py_mode.schedule.store(0);
}

TEST_CASE("a snapshot of the open window (the live slot's) leaves the window as it was",
          "[aggregator][windows]") {
  g_py_mode.schedule.store(0);
  InitRecorder(1024, 1024);
  Tables& tables = GetTables();
  const Slot fn = InternFunction(perftracker::format::FunctionKind::kPython, "snap.py:1:step");
  Aggregator agg(4, 0, 0);
  uint64_t t = 0;
  const auto call = [&] {
    agg.Add(Event{fn, EventType::kCall, {}, t += 100, 100, 100, 0, 0}, tables);
  };
  for (int i = 0; i < 2; ++i) {
    call();
    agg.Add(Event{0, EventType::kIteration, {}, t += 10, 0, 0, 0, 0}, tables);
  }
  const perftracker::format::Window open = agg.Snapshot(t, tables);
  CHECK(open.iter_begin == 0);
  CHECK(open.iter_end == 2);
  CHECK(open.iterations.count == 2);
  REQUIRE(open.functions.size() == 1);
  CHECK(open.functions[0].count == 2);
  CHECK(open.functions[0].per_iteration.Count() == 2);
  CHECK_FALSE(agg.TakeFinished(t, tables));
  for (int i = 0; i < 2; ++i) {
    call();
    agg.Add(Event{0, EventType::kIteration, {}, t += 10, 0, 0, 0, 0}, tables);
  }
  const auto w = agg.TakeFinished(t, tables);
  REQUIRE(w);
  CHECK(w->window_seq == open.window_seq);
  CHECK(w->iter_end == 4);
  CHECK(w->iterations.count == 4);
  REQUIRE(w->functions.size() == 1);
  CHECK(w->functions[0].count == 4);
  CHECK(w->functions[0].duration.Count() == 4);
  CHECK(w->functions[0].per_iteration.Count() == 4);
}
