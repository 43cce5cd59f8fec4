#include "analyzer/ingest/reduced.h"

#include <flatbuffers/flatbuffers.h>
#include <zstd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>

#include "schemas/format/crc32c.h"
#include "schemas/format/version.h"
#include "schemas/reduced_generated.h"

namespace perftracker::analyzer {
namespace {

namespace rfb = fb::reduced;
using flatbuffers::Offset;

constexpr char kMagic[8] = {'P', 'T', 'R', 'E', 'D', 'U', 'C', 'E'};
// Level 3 (zstd's default): a node's file is written once and read once, off any hot path.
constexpr int kZstdLevel = 3;
// A crafted header must not make the reader allocate gigabytes: real payloads compress floats
// and repeated names a few times over, never by more than this.
constexpr uint64_t kMaxExpansion = 256;
constexpr uint64_t kMaxRawBytes = uint64_t{4} << 30;

// Header, little-endian: magic[8], version u32, header_size u32, payload_size u64, raw_size
// u64, payload_crc u32, header_crc u32 (of the 36 bytes before it).

template <class T>
void StoreAt(uint8_t* p, T v) {
  static_assert(std::endian::native == std::endian::little);
  std::memcpy(p, &v, sizeof v);
}

template <class T>
T LoadAt(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// --- float columns, byte plane by byte plane (reduced.fbs Slot) ---

template <class Sum>
using FloatMember = float Sum::*;

constexpr FloatMember<FunctionSum> kFunctionColumns[] = {
    &FunctionSum::self_ns,        &FunctionSum::critical_ns, &FunctionSum::wait_ns,
    &FunctionSum::count,          &FunctionSum::total_ns,    &FunctionSum::device_ns,
    &FunctionSum::device_samples, &FunctionSum::bytes,       &FunctionSum::sampling_var};
constexpr FloatMember<CollectiveSum> kCollectiveColumns[] = {
    &CollectiveSum::device_ns,     &CollectiveSum::device_samples,
    &CollectiveSum::count,         &CollectiveSum::offset_weighted,
    &CollectiveSum::offset_weight, &CollectiveSum::device_median_weighted};

// `rows`: a std::vector<CollectiveSum> or FunctionSums (whose rows are made on each read).
template <class Rows, class Sum, size_t N>
std::vector<uint8_t> Planes(const Rows& rows, const FloatMember<Sum> (&columns)[N]) {
  const size_t n = rows.size();
  std::vector<uint8_t> out(N * 4 * n);
  for (size_t i = 0; i < n; ++i) {
    const Sum row = rows[i];
    for (size_t c = 0; c < N; ++c) {
      uint8_t* column = out.data() + c * 4 * n;
      const auto bits = std::bit_cast<uint32_t>(row.*columns[c]);
      for (size_t b = 0; b < 4; ++b) column[b * n + i] = static_cast<uint8_t>(bits >> (8 * b));
    }
  }
  return out;
}

// Sums of nanoseconds, bytes and counts: never negative, and far below 1e30 (3e13 years), so
// the analysis can add and multiply them without reaching infinity.
bool PlausibleSum(double v) { return v >= 0 && v < 1e30; }

FunctionSum& RowOf(FunctionSums* rows, size_t i) { return rows->Mutable(i); }
CollectiveSum& RowOf(std::vector<CollectiveSum>* rows, size_t i) { return (*rows)[i]; }

// Adds the rows of `planes` into row map[i] of `into`: rows of one catalog entry written twice (a
// crafted file) add up instead of one overwriting the other. False when a value is not a
// plausible sum.
template <class Rows, class Sum, size_t N>
bool AddPlanes(const flatbuffers::Vector<uint8_t>* planes, size_t n,
               const std::vector<uint32_t>& map, const FloatMember<Sum> (&columns)[N], Rows* into) {
  if (n == 0) return true;
  if (planes == nullptr || planes->size() != N * 4 * n || n > map.size()) return false;
  const uint8_t* data = planes->data();
  for (size_t i = 0; i < n; ++i) {
    if (into->size() <= map[i]) into->resize(map[i] + 1);
  }
  for (size_t c = 0; c < N; ++c) {
    const uint8_t* column = data + c * 4 * n;
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits = 0;
      for (size_t b = 0; b < 4; ++b) bits |= uint32_t{column[b * n + i]} << (8 * b);
      const float v = std::bit_cast<float>(bits);
      if (!PlausibleSum(v)) return false;
      RowOf(into, map[i]).*columns[c] += v;
    }
  }
  return true;
}

// A histogram's run of buckets; false when it runs past the last bucket.
bool ReadHistogram(int first, const flatbuffers::Vector<uint32_t>* counts, format::Histogram* out) {
  const size_t buckets = counts ? counts->size() : 0;
  if (first < 0 || static_cast<size_t>(first) + buckets > format::kHistogramBuckets) return false;
  out->first = buckets == 0 ? 0 : first;
  if (buckets > 0) out->counts.assign(counts->begin(), counts->end());
  return true;
}

// The other threads' CPU time by function; false when the pairs do not match up, name a
// function the file's catalog lacks, or hold an implausible sum.
bool ReadSideCpu(const rfb::Slot& s, const std::vector<uint32_t>& fn_map,
                 std::map<uint32_t, double>* out) {
  const auto* fns = s.side_cpu_functions();
  const auto* ns = s.side_cpu_ns();
  if (fns == nullptr && ns == nullptr) return true;
  if (fns == nullptr || ns == nullptr || fns->size() != ns->size()) return false;
  for (flatbuffers::uoffset_t i = 0; i < fns->size(); ++i) {
    if (fns->Get(i) >= fn_map.size() || !PlausibleSum(ns->Get(i))) return false;
    (*out)[fn_map[fns->Get(i)]] += ns->Get(i);
  }
  return true;
}

// --- encoding ---

Offset<rfb::Slot> EncodeSlot(flatbuffers::FlatBufferBuilder& b, const Slot& s) {
  const auto fns = b.CreateVector(Planes(s.functions, kFunctionColumns));
  const auto colls = b.CreateVector(Planes(s.collectives, kCollectiveColumns));
  const auto hist = b.CreateVector(s.iteration_hist.counts);
  std::vector<uint32_t> side_fns;
  std::vector<double> side_ns;
  for (const auto& [fn, ns] : s.side_cpu_ns) side_fns.push_back(fn), side_ns.push_back(ns);
  const auto side_fn_vec = b.CreateVector(side_fns);
  const auto side_ns_vec = b.CreateVector(side_ns);
  rfb::SlotBuilder sb(b);
  sb.add_key(s.key);
  sb.add_iter_begin(s.iter_begin);
  sb.add_iter_end(s.iter_end);
  sb.add_windows(s.windows);
  sb.add_detailed_windows(s.detailed_windows);
  sb.add_critical_windows(s.critical_windows);
  sb.add_device_windows(s.device_windows);
  sb.add_sched_windows(s.sched_windows);
  sb.add_run_delay_ns(s.run_delay_ns);
  sb.add_thread_cpu_ns(s.thread_cpu_ns);
  sb.add_iteration_first_bucket(s.iteration_hist.first);
  sb.add_iteration_counts(hist);
  sb.add_iterations(s.iterations);
  sb.add_iteration_ns(s.iteration_ns);
  sb.add_functions(static_cast<uint32_t>(s.functions.size()));
  sb.add_function_sums(fns);
  sb.add_collectives(static_cast<uint32_t>(s.collectives.size()));
  sb.add_collective_sums(colls);
  if (!side_fns.empty()) {
    sb.add_side_cpu_functions(side_fn_vec);
    sb.add_side_cpu_ns(side_ns_vec);
  }
  return sb.Finish();
}

Offset<rfb::Rank> EncodeRank(flatbuffers::FlatBufferBuilder& b, const RankData& r) {
  const format::Identity& id = r.identity;
  std::vector<Offset<rfb::Slot>> slots;
  for (const Slot& s : r.slots) slots.push_back(EncodeSlot(b, s));
  const auto slots_off = b.CreateVector(slots);
  Offset<flatbuffers::Vector<uint8_t>> live_off;
  if (r.live) {
    flatbuffers::FlatBufferBuilder live_builder;
    const auto bytes = format::EncodeLiveState(*r.live, live_builder);
    live_off = b.CreateVector(bytes.data(), bytes.size());
  }
  const auto counts = b.CreateVector(r.iteration_hist.counts);
  std::vector<Offset<rfb::Signal>> signals;
  for (const SignalTotal& t : r.signals) {
    signals.push_back(rfb::CreateSignal(b, b.CreateString(t.name), b.CreateString(t.device),
                                        static_cast<uint8_t>(t.kind), t.samples, t.min, t.max,
                                        t.sum, t.bits, t.window_ns));
  }
  const auto signals_off = signals.empty() ? 0 : b.CreateVector(signals);
  const auto job = b.CreateString(id.job_id), host = b.CreateString(id.hostname),
             version = b.CreateString(id.library_version), path = b.CreateString(r.path);
  rfb::RankBuilder rb(b);
  rb.add_job_id(job);
  rb.add_hostname(host);
  rb.add_rank(id.rank);
  rb.add_local_rank(id.local_rank);
  rb.add_world_size(id.world_size);
  rb.add_pid(id.pid);
  rb.add_start_real_ns(id.start_real_ns);
  rb.add_start_mono_ns(id.start_mono_ns);
  rb.add_library_version(version);
  rb.add_helper_of(id.helper_of);
  rb.add_path(path);
  rb.add_format_version(r.format_version);
  if (r.live) rb.add_live(live_off);
  rb.add_records_valid(r.stats.records_valid);
  rb.add_record_bytes(r.stats.record_bytes);
  rb.add_records_corrupt(r.stats.records_corrupt);
  rb.add_seq_gaps(r.stats.seq_gaps);
  rb.add_duplicates(r.stats.duplicates);
  rb.add_truncated(r.stats.truncated);
  rb.add_live_valid(r.stats.live_valid);
  rb.add_dropped_events(r.health.dropped_events);
  rb.add_hook_ns(r.health.hook_ns);
  rb.add_hook_calls(r.health.hook_calls);
  rb.add_dropped_functions(r.health.dropped_functions);
  rb.add_dropped_windows(r.health.dropped_windows);
  rb.add_iteration_first_bucket(r.iteration_hist.first);
  rb.add_iteration_counts(counts);
  rb.add_windows(r.windows);
  rb.add_python_unrecorded_windows(r.python_unrecorded_windows);
  rb.add_shift(r.shift);
  rb.add_slots(slots_off);
  if (!signals.empty()) rb.add_signals(signals_off);
  return rb.Finish();
}

std::vector<uint8_t> EncodePayload(const FileSet& set, std::string_view hostname) {
  flatbuffers::FlatBufferBuilder b(1 << 20);
  std::vector<Offset<rfb::Function>> fns;
  for (const FunctionInfo& f : set.catalog.functions()) {
    fns.push_back(rfb::CreateFunction(b, f.id, static_cast<uint8_t>(f.kind), b.CreateString(f.name),
                                      f.comm, f.parent_id));
  }
  std::vector<Offset<rfb::Collective>> colls;
  for (const CollectiveInfo& c : set.catalog.collectives()) {
    colls.push_back(rfb::CreateCollective(b, c.comm_id, c.comm_size, static_cast<uint8_t>(c.op),
                                          c.peer, c.bytes, b.CreateString(c.name)));
  }
  std::vector<Offset<rfb::Rank>> ranks;
  for (const RankData& r : set.ranks) ranks.push_back(EncodeRank(b, r));
  std::vector<Offset<rfb::DiagnosticCount>> diags;
  for (size_t d = 0; d < static_cast<size_t>(Diagnostic::kCount); ++d) {
    const auto kind = static_cast<Diagnostic>(d);
    if (const uint64_t n = set.diagnostics.Count(kind)) {
      diags.push_back(
          rfb::CreateDiagnosticCount(b, b.CreateString(std::string(DiagnosticName(kind))), n));
    }
  }
  const auto fns_off = b.CreateVector(fns);
  const auto colls_off = b.CreateVector(colls);
  const auto ranks_off = b.CreateVector(ranks);
  const auto diags_off = b.CreateVector(diags);
  const auto messages = b.CreateVectorOfStrings(set.diagnostics.messages());
  const auto by = b.CreateString(format::kLibraryVersion), host = b.CreateString(hostname);
  rfb::FinishNodeSummaryBuffer(b, rfb::CreateNodeSummary(b, set.ring_files, fns_off, colls_off,
                                                         ranks_off, diags_off, messages, by, host));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// --- decoding ---

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// False when the rank breaks what the analysis relies on: slots in ascending key order and no
// more of them than a ring file's rank could have, rows inside the catalog, finite sums, a
// histogram within its buckets.
bool DecodeRank(const rfb::Rank& in, const std::vector<uint32_t>& fn_map,
                const std::vector<uint32_t>& coll_map, RankData* r) {
  format::Identity& id = r->identity;
  id.job_id = Str(in.job_id());
  id.hostname = Str(in.hostname());
  id.rank = in.rank();
  id.local_rank = in.local_rank();
  id.world_size = in.world_size();
  id.pid = in.pid();
  id.start_real_ns = in.start_real_ns();
  id.start_mono_ns = in.start_mono_ns();
  id.library_version = Str(in.library_version());
  id.helper_of = in.helper_of();
  r->path = Str(in.path());
  r->format_version = in.format_version();
  if (const auto* live = in.live()) {
    format::LiveState state;
    if (format::DecodeLiveState({live->data(), live->size()}, &state)) r->live = std::move(state);
  }
  r->stats =
      format::RingStats{in.records_valid(), in.record_bytes(), in.records_corrupt(), in.seq_gaps(),
                        in.duplicates(),    in.truncated(),    in.live_valid()};
  r->health = format::Health{in.dropped_events(), in.hook_ns(), in.hook_calls(),
                             in.dropped_functions(), in.dropped_windows()};
  if (!ReadHistogram(in.iteration_first_bucket(), in.iteration_counts(), &r->iteration_hist)) {
    return false;
  }
  r->windows = in.windows();
  r->python_unrecorded_windows = in.python_unrecorded_windows();
  r->shift = in.shift();
  if (r->shift < 0 || r->shift > 63) return false;
  if (const auto* signals = in.signals()) {
    for (const rfb::Signal* t : *signals) {
      // As in a window (format::ReadableSignal), and a plausible length.
      if (!format::ReadableSignal(t->kind(), t->min(), t->max(), t->sum()) ||
          !PlausibleSum(t->window_ns())) {
        continue;
      }
      r->signals.push_back(SignalTotal{Str(t->name()), Str(t->device()),
                                       static_cast<format::SignalKind>(t->kind()), t->samples(),
                                       t->min(), t->max(), t->sum(), t->bits(), t->window_ns()});
    }
  }
  const auto* slots = in.slots();
  if (slots != nullptr && slots->size() > kMaxSlots) return false;
  for (flatbuffers::uoffset_t k = 0; slots != nullptr && k < slots->size(); ++k) {
    const rfb::Slot& s = *slots->Get(k);
    if (!r->slots.empty() && s.key() <= r->slots.back().key) return false;
    Slot& out = r->slots.emplace_back();
    out.key = s.key();
    out.iter_begin = s.iter_begin();
    out.iter_end = s.iter_end();
    out.windows = s.windows();
    out.detailed_windows = s.detailed_windows();
    out.critical_windows = s.critical_windows();
    out.device_windows = s.device_windows();
    out.sched_windows = s.sched_windows();
    out.run_delay_ns = s.run_delay_ns();
    out.thread_cpu_ns = s.thread_cpu_ns();
    out.iterations = s.iterations();
    out.iteration_ns = s.iteration_ns();
    if (!ReadHistogram(s.iteration_first_bucket(), s.iteration_counts(), &out.iteration_hist) ||
        !PlausibleSum(out.run_delay_ns) || !PlausibleSum(out.thread_cpu_ns) ||
        !PlausibleSum(out.iterations) ||
        !PlausibleSum(out.iteration_ns) ||
        !AddPlanes(s.function_sums(), s.functions(), fn_map, kFunctionColumns, &out.functions) ||
        !AddPlanes(s.collective_sums(), s.collectives(), coll_map, kCollectiveColumns,
                   &out.collectives) ||
        !ReadSideCpu(s, fn_map, &out.side_cpu_ns)) {
      return false;
    }
  }
  return true;
}

// The catalog of the file, interned into out->catalog: map[i] is file entry i's index there.
void DecodeCatalog(const rfb::NodeSummary& node, FileSet* out, std::vector<uint32_t>* fn_map,
                   std::vector<uint32_t>* coll_map) {
  if (const auto* fns = node.functions()) {
    for (const rfb::Function* f : *fns) {
      fn_map->push_back(
          out->catalog.Intern(FunctionInfo{f->id(), static_cast<format::FunctionKind>(f->kind()),
                                           Str(f->name()), f->comm(), f->parent_id()}));
    }
  }
  if (const auto* colls = node.collectives()) {
    for (const rfb::Collective* c : *colls) {
      coll_map->push_back(out->catalog.Intern(
          CollectiveInfo{c->comm_id(), c->comm_size(), static_cast<format::CollectiveOp>(c->op()),
                         c->peer(), c->bytes(), Str(c->name())}));
    }
  }
}

void DecodeDiagnostics(const rfb::NodeSummary& node, Diagnostics* out) {
  if (const auto* diags = node.diagnostics()) {
    for (const rfb::DiagnosticCount* d : *diags) {
      for (size_t k = 0; k < static_cast<size_t>(Diagnostic::kCount); ++k) {
        const auto kind = static_cast<Diagnostic>(k);
        if (d->name() != nullptr && d->name()->string_view() == DiagnosticName(kind)) {
          out->Add(kind, d->count());
        }
      }
    }
  }
  if (const auto* messages = node.messages()) {
    for (const flatbuffers::String* m : *messages) out->AddMessage(Str(m));
  }
}

}  // namespace

bool IsReduced(std::span<const uint8_t> head) {
  return head.size() >= sizeof kMagic && std::memcmp(head.data(), kMagic, sizeof kMagic) == 0;
}

std::vector<uint8_t> EncodeReduced(const FileSet& set, std::string_view hostname) {
  return FrameReduced(EncodePayload(set, hostname));
}

std::vector<uint8_t> FrameReduced(std::span<const uint8_t> raw) {
  std::vector<uint8_t> out(kReducedHeaderSize + ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out.data() + kReducedHeaderSize, out.size() - kReducedHeaderSize,
                                 raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) return {};  // only with a bound too small, which compressBound rules out
  out.resize(kReducedHeaderSize + n);
  uint8_t* h = out.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  StoreAt<uint32_t>(h + 8, kReducedVersion);
  StoreAt<uint32_t>(h + 12, kReducedHeaderSize);
  StoreAt<uint64_t>(h + 16, n);
  StoreAt<uint64_t>(h + 24, raw.size());
  StoreAt<uint32_t>(h + 32, format::Crc32c(h + kReducedHeaderSize, n));
  StoreAt<uint32_t>(h + 36, format::Crc32c(h, 36));
  return out;
}

ReducedStatus DecodeReduced(std::span<const uint8_t> bytes, FileSet* out, std::string* error) {
  if (!IsReduced(bytes)) {
    *error = "not a reduced file";
    return ReducedStatus::kNotReduced;
  }
  if (bytes.size() < kReducedHeaderSize ||
      LoadAt<uint32_t>(bytes.data() + 36) != format::Crc32c(bytes.data(), 36)) {
    *error = "reduced file header fails its CRC";
    return ReducedStatus::kCorruptHeader;
  }
  const auto version = LoadAt<uint32_t>(bytes.data() + 8);
  const auto header_size = LoadAt<uint32_t>(bytes.data() + 12);
  const auto payload_size = LoadAt<uint64_t>(bytes.data() + 16);
  const auto raw_size = LoadAt<uint64_t>(bytes.data() + 24);
  const auto payload_crc = LoadAt<uint32_t>(bytes.data() + 32);
  if (version > kReducedVersion || version == 0) {
    *error = "reduced format version " + std::to_string(version) + " (this build reads " +
             std::to_string(kReducedVersion) + ")";
    return ReducedStatus::kUnsupportedVersion;
  }
  if (header_size != kReducedHeaderSize) {
    *error = "reduced file header gives a wrong header size";
    return ReducedStatus::kCorruptHeader;
  }
  if (bytes.size() - kReducedHeaderSize < payload_size) {
    *error = "reduced file truncated: " + std::to_string(bytes.size()) + " of " +
             std::to_string(kReducedHeaderSize + payload_size) + " bytes";
    return ReducedStatus::kTruncated;
  }
  if (raw_size > std::min(kMaxRawBytes, payload_size * kMaxExpansion + (1 << 20))) {
    *error = "reduced file header gives an impossible size";
    return ReducedStatus::kCorruptHeader;
  }
  const std::span<const uint8_t> payload = bytes.subspan(kReducedHeaderSize, payload_size);
  if (format::Crc32c(payload.data(), payload.size()) != payload_crc) {
    *error = "reduced file payload fails its CRC";
    return ReducedStatus::kCorruptPayload;
  }
  // uint64_t storage: the FlatBuffer's 8-byte fields are read in place, aligned.
  std::vector<uint64_t> raw((raw_size + 7) / 8);
  const size_t n = ZSTD_decompress(raw.data(), raw_size, payload.data(), payload.size());
  const auto* data = reinterpret_cast<const uint8_t*>(raw.data());
  flatbuffers::Verifier verifier(data, raw_size);
  if (ZSTD_isError(n) || n != raw_size || !rfb::VerifyNodeSummaryBuffer(verifier)) {
    *error = "reduced file payload does not decompress or verify";
    return ReducedStatus::kCorruptPayload;
  }
  const rfb::NodeSummary& node = *rfb::GetNodeSummary(data);
  out->ring_files = node.ring_files();
  std::vector<uint32_t> fn_map, coll_map;
  DecodeCatalog(node, out, &fn_map, &coll_map);
  DecodeDiagnostics(node, &out->diagnostics);
  if (const auto* ranks = node.ranks()) {
    for (const rfb::Rank* in : *ranks) {
      RankData r;
      if (DecodeRank(*in, fn_map, coll_map, &r)) {
        r.PackSums();
        out->ranks.push_back(std::move(r));
      } else {
        out->diagnostics.Add(
            Diagnostic::kUndecodableRecord, 1,
            "rank " + std::to_string(in->rank()) + " of a reduced file (" + Str(in->path()) + ")");
      }
    }
  }
  return ReducedStatus::kOk;
}

}  // namespace perftracker::analyzer
