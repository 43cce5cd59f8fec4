#include <flatbuffers/flatbuffers.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "schemas/format/live.h"
#include "schemas/format/window.h"
#include "schemas/live_generated.h"
#include "schemas/window_generated.h"
#include "test/unit/ring_test_util.h"
#include "tools/synthetic/synthetic.h"

using namespace perftracker;
using format::Window;

namespace {

// The static tail (WindowEncoder::static_tail_size) of what `encoder` encoded last.
std::vector<uint8_t> TailOf(std::span<const uint8_t> encoded,
                            const format::WindowEncoder& encoder) {
  return {encoded.end() - static_cast<long>(encoder.static_tail_size()), encoded.end()};
}

Window RoundTrip(const Window& w) {
  format::WindowEncoder encoder;
  const auto bytes = encoder.Encode(w);
  const std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  Window out;
  REQUIRE(format::DecodeWindow(copy, &out));
  return out;
}

}  // namespace

TEST_CASE("a realistic window survives encode and decode unchanged", "[codec]") {
  const Window w = synthetic::MakeWindow(synthetic::JobShape{}, 5, 64, 3);
  REQUIRE(w.functions.size() == 2000);
  CHECK(RoundTrip(w) == w);
}

TEST_CASE("self-time histograms round-trip; absent reads as empty", "[codec]") {
  Window w = synthetic::MakeWindow(synthetic::JobShape{}, 5, 8, 3);
  REQUIRE(w.functions.size() > 2);
  w.functions[1].self_duration.Add(700, 3);
  w.functions[2].self_duration.Add(90'000);
  const Window out = RoundTrip(w);
  CHECK(out == w);
  CHECK(out.functions[1].self_duration.Count() == 3);
  CHECK(out.functions[0].self_duration.empty());
}

TEST_CASE("without details a window keeps everything but the detail columns", "[codec]") {
  Window w = synthetic::MakeWindow(synthetic::JobShape{}, 5, 8, 3);
  REQUIRE(w.functions.size() > 2);
  w.functions[1].self_duration.Add(700, 3);
  w.functions[2].captured = 4;  // not a detail column: selftest's captured graph reads it
  REQUIRE_FALSE(w.functions[0].per_iteration.empty());
  REQUIRE(w.functions[0].max_ns > 0);
  format::WindowEncoder encoder;
  const auto with = encoder.Encode(w);
  const size_t with_size = with.size(), with_details = encoder.detail_size();
  const auto omitted = encoder.Encode(w, format::Details::kOmit);
  const std::vector<uint8_t> bytes(omitted.begin(), omitted.end());
  const std::vector<uint8_t> light_tail = TailOf(omitted, encoder);
  CHECK(encoder.detail_size() == 0);  // so RingWriter::Append writes no detail frame
  CHECK(with_details > 0);
  CHECK(bytes.size() + with_details / 2 < with_size);
  Window out;
  REQUIRE(format::DecodeWindow(bytes, &out));
  Window want = w;
  for (format::FunctionPattern& p : want.functions) {
    p.min_ns = p.max_ns = 0;
    p.device = p.per_iteration = p.self_duration = format::Histogram{};
  }
  CHECK(out == want);
  CHECK(out.functions[2].captured == 4);
  // What the analyzer decodes (no details) is the same either way: its reports cannot change.
  Window slim_omitted, slim_kept;
  REQUIRE(format::DecodeWindow(bytes, &slim_omitted, {.function_details = false}));
  const auto kept = encoder.Encode(w);
  REQUIRE(format::DecodeWindow(std::vector<uint8_t>(kept.begin(), kept.end()), &slim_kept,
                               {.function_details = false}));
  CHECK(slim_omitted == slim_kept);
  // The static tail does not depend on it: records of both kinds share one stored table.
  CHECK(TailOf(kept, encoder) == light_tail);
}

TEST_CASE("an empty window round-trips", "[codec]") {
  const Window w;
  CHECK(RoundTrip(w) == w);
}

TEST_CASE("the window's recording mode round-trips; absent reads as light", "[codec]") {
  Window w;
  w.detailed = true;
  CHECK(RoundTrip(w).detailed);
  CHECK_FALSE(RoundTrip(Window{}).detailed);  // the field is left out when false, as old writers
}

TEST_CASE("the Python-unrecorded flag round-trips; absent reads as false", "[codec]") {
  Window w;
  w.python_unrecorded = true;
  CHECK(RoundTrip(w).python_unrecorded);
  CHECK(RoundTrip(w) == w);
  CHECK_FALSE(RoundTrip(Window{}).python_unrecorded);
}

TEST_CASE("hardware and host signals round-trip; absent reads as none", "[codec]") {
  Window w = synthetic::MakeWindow(synthetic::JobShape{}, 5, 8, 3);
  w.signals.push_back({"gpu.sm_clock_mhz", "0000:3b:00.0", format::SignalKind::kGauge, 3, 1410,
                       1980, 5010, 0});
  w.signals.push_back({"nic.port_rcv_errors", "mlx5_0/1", format::SignalKind::kCounter, 2, 0, 7,
                       7, 0});
  w.signals.push_back({"gpu.throttle_reasons", "0000:3b:00.0", format::SignalKind::kFlags, 3, 0,
                       0, 2, 0x40});
  const Window out = RoundTrip(w);
  CHECK(out == w);
  CHECK(out.signals[1].kind == format::SignalKind::kCounter);
  CHECK(RoundTrip(Window{}).signals.empty());

  // The signals are measured data: they must not enter the static tail that is compressed once.
  format::WindowEncoder encoder;
  Window bare = w;
  bare.signals.clear();
  const std::vector<uint8_t> tail = TailOf(encoder.Encode(bare), encoder);
  CHECK(TailOf(encoder.Encode(w), encoder) == tail);
}

TEST_CASE("a signal of an unknown kind or a non-finite value is dropped, not the window",
          "[codec]") {
  flatbuffers::FlatBufferBuilder b;
  auto names = b.CreateVectorOfStrings({"gpu.future", "host.load", "gpu.nan"});
  auto devices = b.CreateVectorOfStrings({"", "", ""});
  const std::vector<uint8_t> kinds{9, 0, 0};
  const std::vector<uint32_t> samples{1, 2, 1};
  const std::vector<double> min{1, 0.5, std::nan("")}, max{1, 1.5, 1}, sum{1, 2, 1};
  const std::vector<uint64_t> bits{0, 0, 0};
  const auto signals = perftracker::fb::CreateSignalColumns(
      b, names, devices, b.CreateVector(kinds), b.CreateVector(samples), b.CreateVector(min),
      b.CreateVector(max), b.CreateVector(sum), b.CreateVector(bits));
  perftracker::fb::WindowSummaryBuilder root(b);
  root.add_window_seq(4);
  root.add_signals(signals);
  perftracker::fb::FinishWindowSummaryBuffer(b, root.Finish());
  const std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  Window out;
  REQUIRE(format::DecodeWindow(bytes, &out));
  CHECK(out.window_seq == 4);
  REQUIRE(out.signals.size() == 1);
  CHECK(out.signals[0].name == "host.load");
  CHECK(out.signals[0].max == 1.5);
}

TEST_CASE("function ids follow kind, name and caller, and agree across ranks", "[codec]") {
  const Window a = synthetic::MakeWindow(synthetic::JobShape{}, 0, 8, 0);
  const Window b = synthetic::MakeWindow(synthetic::JobShape{}, 7, 8, 4);
  REQUIRE(a.functions.size() == b.functions.size());
  for (size_t i = 0; i < a.functions.size(); ++i) REQUIRE(a.functions[i].id == b.functions[i].id);
  using format::FunctionId;
  using format::FunctionKind;
  CHECK(FunctionId(FunctionKind::kPython, "f") != FunctionId(FunctionKind::kKernel, "f"));
  CHECK(FunctionId(FunctionKind::kPython, "f", 1) != FunctionId(FunctionKind::kPython, "f", 2));
  // Pinned: changing the id function would orphan every stored file's joins.
  CHECK(FunctionId(FunctionKind::kPython, "train.py:10:step") == 0x5d6605b75f155a86ull);
}

TEST_CASE("the static tail is byte-identical while the function table is unchanged", "[codec]") {
  format::WindowEncoder encoder;
  const auto a = encoder.Encode(testing::SmallWindow(1));
  const std::vector<uint8_t> first(a.end() - static_cast<long>(encoder.static_tail_size()),
                                   a.end());
  const auto b = encoder.Encode(testing::SmallWindow(2));
  const std::vector<uint8_t> second(b.end() - static_cast<long>(encoder.static_tail_size()),
                                    b.end());
  CHECK(first == second);
  // A fresh encoder (no cache) produces the same bytes as the cached path.
  format::WindowEncoder fresh;
  const auto c = fresh.Encode(testing::SmallWindow(2));
  CHECK(std::vector<uint8_t>(b.begin(), b.end()) == std::vector<uint8_t>(c.begin(), c.end()));
  // A renamed function changes the tail.
  Window renamed = testing::SmallWindow(2);
  renamed.functions[5].name += "_v2";
  const auto d = encoder.Encode(renamed);
  Window back;
  REQUIRE(format::DecodeWindow(std::vector<uint8_t>(d.begin(), d.end()), &back));
  CHECK(back.functions[5].name == renamed.functions[5].name);
}

TEST_CASE("a caller that does not come first makes the record invalid", "[codec]") {
  Window w = testing::SmallWindow(1);
  w.functions[2].parent = 7;  // forward reference
  format::WindowEncoder encoder;
  const auto bytes = encoder.Encode(w);
  Window out;
  CHECK_FALSE(format::DecodeWindow(std::vector<uint8_t>(bytes.begin(), bytes.end()), &out));
}

TEST_CASE("every truncation of a window is rejected", "[codec]") {
  format::WindowEncoder encoder;
  const auto bytes = encoder.Encode(testing::SmallWindow(3, 5));
  for (size_t n = 0; n < bytes.size(); n += 3) {
    Window out;
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    REQUIRE_FALSE(format::DecodeWindow(prefix, &out));
  }
}

TEST_CASE("the live state round-trips", "[codec]") {
  format::LiveState s;
  s.update_mono_ns = 5;
  s.iteration = 77;
  s.comms.push_back({0xABC, 8, 2, 41, 40, 1, 999});
  s.python_stack = {"train.py:1:main", "train.py:20:step"};
  flatbuffers::FlatBufferBuilder builder;
  const auto bytes = format::EncodeLiveState(s, builder);
  format::LiveState out;
  REQUIRE(format::DecodeLiveState(std::vector<uint8_t>(bytes.begin(), bytes.end()), &out));
  CHECK(out == s);
  CHECK(out.exit_state == format::ExitState::kRunning);
}

TEST_CASE("the live state's exit state round-trips, and older files read as running", "[codec]") {
  flatbuffers::FlatBufferBuilder builder;
  for (const auto state : {format::ExitState::kNormalExit, format::ExitState::kSigterm}) {
    format::LiveState s;
    s.iteration = 3;
    s.exit_state = state;
    const auto bytes = format::EncodeLiveState(s, builder);
    format::LiveState out;
    REQUIRE(format::DecodeLiveState(std::vector<uint8_t>(bytes.begin(), bytes.end()), &out));
    CHECK(out == s);
  }
  CHECK(format::ExitStateName(format::ExitState::kSigterm) == "sigterm");
  CHECK(format::ExitStateName(format::ExitState{7}) == "unknown");
  // A writer from before the field: a LiveState table without it.
  builder.Clear();
  fb::LiveStateBuilder old(builder);
  old.add_iteration(9);
  fb::FinishLiveStateBuffer(builder, old.Finish());
  format::LiveState out;
  REQUIRE(format::DecodeLiveState({builder.GetBufferPointer(), builder.GetSize()}, &out));
  CHECK(out.iteration == 9);
  CHECK(out.exit_state == format::ExitState::kRunning);
}
