#include "analyzer/report/prometheus.h"

#include <charconv>
#include <cmath>

#include "analyzer/base/utf8.h"

namespace perftracker::analyzer {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks) {  // appended: GCC bug 105329 (false -Wrestrict at -O3) otherwise
    if (!s.empty()) s += ',';
    s += std::to_string(r);
  }
  return s;
}

// Label values escape backslash, double quote and line feed; HELP text the first and last only.
std::string Escape(std::string_view value, bool quote) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const size_t n = Utf8Length(value, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(value.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string PrometheusLabelValue(std::string_view value) { return Escape(value, true); }

std::string PrometheusHelp(std::string_view help) { return Escape(help, false); }

std::string PrometheusValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

void PrometheusText::Family(const std::string& name, const std::string& type,
                            const std::string& help) {
  if (!ValidName(name)) return;
  families_.push_back({name, type, help, {}});
}

void PrometheusText::Sample(const std::string& name, const PrometheusLabels& labels, double value) {
  for (FamilyData& f : families_) {
    if (f.name != name) continue;
    std::string rendered;
    for (const auto& [label, v] : labels) {
      rendered += (rendered.empty() ? "" : ",") + label + "=\"" + PrometheusLabelValue(v) + "\"";
    }
    f.samples[rendered] = value;
    return;
  }
}

std::string PrometheusText::str() const {
  std::string out;
  for (const FamilyData& f : families_) {
    out += "# HELP " + f.name + " " + PrometheusHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const auto& [labels, value] : f.samples) {
      out +=
          f.name + (labels.empty() ? "" : "{" + labels + "}") + " " + PrometheusValue(value) + "\n";
    }
  }
  return out;
}

std::string WatchMetrics(const std::string& job, const std::vector<WatchRankStep>& steps,
                         const WatchState& state, double round_unix_s) {
  PrometheusText t;
  t.Family("perftracker_step_seconds", "gauge",
           "Mean training step time of each rank over the newest windows watch analyzed.");
  for (const WatchRankStep& s : steps) {
    t.Sample("perftracker_step_seconds",
             {{"job", job}, {"rank", std::to_string(s.rank)}, {"host", s.host}}, s.step_s);
  }
  t.Family("perftracker_candidate_score", "gauge",
           "Score of a current root-cause candidate: share of the step it costs x persistence.");
  for (const WatchCandidate& c : state.candidates) {
    t.Sample("perftracker_candidate_score",
             {{"job", job},
              {"rank_set", RankList(c.rank_set)},
              {"category", c.category},
              {"function", c.function}},
             c.score);
  }
  t.Family("perftracker_hang", "gauge", "1 while a collective is hung, else 0.");
  t.Sample("perftracker_hang", {{"job", job}}, state.hangs.empty() ? 0 : 1);
  t.Family("perftracker_hang_missing_ranks", "gauge",
           "Ranks that never arrived at a hung collective (0 without a hang).");
  size_t missing = 0;
  for (const WatchHang& h : state.hangs) missing += h.ranks_missing.size();
  t.Sample("perftracker_hang_missing_ranks", {{"job", job}}, static_cast<double>(missing));
  t.Family("perftracker_watch_last_round_timestamp_seconds", "gauge",
           "Unix time of the watch round that wrote this file.");
  t.Sample("perftracker_watch_last_round_timestamp_seconds", {{"job", job}}, round_unix_s);
  return t.str();
}

}  // namespace perftracker::analyzer
