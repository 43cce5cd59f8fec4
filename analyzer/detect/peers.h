// Stage 3: peer groups. Ranks are peers when they play the same role: the same collectives (op,
// size, communicator size) on shared communicators, and nearly the same functions. Pipeline
// stages differ by design (different communicators, layer counts, first/last-stage functions)
// and land in different groups, so they are never compared with each other.
#pragma once

#include <string>
#include <vector>

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

struct PeerGroup {
  std::vector<size_t> members;  // indices into Dataset::ranks, ascending rank
  std::string label;            // "ranks 0-7", "ranks 0,2,4"
};

// Function-set similarity (Jaccard) below which two ranks are not peers.
inline constexpr double kMinPeerSimilarity = 0.8;

std::vector<PeerGroup> GroupPeers(const Dataset& ds);

// "0-3,6,8-9"
std::string RankListLabel(const std::vector<int>& ranks);

}  // namespace perftracker::analyzer
