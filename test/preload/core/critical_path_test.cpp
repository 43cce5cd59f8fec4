// The writer's critical-path estimate (preload/core/critical_path.h) on hand-made event
// sequences of one training thread: who is charged while the device has nothing queued.
#include "preload/core/critical_path.h"

#include <catch2/catch.hpp>
#include <map>

namespace perftracker::preload {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr Slot kKernel = 100, kLaunchApi = 101, kSyncApi = 102;

Event Call(Slot slot, uint64_t begin, uint64_t end, uint64_t self) {
  return Event{slot, EventType::kCall, {}, end, end - begin, self, 0, 0};
}
Event Launch(uint64_t end, bool timed = true) {
  Event e{kLaunchApi,
          EventType::kNativeCall,
          {},
          0,
          uint64_t{kNoSlot} | uint64_t{kKernel} << 32,
          0,
          kNoSlot,
          0};
  if (timed) {
    e.flags[0] = kNativeTimed;
    e.t = end;
    e.b = 10'000;
  } else {
    e.t = kEpochTag | 1;
  }
  return e;
}
Event Sync(uint64_t end, uint64_t waited) {
  return Event{kSyncApi,
               EventType::kNativeCall,
               {kNativeTimed | kNativeBlocking, 0, 0},
               end,
               uint64_t{kNoSlot} | uint64_t{kNoSlot} << 32,
               waited,
               kNoSlot,
               0};
}
Event Iteration(uint64_t t) { return Event{0, EventType::kIteration, {}, t, 1, 0, 0, 0}; }

// Critical ns per slot (kNoSlot: device idle) of one walk.
std::map<Slot, uint64_t> Charged(CriticalPath& cp, const std::vector<Event>& events) {
  std::vector<Event> out;
  cp.Walk(events, &out);
  std::map<Slot, uint64_t> charged;
  for (const Event& e : out) {
    REQUIRE(e.type == EventType::kCritical);
    charged[e.slot] += e.a;
  }
  return charged;
}

}  // namespace

TEST_CASE("without device work a function's own time is its critical time", "[critical]") {
  CriticalPath cp;
  // f [0, 10) calls g [2, 5): g 3 ms, f 7 ms of its own.
  const auto charged = Charged(
      cp, {Call(2, 2 * kMs, 5 * kMs, 3 * kMs), Call(1, 0, 10 * kMs, 7 * kMs), Iteration(10 * kMs)});
  CHECK(charged.at(2) == 3 * kMs);
  CHECK(charged.at(1) == 7 * kMs);
  CHECK(charged.count(kNoSlot) == 0);  // no device: no device-idle accounting
  CHECK_FALSE(cp.device_seen());
}

TEST_CASE("host time while the device works is not critical; a routine that starves it is",
          "[critical]") {
  CriticalPath cp;
  cp.Learn(Event{kKernel, EventType::kDeviceTime, {}, 0, 8 * kMs, 0, 0, 0});
  // Iteration 1: step() [0, 9): launches at 1 ms (8 ms of device work, to 9 ms), then waits in a
  // sync from 2 to 9 ms. Then routine() [9, 59): pure Python while the device has nothing.
  const auto charged =
      Charged(cp, {Launch(1 * kMs), Sync(9 * kMs, 7 * kMs), Call(1, 0, 9 * kMs, 9 * kMs),
                   Call(2, 9 * kMs, 59 * kMs, 50 * kMs), Iteration(59 * kMs)});
  CHECK(cp.device_seen());
  CHECK(charged.at(1) == 1 * kMs);         // only before its first launch
  CHECK(charged.at(2) == 50 * kMs);        // all of it
  CHECK(charged.at(kNoSlot) == 51 * kMs);  // device idle: [0, 1) and [9, 59)
}

TEST_CASE("launches whose host time was not sampled are placed between timed events",
          "[critical]") {
  CriticalPath cp;
  cp.Learn(Event{kKernel, EventType::kDeviceTime, {}, 0, 4 * kMs, 0, 0, 0});
  // step() [0, 20): three untimed launches between its start and a sync at 20 ms: placed at 5, 10
  // and 15 ms (evenly between the timed events around them, 0 and 20), 4 ms of device work each:
  // the device idles [0,5), [9,10), [14,15); the sync waited, so it is busy to 20.
  const auto charged =
      Charged(cp, {Launch(0, false), Launch(0, false), Launch(0, false), Sync(20 * kMs, 1 * kMs),
                   Call(1, 0, 20 * kMs, 20 * kMs), Iteration(20 * kMs)});
  CHECK(charged.at(1) == 7 * kMs);
}

}  // namespace perftracker::preload

namespace perftracker::preload {

// Real PyTorch launches the backward pass from autograd's device thread while the training
// thread waits inside backward: the queue must hold that thread's work, or the wait looks like
// host time on an idle device.
TEST_CASE("another thread's launches keep the device busy while the loop waits for them",
          "[critical]") {
  const auto backward = [](bool fed) {
    CriticalPath cp;
    cp.Learn(Event{kKernel, EventType::kDeviceTime, {}, 0, 8 * kMs, 0, 0, 0});
    // The device thread launches at 1 ms: 8 ms of work, to 9 ms.
    int thread = 0;
    if (fed) cp.Feed(&thread, std::vector<Event>{Launch(1 * kMs)});
    // The training thread: backward() [0, 9) waits for it, then 1 ms of Python the device idles in.
    return Charged(cp, {Call(1, 0, 9 * kMs, 9 * kMs), Call(2, 9 * kMs, 10 * kMs, 1 * kMs),
                        Iteration(10 * kMs)});
  };
  const auto alone = backward(false);
  CHECK(alone.at(1) == 9 * kMs);  // the old estimate: the whole wait is critical
  const auto fed = backward(true);
  CHECK(fed.at(1) == 1 * kMs);  // only the first millisecond, before the launch
  CHECK(fed.at(2) == 1 * kMs);
  CHECK(fed.at(kNoSlot) == 2 * kMs);  // the device idles 0-1 and 9-10 ms
}

// A blocking call on another thread that waited proves the device busy until it returned.
TEST_CASE("another thread's wait proves the device busy", "[critical]") {
  CriticalPath cp;
  cp.Learn(Event{kKernel, EventType::kDeviceTime, {}, 0, 1 * kMs, 0, 0, 0});
  int thread = 0;
  cp.Feed(&thread, std::vector<Event>{Launch(1 * kMs), Sync(6 * kMs, 5 * kMs)});
  const auto charged = Charged(cp, {Call(1, 0, 6 * kMs, 6 * kMs), Iteration(6 * kMs)});
  // Idle 0-1 ms only: the device ran 1-2 ms, and the sync says it was still busy until 6 ms.
  CHECK(charged.at(1) == 1 * kMs);
}

// cuBLAS launches its GEMMs through its own static runtime, past the launch hooks: a GEMM is a
// timed call of its shape's slot, its device time learned under that slot. The bulk of a
// transformer step's device work is GEMMs; a queue without them looked empty while the host
// read its next batch, and the read was charged as critical where the device never waited.
TEST_CASE("a GEMM call's device work keeps the queue busy, from either thread", "[critical]") {
  constexpr Slot kGemm = 200;
  const auto step = [](bool learned, bool from_device_thread) {
    CriticalPath cp;
    if (learned) cp.Learn(Event{kGemm, EventType::kDeviceTime, {}, 0, 20 * kMs, 0, 0, 0});
    // A GEMM call [0.5, 1) ms, 20 ms of device work; then read_batch() [1, 11): 10 ms of host
    // time, all of it while the GEMM runs.
    const Event gemm = Call(kGemm, kMs / 2, 1 * kMs, kMs / 2);
    std::vector<Event> loop;
    int thread = 0;
    if (from_device_thread) {
      cp.Feed(&thread, std::vector<Event>{gemm});
    } else {
      loop.push_back(gemm);
    }
    loop.push_back(Call(1, 1 * kMs, 11 * kMs, 10 * kMs));
    loop.push_back(Iteration(21 * kMs));
    return Charged(cp, loop);
  };
  for (const bool other : {false, true}) {
    INFO("from the device thread: " << other);
    const auto busy = step(true, other);
    CHECK(busy.count(1) == 0);  // the read ran while the device worked
    // Idle only before the GEMM's work was enqueued: its own call, on the loop's thread.
    CHECK(busy.at(kNoSlot) == (other ? 0 : kMs / 2));
    const auto unknown = step(false, other);
    CHECK(unknown.at(1) == 10 * kMs);  // no device time learned: the queue knows nothing
  }
}

// The queue's estimate runs long where streams overlap (an all-reduce beside the backward is
// counted after it). A sync the loop waited in proves the device done at its return: the
// estimate is anchored there, or it drifts ahead of the device step after step and a host
// delay after the sync (the next batch's read) is never charged.
TEST_CASE("a sync the loop waited in drains the queue's estimate", "[critical]") {
  CriticalPath cp;
  cp.Learn(Event{kKernel, EventType::kDeviceTime, {}, 0, 30 * kMs, 0, 0, 0});
  // step(): a launch at 1 ms the estimate prices at 30 ms (the device ran it in 10), a sync
  // that waited from 2 to 11 ms; then read_batch() [11, 31): the device has nothing to do.
  const auto charged =
      Charged(cp, {Launch(1 * kMs), Sync(11 * kMs, 9 * kMs), Call(1, 0, 11 * kMs, 11 * kMs),
                   Call(2, 11 * kMs, 31 * kMs, 20 * kMs), Iteration(31 * kMs)});
  CHECK(charged.at(2) == 20 * kMs);        // the queue ended with the sync, not at 31 ms
  CHECK(charged.at(kNoSlot) == 21 * kMs);  // idle [0, 1) and [11, 31)
}

}  // namespace perftracker::preload
