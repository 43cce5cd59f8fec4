#include <flatbuffers/flatbuffers.h>

#include "schemas/format/live.h"
#include "schemas/live_generated.h"

namespace perftracker::format {

std::span<const uint8_t> EncodeLiveState(const LiveState& s, flatbuffers::FlatBufferBuilder& b) {
  b.Clear();
  std::vector<flatbuffers::Offset<fb::CommProgress>> comms;
  comms.reserve(s.comms.size());
  for (const CommProgress& c : s.comms) {
    comms.push_back(fb::CreateCommProgress(b, c.comm_id, c.comm_size, c.comm_rank,
                                           c.last_seq_launched, c.last_seq_completed, c.inflight_op,
                                           c.inflight_since_mono_ns));
  }
  const auto comms_off = b.CreateVector(comms);
  const auto stack_off = b.CreateVectorOfStrings(s.python_stack);
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> open_off;
  if (!s.open_window.empty()) open_off = b.CreateVector(s.open_window);
  fb::FinishLiveStateBuffer(
      b, fb::CreateLiveState(b, s.update_mono_ns, s.update_real_ns, s.iteration, s.windows_written,
                             comms_off, stack_off, static_cast<fb::ExitState>(s.exit_state),
                             open_off));
  return {b.GetBufferPointer(), b.GetSize()};
}

std::string_view ExitStateName(ExitState state) {
  switch (state) {
    case ExitState::kRunning:
      return "running";
    case ExitState::kNormalExit:
      return "normal_exit";
    case ExitState::kSigterm:
      return "sigterm";
  }
  return "unknown";
}

bool DecodeLiveState(std::span<const uint8_t> bytes, LiveState* out) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!fb::VerifyLiveStateBuffer(verifier)) return false;
  const fb::LiveState* s = fb::GetLiveState(bytes.data());
  *out = LiveState{};
  out->update_mono_ns = s->update_mono_ns();
  out->update_real_ns = s->update_real_ns();
  out->iteration = s->iteration();
  out->windows_written = s->windows_written();
  if (s->comms()) {
    for (const fb::CommProgress* c : *s->comms()) {
      out->comms.push_back(CommProgress{c->comm_id(), c->comm_size(), c->comm_rank(),
                                        c->last_seq_launched(), c->last_seq_completed(),
                                        c->inflight_op(), c->inflight_since_mono_ns()});
    }
  }
  out->exit_state = static_cast<ExitState>(s->exit_state());
  if (s->open_window()) out->open_window.assign(s->open_window()->begin(), s->open_window()->end());
  if (s->python_stack()) {
    for (const flatbuffers::String* f : *s->python_stack()) {
      out->python_stack.push_back(f ? f->str() : std::string());
    }
  }
  return true;
}

}  // namespace perftracker::format
