#include "core/event.h"

namespace simgpu {

void Event::Record(Device* device, Stream* stream) {
  WorkSpec spec;
  spec.kind = WorkKind::kMarker;
  WorkRef item = device->Enqueue(stream, std::move(spec));
  if (!item) return;  // captured into a graph: the event keeps its previous state
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = std::move(item);
}

WorkRef Event::Latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

bool Event::Query() {
  WorkRef item = Latest();
  return !item || item->stream->IsComplete(item);
}

void Event::Synchronize() {
  if (WorkRef item = Latest()) item->stream->WaitComplete(item);
}

}  // namespace simgpu
