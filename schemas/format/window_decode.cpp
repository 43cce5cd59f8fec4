// Decodes a verified WindowSummary buffer. Every cross-reference the verifier cannot see (column
// lengths, histogram runs inside the shared counts vector) is checked here before use.
#include <flatbuffers/flatbuffers.h>

#include "schemas/format/window.h"
#include "schemas/window_generated.h"

namespace perftracker::format {
namespace {

template <class T>
bool Sized(const flatbuffers::Vector<T>* v, size_t n) {
  return v == nullptr || v->size() == n;
}

template <class T>
T At(const flatbuffers::Vector<T>* v, size_t i, T fallback = T{}) {
  return v == nullptr ? fallback : v->Get(static_cast<flatbuffers::uoffset_t>(i));
}

std::string StringAt(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v,
                     size_t i) {
  if (v == nullptr) return {};
  const auto* s = v->Get(static_cast<flatbuffers::uoffset_t>(i));
  return s == nullptr ? std::string() : s->str();
}

bool HistSized(const fb::HistogramColumn* h, size_t n) {
  if (h == nullptr) return true;
  return h->first_bucket() && h->length() && h->start() && h->counts() &&
         h->first_bucket()->size() == n && h->length()->size() == n && h->start()->size() == n;
}

bool HistAt(const fb::HistogramColumn* h, size_t i, Histogram* out) {
  out->first = 0;
  out->counts.clear();
  if (h == nullptr) return true;
  const auto idx = static_cast<flatbuffers::uoffset_t>(i);
  const int first = h->first_bucket()->Get(idx);
  const size_t length = h->length()->Get(idx);
  const size_t start = h->start()->Get(idx);
  if (length == 0) return true;
  if (first < 0 || first + length > static_cast<size_t>(kHistogramBuckets)) return false;
  if (start > h->counts()->size() || length > h->counts()->size() - start) return false;
  out->first = first;
  out->counts.assign(h->counts()->begin() + start, h->counts()->begin() + start + length);
  return true;
}

bool DecodeFunctions(const fb::FunctionColumns* c, std::vector<FunctionPattern>* out) {
  out->clear();
  if (c == nullptr || c->id() == nullptr) return true;
  const size_t n = c->id()->size();
  if (!Sized(c->kind(), n) || !Sized(c->name(), n) || !Sized(c->parent_id(), n) ||
      !Sized(c->count(), n) || !Sized(c->total_ns(), n) || !Sized(c->self_ns(), n) ||
      !Sized(c->min_ns(), n) || !Sized(c->max_ns(), n) || !Sized(c->wait_ns(), n) ||
      !Sized(c->bytes(), n) || !Sized(c->device_samples(), n) || !Sized(c->device_ns(), n) ||
      !HistSized(c->duration(), n) || !HistSized(c->device(), n) ||
      !HistSized(c->per_iteration(), n)) {
    return false;
  }
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    FunctionPattern& p = (*out)[i];
    p.id = At(c->id(), i);
    p.kind = static_cast<FunctionKind>(At(c->kind(), i));
    p.name = StringAt(c->name(), i);
    p.parent_id = At(c->parent_id(), i);
    p.count = At(c->count(), i);
    p.total_ns = At(c->total_ns(), i);
    p.self_ns = At(c->self_ns(), i);
    p.min_ns = At(c->min_ns(), i);
    p.max_ns = At(c->max_ns(), i);
    p.wait_ns = At(c->wait_ns(), i);
    p.bytes = At(c->bytes(), i);
    p.device_samples = At(c->device_samples(), i);
    p.device_ns = At(c->device_ns(), i);
    if (!HistAt(c->duration(), i, &p.duration) || !HistAt(c->device(), i, &p.device) ||
        !HistAt(c->per_iteration(), i, &p.per_iteration)) {
      return false;
    }
  }
  return true;
}

bool DecodeCollectives(const fb::CollectiveColumns* c, std::vector<CollectivePattern>* out) {
  out->clear();
  if (c == nullptr || c->comm_id() == nullptr) return true;
  const size_t n = c->comm_id()->size();
  if (!Sized(c->comm_size(), n) || !Sized(c->comm_rank(), n) || !Sized(c->op(), n) ||
      !Sized(c->peer(), n) || !Sized(c->name(), n) || !Sized(c->bytes(), n) ||
      !Sized(c->count(), n) || !Sized(c->host_ns(), n) || !Sized(c->device_samples(), n) ||
      !Sized(c->device_ns(), n) || !HistSized(c->device(), n) ||
      !HistSized(c->launch_offset(), n) || !Sized(c->first_seq(), n) ||
      !Sized(c->last_seq_launched(), n) || !Sized(c->last_seq_completed(), n)) {
    return false;
  }
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    CollectivePattern& p = (*out)[i];
    p.comm_id = At(c->comm_id(), i);
    p.comm_size = At(c->comm_size(), i);
    p.comm_rank = At(c->comm_rank(), i);
    p.op = static_cast<CollectiveOp>(At(c->op(), i));
    p.peer = At(c->peer(), i, int32_t{-1});
    p.name = StringAt(c->name(), i);
    p.bytes = At(c->bytes(), i);
    p.count = At(c->count(), i);
    p.host_ns = At(c->host_ns(), i);
    p.device_samples = At(c->device_samples(), i);
    p.device_ns = At(c->device_ns(), i);
    p.first_seq = At(c->first_seq(), i);
    p.last_seq_launched = At(c->last_seq_launched(), i);
    p.last_seq_completed = At(c->last_seq_completed(), i);
    if (!HistAt(c->device(), i, &p.device) || !HistAt(c->launch_offset(), i, &p.launch_offset)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool DecodeWindow(std::span<const uint8_t> bytes, Window* out) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!fb::VerifyWindowSummaryBuffer(verifier)) return false;
  const fb::WindowSummary* w = fb::GetWindowSummary(bytes.data());
  out->window_seq = w->window_seq();
  out->iter_begin = w->iter_begin();
  out->iter_end = w->iter_end();
  out->start_mono_ns = w->start_mono_ns();
  out->end_mono_ns = w->end_mono_ns();
  out->start_real_ns = w->start_real_ns();
  if (!DecodeFunctions(w->functions(), &out->functions)) return false;
  if (!DecodeCollectives(w->collectives(), &out->collectives)) return false;
  out->iterations = IterationStats{};
  if (const fb::IterationStats* it = w->iterations()) {
    out->iterations.first = it->first();
    out->iterations.count = it->count();
    out->iterations.total_ns = it->total_ns();
    out->iterations.min_ns = it->min_ns();
    out->iterations.max_ns = it->max_ns();
    if (!HistSized(it->duration(), 1) || !HistAt(it->duration(), 0, &out->iterations.duration)) {
      return false;
    }
  }
  out->health = Health{};
  if (const fb::Health* h = w->health()) {
    out->health = Health{h->dropped_events(), h->hook_ns(), h->hook_calls(),
                         h->dropped_functions(), h->dropped_windows()};
  }
  return true;
}

std::string_view KindName(FunctionKind kind) {
  static constexpr std::string_view kNames[] = {
      "unknown", "python", "cuda_api", "kernel",    "memcpy",    "memset",
      "collective", "sync", "gc",     "dataloader", "iteration", "alloc"};
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

std::string_view CollectiveOpName(CollectiveOp op) {
  static constexpr std::string_view kNames[] = {
      "unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
      "send",    "recv",       "all_to_all", "gather",         "scatter",   "barrier"};
  const auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace perftracker::format
