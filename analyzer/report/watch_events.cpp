#include "analyzer/report/watch_events.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace perftracker::analyzer {
namespace {

std::string Ranks(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks) {  // appended: GCC bug 105329 (false -Wrestrict at -O3) otherwise
    if (!s.empty()) s += ',';
    s += std::to_string(r);
  }
  return s.empty() ? "-" : s;
}

bool ScoreMoved(double before, double after) {
  if (before <= 0 || after <= 0) return before != after;
  return after / before >= kScoreChangeFactor || before / after >= kScoreChangeFactor;
}

// A hang is one collective instance on one communicator; the same one seen again is not news.
bool SameHang(const WatchHang& a, const WatchHang& b) {
  return a.comm_id == b.comm_id && a.sequence == b.sequence && a.collective == b.collective;
}

WatchEvent CandidateEvent(WatchEventType type, const WatchCandidate& c) {
  WatchEvent e;
  e.type = type;
  e.candidate = c;
  return e;
}

WatchEvent HangEvent(WatchEventType type, const WatchHang& h) {
  WatchEvent e;
  e.type = type;
  e.hang = h;
  return e;
}

using Pairing = std::function<bool(const WatchCandidate&, const WatchCandidate&)>;

const Pairing kPairings[] = {
    [](const WatchCandidate& a, const WatchCandidate& b) {
      return a.rank_set == b.rank_set && a.category == b.category && a.function == b.function;
    },
    [](const WatchCandidate& a, const WatchCandidate& b) {
      return a.function == b.function && a.rank_set == b.rank_set;
    },
    [](const WatchCandidate& a, const WatchCandidate& b) {
      return a.function == b.function && a.category == b.category;
    },
    [](const WatchCandidate& a, const WatchCandidate& b) {
      return a.rank_set == b.rank_set && a.category == b.category;
    },
};

std::string WhatChanged(const WatchCandidate& before, const WatchCandidate& after) {
  std::string what;
  auto add = [&](const char* field) { (what += what.empty() ? "" : ",") += field; };
  if (before.rank_set != after.rank_set) add("rank_set");
  if (before.category != after.category) add("category");
  if (before.function != after.function) add("function");
  if (ScoreMoved(before.score, after.score)) add("score");
  return what;
}

void DiffCandidates(const WatchState& reported, const WatchState& now,
                    std::vector<WatchEvent>* events, WatchState* next) {
  const size_t n_old = reported.candidates.size(), n_new = now.candidates.size();
  std::vector<int> partner(n_new, -1);  // new index -> old index
  std::vector<bool> old_taken(n_old, false);
  for (const Pairing& alike : kPairings) {
    for (size_t i = 0; i < n_new; ++i) {
      for (size_t j = 0; j < n_old && partner[i] < 0; ++j) {
        if (!old_taken[j] && alike(now.candidates[i], reported.candidates[j])) {
          partner[i] = static_cast<int>(j), old_taken[j] = true;
        }
      }
    }
  }
  for (size_t i = 0; i < n_new; ++i) {
    WatchCandidate kept = now.candidates[i];
    if (partner[i] < 0) {
      events->push_back(CandidateEvent(WatchEventType::kCandidateAppeared, kept));
    } else {
      const WatchCandidate& before = reported.candidates[static_cast<size_t>(partner[i])];
      const std::string what = WhatChanged(before, kept);
      if (!what.empty()) {
        WatchEvent e = CandidateEvent(WatchEventType::kCandidateChanged, kept);
        e.previous = before;
        e.what_changed = what;
        events->push_back(std::move(e));
      } else {
        kept.score = before.score;
      }
    }
    next->candidates.push_back(kept);
  }
  for (size_t j = 0; j < n_old; ++j) {
    if (!old_taken[j]) {
      events->push_back(
          CandidateEvent(WatchEventType::kCandidateCleared, reported.candidates[j]));
    }
  }
}

void DiffHangs(const WatchState& reported, const WatchState& now, std::vector<WatchEvent>* events,
               WatchState* next) {
  for (const WatchHang& h : now.hangs) {
    const bool known = std::any_of(reported.hangs.begin(), reported.hangs.end(),
                                   [&](const WatchHang& o) { return SameHang(o, h); });
    if (!known) events->push_back(HangEvent(WatchEventType::kHang, h));
    next->hangs.push_back(h);
  }
  for (const WatchHang& h : reported.hangs) {
    const bool still = std::any_of(now.hangs.begin(), now.hangs.end(),
                                   [&](const WatchHang& o) { return SameHang(o, h); });
    if (!still) events->push_back(HangEvent(WatchEventType::kHangCleared, h));
  }
}

}  // namespace

WatchState Summarize(const Report& report, size_t top) {
  WatchState s;
  for (const Candidate& c : report.candidates) {
    if (c.category == "hang") continue;  // said by the hang event, with who never arrived
    if (s.candidates.size() >= top) break;
    s.candidates.push_back({c.rank_set, c.category, c.function, c.score});
  }
  for (const Hang& h : report.hangs) {
    s.hangs.push_back({h.collective, h.comm_id, h.sequence, h.communication, h.ranks_missing,
                       h.ranks_arrived, h.stuck_s});
  }
  return s;
}

std::vector<WatchEvent> DiffWatchStates(const WatchState& reported, const WatchState& now,
                                        WatchState* next) {
  std::vector<WatchEvent> events;
  *next = {};
  DiffCandidates(reported, now, &events, next);
  DiffHangs(reported, now, &events, next);
  return events;
}

const char* EventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kCandidateAppeared:
      return "candidate_appeared";
    case WatchEventType::kCandidateChanged:
      return "candidate_changed";
    case WatchEventType::kCandidateCleared:
      return "candidate_cleared";
    case WatchEventType::kHang:
      return "hang";
    case WatchEventType::kHangCleared:
      return "hang_cleared";
  }
  return "unknown";
}

namespace {

std::string Describe(const WatchCandidate& c) {
  char score[32];
  std::snprintf(score, sizeof score, "%.3f", c.score);
  return c.category + " on rank " + Ranks(c.rank_set) + " in " + c.function + " (score " +
         score + ")";
}

std::string DescribeHang(const WatchHang& h) {
  char stuck[32];
  std::snprintf(stuck, sizeof stuck, "%.0f s", h.stuck_s);
  std::string s = h.collective + (h.communication ? " (communication hang: all arrived, none done)"
                                                  : "") + ", stuck " + stuck;
  if (!h.ranks_missing.empty()) s += ", never arrived: rank " + Ranks(h.ranks_missing);
  return s;
}

Json WatchCandidateJson(const WatchCandidate& c) {
  return {{"rank_set", c.rank_set},
          {"category", c.category},
          {"function", c.function},
          {"score", c.score}};
}

}  // namespace

std::string EventText(const WatchEvent& e, const std::string& timestamp) {
  std::string line = timestamp + " ";
  switch (e.type) {
    case WatchEventType::kCandidateAppeared:
      return line + "candidate appeared: " + Describe(e.candidate);
    case WatchEventType::kCandidateChanged:
      return line + "candidate changed (" + e.what_changed + "): " + Describe(e.previous) +
             " -> " + Describe(e.candidate);
    case WatchEventType::kCandidateCleared:
      return line + "candidate cleared: " + Describe(e.candidate);
    case WatchEventType::kHang:
      return line + "HANG: " + DescribeHang(e.hang);
    case WatchEventType::kHangCleared:
      return line + "hang cleared: " + e.hang.collective;
  }
  return line;
}

Json EventJson(const WatchEvent& e, const std::string& timestamp) {
  Json j = {{"type", EventTypeName(e.type)}, {"time", timestamp}};
  switch (e.type) {
    case WatchEventType::kCandidateChanged:
      j["changed"] = e.what_changed;
      j["previous"] = WatchCandidateJson(e.previous);
      [[fallthrough]];
    case WatchEventType::kCandidateAppeared:
    case WatchEventType::kCandidateCleared:
      j.update(WatchCandidateJson(e.candidate));
      break;
    case WatchEventType::kHang:
    case WatchEventType::kHangCleared:
      j["collective"] = e.hang.collective;
      j["communication"] = e.hang.communication;
      j["ranks_missing"] = e.hang.ranks_missing;
      j["ranks_arrived"] = e.hang.ranks_arrived;
      j["stuck_s"] = e.hang.stuck_s;
      break;
  }
  return j;
}

}  // namespace perftracker::analyzer
