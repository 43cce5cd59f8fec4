// Any bytes as a reduced file: DecodeReduced must reject or read them without a crash, a leak or
// UB, and what it accepts must survive alignment (slot keys, shifts, sums) like a ring's ranks.
// An input whose first byte is even is a whole file (the header's checks); an odd one is a
// NodeSummary FlatBuffer, framed here with valid CRCs, so mutations reach the verifier and the
// per-rank checks behind them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "analyzer/ingest/align.h"
#include "analyzer/ingest/reduced.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perftracker::analyzer;
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  const std::vector<uint8_t> framed =
      data[0] % 2 == 1 ? FrameReduced(rest) : std::vector<uint8_t>();
  FileSet set;
  std::string error;
  if (DecodeReduced(data[0] % 2 == 1 ? std::span<const uint8_t>(framed) : rest, &set, &error) !=
      ReducedStatus::kOk) {
    return 0;
  }
  Dataset ds;
  std::vector<uint32_t> fn_map, coll_map;
  ds.catalog.Merge(set.catalog, &fn_map, &coll_map);
  ds.ranks = std::move(set.ranks);
  Align(&ds);
  return 0;
}
