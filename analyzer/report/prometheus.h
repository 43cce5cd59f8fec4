// Prometheus text exposition format (version 0.0.4) for `perftracker watch --prometheus FILE`,
// written for node-exporter's textfile collector: the whole file replaced at once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/report/watch_events.h"

namespace perftracker::analyzer {

// A label value as the format wants it: backslash, double quote and line feed escaped, and bytes
// that are not UTF-8 (names from input files may hold any) replaced by U+FFFD.
std::string PrometheusLabelValue(std::string_view value);
// A HELP docstring: backslash and line feed escaped.
std::string PrometheusHelp(std::string_view help);
// A sample value: shortest round-trip decimal, NaN, +Inf, -Inf.
std::string PrometheusValue(double value);

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

// Metric families in the order declared, each HELP and TYPE before its samples. A second sample
// with the same labels in a family replaces the first: the format forbids duplicate series.
class PrometheusText {
 public:
  // `name` must match [a-zA-Z_:][a-zA-Z0-9_:]*; `type` is gauge, counter, untyped, ...
  void Family(const std::string& name, const std::string& type, const std::string& help);
  void Sample(const std::string& name, const PrometheusLabels& labels, double value);
  std::string str() const;

 private:
  struct FamilyData {
    std::string name, type, help;
    std::map<std::string, double> samples;  // rendered label set -> value
  };
  std::vector<FamilyData> families_;
};

struct WatchRankStep {
  int rank = 0;
  std::string host;
  double step_s = 0;
};

// The metrics of one watch round: step time per rank, the top candidates' scores, hang state.
std::string WatchMetrics(const std::string& job, const std::vector<WatchRankStep>& steps,
                         const WatchState& state, double round_unix_s);

}  // namespace perftracker::analyzer
