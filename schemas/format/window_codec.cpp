// Maps format::Window to and from the column layout of schemas/window.fbs.
#include <bit>

#include <flatbuffers/flatbuffers.h>

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

template <class T, class Row, class Get>
Offset<Vector<T>> Column(FlatBufferBuilder& b, const std::vector<Row>& rows, Get get) {
  T* out = nullptr;
  const auto offset = b.CreateUninitializedVector<T>(rows.size(), &out);
  for (size_t i = 0; i < rows.size(); ++i) out[i] = static_cast<T>(get(rows[i]));
  return Offset<Vector<T>>(offset);
}

template <class Row, class Get>
Offset<fb::HistogramColumn> HistColumn(FlatBufferBuilder& b, const std::vector<Row>& rows,
                                       Get get) {
  size_t total = 0;
  for (const Row& r : rows) total += get(r).counts.size();
  uint32_t* counts = nullptr;
  const auto counts_off = b.CreateUninitializedVector<uint32_t>(total, &counts);
  size_t at = 0;
  for (const Row& r : rows) {
    const Histogram& h = get(r);
    std::copy(h.counts.begin(), h.counts.end(), counts + at);
    at += h.counts.size();
  }
  at = 0;
  const auto start = Column<uint32_t>(b, rows, [&](const Row& r) {
    const size_t s = at;
    at += get(r).counts.size();
    return s;
  });
  const auto length = Column<uint16_t>(b, rows, [&](const Row& r) { return get(r).counts.size(); });
  const auto first = Column<int16_t>(b, rows, [&](const Row& r) { return get(r).first; });
  return fb::CreateHistogramColumn(b, first, length, start,
                                   Offset<Vector<uint32_t>>(counts_off));
}

template <class Row, class Get>
Offset<Vector<Offset<flatbuffers::String>>> Strings(FlatBufferBuilder& b,
                                                     const std::vector<Row>& rows, Get get) {
  std::vector<Offset<flatbuffers::String>> offsets;
  offsets.reserve(rows.size());
  for (const Row& r : rows) offsets.push_back(b.CreateString(get(r)));
  return b.CreateVector(offsets);
}

Offset<fb::FunctionColumns> EncodeFunctions(FlatBufferBuilder& b,
                                            const std::vector<FunctionPattern>& f) {
  using P = FunctionPattern;
  const auto id = Column<uint64_t>(b, f, [](const P& p) { return p.id; });
  const auto kind = Column<uint8_t>(b, f, [](const P& p) { return p.kind; });
  const auto name = Strings(b, f, [](const P& p) -> const std::string& { return p.name; });
  const auto parent = Column<uint64_t>(b, f, [](const P& p) { return p.parent_id; });
  const auto count = Column<uint64_t>(b, f, [](const P& p) { return p.count; });
  const auto total = Column<uint64_t>(b, f, [](const P& p) { return p.total_ns; });
  const auto self = Column<uint64_t>(b, f, [](const P& p) { return p.self_ns; });
  const auto min = Column<uint64_t>(b, f, [](const P& p) { return p.min_ns; });
  const auto max = Column<uint64_t>(b, f, [](const P& p) { return p.max_ns; });
  const auto wait = Column<uint64_t>(b, f, [](const P& p) { return p.wait_ns; });
  const auto bytes = Column<uint64_t>(b, f, [](const P& p) { return p.bytes; });
  const auto dev_samples = Column<uint64_t>(b, f, [](const P& p) { return p.device_samples; });
  const auto dev_ns = Column<uint64_t>(b, f, [](const P& p) { return p.device_ns; });
  const auto duration = HistColumn(b, f, [](const P& p) -> const Histogram& { return p.duration; });
  const auto device = HistColumn(b, f, [](const P& p) -> const Histogram& { return p.device; });
  const auto per_iter =
      HistColumn(b, f, [](const P& p) -> const Histogram& { return p.per_iteration; });
  return fb::CreateFunctionColumns(b, id, kind, name, parent, count, total, self, min, max, wait,
                                   bytes, dev_samples, dev_ns, duration, device, per_iter);
}

Offset<fb::CollectiveColumns> EncodeCollectives(FlatBufferBuilder& b,
                                                const std::vector<CollectivePattern>& c) {
  using P = CollectivePattern;
  const auto comm = Column<uint64_t>(b, c, [](const P& p) { return p.comm_id; });
  const auto size = Column<uint32_t>(b, c, [](const P& p) { return p.comm_size; });
  const auto rank = Column<uint32_t>(b, c, [](const P& p) { return p.comm_rank; });
  const auto op = Column<uint8_t>(b, c, [](const P& p) { return p.op; });
  const auto peer = Column<int32_t>(b, c, [](const P& p) { return p.peer; });
  const auto name = Strings(b, c, [](const P& p) -> const std::string& { return p.name; });
  const auto bytes = Column<uint64_t>(b, c, [](const P& p) { return p.bytes; });
  const auto count = Column<uint64_t>(b, c, [](const P& p) { return p.count; });
  const auto host = Column<uint64_t>(b, c, [](const P& p) { return p.host_ns; });
  const auto dev_samples = Column<uint64_t>(b, c, [](const P& p) { return p.device_samples; });
  const auto dev_ns = Column<uint64_t>(b, c, [](const P& p) { return p.device_ns; });
  const auto device = HistColumn(b, c, [](const P& p) -> const Histogram& { return p.device; });
  const auto offset =
      HistColumn(b, c, [](const P& p) -> const Histogram& { return p.launch_offset; });
  const auto first = Column<uint64_t>(b, c, [](const P& p) { return p.first_seq; });
  const auto launched = Column<uint64_t>(b, c, [](const P& p) { return p.last_seq_launched; });
  const auto completed = Column<uint64_t>(b, c, [](const P& p) { return p.last_seq_completed; });
  return fb::CreateCollectiveColumns(b, comm, size, rank, op, peer, name, bytes, count, host,
                                     dev_samples, dev_ns, device, offset, first, launched,
                                     completed);
}

}  // namespace

uint64_t FunctionId(FunctionKind kind, std::string_view name, uint64_t parent_id) {
  const uint64_t seed = (static_cast<uint64_t>(kind) << 56) ^ parent_id;
  const uint64_t id = XXH3_64bits_withSeed(name.data(), name.size(), seed);
  return id == 0 ? 1 : id;  // 0 means "no function" (parent_id of a root)
}

std::span<const uint8_t> EncodedBytes(const FlatBufferBuilder& b) {
  return {b.GetBufferPointer(), b.GetSize()};
}

void EncodeWindow(const Window& w, FlatBufferBuilder& b) {
  b.Clear();
  const auto functions = EncodeFunctions(b, w.functions);
  const auto collectives = EncodeCollectives(b, w.collectives);
  const std::vector<IterationStats> iters{w.iterations};
  const auto iter_hist =
      HistColumn(b, iters, [](const IterationStats& s) -> const Histogram& { return s.duration; });
  const auto iterations = fb::CreateIterationStats(b, w.iterations.first, w.iterations.count,
                                                   w.iterations.total_ns, w.iterations.min_ns,
                                                   w.iterations.max_ns, iter_hist);
  const auto health =
      fb::CreateHealth(b, w.health.dropped_events, w.health.hook_ns, w.health.hook_calls,
                       w.health.dropped_functions, w.health.dropped_windows);
  const auto root = fb::CreateWindowSummary(b, w.window_seq, w.iter_begin, w.iter_end,
                                            w.start_mono_ns, w.end_mono_ns, w.start_real_ns,
                                            functions, collectives, iterations, health);
  fb::FinishWindowSummaryBuffer(b, root);
}

}  // namespace perftracker::format
