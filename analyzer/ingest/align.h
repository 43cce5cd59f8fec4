// Stage 2: alignment by iteration number. Every window lands in the slot of its first iteration
// (iter_begin >> shift); a rank whose slots exceed kMaxSlots doubles the slot width, and before
// analysis all ranks are brought to the same width, and slots that one rank's longer window spans
// are merged on every rank, so slot k means the same iterations on every rank. Windows end on
// iteration numbers every rank computes alike, so no clocks are compared.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

// State of one file's FoldWindow calls: the catalog indices of the previous window's functions
// and collectives, reused while the tables repeat (window after window, they do), so the
// catalog is asked once per table, not once per window.
struct FoldScratch {
  std::vector<uint64_t> fn_ids;
  std::vector<uint32_t> fn_index;
  std::vector<std::tuple<uint64_t, format::CollectiveOp, int32_t, uint64_t, std::string>> colls;
  std::vector<uint32_t> coll_index;
  // Windows whose device was never idle (their iter_begin), and whether any window of the file
  // saw it idle: SettleTimeline decides from the whole file what those windows' zero means.
  std::vector<uint64_t> busy_windows;
  bool device_idled = false;
};

// Folds one decoded window into a rank's slots.
void FoldWindow(const format::Window& window, Catalog* catalog, RankData* rank,
                FoldScratch* scratch);

// Once a file's windows are folded: its windows with a device that never idled carry critical
// time where the collector built a device timeline (the file saw its device idle elsewhere).
void SettleTimeline(const FoldScratch& scratch, RankData* rank);

// Brings every rank to the widest slot width and fills dataset->slot_keys.
void Align(Dataset* dataset);

}  // namespace perftracker::analyzer
