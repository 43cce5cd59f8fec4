// Evidence in sentences. The JSON report's fields (report_json.cpp, the README's "What a verdict
// says") are the contract; this file only words them, and says nothing it cannot read there.
#include "analyzer/report/html_evidence.h"
#include "analyzer/base/format_text.h"
#include "analyzer/report/report.h"

#include <algorithm>
#include <cstdio>

namespace perftracker::analyzer {
namespace {

std::string Code(const std::string& s) { return "<code>" + HtmlEscape(s) + "</code>"; }

std::string RanksPhrase(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + HtmlEscape(RankListLabel(ranks));
}

// How far from normal, in the words of the detector that measured it (detect.h: z for the
// comparisons with peers, a share above the range or a growth otherwise).
std::string HowFar(const Json& e) {
  const std::string source = e.value("source", std::string());
  const double d = e.value("deviation", 0.0);
  if (source == "differential" || source == "arrival_order" || source == "link_matrix") {
    return FormatNumber("%.1f robust standard deviations from its peers", d);
  }
  if (source == "expected_range") return FormatNumber("%.0f%% above its expected range", 100 * d);
  if (source == "temporal")
    return FormatNumber("grown by %.0f%% since the start of the run", 100 * d);
  return FormatNumber("deviation %.3g", d);
}

// The share of its node's CPUs the work beside the loops held (evidence.workers, .threads), and
// what the loops waited for one.
std::string NodeCpusClause(const Json& d) {
  return FormatNumber("%.0f%% of the node's ", 100 * d.value("node_cpus_held", 0.0)) +
         FormatNumber("%.0f CPUs, while its training loops waited ", d.value("node_cpus", 0.0)) +
         FormatSeconds(d.value("loops_run_queue_s_per_iter", 0.0)) + " a step for one";
}

std::string MeasuredSentence(const Candidate& c) {
  const Json& e = c.evidence;
  const std::string unit = e.value("unit", "s/iter");
  const std::string where = "On " + RanksPhrase(c.rank_set) + ", ";
  if (unit == "GB/s") {
    return where + Code(c.function) +
           FormatNumber(" moves data at %.3g GB/s of bus bandwidth", e.value("value", 0.0)) +
           FormatNumber(", %.0f%% of the link's ", 100 * e.value("fraction_of_peak", 0.0)) +
           FormatNumber("%.3g GB/s peak", e.value("link_peak_gbps", 0.0)) +
           FormatNumber(" (expected at least %.0f%%). ",
                        100 * e.value("expected_min_fraction", 0.0));
  }
  if (unit == "ns/byte") {
    std::string s = where + "the " + HtmlEscape(c.function) +
                    FormatNumber(" takes %.3g ns per byte", e.value("value", 0.0)) +
                    FormatNumber(" against %.3g on healthy links", e.value("peer_median", 0.0));
    if (e.contains("throughput_gbps")) {
      s += FormatNumber(" (%.3g GB/s", e.value("throughput_gbps", 0.0)) +
           FormatNumber(" against %.3g GB/s)", e.value("peers_throughput_gbps", 0.0));
    }
    return s + ", " + HowFar(e) + ". ";
  }
  if (unit == "cores" && e.contains("threads")) {
    const Json& t = e["threads"];
    std::string s = where + "a thread beside the training loop ran " + Code(c.function) +
                    FormatNumber(" on %.2f cores", e.value("value", 0.0)) +
                    FormatNumber(" against %.2f on its peers", e.value("peer_median", 0.0)) +
                    ", " + NodeCpusClause(t);
    if (t.value("loop_off_cpu_excess_s_per_iter", 0.0) > 0) {
      s += "; its loop waited " + FormatSeconds(t.value("loop_off_cpu_excess_s_per_iter", 0.0)) +
           " a step more than its peers' off a CPU (the GIL)";
    }
    return s + ". ";
  }
  if (unit == "cores") {
    const Json& w = e.value("workers", Json::object());
    return where + "the loader workers ran " + Code(c.function) +
           FormatNumber(" on %.2f cores", e.value("value", 0.0)) +
           FormatNumber(" against %.2f on their peers", e.value("peer_median", 0.0)) + ", " +
           NodeCpusClause(w) + ". ";
  }
  if (c.category == "hang") {
    return Code(c.function) + " has been in flight for " + FormatSeconds(e.value("value", 0.0)) +
           FormatNumber(", %.0f times the median step: see the hang above. ",
                        e.value("deviation", 0.0));
  }
  std::string s = where + Code(c.function) + " (" + HtmlEscape(c.kind) + ") takes " +
                  FormatSeconds(e.value("value", 0.0)) + " per iteration against " +
                  FormatSeconds(e.value("peer_median", 0.0)) + " on its peers, " + HowFar(e);
  const std::string by = e.value("decided_by", std::string());
  if (!by.empty()) s += " (measured by " + HtmlEscape(by) + ")";
  return s + ". ";
}

std::string Spans(const Json& list) {
  std::string text;
  for (const Json& x : list) {
    if (!x.is_array() || x.size() != 2) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(x[0].get<uint64_t>()) + "&ndash;" +
            std::to_string(x[1].get<uint64_t>());
  }
  return text;
}

std::string WhenSentence(const Json& e) {
  const int seen = e.value("windows_seen", 0), total = e.value("windows_total", 0);
  std::string s;
  if (total > 0) {
    s = "Seen in " + std::to_string(seen) + " of " + std::to_string(total) + " windows";
    if (e.contains("iterations") && seen < total)
      s += " (iterations " + Spans(e["iterations"]) + ")";
    s += ". ";
  }
  if (e.contains("iterations_by_rank")) {
    s += "It moved between ranks:";
    for (const Json& r : e["iterations_by_rank"]) {
      s += " rank " + std::to_string(r.value("rank", -1)) + " in iterations " +
           Spans(r["iterations"]) + ";";
    }
    s.back() = '.';
    s += ' ';
  }
  return s;
}

std::string CulpritSentences(const Json& e) {
  std::string s;
  if (e.contains("arrival")) {
    const Json& a = e["arrival"];
    const double wait = a.value("peers_wait_s_per_iter", 0.0);
    s += FormatNumber("It arrives last at %.0f%% of the collectives, ",
                      100 * a.value("last_to_arrive_share", 0.0)) +
         FormatSeconds(a.value("delay_s", 0.0)) + " behind the median, and " +
         (wait >= 0 ? "its peers' collectives run " + FormatSeconds(wait) +
                          " longer per iteration waiting for it. "
                    : "its own collectives run " + FormatSeconds(-wait) +
                          " longer than its peers' per iteration (its host is slow at them "
                          "too). ");
  }
  if (e.contains("peers_wait_in")) {
    const Json& w = e["peers_wait_in"];
    const double peers = w.value("peers_s_per_iter", 0.0);
    const double rank = w.value("rank_s_per_iter", 0.0);
    s += "Its peers wait " + FormatSeconds(peers - rank) + " longer per iteration in " +
         Code(w.value("function", std::string())) + " (" + FormatSeconds(peers) + " against " +
         FormatSeconds(rank) + " on its ranks): they wait for it there. ";
  }
  if (e.contains("likely_victim_of")) {
    const Json& v = e["likely_victim_of"];
    s += "Probably a victim, not a cause: it waits for " +
         (v.is_string()
              ? Code(v.get<std::string>())
              : RanksPhrase(v.is_array() ? v.get<std::vector<int>>() : std::vector<int>{})) +
         ". ";
  }
  if (e.contains("victims")) {
    for (const Json& v : e["victims"]) {
      s += RanksPhrase(v.value("ranks", std::vector<int>())) + " wait " +
           FormatSeconds(v.value("wait_s_per_iter", 0.0)) + " per iteration for it in " +
           Code(v.value("function", std::string())) + ". ";
    }
  }
  if (e.contains("run_queue")) {
    const Json& q = e["run_queue"];
    s += "Its training loop waited for a CPU " + FormatSeconds(q.value("rank_s_per_iter", 0.0)) +
         " per iteration against " + FormatSeconds(q.value("peers_s_per_iter", 0.0)) +
         " on its peers. ";
  }
  if (e.contains("host_critical_path")) {
    s += "Of its host time, " +
         FormatSeconds(e["host_critical_path"].value("reached_s_per_iter", 0.0)) +
         (ChargeMeasured(e) ? " per iteration cost the job. "
                            : " per iteration reached the critical path. ");
  }
  if (e.contains("beta")) {
    s += FormatNumber("Its share of the critical path (beta) is %.3f", e.value("beta", 0.0));
    if (e.contains("peer_beta"))
      s += FormatNumber(" against %.3f on its peers", e.value("peer_beta", 0.0));
    if (e.contains("expected_max_beta"))
      s += FormatNumber(" (expected at most %.2f)", e.value("expected_max_beta", 0.0));
    s += ". ";
  }
  return s;
}

std::string WhatIfSentence(const Candidate& c) {
  if (!c.evidence.contains("what_if")) return "";
  const Json& w = c.evidence["what_if"];
  return "<b>Without it the job would be about " +
         FormatNumber("%.0f%% faster", w.value("faster_pct", 0.0)) + "</b>: a step of " +
         FormatSeconds(w.value("step_without_s", 0.0)) + " instead of " +
         FormatSeconds(w.value("step_s", 0.0)) + ". " +
         (w.value("bounded_by", std::string()) == "node_cpus"
              ? "Its node's CPUs allow no faster step: its ranks' work a step over its CPUs. "
              : "");
}

void CallPath(const Json& e, std::ostream& out) {
  if (!e.contains("call_path") || e["call_path"].empty()) return;
  out << "<div class=path><b>Call path</b> <ol>";
  const std::string flagged = e.value("flagged_frame", std::string());
  for (const Json& frame : e["call_path"]) {
    const std::string name = frame.is_string() ? frame.get<std::string>() : "";
    out << "<li" << (name == flagged ? " class=flagged" : "") << ">" << Code(name) << "</li>";
  }
  out << "</ol></div>\n";
  if (!flagged.empty()) out << "<p class=note>Flagged deep in it: " << Code(flagged) << "</p>\n";
}

// The parts that took the time, with the hardware's view where it has one (achieved TFLOP/s of
// a matrix multiply against the same shapes on the peers).
void Parts(const Json& e, std::ostream& out) {
  for (const char* key : {"top_functions", "largest_parts"}) {
    if (!e.contains(key) || e[key].empty()) continue;
    const bool hardware = std::any_of(e[key].begin(), e[key].end(),
                                      [](const Json& p) { return p.contains("achieved_tflops"); });
    out << "<table class=parts><tr><th>largest part</th><th>excess per iteration</th>"
        << (hardware ? "<th>achieved (matrix multiply)</th>" : "") << "</tr>\n";
    for (const Json& p : e[key]) {
      out << "<tr><td>" << Code(p.value("function", std::string())) << "</td><td>+"
          << FormatSeconds(p.value("excess_s_per_iter", 0.0)) << "</td>";
      if (hardware) {
        out << "<td>"
            << (p.contains("achieved_tflops")
                    ? FormatNumber("%.3g TFLOP/s", p.value("achieved_tflops", 0.0)) +
                          FormatNumber(" vs peers' %.3g", p.value("peer_tflops", 0.0))
                    : std::string())
            << "</td>";
      }
      out << "</tr>\n";
    }
    out << "</table>\n";
  }
  if (!e.contains("helpers")) return;
  if (e.contains("waits_in")) {
    out << "<p>The rank waits for its helper processes in "
        << Code(e.value("waits_in", std::string())) << ".</p>\n";
  }
  for (const Json& r : e["helpers"].value("ranks", Json::array())) {
    if (!r.contains("busiest") || r["busiest"].empty()) continue;
    const Json& b = r["busiest"][0];
    out << "<p>Rank " << r.value("rank", -1) << "'s " << r.value("processes", 0)
        << " helper processes spent most on " << Code(b.value("function", std::string())) << ": "
        << FormatSeconds(b.value("self_s", 0.0)) << " against the peers' "
        << FormatSeconds(b.value("peer_median_s", 0.0)) << ".</p>\n";
  }
}

}  // namespace

std::string EvidenceSentences(const Candidate& c) {
  return MeasuredSentence(c) + WhenSentence(c.evidence) + CulpritSentences(c.evidence) +
         WhatIfSentence(c);
}

void CandidateSection(const Candidate& c, size_t index, std::ostream& out) {
  out << "<section class=cand id=cand-" << index << "><h3>#" << index << " "
      << HtmlEscape(c.category) << " on " << RanksPhrase(c.rank_set)
      << (c.category == "hang" ? std::string()
                               : ": " + FormatSeconds(c.impact_s_per_iter) + " lost per iteration")
      << " <small>" << FormatNumber("score %.3f", c.score) << "</small></h3>\n<p>"
      << EvidenceSentences(c) << "</p>\n";
  CallPath(c.evidence, out);
  Parts(c.evidence, out);
  for (const Json& sig : c.evidence.value("signals", Json::array())) {
    out << "<p>Why: " << HtmlEscape(sig.value("text", std::string())) << ".</p>\n";
  }
  out << "<details><summary>Raw evidence (JSON)</summary><pre>"
      << HtmlEscape(JsonText(c.evidence, 2)) << "</pre></details>\n</section>\n";
}

}  // namespace perftracker::analyzer
