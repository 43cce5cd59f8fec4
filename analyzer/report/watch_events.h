// What `perftracker watch` says between two rounds: the candidates and hangs of the newest
// windows, compared with what it last reported. Pure functions of two snapshots, so the diffing
// is tested without files or clocks.
#pragma once

#include <string>
#include <vector>

#include "analyzer/base/json_window.h"
#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

struct WatchCandidate {
  std::vector<int> rank_set;
  std::string category;
  std::string function;
  double score = 0;
};

struct WatchHang {
  std::string collective;
  uint64_t comm_id = 0;
  uint64_t sequence = 0;
  bool communication = false;
  std::vector<int> ranks_missing;  // never arrived
  std::vector<int> ranks_arrived;
  double stuck_s = 0;
};

struct WatchState {
  std::vector<WatchCandidate> candidates;  // best first
  std::vector<WatchHang> hangs;
};

enum class WatchEventType { kCandidateAppeared, kCandidateChanged, kCandidateCleared, kHang,
                            kHangCleared };

struct WatchEvent {
  WatchEventType type = WatchEventType::kCandidateAppeared;
  WatchCandidate candidate;  // now; for kCandidateCleared, the one that cleared
  WatchCandidate previous;   // kCandidateChanged: as last reported
  std::string what_changed;  // kCandidateChanged: "rank_set", "category", "function", "score"
  WatchHang hang;
};

// A score that moved by this factor either way is a change worth a line; smaller moves are the
// noise of re-analyzing a sliding set of windows.
inline constexpr double kScoreChangeFactor = 1.5;

// The top `top` candidates (hangs are events of their own, not candidates) and every hang.
WatchState Summarize(const Report& report, size_t top);

// Events from `reported` (what was last said) to `now`. Candidates are paired most alike first:
// all of rank set, category and function the same; then the same function with the same ranks
// or the same category; then the same ranks and category (a verdict lifted to another frame).
// What is left cleared or appeared. *next is what has now been reported: `now`, except that a
// paired candidate whose score moved less than kScoreChangeFactor keeps its reported score, so
// a slow drift is said once it adds up.
std::vector<WatchEvent> DiffWatchStates(const WatchState& reported, const WatchState& now,
                                        WatchState* next);

const char* EventTypeName(WatchEventType type);  // "candidate_appeared", ...
// One line for people, prefixed with `timestamp` (ISO 8601); no newline.
std::string EventText(const WatchEvent& e, const std::string& timestamp);
Json EventJson(const WatchEvent& e, const std::string& timestamp);

}  // namespace perftracker::analyzer
