// Decodes a verified WindowSummary buffer. What the verifier cannot see (column lengths, varints,
// histogram bounds, parent indices) is checked here before use.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "schemas/format/packed.h"
#include "schemas/format/window.h"
#include "schemas/window_generated.h"

namespace perftracker::format {
namespace {

using ByteVector = flatbuffers::Vector<uint8_t>;

// The verifier checks a vector's length prefix, not that 8-byte elements are 8-byte aligned;
// a crafted file could make Get() a misaligned load. DecodeWindow works on an aligned buffer,
// so a misaligned element here means a damaged record.
template <class T>
bool Sized(const flatbuffers::Vector<T>* v, size_t n) {
  if (v == nullptr) return true;
  return v->size() == n && (n == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0);
}

template <class T>
T At(const flatbuffers::Vector<T>* v, size_t i, T fallback = T{}) {
  return v == nullptr ? fallback : v->Get(static_cast<flatbuffers::uoffset_t>(i));
}

std::string_view StringAt(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v,
                          size_t i) {
  if (v == nullptr) return {};
  const auto* s = v->Get(static_cast<flatbuffers::uoffset_t>(i));
  return s == nullptr ? std::string_view() : std::string_view(s->c_str(), s->size());
}

std::span<const uint8_t> Span(const ByteVector* v) {
  return v == nullptr ? std::span<const uint8_t>() : std::span<const uint8_t>(v->data(), v->size());
}

// Unpacks n varints into the field `member` of each row; an absent column leaves zeros.
template <class Row, class T>
bool Unpack(const ByteVector* column, std::vector<Row>* rows, T Row::*member) {
  if (column == nullptr) {
    for (Row& row : *rows) row.*member = T{};
    return true;
  }
  VarintReader in(Span(column));
  for (Row& row : *rows) {
    uint64_t v;
    if (!in.Next(&v)) return false;
    row.*member = static_cast<T>(v);
  }
  return in.done();
}

// A packed histogram's first bucket and length, checked against the bucket range.
bool NextRun(VarintReader& in, uint64_t* first, uint64_t* length) {
  if (!in.Next(first) || !in.Next(length)) return false;
  return *first < kHistogramBuckets && *length <= kHistogramBuckets - *first;
}

// One bucket's count, which must fit 32 bits.
bool NextCount(VarintReader& in, uint32_t* c) {
  uint64_t v;
  if (!in.Next(&v) || v > UINT32_MAX) return false;
  *c = static_cast<uint32_t>(v);
  return true;
}

bool NextHistogram(VarintReader& in, Histogram* h) {
  uint64_t first, length;
  if (!NextRun(in, &first, &length)) return false;
  h->first = static_cast<int>(first);
  h->counts.resize(length);
  for (uint32_t& c : h->counts) {
    if (!NextCount(in, &c)) return false;
  }
  if (length == 0) h->first = 0;
  return true;
}

template <class Row>
bool UnpackHistograms(const ByteVector* column, std::vector<Row>* rows, Histogram Row::*member) {
  if (column == nullptr) {
    for (Row& row : *rows) (row.*member).counts.clear(), (row.*member).first = 0;
    return true;
  }
  VarintReader in(Span(column));
  for (Row& row : *rows) {
    if (!NextHistogram(in, &(row.*member))) return false;
  }
  return in.done();
}

// The duration histograms, or with `moments` their sums as they are read (checked as
// NextHistogram checks them; DecodeOptions::duration_moments), leaving `duration` empty.
bool UnpackDurations(const ByteVector* column, bool moments, std::vector<FunctionPattern>* rows) {
  if (!moments) {
    for (FunctionPattern& row : *rows) row.duration_moments = {};
    return UnpackHistograms(column, rows, &FunctionPattern::duration);
  }
  VarintReader in(Span(column));
  for (FunctionPattern& row : *rows) {
    row.duration.counts.clear(), row.duration.first = 0;
    row.duration_moments = {};
    if (column == nullptr) continue;
    uint64_t first, length;
    if (!NextRun(in, &first, &length)) return false;
    // The counts first: only a function timed on fewer than all its calls needs the sums.
    VarintReader again = in;
    uint64_t timed = 0;
    if (!in.TrySumOneByte(length, &timed)) {
      for (uint64_t i = 0; i < length; ++i) {
        uint32_t c;
        if (!NextCount(in, &c)) return false;
        timed += c;
      }
    }
    row.duration_moments.count = static_cast<double>(timed);
    if (timed < row.count) {
      row.duration_moments = {};
      const auto count = [&again](uint32_t* c) { return NextCount(again, c); };
      AddBucketRun(static_cast<int>(first), length, count, &row.duration_moments);
    }
  }
  return column == nullptr || in.done();
}

// Sets name, kind and parent of every row, and id and parent_id of the rows where they change.
// Rows are decoded over the previous window's (`out` is reused): a writer repeats its function
// table window after window, so names are compared, not copied, and ids not rehashed.
bool DecodeFunctionTable(const fb::FunctionColumns* c, std::vector<FunctionPattern>* out) {
  const size_t n = c->name()->size();
  std::vector<uint64_t> parent_plus_one(n, 0);
  if (c->parent() != nullptr) {
    VarintReader in(Span(c->parent()));
    for (uint64_t& v : parent_plus_one) {
      if (!in.Next(&v)) return false;
    }
    if (!in.done()) return false;
  }
  const size_t kept = std::min(out->size(), n);
  out->resize(n);
  std::vector<bool> changed(n, true);
  for (size_t i = 0; i < n; ++i) {
    if (parent_plus_one[i] > i) return false;  // a caller must come before its callees
    FunctionPattern& p = (*out)[i];
    const std::string_view new_name = StringAt(c->name(), i);
    const auto kind = static_cast<FunctionKind>(At(c->kind(), i));
    const auto parent = static_cast<int32_t>(parent_plus_one[i]) - 1;
    const bool parent_changed = parent >= 0 && changed[static_cast<size_t>(parent)];
    changed[i] =
        i >= kept || p.kind != kind || p.parent != parent || p.name != new_name || parent_changed;
    if (!changed[i]) continue;
    p.name.assign(new_name);
    p.kind = kind;
    p.parent = parent;
    p.parent_id = parent < 0 ? 0 : (*out)[static_cast<size_t>(parent)].id;
    p.id = FunctionId(p.kind, p.name, p.parent_id);
  }
  return true;
}

// Where the function table lies, if all of it (vectors and names) lies in the record's tail;
// generation 0 otherwise.
FunctionTableMemo TableInTail(const fb::FunctionColumns* c, std::span<const uint8_t> buffer,
                              const RecordTail& tail) {
  const uint8_t* end = buffer.data() + buffer.size();
  const auto from_end = [end](const void* p) {
    return p == nullptr ? 0 : static_cast<uint64_t>(end - static_cast<const uint8_t*>(p));
  };
  const auto in_tail = [&](const void* p) { return p == nullptr || from_end(p) <= tail.size; };
  const auto* names = c->name();
  if (tail.generation == 0 || !in_tail(names) || !in_tail(c->kind()) || !in_tail(c->parent())) {
    return {};
  }
  for (flatbuffers::uoffset_t i = 0; i < names->size(); ++i) {
    if (!in_tail(names->Get(i))) return {};
  }
  return {tail.generation, names->size(), from_end(names), from_end(c->kind()),
          from_end(c->parent())};
}

bool DecodeFunctions(const fb::FunctionColumns* c, std::span<const uint8_t> buffer,
                     const DecodeOptions& options, std::vector<FunctionPattern>* out) {
  using P = FunctionPattern;
  FunctionTableMemo* memo = options.memo;
  const FunctionTableMemo unset;
  if (c == nullptr || c->name() == nullptr) {
    out->clear();
    if (memo) *memo = unset;
    return true;
  }
  // Identical tail bytes, and the table where it was: the rows `out` holds are this table.
  const FunctionTableMemo where = memo ? TableInTail(c, buffer, options.tail) : unset;
  const bool known = memo && where.generation != 0 && memo->generation == where.generation &&
                     memo->rows == where.rows && memo->name == where.name &&
                     memo->kind == where.kind && memo->parent == where.parent &&
                     out->size() == where.rows;
  const bool details_were_empty = known && memo->details_empty;
  if (memo) *memo = unset;
  if (!known && (!Sized(c->kind(), c->name()->size()) || !DecodeFunctionTable(c, out))) {
    out->clear();  // rows may be half updated: the next window must not trust them
    return false;
  }
  if (memo) *memo = where;
  const bool sums =
      Unpack(c->count(), out, &P::count) && Unpack(c->total_ns(), out, &P::total_ns) &&
      Unpack(c->self_ns(), out, &P::self_ns) && Unpack(c->wait_ns(), out, &P::wait_ns) &&
      Unpack(c->bytes(), out, &P::bytes) && Unpack(c->device_samples(), out, &P::device_samples) &&
      Unpack(c->device_ns(), out, &P::device_ns) &&
      UnpackDurations(c->duration(), options.duration_moments, out) &&
      Unpack(c->critical_ns(), out, &P::critical_ns) &&
      Unpack(c->thread_cpu(), out, &P::thread_cpu_ns);
  if (!sums) return false;
  const bool all = options.function_details;
  if (!all && details_were_empty) return memo->details_empty = true;  // still empty: not cleared
  const ByteVector* none = nullptr;
  const bool details = Unpack(all ? c->min_ns() : none, out, &P::min_ns) &&
                       Unpack(all ? c->max_ns() : none, out, &P::max_ns) &&
                       UnpackHistograms(all ? c->device() : none, out, &P::device) &&
                       UnpackHistograms(all ? c->per_iteration() : none, out, &P::per_iteration) &&
                       UnpackHistograms(all ? c->self_duration() : none, out, &P::self_duration) &&
                       Unpack(all ? c->captured() : none, out, &P::captured);
  if (memo) memo->details_empty = details && !all;
  return details;
}

bool DecodeCollectives(const fb::CollectiveColumns* c, std::vector<CollectivePattern>* out) {
  using P = CollectivePattern;
  if (c == nullptr || c->comm_id() == nullptr) {
    out->clear();
    return true;
  }
  const size_t n = c->comm_id()->size();
  if (!Sized(c->comm_id(), n) || !Sized(c->comm_size(), n) || !Sized(c->comm_rank(), n) ||
      !Sized(c->op(), n) || !Sized(c->peer(), n) || !Sized(c->name(), n) || !Sized(c->bytes(), n) ||
      !Sized(c->count(), n) || !Sized(c->host_ns(), n) || !Sized(c->device_samples(), n) ||
      !Sized(c->device_ns(), n) || !Sized(c->first_seq(), n) || !Sized(c->last_seq_launched(), n) ||
      !Sized(c->last_seq_completed(), n)) {
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
    p.name.assign(StringAt(c->name(), i));
    p.bytes = At(c->bytes(), i);
    p.count = At(c->count(), i);
    p.host_ns = At(c->host_ns(), i);
    p.device_samples = At(c->device_samples(), i);
    p.device_ns = At(c->device_ns(), i);
    p.first_seq = At(c->first_seq(), i);
    p.last_seq_launched = At(c->last_seq_launched(), i);
    p.last_seq_completed = At(c->last_seq_completed(), i);
  }
  return UnpackHistograms(c->device(), out, &P::device) &&
         UnpackHistograms(c->launch_offset(), out, &P::launch_offset);
}

bool DecodeSignals(const fb::SignalColumns* c, std::vector<Signal>* out) {
  out->clear();
  if (c == nullptr || c->name() == nullptr) return true;
  const size_t n = c->name()->size();
  if (!Sized(c->device(), n) || !Sized(c->kind(), n) || !Sized(c->samples(), n) ||
      !Sized(c->min(), n) || !Sized(c->max(), n) || !Sized(c->sum(), n) || !Sized(c->bits(), n)) {
    return false;
  }
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // ReadableSignal: a signal it rejects is dropped, the rest of the window is still good.
    const uint8_t kind = At(c->kind(), i);
    const double min = At(c->min(), i), max = At(c->max(), i), sum = At(c->sum(), i);
    if (!ReadableSignal(kind, min, max, sum)) continue;
    Signal& s = out->emplace_back();
    s.name.assign(StringAt(c->name(), i));
    s.device.assign(StringAt(c->device(), i));
    s.kind = static_cast<SignalKind>(kind);
    s.samples = At(c->samples(), i);
    s.min = min;
    s.max = max;
    s.sum = sum;
    s.bits = At(c->bits(), i);
  }
  return true;
}

}  // namespace

bool DecodeWindow(std::span<const uint8_t> bytes, Window* out, const DecodeOptions& options) {
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    aligned.resize((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    bytes =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size());
  }
  if (!options.verified) {
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    if (!fb::VerifyWindowSummaryBuffer(verifier)) return false;
  }
  const fb::WindowSummary* w = fb::GetWindowSummary(bytes.data());
  out->window_seq = w->window_seq();
  out->iter_begin = w->iter_begin();
  out->iter_end = w->iter_end();
  out->start_mono_ns = w->start_mono_ns();
  out->end_mono_ns = w->end_mono_ns();
  out->start_real_ns = w->start_real_ns();
  out->detailed = w->detailed();
  out->critical_path = w->critical_path();
  out->device_idle_ns = w->device_idle_ns();
  out->cuda_runtimes = w->cuda_runtimes();
  out->python_unrecorded = w->python_unrecorded();
  out->thread_cpu_ns = w->thread_cpu_ns();
  out->run_delay_ns = w->run_delay_ns();
  if (!DecodeFunctions(w->functions(), bytes, options, &out->functions)) return false;
  if (!DecodeCollectives(w->collectives(), &out->collectives)) return false;
  if (!DecodeSignals(w->signals(), &out->signals)) return false;
  out->iterations = IterationStats{};
  if (const fb::IterationStats* it = w->iterations()) {
    out->iterations.first = it->first();
    out->iterations.count = it->count();
    out->iterations.total_ns = it->total_ns();
    out->iterations.min_ns = it->min_ns();
    out->iterations.max_ns = it->max_ns();
    if (it->duration() != nullptr) {
      VarintReader in(Span(it->duration()));
      if (!NextHistogram(in, &out->iterations.duration) || !in.done()) return false;
    }
  }
  out->health = Health{};
  if (const fb::Health* h = w->health()) {
    out->health = Health{h->dropped_events(), h->hook_ns(), h->hook_calls(), h->dropped_functions(),
                         h->dropped_windows()};
  }
  return true;
}

bool ReadableSignal(uint8_t kind, double min, double max, double sum) {
  return kind <= static_cast<uint8_t>(SignalKind::kFlags) && std::isfinite(min) &&
         std::isfinite(max) && std::isfinite(sum);
}

std::string_view SignalKindName(SignalKind kind) {
  static constexpr std::string_view kNames[] = {"gauge", "counter", "flags"};
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

std::string_view KindName(FunctionKind kind) {
  static constexpr std::string_view kNames[] = {
      "unknown", "python", "cuda_api",   "kernel",    "memcpy", "memset",   "collective",
      "sync",    "gc",     "dataloader", "iteration", "alloc",  "py_native"};
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

std::string_view CollectiveOpName(CollectiveOp op) {
  static constexpr std::string_view kNames[] = {
      "unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",   "send",
      "recv",    "all_to_all", "gather",     "scatter",        "barrier",   "net_send", "net_recv"};
  const auto i = static_cast<size_t>(op);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace perftracker::format
