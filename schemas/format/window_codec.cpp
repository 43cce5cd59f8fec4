// Maps format::Window to the column layout of schemas/window.fbs.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <bit>

#include "schemas/format/packed.h"
#include "schemas/format/window.h"
#include "schemas/window_generated.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace perftracker::format {
namespace {

static_assert(std::endian::native == std::endian::little,
              "columns are copied as they lie in memory; FlatBuffers is little-endian");

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using flatbuffers::Vector;
using Bytes = Offset<Vector<uint8_t>>;

template <class T, class Row, class Get>
Offset<Vector<T>> Column(FlatBufferBuilder& b, const std::vector<Row>& rows, Get get) {
  T* out = nullptr;
  const auto offset = b.CreateUninitializedVector<T>(rows.size(), &out);
  for (size_t i = 0; i < rows.size(); ++i) out[i] = static_cast<T>(get(rows[i]));
  return Offset<Vector<T>>(offset);
}

template <class Row, class Get>
Bytes Packed(FlatBufferBuilder& b, std::vector<uint8_t>& scratch, const std::vector<Row>& rows,
             Get get) {
  scratch.resize(rows.size() * kMaxVarintSize);
  uint8_t* p = scratch.data();
  for (const Row& r : rows) p = PutVarint(p, static_cast<uint64_t>(get(r)));
  return b.CreateVector(scratch.data(), static_cast<size_t>(p - scratch.data()));
}

template <class Row, class Get>
Bytes PackedHistograms(FlatBufferBuilder& b, std::vector<uint8_t>& scratch,
                       const std::vector<Row>& rows, Get get) {
  size_t values = 0;
  for (const Row& r : rows) values += 2 + get(r).counts.size();
  scratch.resize(values * kMaxVarintSize);
  uint8_t* p = scratch.data();
  for (const Row& r : rows) {
    const Histogram& h = get(r);
    p = PutVarint(p, static_cast<uint64_t>(h.counts.empty() ? 0 : h.first));
    p = PutVarint(p, h.counts.size());
    for (uint32_t c : h.counts) p = PutVarint(p, c);
  }
  return b.CreateVector(scratch.data(), static_cast<size_t>(p - scratch.data()));
}

template <class Row, class Get>
Offset<Vector<Offset<flatbuffers::String>>> Strings(FlatBufferBuilder& b,
                                                    const std::vector<Row>& rows, Get get) {
  std::vector<Offset<flatbuffers::String>> offsets;
  offsets.reserve(rows.size());
  for (const Row& r : rows) offsets.push_back(b.CreateString(get(r)));
  return b.CreateVector(offsets);
}

Offset<fb::CollectiveColumns> EncodeCollectives(FlatBufferBuilder& b, std::vector<uint8_t>& s,
                                                const std::vector<CollectivePattern>& c) {
  using P = CollectivePattern;
  const auto name = Strings(b, c, [](const P& p) -> const std::string& { return p.name; });
  const auto comm = Column<uint64_t>(b, c, [](const P& p) { return p.comm_id; });
  const auto size = Column<uint32_t>(b, c, [](const P& p) { return p.comm_size; });
  const auto rank = Column<uint32_t>(b, c, [](const P& p) { return p.comm_rank; });
  const auto op = Column<uint8_t>(b, c, [](const P& p) { return p.op; });
  const auto peer = Column<int32_t>(b, c, [](const P& p) { return p.peer; });
  const auto bytes = Column<uint64_t>(b, c, [](const P& p) { return p.bytes; });
  const auto count = Column<uint64_t>(b, c, [](const P& p) { return p.count; });
  const auto host = Column<uint64_t>(b, c, [](const P& p) { return p.host_ns; });
  const auto dev_samples = Column<uint64_t>(b, c, [](const P& p) { return p.device_samples; });
  const auto dev_ns = Column<uint64_t>(b, c, [](const P& p) { return p.device_ns; });
  const auto device =
      PackedHistograms(b, s, c, [](const P& p) -> const Histogram& { return p.device; });
  const auto offset =
      PackedHistograms(b, s, c, [](const P& p) -> const Histogram& { return p.launch_offset; });
  const auto first = Column<uint64_t>(b, c, [](const P& p) { return p.first_seq; });
  const auto launched = Column<uint64_t>(b, c, [](const P& p) { return p.last_seq_launched; });
  const auto completed = Column<uint64_t>(b, c, [](const P& p) { return p.last_seq_completed; });
  return fb::CreateCollectiveColumns(b, comm, size, rank, op, peer, name, bytes, count, host,
                                     dev_samples, dev_ns, device, offset, first, launched,
                                     completed);
}

Offset<fb::SignalColumns> EncodeSignals(FlatBufferBuilder& b, const std::vector<Signal>& s) {
  if (s.empty()) return 0;  // a window without samples is what writers produced before signals
  using S = Signal;
  const auto name = Strings(b, s, [](const S& x) -> const std::string& { return x.name; });
  const auto device = Strings(b, s, [](const S& x) -> const std::string& { return x.device; });
  const auto kind = Column<uint8_t>(b, s, [](const S& x) { return x.kind; });
  const auto samples = Column<uint32_t>(b, s, [](const S& x) { return x.samples; });
  const auto min = Column<double>(b, s, [](const S& x) { return x.min; });
  const auto max = Column<double>(b, s, [](const S& x) { return x.max; });
  const auto sum = Column<double>(b, s, [](const S& x) { return x.sum; });
  const auto bits = Column<uint64_t>(b, s, [](const S& x) { return x.bits; });
  return fb::CreateSignalColumns(b, name, device, kind, samples, min, max, sum, bits);
}

}  // namespace

uint64_t FunctionId(FunctionKind kind, std::string_view name, uint64_t parent_id) {
  const uint64_t seed = (static_cast<uint64_t>(kind) << 56) ^ parent_id;
  const uint64_t id = XXH3_64bits_withSeed(name.data(), name.size(), seed);
  return id == 0 ? 1 : id;  // 0 means "no function" (parent_id of a root)
}

bool FillFunctionIds(std::vector<FunctionPattern>* functions) {
  for (size_t i = 0; i < functions->size(); ++i) {
    FunctionPattern& p = (*functions)[i];
    if (p.parent >= static_cast<int64_t>(i) || p.parent < -1) return false;
    p.parent_id = p.parent < 0 ? 0 : (*functions)[static_cast<size_t>(p.parent)].id;
    p.id = FunctionId(p.kind, p.name, p.parent_id);
  }
  return true;
}

WindowEncoder::WindowEncoder() : builder_(std::make_unique<FlatBufferBuilder>(1 << 20)) {}
WindowEncoder::~WindowEncoder() = default;

bool WindowEncoder::SameFunctionTable(const std::vector<FunctionPattern>& functions) const {
  if (functions.size() != table_.size() || tail_.empty()) return false;
  for (size_t i = 0; i < functions.size(); ++i) {
    const FunctionPattern& p = functions[i];
    const TableKey& k = table_[i];
    if (p.kind != k.kind || p.parent != k.parent || p.name != k.name) return false;
  }
  return true;
}

std::span<const uint8_t> WindowEncoder::Encode(const Window& w, Details details) {
  using P = FunctionPattern;
  FlatBufferBuilder& b = *builder_;
  std::vector<uint8_t>& s = scratch_;
  const auto& f = w.functions;
  b.Clear();
  // The static columns first: FlatBuffers builds back to front, so they become the buffer's tail.
  // Offsets count from the buffer's end, so an unchanged table yields the same bytes and offsets.
  if (SameFunctionTable(f)) {
    b.PushBytes(tail_.data(), tail_.size());
  } else {
    tail_offsets_[0] = Strings(b, f, [](const P& p) -> const std::string& { return p.name; }).o;
    tail_offsets_[1] = Column<uint8_t>(b, f, [](const P& p) { return p.kind; }).o;
    tail_offsets_[2] = Packed(b, s, f, [](const P& p) { return p.parent + 1; }).o;
    tail_.assign(b.GetCurrentBufferPointer(), b.GetCurrentBufferPointer() + b.GetSize());
    table_.clear();
    for (const P& p : f) table_.push_back(TableKey{p.kind, p.parent, p.name});
  }
  static_tail_size_ = b.GetSize();
  const Offset<Vector<Offset<flatbuffers::String>>> name(tail_offsets_[0]);
  const Offset<Vector<uint8_t>> kind(tail_offsets_[1]);
  const Bytes parent(tail_offsets_[2]);

  // The detail columns next, so they lie just before the tail: RingWriter::Append gives them a
  // zstd frame of their own, which a reader that does not use them (the analyzer) skips.
  Bytes min, max, device, per_iter, self_duration;
  if (details == Details::kKeep) {
    min = Packed(b, s, f, [](const P& p) { return p.min_ns; });
    max = Packed(b, s, f, [](const P& p) { return p.max_ns; });
    device = PackedHistograms(b, s, f, [](const P& p) -> const Histogram& { return p.device; });
    per_iter =
        PackedHistograms(b, s, f, [](const P& p) -> const Histogram& { return p.per_iteration; });
    // Written only when some function has one: a window without any carries no such column, as
    // writers produced before it existed.
    const bool any_self =
        std::any_of(f.begin(), f.end(), [](const P& p) { return !p.self_duration.empty(); });
    if (any_self) {
      self_duration =
          PackedHistograms(b, s, f, [](const P& p) -> const Histogram& { return p.self_duration; });
    }
  }
  detail_size_ = b.GetSize() - static_tail_size_;

  // In the body, where kOmit keeps it: `selftest` checks a captured graph's calls by it.
  const bool any_captured = std::any_of(f.begin(), f.end(), [](const P& p) { return p.captured; });
  const auto captured =
      any_captured ? Packed(b, s, f, [](const P& p) { return p.captured; }) : Bytes();
  const bool any_cpu = std::any_of(f.begin(), f.end(), [](const P& p) { return p.thread_cpu_ns; });
  const auto thread_cpu =
      any_cpu ? Packed(b, s, f, [](const P& p) { return p.thread_cpu_ns; }) : Bytes();
  const auto count = Packed(b, s, f, [](const P& p) { return p.count; });
  const auto total = Packed(b, s, f, [](const P& p) { return p.total_ns; });
  const auto self = Packed(b, s, f, [](const P& p) { return p.self_ns; });
  const auto wait = Packed(b, s, f, [](const P& p) { return p.wait_ns; });
  const auto bytes = Packed(b, s, f, [](const P& p) { return p.bytes; });
  const auto dev_samples = Packed(b, s, f, [](const P& p) { return p.device_samples; });
  const auto dev_ns = Packed(b, s, f, [](const P& p) { return p.device_ns; });
  const auto duration =
      PackedHistograms(b, s, f, [](const P& p) -> const Histogram& { return p.duration; });
  const auto critical =
      w.critical_path ? Packed(b, s, f, [](const P& p) { return p.critical_ns; }) : Bytes();
  const auto functions = fb::CreateFunctionColumns(
      b, name, kind, parent, count, total, self, min, max, wait, bytes, dev_samples, dev_ns,
      duration, device, per_iter, self_duration, critical, captured, thread_cpu);

  const auto collectives = EncodeCollectives(b, s, w.collectives);
  const auto signals = EncodeSignals(b, w.signals);
  const std::vector<IterationStats> iters{w.iterations};
  const auto iter_hist = PackedHistograms(
      b, s, iters, [](const IterationStats& it) -> const Histogram& { return it.duration; });
  const auto iterations =
      fb::CreateIterationStats(b, w.iterations.first, w.iterations.count, w.iterations.total_ns,
                               w.iterations.min_ns, w.iterations.max_ns, iter_hist);
  const auto health =
      fb::CreateHealth(b, w.health.dropped_events, w.health.hook_ns, w.health.hook_calls,
                       w.health.dropped_functions, w.health.dropped_windows);
  const auto root = fb::CreateWindowSummary(
      b, w.window_seq, w.iter_begin, w.iter_end, w.start_mono_ns, w.end_mono_ns, w.start_real_ns,
      functions, collectives, iterations, health, w.detailed, w.critical_path, w.device_idle_ns,
      w.cuda_runtimes, w.python_unrecorded, w.thread_cpu_ns, w.run_delay_ns, signals);
  fb::FinishWindowSummaryBuffer(b, root);
  return {b.GetBufferPointer(), b.GetSize()};
}

}  // namespace perftracker::format
