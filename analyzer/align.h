// Stage 2: alignment by iteration number. Every window lands in the slot of its first iteration
// (iter_begin >> shift); a rank whose slots exceed kMaxSlots doubles the slot width, and before
// analysis all ranks are brought to the same width so slot k means the same iterations on every
// rank. Windows end on iteration numbers every rank agrees on, so no clocks are compared.
#pragma once

#include <vector>

#include "analyzer/model.h"

namespace perftracker::analyzer {

// Folds one decoded window into a rank's slots. The index vectors are scratch space.
void FoldWindow(const format::Window& window, Catalog* catalog, RankData* rank,
                std::vector<uint32_t>* fn_index, std::vector<uint32_t>* coll_index);

// Brings every rank to the widest slot width and fills dataset->slot_keys.
void Align(Dataset* dataset);

}  // namespace perftracker::analyzer
