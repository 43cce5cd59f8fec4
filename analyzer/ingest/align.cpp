#include "analyzer/ingest/align.h"

#include <algorithm>

#include "analyzer/base/parallel.h"

namespace perftracker::analyzer {
namespace {

// A host duration timed on n of a function's N calls and scaled to all N has the variance of
// N times the sample mean: N^2 s^2 / n, less the finite-population share n/N (nothing when every
// call was timed). s^2 comes from the duration histogram, which holds the timed calls only; one
// timed call says nothing about the spread, so it counts as a spread as large as its mean. A
// preempted call among few timed ones is scaled to many: this is what keeps it from reading as a
// slow rank (detect.cpp).
double SamplingVariance(const format::FunctionPattern& p) {
  // Ingest decodes the histogram straight into its moments; windows made in memory carry it.
  const format::HistogramMoments m = p.duration.empty() ? p.duration_moments : p.duration.Moments();
  const double n = m.count;
  const auto calls = static_cast<double>(p.count);
  if (n <= 0 || n >= calls) return 0;
  const double mean = m.sum / n;
  const double var =
      n >= 2 ? std::max(0.0, (m.sum_squares - n * mean * mean) / (n - 1)) : mean * mean;
  return calls * calls * var / n * (1 - n / calls);
}

// Kernels or copies recorded: the rank drives a device, whose idle time the window measured.
bool HasDeviceWork(const format::Window& w) {
  return w.device_idle_ns > 0 ||
         std::any_of(w.functions.begin(), w.functions.end(), [](const format::FunctionPattern& p) {
           return p.kind == format::FunctionKind::kKernel ||
                  p.kind == format::FunctionKind::kMemcpy;
         });
}

void AddFunctions(const format::Window& w, const std::vector<uint32_t>& index, Slot* slot) {
  for (size_t i = 0; i < w.functions.size(); ++i) {
    const format::FunctionPattern& p = w.functions[i];
    FunctionSum& s = slot->functions.Mutable(index[i]);
    s.self_ns += static_cast<float>(p.self_ns);
    s.critical_ns += static_cast<float>(p.critical_ns);
    s.wait_ns += static_cast<float>(p.wait_ns);
    s.total_ns += static_cast<float>(p.total_ns);
    s.device_ns += static_cast<float>(p.device_ns);
    s.device_samples += static_cast<float>(p.device_samples);
    s.count += static_cast<float>(p.count);
    s.bytes += static_cast<float>(p.bytes);
    s.sampling_var += static_cast<float>(SamplingVariance(p));
    if (p.thread_cpu_ns != 0) slot->side_cpu_ns[index[i]] += static_cast<double>(p.thread_cpu_ns);
  }
}

// Device time is measured on a sample of launches (1 in PERFTRACKER_SAMPLE_EVERY per call site),
// so a short slot often holds no sample of a function, or one: scaling that one to every call
// swings the estimate from zero to many times the truth from slot to slot, and ranks compared in
// the same slot disagree by chance. A slot's own samples are used when there are enough of them;
// otherwise those of the nearest slots (up to kReach on each side) that have enough together,
// else those of all the rank's slots (both: the median of those slots' means; the start-up
// slot's samples price only itself). Nearest first, because a fault may
// begin or end mid-run: a GPU that throttles from the middle on must not make the unsampled
// warm-up window look slow. Without any sample: the host time of the calls, less what they
// spent waiting for earlier work (a synchronous copy waits for the whole queue first).
//
// A call site of a copy or kernel pattern carries no samples of its own (they go to its
// API-level pattern, its parent) and would be priced by its host time, which for an asynchronous
// call that blocked (a pageable copy behind the queue) is no device time at all. Where the parent
// is priced in the same slot, the site costs at most that price per call: never more than what
// the device was measured to take for the same calls.
void EstimateDevice(RankData* rank, const std::vector<int32_t>& site_of) {
  constexpr double kEnoughSamples = 4;
  constexpr size_t kReach = 3;
  const size_t n = rank->slots.size();
  size_t fns = 0;
  for (const Slot& s : rank->slots) fns = std::max(fns, s.functions.size());
  // at(i, k): device ns and samples of function i in slots [0, k). One block, not a vector per
  // function: thousands of ranks times thousands of functions were millions of allocations.
  std::vector<std::pair<double, double>> prefix(fns * (n + 1));
  const auto at = [&](size_t i, size_t k) -> std::pair<double, double>& {
    return prefix[i * (n + 1) + k];
  };
  // The start-up slot's copies and kernels (weights moved to the device, first-touch
  // allocation, autotuning) are no measure of the steady state's: its samples price only itself.
  size_t startup = n;
  for (size_t k = 0; k < n; ++k) {
    const Slot& s = rank->slots[k];
    if (s.iterations > 0 && (startup == n || s.iter_begin < rank->slots[startup].iter_begin)) {
      startup = k;
    }
  }
  if (n < 2) startup = n;
  for (size_t k = 0; k < n; ++k) {
    const Slot& s = rank->slots[k];
    for (size_t i = 0; i < fns; ++i) {
      at(i, k + 1) = at(i, k);
      if (i < s.functions.size() && k != startup) {
        const FunctionSum f = s.functions[i];
        at(i, k + 1).first += f.device_ns;
        at(i, k + 1).second += f.device_samples;
      }
    }
  }
  // Borrowed samples are priced by the median of the lending slots' own means: one sample in a
  // slot can be far off (a copy timed across another process's time slice on a shared GPU, a
  // kernel behind a long queue), and a pooled mean lets it set the price of every neighbour.
  // The price's own variance per call (the lenders' spread over their number) widens the
  // differential's bar as a sampled host time's does: a price made of a few scattered samples
  // must not single out a rank by chance.
  // One lending slot shows no spread of means: its mean of k samples counts as one whose calls
  // spread as much as their mean (SamplingVariance's rule for a single timed call), mean^2 / k.
  // As mean^2 it priced every borrowed kernel of a job with one steady slot (2 s steps, 20 s
  // windows) at a variance of its whole time, and a GPU 1.5x slower on all its kernels was
  // found only kernel by kernel (the benchmark's sim_pp.2s gpu_slow: "all compute kernels" at
  // z 4.4 against 5).
  std::vector<double> means;
  const auto median_of_slots = [&](size_t i, size_t lo, size_t hi, double* var) {
    means.clear();
    double samples = 0;
    for (size_t j = lo; j < hi; ++j) {
      const Slot& o = rank->slots[j];
      if (j == startup || i >= o.functions.size()) continue;
      const FunctionSum g = o.functions[i];
      if (g.device_samples > 0) means.push_back(g.device_ns / g.device_samples);
      samples += g.device_samples;
    }
    if (means.empty()) return -1.0;
    double sum = 0, squares = 0;
    for (const double m : means) sum += m, squares += m * m;
    const auto count = static_cast<double>(means.size());
    const double mean = sum / count;
    *var = count > 1 ? std::max(0.0, squares - count * mean * mean) / (count - 1) / count
                     : mean * mean / std::max(1.0, samples);
    std::nth_element(means.begin(), means.begin() + means.size() / 2, means.end());
    return means[means.size() / 2];
  };
  std::vector<double> whole(fns, -2), whole_var(fns, 0);  // per function, the rank-wide price
  std::vector<double> price(fns);
  for (size_t k = 0; k < n; ++k) {
    Slot& s = rank->slots[k];
    std::fill(price.begin(), price.end(), -1.0);
    for (size_t i = 0; i < s.functions.size(); ++i) {
      const FunctionSum f = s.functions[i];
      double per_call = -1, var = 0;
      if (f.device_samples >= kEnoughSamples) per_call = f.device_ns / f.device_samples;
      for (size_t r = 1; r <= kReach && per_call < 0; ++r) {
        const size_t lo = k >= r ? k - r : 0, hi = std::min(n, k + r + 1);
        const double samples = at(i, hi).second - at(i, lo).second;
        if (samples >= kEnoughSamples) per_call = median_of_slots(i, lo, hi, &var);
      }
      if (per_call < 0 && at(i, n).second > 0) {
        if (whole[i] == -2) whole[i] = median_of_slots(i, 0, n, &whole_var[i]);
        per_call = whole[i], var = whole_var[i];
      }
      if (at(i, n).second > 0) s.functions.SetSamplingVar(i, static_cast<float>(var * f.count * f.count));
      if (per_call < 0 && k == startup && f.device_samples > 0) {
        per_call = f.device_ns / f.device_samples;
      }
      price[i] = per_call;
      s.functions.SetDeviceEst(i, per_call >= 0 ? static_cast<float>(per_call * f.count)
                                                : std::max(0.0f, f.self_ns - f.wait_ns));
    }
    for (size_t i = 0; i < s.functions.size() && i < site_of.size(); ++i) {
      const int32_t parent = site_of[i];
      if (parent < 0 || price[i] >= 0 || price[static_cast<size_t>(parent)] < 0) continue;
      const FunctionSum f = s.functions[i];
      const double priced = price[static_cast<size_t>(parent)] * f.count;
      if (priced < f.device_est_ns) s.functions.SetDeviceEst(i, static_cast<float>(priced));
    }
  }
}

// Per catalog function: for a call site of a kernel, copy or memset pattern, that pattern (its
// parent, of the same kind); else -1.
std::vector<int32_t> SitesOf(const Catalog& catalog) {
  const auto& fns = catalog.functions();
  std::vector<int32_t> out(fns.size(), -1);
  for (size_t i = 0; i < fns.size(); ++i) {
    const format::FunctionKind kind = fns[i].kind;
    if (kind != format::FunctionKind::kKernel && kind != format::FunctionKind::kMemcpy &&
        kind != format::FunctionKind::kMemset) {
      continue;
    }
    const int32_t p = fns[i].parent_id != 0 ? catalog.IndexOf(fns[i].parent_id) : -1;
    if (p >= 0 && fns[static_cast<size_t>(p)].kind == kind) out[i] = p;
  }
  return out;
}

void AddCollectives(const format::Window& w, const std::vector<uint32_t>& index, Slot* slot) {
  for (size_t i = 0; i < w.collectives.size(); ++i) {
    const format::CollectivePattern& c = w.collectives[i];
    const uint32_t k = index[i];
    if (slot->collectives.size() <= k) slot->collectives.resize(k + 1);
    CollectiveSum& s = slot->collectives[k];
    const auto calls = static_cast<float>(c.count);
    s.device_ns += static_cast<float>(c.device_ns);
    s.device_samples += static_cast<float>(c.device_samples);
    s.count += calls;
    if (!c.launch_offset.empty()) {
      const auto weight = static_cast<float>(c.launch_offset.Count());
      s.offset_weighted += static_cast<float>(c.launch_offset.Quantile(0.5)) * weight;
      s.offset_weight += weight;
    }
    if (!c.device.empty()) {
      s.device_median_weighted += static_cast<float>(c.device.Quantile(0.5)) * calls;
    }
  }
}

void InternTables(const format::Window& w, Catalog* catalog, FoldScratch* scratch) {
  const bool same_functions =
      w.functions.size() == scratch->fn_ids.size() &&
      std::equal(w.functions.begin(), w.functions.end(), scratch->fn_ids.begin(),
                 [](const format::FunctionPattern& p, uint64_t id) { return p.id == id; });
  if (!same_functions) {
    catalog->InternFunctions(w.functions, &scratch->fn_index);
    scratch->fn_ids.clear();
    for (const format::FunctionPattern& p : w.functions) scratch->fn_ids.push_back(p.id);
  }
  const auto key = [](const format::CollectivePattern& c) {
    return std::tie(c.comm_id, c.op, c.peer, c.bytes, c.name);
  };
  const bool same_collectives =
      w.collectives.size() == scratch->colls.size() &&
      std::equal(w.collectives.begin(), w.collectives.end(), scratch->colls.begin(),
                 [&](const format::CollectivePattern& c, const auto& k) { return key(c) == k; });
  if (!same_collectives) {
    catalog->InternCollectives(w.collectives, &scratch->coll_index);
    scratch->colls.clear();
    for (const format::CollectivePattern& c : w.collectives) scratch->colls.emplace_back(key(c));
  }
}

// Re-keys a rank's slots at a wider shift, merging slots that now share a key.
void Rekey(RankData* rank, int shift) {
  std::vector<Slot> merged;
  for (Slot& s : rank->slots) {
    const uint64_t key = s.iter_begin >> shift;
    if (!merged.empty() && merged.back().key == key) {
      merged.back().Merge(s);
    } else {
      s.key = key;
      merged.push_back(std::move(s));
    }
  }
  rank->slots = std::move(merged);
  rank->shift = shift;
}

// Windows differ in length: a rank may have sized its windows otherwise than its peers near a
// threshold, or ended one where a detailed period it decided alone began (window_schedule.h).
// Window lengths are a block times a power of two, so one rank's boundaries are mostly the other's,
// but a slot is compared across ranks only if it means the same iterations on each: a key is kept
// where no rank's slot spans across it, and the slots of keys that are not merge into the kept key
// before them. A rank without data at a key (a ring that wrapped, a late start) says
// nothing against it.
void CommonBoundaries(Dataset* dataset, std::vector<uint64_t>* keys) {
  // Where each key's slots begin: the first iteration any rank's slot of that key holds. A key
  // is a window start shifted right (kMaxSlots), so a slot may reach past the next key's value
  // in iterations without spanning the windows there; what counts is whether it covers where
  // they begin. Keys ascend, and so do their beginnings.
  std::vector<uint64_t> begins(keys->size(), UINT64_MAX);
  for (const RankData& r : dataset->ranks) {
    for (const Slot& s : r.slots) {
      const auto at = std::lower_bound(keys->begin(), keys->end(), s.key) - keys->begin();
      begins[static_cast<size_t>(at)] = std::min(begins[static_cast<size_t>(at)], s.iter_begin);
    }
  }
  std::vector<int64_t> spanned(keys->size() + 1, 0);
  for (const RankData& r : dataset->ranks) {
    for (const Slot& s : r.slots) {
      const auto lo = std::upper_bound(keys->begin(), keys->end(), s.key) - keys->begin();
      const auto hi = std::lower_bound(begins.begin(), begins.end(), s.iter_end) - begins.begin();
      if (hi <= lo) continue;
      ++spanned[static_cast<size_t>(lo)];
      --spanned[static_cast<size_t>(hi)];
    }
  }
  std::vector<uint64_t> kept;
  int64_t open = 0;
  for (size_t i = 0; i < keys->size(); ++i) {
    open += spanned[i];
    if (open == 0) kept.push_back((*keys)[i]);
  }
  if (kept.size() == keys->size()) return;
  for (RankData& r : dataset->ranks) {
    std::vector<Slot> merged;
    for (Slot& s : r.slots) {
      const auto at = std::upper_bound(kept.begin(), kept.end(), s.key);
      const uint64_t key = at == kept.begin() ? s.key : *(at - 1);
      if (!merged.empty() && merged.back().key == key) {
        merged.back().Merge(s);
      } else {
        s.key = key;
        merged.push_back(std::move(s));
      }
    }
    r.slots = std::move(merged);
  }
  *keys = std::move(kept);
}

Slot* SlotFor(RankData* rank, uint64_t iter_begin) {
  const uint64_t key = iter_begin >> rank->shift;
  auto it = std::lower_bound(rank->slots.begin(), rank->slots.end(), key,
                             [](const Slot& s, uint64_t k) { return s.key < k; });
  if (it == rank->slots.end() || it->key != key) {
    Slot fresh;
    fresh.key = key;
    fresh.iter_begin = iter_begin;
    fresh.iter_end = iter_begin;
    it = rank->slots.insert(it, std::move(fresh));
  }
  return &*it;
}

// Ranks decide the automatic switch to detailed mode on their own (mode_trigger.h): near the
// threshold one may record a window in detailed mode that another records in light mode, where
// cheap leaf functions fold into their callers. Compared as they are, the callers' self times
// differ by the leaves' time and the leaves exist on one side only. So in a slot where some ranks
// were light throughout, a Python function that no such rank recorded folds into its caller on
// the other ranks, as light mode would have folded it: the slot is compared in light mode's shape.
void HarmonizeModes(Dataset* dataset) {
  const std::vector<FunctionInfo>& catalog = dataset->catalog.functions();
  std::vector<int32_t> parent(catalog.size());
  for (size_t f = 0; f < catalog.size(); ++f) {
    parent[f] = catalog[f].parent_id != 0 ? dataset->catalog.IndexOf(catalog[f].parent_id) : -1;
  }
  std::vector<uint8_t> seen_light;
  for (uint64_t key : dataset->slot_keys) {
    std::vector<Slot*> light, detailed;
    for (RankData& r : dataset->ranks) {
      Slot* s = r.FindSlot(key);
      if (s != nullptr && s->windows > 0)
        (s->detailed_windows == 0 ? light : detailed).push_back(s);
    }
    if (light.empty() || detailed.empty()) continue;
    seen_light.assign(catalog.size(), 0);
    for (const Slot* s : light) {
      for (size_t f = 0; f < s->functions.size(); ++f) seen_light[f] |= s->functions[f].count > 0;
    }
    for (Slot* s : detailed) {
      // Callers are interned before their callees (a window lists callers first): from the
      // last index down, a folded callee's time has reached its caller before the caller folds.
      for (size_t f = s->functions.size(); f-- > 0;) {
        const FunctionSum fn = s->functions[f];
        const int32_t p = parent[f];
        if (fn.count == 0 || seen_light[f] || p < 0 || static_cast<size_t>(p) >= f ||
            catalog[f].kind != format::FunctionKind::kPython) {
          continue;
        }
        FunctionSum folded;
        folded.self_ns = fn.total_ns;
        folded.critical_ns = fn.critical_ns;
        folded.sampling_var = fn.sampling_var;
        s->functions.Add(static_cast<size_t>(p), folded);
        s->functions.Clear(f);
      }
    }
  }
}

}  // namespace

void FoldWindow(const format::Window& w, Catalog* catalog, RankData* rank, FoldScratch* scratch) {
  InternTables(w, catalog, scratch);
  const std::vector<uint32_t>* fn_index = &scratch->fn_index;
  const std::vector<uint32_t>* coll_index = &scratch->coll_index;
  // A helper marks no iterations: its slots are its first window (start-up: the interpreter,
  // a spawned worker's imports, the first batches) and the rest, so that its steady work can be
  // told from its start-up (verdict/workers.cpp).
  const uint64_t key_begin =
      rank->identity.helper_of != 0 ? static_cast<uint64_t>(w.window_seq > 0) : w.iter_begin;
  Slot* slot = SlotFor(rank, key_begin);
  slot->iter_begin = std::min(slot->iter_begin, w.iter_begin);
  slot->iter_end = std::max(slot->iter_end, std::max(w.iter_end, w.iter_begin));
  ++slot->windows;
  slot->detailed_windows += w.detailed;
  // On a rank that drives a device, critical time means something only where the collector
  // built the device's timeline. A library before 2026-11-27 fed it from the training thread's
  // launches alone (on a real GPU autograd launches backward from its own threads) and wrote no
  // idle time at all, start-up included; its host time is then no more critical than it is host
  // time. A window whose device never idled is settled once the file is read (SettleTimeline).
  const bool device = HasDeviceWork(w);
  const bool timeline = w.critical_path && (!device || w.device_idle_ns > 0);
  slot->critical_windows += timeline;
  slot->device_windows += timeline && device;
  if (w.critical_path && device) {
    if (w.device_idle_ns > 0) {
      scratch->device_idled = true;
    } else {
      scratch->busy_windows.push_back(w.iter_begin);
    }
  }
  if (w.thread_cpu_ns != 0 || w.run_delay_ns != 0) {
    ++slot->sched_windows;
    slot->run_delay_ns += static_cast<double>(w.run_delay_ns);
    slot->thread_cpu_ns += static_cast<double>(w.thread_cpu_ns);
  }
  // A window without iteration marks still covers iter_end - iter_begin iterations; in a job
  // whose iterations are never recognized, its duration is one. But once iterations have begun,
  // a window that made no progress covers none: inside a long iteration, the window where that
  // iteration ends has the same key and carries its whole duration; after the last one it is
  // the job's shutdown (final synchronization, barrier), which is no iteration at all.
  const bool stalled = w.iterations.count == 0 && w.iter_end == w.iter_begin && w.iter_begin > 0;
  const uint64_t covered = w.iter_end > w.iter_begin ? w.iter_end - w.iter_begin : !stalled;
  slot->iterations += static_cast<double>(w.iterations.count > 0 ? w.iterations.count : covered);
  if (w.iterations.count > 0) {
    slot->iteration_ns += static_cast<double>(w.iterations.total_ns);
  } else if (covered > 0) {
    slot->iteration_ns += static_cast<double>(format::WindowLengthNs(w));
  }
  AddFunctions(w, *fn_index, slot);
  AddCollectives(w, *coll_index, slot);
  rank->iteration_hist.Merge(w.iterations.duration);
  slot->iteration_hist.Merge(w.iterations.duration);
  rank->AddSignals(w);
  ++rank->windows;
  while (rank->slots.size() > kMaxSlots) Rekey(rank, rank->shift + 1);
}

// A device that idled somewhere in the file had its timeline built: a window where it never
// idled is one where it was busy throughout (a straggler's peers wait inside the collective's
// kernels all step long), and the host's time there was rightly not critical. Where it never
// idled anywhere, not even at start-up, the collector built no timeline.
void SettleTimeline(const FoldScratch& scratch, RankData* rank) {
  if (!scratch.device_idled) return;
  for (const uint64_t iter_begin : scratch.busy_windows) {
    if (Slot* s = rank->FindSlot(iter_begin >> rank->shift)) {
      ++s->critical_windows;
      ++s->device_windows;
    }
  }
}

void Align(Dataset* dataset) {
  int shift = 0;
  for (const RankData& r : dataset->ranks) shift = std::max(shift, r.shift);
  std::vector<uint64_t> keys;
  for (RankData& r : dataset->ranks) {
    if (r.shift != shift) Rekey(&r, shift);
    for (const Slot& s : r.slots) keys.push_back(s.key);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Ranks that ran much longer than the rest still fit the bound: merge the oldest keys.
  while (keys.size() > 4 * kMaxSlots) {
    ++shift;
    for (RankData& r : dataset->ranks) Rekey(&r, shift);
    for (uint64_t& k : keys) k >>= 1;
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
  dataset->shift = shift;
  CommonBoundaries(dataset, &keys);
  dataset->slot_keys = std::move(keys);
  HarmonizeModes(dataset);
  const std::vector<int32_t> site_of = SitesOf(dataset->catalog);
  ParallelFor(dataset->ranks.size(), dataset->threads,
              [&](size_t i, size_t) { EstimateDevice(&dataset->ranks[i], site_of); });
}

}  // namespace perftracker::analyzer
