// The writer's light -> detailed trigger (preload/core/mode_trigger.h): the paper's slowdown rule
// with a windowed low, the trigger file, and windows of whole PERFTRACKER_WINDOW_ITERS.
#include "preload/core/mode_trigger.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "preload/core/py_mode.h"

using namespace perftracker::preload;

namespace {

constexpr uint64_t kOneMs = 1'000'000;

struct TriggerFixture {
  Config config;
  uint64_t t = kOneMs;

  TriggerFixture() {
    g_py_mode.schedule.store(0);
    g_py_mode.python_iterations.store(0);
    g_py_mode.applied_on.store(~uint64_t{0});
    g_py_mode.applied_off.store(~uint64_t{0});
    g_py_mode.detailed.store(false);
    config.window_iters = 10;
    config.detailed_windows = 3;
  }
  // `n` iterations of `ms` each.
  void Run(ModeTrigger& trigger, int n, uint64_t ms) {
    for (int i = 0; i < n; ++i) trigger.OnIteration(t += ms * kOneMs);
  }
};

uint64_t First() { return g_py_mode.schedule.load() >> 32; }
uint64_t End() { return g_py_mode.schedule.load() & 0xffffffffu; }

}  // namespace

TEST_CASE("steady iterations never trigger; a 5% slowdown does, at the next boundary", "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  f.Run(trigger, 300, 10);
  CHECK(g_py_mode.schedule.load() == 0);
  // 20 ms from iteration 300: the mean of 50 is 10.2 ms after 1 slow step (below 10.5),
  // 12 ms after 10: decided at the boundary 310, detailed from window 32 for 3 windows.
  f.Run(trigger, 10, 20);
  CHECK(First() == 32);
  CHECK(End() == 35);
}

TEST_CASE("a 4% slowdown does not trigger", "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  f.Run(trigger, 100, 100);
  f.Run(trigger, 200, 104);
  CHECK(g_py_mode.schedule.load() == 0);
}

TEST_CASE("one lucky fast step does not arm the trigger", "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  f.Run(trigger, 100, 10);
  f.Run(trigger, 1, 1);  // the single-iteration low would be 1 ms: everything looks 10x slow
  f.Run(trigger, 200, 10);
  CHECK(g_py_mode.schedule.load() == 0);
}

TEST_CASE("after a period, only a further 5% slowdown or a refreshed low triggers again",
          "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  f.Run(trigger, 100, 10);
  f.Run(trigger, 100, 20);  // fires at 110 (windows 12-14); the mean reaches 20 ms by 150
  CHECK(First() == 12);
  f.Run(trigger, 200, 20);  // the new normal
  CHECK(First() == 12);
  f.Run(trigger, 50, 22);  // 10% more than the period saw
  CHECK(First() > 12);
}

TEST_CASE("the hook's iteration count, ahead of the drained one, picks the boundary", "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  f.Run(trigger, 100, 10);
  g_py_mode.python_iterations.store(125);  // the step functions already ended 125 iterations
  f.Run(trigger, 10, 20);
  CHECK(First() == 13);
}

TEST_CASE("the trigger file starts a period once per change; a number names the iteration",
          "[mode]") {
  TriggerFixture f;
  char dir[] = "/tmp/pt_mode_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/trigger";
  ModeTrigger trigger(f.config, path);
  f.Run(trigger, 23, 10);
  trigger.Poll(1 * 1'000'000'000ull);
  CHECK(g_py_mode.schedule.load() == 0);  // no file yet
  std::FILE* file = std::fopen(path.c_str(), "w");
  std::fputs("47\n", file);
  std::fclose(file);
  trigger.Poll(1'500'000'000ull);  // less than a second since the last look
  CHECK(g_py_mode.schedule.load() == 0);
  trigger.Poll(2'000'000'000ull);
  CHECK(First() == 5);  // iteration 47, rounded up to a window boundary
  CHECK(End() == 8);
  g_py_mode.schedule.store(0);
  trigger.Poll(4'000'000'000ull);  // unchanged: acted on once
  CHECK(g_py_mode.schedule.load() == 0);
  file = std::fopen(path.c_str(), "w");
  std::fclose(file);  // changed, empty: the next boundary
  trigger.Poll(6'000'000'000ull);
  CHECK(First() == 3);
  file = std::fopen(path.c_str(), "w");
  std::fputs("99999999999999999999", file);  // beyond 32-bit window numbers: never, not a wrap
  std::fclose(file);
  trigger.Poll(8'000'000'000ull);
  CHECK(First() == 0xffff0000u);
  CHECK_FALSE(ScheduledDetailed(g_py_mode.schedule.load(), 3));
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("without Python step markers the writer switches at its own boundaries", "[mode]") {
  TriggerFixture f;
  ModeTrigger trigger(f.config, "/nonexistent/trigger");
  g_py_mode.schedule.store(PackSchedule(2, 3));
  f.Run(trigger, 19, 10);
  trigger.Poll(1);
  CHECK_FALSE(g_py_mode.detailed.load());
  f.Run(trigger, 1, 10);
  trigger.Poll(2);
  CHECK(g_py_mode.detailed.load());
  CHECK(trigger.Detailed(20));
  CHECK_FALSE(trigger.Detailed(10));
  f.Run(trigger, 10, 10);
  trigger.Poll(3);
  CHECK_FALSE(g_py_mode.detailed.load());
  CHECK(trigger.Detailed(20));
  CHECK_FALSE(trigger.Detailed(30));
}
