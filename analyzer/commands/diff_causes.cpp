#include "analyzer/commands/diff_causes.h"
#include "analyzer/base/format_text.h"

#include <algorithm>
#include <cstdio>

#include "analyzer/detect/peers.h"

namespace perftracker::analyzer {
namespace {

bool SameCandidate(const Candidate& a, const Candidate& b) {
  return a.category == b.category && a.rank_set == b.rank_set && a.function == b.function &&
         a.kind == b.kind;
}

double Growth(const Cause& c) { return c.current.score - c.base_score; }

}  // namespace

std::vector<Cause> NewOrGrownCauses(const std::vector<Candidate>& base_all,
                                    const std::vector<Candidate>& current, double threshold_pct,
                                    double min_score) {
  std::vector<Cause> causes;
  for (const Candidate& c : current) {
    Cause cause{c, true, 0, 0};
    // Several candidates can share a key (a function found by two detectors): the largest.
    for (const Candidate& b : base_all) {
      if (!SameCandidate(b, c) || (!cause.is_new && b.score <= cause.base_score)) continue;
      cause.is_new = false;
      cause.base_score = b.score;
      cause.base_impact_s_per_iter = b.impact_s_per_iter;
    }
    const double growth = Growth(cause);
    if (cause.is_new || (growth >= min_score && growth > threshold_pct / 100 * cause.base_score)) {
      causes.push_back(std::move(cause));
    }
  }
  std::stable_sort(causes.begin(), causes.end(),
                   [](const Cause& a, const Cause& b) { return Growth(a) > Growth(b); });
  return causes;
}

Json CausesJson(const std::vector<Cause>& causes) {
  Json out = Json::array();
  for (const Cause& c : causes) {
    Json j = {{"change", c.is_new ? "new" : "grew"},
              {"category", c.current.category},
              {"kind", c.current.kind},
              {"function", c.current.function},
              {"rank_set", c.current.rank_set},
              {"score", c.current.score},
              {"impact_s_per_iter", c.current.impact_s_per_iter}};
    if (!c.is_new) {
      j["base_score"] = c.base_score;
      j["base_impact_s_per_iter"] = c.base_impact_s_per_iter;
    }
    j["evidence"] = c.current.evidence;
    out.push_back(std::move(j));
  }
  return out;
}

void PrintCauses(const std::vector<Cause>& causes, std::ostream& out) {
  if (causes.empty()) return;
  out << causes.size() << " cause" << (causes.size() == 1 ? "" : "s")
      << " new or grown in current (the cross-rank analysis of each run):\n";
  for (size_t i = 0; i < causes.size() && i < 10; ++i) {
    const Cause& c = causes[i];
    char score[64];
    if (c.is_new) {
      std::snprintf(score, sizeof score, "new   score %.3f", c.current.score);
    } else {
      std::snprintf(score, sizeof score, "grew  score %.3f -> %.3f", c.base_score, c.current.score);
    }
    std::string name = c.current.function.substr(0, 60);
    for (char& ch : name) ch = static_cast<unsigned char>(ch) < 0x20 ? '?' : ch;
    out << "  " << score << "  " << c.current.category << " on rank"
        << (c.current.rank_set.size() == 1 ? " " : "s ") << RankListLabel(c.current.rank_set)
        << ": " << name << " (" << FormatSeconds(c.current.impact_s_per_iter) << "/iter)\n";
  }
}

}  // namespace perftracker::analyzer
