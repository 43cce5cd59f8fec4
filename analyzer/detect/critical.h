// The critical-path detector's view of a Python function's subtree (critical.cpp), which the
// verdicts' beta (verdict/beta.cpp) measures the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

// Each catalog function's caller (catalog index), -1 at the root.
std::vector<int32_t> ParentIndex(const Catalog& catalog);
// `fn` and the Python functions beneath it through Python callers only: the functions whose
// critical time adds up into fn's.
std::vector<size_t> SubtreeOf(const Frame& f, const std::vector<int32_t>& parent, size_t fn);
// The critical ns of a subtree in one slot, the framework's frames included.
double SubtreeCriticalNs(const Slot& s, const std::vector<size_t>& subtree);

}  // namespace perftracker::analyzer
