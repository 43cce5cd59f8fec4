// The window's signals (preload/core/signal_set.h): the kinds' semantics of FORMAT.md.
#include "preload/core/signal_set.h"

#include <catch2/catch.hpp>

using perftracker::format::Signal;
using perftracker::format::SignalKind;
using perftracker::preload::kNoSignal;
using perftracker::preload::SignalSet;

namespace {

std::vector<Signal> Take(SignalSet& set) {
  std::vector<Signal> out;
  set.TakeWindow(&out);
  return out;
}

}  // namespace

TEST_CASE("a gauge keeps min, max and sum over the window's samples", "[signals]") {
  SignalSet set;
  const auto id = set.Intern("gpu.sm_clock_mhz", "0000:3b:00.0", SignalKind::kGauge);
  CHECK(set.Intern("gpu.sm_clock_mhz", "0000:3b:00.0", SignalKind::kGauge) == id);
  CHECK(set.Intern("gpu.sm_clock_mhz", "0000:3c:00.0", SignalKind::kGauge) != id);
  set.AddGauge(id, 1980);
  set.AddGauge(id, 1410);
  set.AddGauge(id, 1500);
  auto w = Take(set);
  REQUIRE(w.size() == 1);
  CHECK(w[0].name == "gpu.sm_clock_mhz");
  CHECK(w[0].device == "0000:3b:00.0");
  CHECK(w[0].kind == SignalKind::kGauge);
  CHECK(w[0].samples == 3);
  CHECK(w[0].min == 1410);
  CHECK(w[0].max == 1980);
  CHECK(w[0].sum == 4890);
  CHECK(Take(set).empty());  // nothing sampled since: no entry
}

TEST_CASE("a counter sums its increases; its baseline carries across windows", "[signals]") {
  SignalSet set;
  const auto id = set.Intern("nic.rx_bytes", "mlx5_0/1", SignalKind::kCounter);
  set.AddCounter(id, 1000);  // the baseline only
  CHECK(Take(set).empty());
  set.AddCounter(id, 1100);
  set.AddCounter(id, 1400);
  auto w = Take(set);
  REQUIRE(w.size() == 1);
  CHECK(w[0].samples == 2);
  CHECK(w[0].sum == 400);
  CHECK(w[0].min == 100);
  CHECK(w[0].max == 300);
  set.AddCounter(id, 1450);  // from the previous window's last value
  w = Take(set);
  REQUIRE(w.size() == 1);
  CHECK(w[0].sum == 50);
}

TEST_CASE("a counter that goes backwards restarts its baseline and adds nothing", "[signals]") {
  SignalSet set;
  const auto id = set.Intern("gpu.pcie_replays", "0000:3b:00.0", SignalKind::kCounter);
  set.AddCounter(id, 500);
  set.AddCounter(id, 520);
  set.AddCounter(id, 3);  // reset (driver reload, wrap)
  set.AddCounter(id, 10);
  auto w = Take(set);
  REQUIRE(w.size() == 1);
  CHECK(w[0].samples == 2);
  CHECK(w[0].sum == 27);
  CHECK(w[0].min == 7);
  CHECK(w[0].max == 20);
}

TEST_CASE("flags keep every bit seen and count the samples with any set", "[signals]") {
  SignalSet set;
  const auto id = set.Intern("gpu.throttle_reasons", "0000:3b:00.0", SignalKind::kFlags);
  set.AddFlags(id, 0);
  set.AddFlags(id, 0x40);
  set.AddFlags(id, 0x4);
  auto w = Take(set);
  REQUIRE(w.size() == 1);
  CHECK(w[0].kind == SignalKind::kFlags);
  CHECK(w[0].samples == 3);
  CHECK(w[0].bits == 0x44);
  CHECK(w[0].sum == 2);
}

TEST_CASE("interning stops at the cap and unknown ids are ignored", "[signals]") {
  SignalSet set;
  for (size_t i = 0; i < SignalSet::kMaxSignals; ++i) {
    REQUIRE(set.Intern("nic.up", std::to_string(i), SignalKind::kGauge) != kNoSignal);
  }
  CHECK(set.Intern("nic.up", "one more", SignalKind::kGauge) == kNoSignal);
  set.AddGauge(kNoSignal, 1);
  set.AddCounter(kNoSignal, 1);
  set.AddFlags(kNoSignal, 1);
  CHECK(Take(set).empty());
}
