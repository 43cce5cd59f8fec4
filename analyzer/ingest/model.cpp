#include "analyzer/ingest/model.h"

#include <algorithm>

namespace perftracker::analyzer {
namespace {

bool IsCommFunction(const format::FunctionPattern& p) {
  if (p.kind == format::FunctionKind::kCollective) return true;
  return p.kind == format::FunctionKind::kKernel && std::string_view(p.name).starts_with("nccl");
}

void MergeCollectives(std::vector<CollectiveSum>* into, const std::vector<CollectiveSum>& from) {
  if (into->size() < from.size()) into->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    CollectiveSum& a = (*into)[i];
    const CollectiveSum& b = from[i];
    a.device_ns += b.device_ns;
    a.device_samples += b.device_samples;
    a.count += b.count;
    a.offset_weighted += b.offset_weighted;
    a.offset_weight += b.offset_weight;
    a.device_median_weighted += b.device_median_weighted;
  }
}

}  // namespace

void Catalog::InternFunctions(const std::vector<format::FunctionPattern>& fns,
                              std::vector<uint32_t>* out) {
  out->resize(fns.size());
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < fns.size(); ++i) {
    const auto [it, added] =
        function_index_.try_emplace(fns[i].id, static_cast<uint32_t>(functions_.size()));
    if (added) {
      functions_.push_back(
          {fns[i].id, fns[i].kind, fns[i].name, IsCommFunction(fns[i]), fns[i].parent_id});
    }
    (*out)[i] = it->second;
  }
}

void Catalog::InternCollectives(const std::vector<format::CollectivePattern>& cs,
                                std::vector<uint32_t>* out) {
  out->resize(cs.size());
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < cs.size(); ++i) {
    const auto& c = cs[i];
    (*out)[i] = InternLocked(CollectiveInfo{c.comm_id, c.comm_size, c.op, c.peer, c.bytes, c.name});
  }
}

uint32_t Catalog::InternLocked(const FunctionInfo& f) {
  const auto [it, added] =
      function_index_.try_emplace(f.id, static_cast<uint32_t>(functions_.size()));
  if (added) functions_.push_back(f);
  return it->second;
}

uint32_t Catalog::InternLocked(const CollectiveInfo& c) {
  const auto key = std::make_tuple(c.comm_id, static_cast<uint8_t>(c.op), c.peer, c.bytes, c.name);
  const auto [it, added] = coll_index_.try_emplace(key, static_cast<uint32_t>(collectives_.size()));
  if (added) collectives_.push_back(c);
  return it->second;
}

uint32_t Catalog::Intern(const FunctionInfo& f) {
  std::lock_guard lock(mu_);
  return InternLocked(f);
}

uint32_t Catalog::Intern(const CollectiveInfo& c) {
  std::lock_guard lock(mu_);
  return InternLocked(c);
}

void Catalog::Merge(const Catalog& other, std::vector<uint32_t>* fn_map,
                    std::vector<uint32_t>* coll_map) {
  std::lock_guard lock(mu_);  // `other` is complete: nothing interns into it any more
  fn_map->clear();
  for (const FunctionInfo& f : other.functions_) fn_map->push_back(InternLocked(f));
  coll_map->clear();
  for (const CollectiveInfo& c : other.collectives_) coll_map->push_back(InternLocked(c));
}

void RemapVector(std::vector<CollectiveSum>* v, const std::vector<uint32_t>& map) {
  std::vector<CollectiveSum> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const uint32_t k = map[i];
    if (out.size() <= k) out.resize(k + 1);
    out[k] = (*v)[i];
  }
  *v = std::move(out);
}

void RemapSums(FunctionSums* v, const std::vector<uint32_t>& map) {
  v->Unpack();  // rows as stored
  FunctionSums out;
  for (size_t i = 0; i < v->size(); ++i) out.Mutable(map[i]) = (*v)[i];
  *v = std::move(out);
}

namespace {

// Files of one job list their functions in the same order, so most maps are the identity:
// rebuilding every slot's vectors anyway was gigabytes of allocation at thousands of ranks.
bool IsIdentity(const std::vector<uint32_t>& map) {
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] != i) return false;
  }
  return true;
}

}  // namespace

void RankData::Remap(const std::vector<uint32_t>& fn_map, const std::vector<uint32_t>& coll_map) {
  const bool same_functions = IsIdentity(fn_map), same_collectives = IsIdentity(coll_map);
  const bool packed = !slots.empty() && slots.front().functions.packed();
  for (Slot& s : slots) {
    if (!same_functions) {
      RemapSums(&s.functions, fn_map);
      std::map<uint32_t, double> side;
      for (const auto& [fn, ns] : s.side_cpu_ns) side[fn_map[fn]] += ns;
      s.side_cpu_ns = std::move(side);
    }
    if (!same_collectives) RemapVector(&s.collectives, coll_map);
  }
  if (!same_functions && packed) PackSums();
}

void RankData::PackSums() {
  std::vector<FunctionSums*> sums;
  for (Slot& s : slots) sums.push_back(&s.functions);
  // Ranks of one job mostly keep the same fields: consecutive ranks read on a thread share one.
  thread_local std::shared_ptr<const SumLayout> last;
  FunctionSums::PackRank(sums, &last);
}

void Slot::Merge(const Slot& other) {
  iter_begin = std::min(iter_begin, other.iter_begin);
  iter_end = std::max(iter_end, other.iter_end);
  windows += other.windows;
  detailed_windows += other.detailed_windows;
  critical_windows += other.critical_windows;
  device_windows += other.device_windows;
  sched_windows += other.sched_windows;
  run_delay_ns += other.run_delay_ns;
  thread_cpu_ns += other.thread_cpu_ns;
  for (const auto& [fn, ns] : other.side_cpu_ns) side_cpu_ns[fn] += ns;
  iterations += other.iterations;
  iteration_ns += other.iteration_ns;
  iteration_hist.Merge(other.iteration_hist);
  functions.Merge(other.functions);
  MergeCollectives(&collectives, other.collectives);
}

uint64_t RankData::StartupBegin() const {
  uint64_t first = UINT64_MAX;
  size_t with_iterations = 0;
  for (const Slot& s : slots) {
    if (s.iterations > 0) first = std::min(first, s.iter_begin), ++with_iterations;
  }
  return with_iterations > 1 ? first : UINT64_MAX;
}

std::vector<const Slot*> RankData::SteadySlots() const {
  const uint64_t startup = StartupBegin();
  std::vector<const Slot*> out;
  for (const Slot& s : slots) {
    if (s.iterations > 0 && s.iter_begin != startup) out.push_back(&s);
  }
  return out;
}

format::Histogram RankData::SteadyIterationHist() const {
  format::Histogram steady;
  for (const Slot* s : SteadySlots()) steady.Merge(s->iteration_hist);
  return steady.empty() ? iteration_hist : steady;
}

const Slot* RankData::FindSlot(uint64_t key) const {
  const auto it = std::lower_bound(slots.begin(), slots.end(), key,
                                   [](const Slot& s, uint64_t k) { return s.key < k; });
  return it != slots.end() && it->key == key ? &*it : nullptr;
}

void RankData::AddSignals(const format::Window& w) {
  if (w.signals.empty()) return;
  const auto window_ns = static_cast<double>(format::WindowLengthNs(w));
  for (const format::Signal& s : w.signals) {
    auto it = std::find_if(signals.begin(), signals.end(), [&](const SignalTotal& t) {
      return t.kind == s.kind && t.name == s.name && t.device == s.device;
    });
    if (it == signals.end()) {
      it = signals.insert(signals.end(), SignalTotal{s.name, s.device, s.kind, 0, s.min, s.max});
    }
    it->min = it->samples == 0 ? s.min : std::min(it->min, s.min);
    it->max = it->samples == 0 ? s.max : std::max(it->max, s.max);
    it->samples += s.samples;
    it->sum += s.sum;
    it->bits |= s.bits;
    it->window_ns += window_ns;
  }
}

}  // namespace perftracker::analyzer
