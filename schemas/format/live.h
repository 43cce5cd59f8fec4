// The live slot's contents (schemas/live.fbs) as plain C++ values: what a rank was doing when
// it was last heard of, for hangs and processes killed with SIGKILL.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flatbuffers {
class FlatBufferBuilder;
}

namespace perftracker::format {

struct CommProgress {
  uint64_t comm_id = 0;
  uint32_t comm_size = 0;
  uint32_t comm_rank = 0;
  uint64_t last_seq_launched = 0;
  uint64_t last_seq_completed = 0;
  uint8_t inflight_op = 0;  // CollectiveOp, 0 when nothing is in flight
  uint64_t inflight_since_mono_ns = 0;
  bool operator==(const CommProgress&) const = default;
};

// How the process left (live.fbs ExitState).
enum class ExitState : uint8_t {
  kRunning = 0,     // still running, or killed without a flush (SIGKILL, crash)
  kNormalExit = 1,  // atexit flush
  kSigterm = 2,     // SIGTERM flush
};
// "running", "normal_exit", "sigterm" ("unknown" for a value from a newer writer).
std::string_view ExitStateName(ExitState state);

struct LiveState {
  uint64_t update_mono_ns = 0;
  uint64_t update_real_ns = 0;
  uint64_t iteration = 0;
  uint64_t windows_written = 0;
  std::vector<CommProgress> comms;
  std::vector<std::string> python_stack;  // innermost frame last
  ExitState exit_state = ExitState::kRunning;
  // The window open at the update, compressed (CompressOpenWindow); empty when not written.
  std::vector<uint8_t> open_window = {};
  bool operator==(const LiveState&) const = default;
};

// Encodes into `builder` (cleared first) and returns the finished bytes, for WriteLive.
std::span<const uint8_t> EncodeLiveState(const LiveState& state,
                                         flatbuffers::FlatBufferBuilder& builder);
bool DecodeLiveState(std::span<const uint8_t> bytes, LiveState* out);

// The open window's encoded WindowSummary (WindowEncoder::Encode) as one zstd frame, into
// `out`; false (and `out` empty) if compression failed.
bool CompressOpenWindow(std::span<const uint8_t> window_summary, std::vector<uint8_t>* out);
struct Window;
// A live state's open window, decompressed, verified and decoded; false when there is none or
// it does not decode.
bool DecodeOpenWindow(const LiveState& state, Window* out);

}  // namespace perftracker::format
