// The terminal report: one screen. Health of the inputs first, then hangs, then the top
// candidates with the numbers behind each.
#include <algorithm>
#include <cstdio>

#include "analyzer/base/format_text.h"
#include "analyzer/report/report.h"

namespace perftracker::analyzer {

namespace {

// Input strings are printed on a terminal: control bytes become '?', long names are cut.
std::string Clean(std::string_view s, size_t max) {
  std::string out;
  for (const char ch : s) out += (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ? '?' : ch;
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

void TextHeader(const Report& rep, std::ostream& out) {
  const Dataset& ds = *rep.dataset;
  out << "perftracker analyze: job " << Clean(ds.job_id, 40) << ", " << ds.ranks.size() << "/"
      << ds.expected << " ranks";
  if (!ds.missing.empty()) out << " (missing: " << RankListLabel(ds.missing) << ")";
  out << ", " << ds.files << " files, " << ds.slot_keys.size() << " aligned slots\n";
  out << "inputs:";
  bool any = false;
  for (size_t i = 0; i < static_cast<size_t>(Diagnostic::kCount); ++i) {
    const auto d = static_cast<Diagnostic>(i);
    if (ds.diagnostics.Count(d) == 0) continue;
    out << (any ? ", " : " ") << DiagnosticName(d) << " " << ds.diagnostics.Count(d);
    any = true;
  }
  out << (any ? "\n" : " clean (no damage, no drops)\n");
  for (const RankData& r : ds.ranks) {
    if (r.python_unrecorded_windows == 0) continue;
    out << "warning: rank " << r.rank() << ": Python functions missing from "
        << r.python_unrecorded_windows << " of " << r.windows
        << " windows (another tool's frame evaluator did not call ours); its Python functions "
           "compare with their peers' only where they were recorded\n";
  }
  for (const SignalDeviation& d : rep.signal_warnings) {
    out << "warning: " << Clean(d.text, 140) << ", with no performance deviation to explain\n";
  }
  double lo = 1e300, hi = 0, p99 = 0;
  for (const RankIterations& it : rep.iterations) {
    if (it.count == 0) continue;
    lo = std::min(lo, it.steady_s), hi = std::max(hi, it.steady_s);
    p99 = std::max(p99, it.p99_s);
  }
  if (hi > 0) {
    out << "step time: median " << FormatSeconds(rep.median_iteration_s) << " after start-up (ranks "
        << FormatSeconds(lo) << " .. " << FormatSeconds(hi) << ", p99 " << FormatSeconds(p99)
        << "); " << rep.groups.size() << " peer group" << (rep.groups.size() == 1 ? "" : "s")
        << "\n";
  }
}

void Hangs(const Report& rep, std::ostream& out) {
  for (const Hang& h : rep.hangs) {
    out << "\nHANG " << (h.communication ? "(communication)" : "(rank missing)") << ": "
        << h.collective << " #" << h.sequence << ", stuck " << FormatSeconds(h.stuck_s) << "\n";
    out << "  arrived: " << (h.ranks_arrived.empty() ? "none" : RankListLabel(h.ranks_arrived))
        << "; never arrived: "
        << (h.ranks_missing.empty() ? "none" : RankListLabel(h.ranks_missing)) << "\n";
    if (!h.ranks_sigterm.empty()) {
      out << "  terminated (SIGTERM): " << RankListLabel(h.ranks_sigterm) << "\n";
    }
    if (!h.ranks_vanished.empty()) {
      out << "  vanished without an exit record (killed, or still running): "
          << RankListLabel(h.ranks_vanished) << "\n";
    }
    if (!h.ranks_exited_normally.empty()) {
      out << "  exited normally: " << RankListLabel(h.ranks_exited_normally) << "\n";
    }
    size_t shown = 0;
    for (const auto& [rank, frame] : h.last_python_frame) {
      if (shown++ == 3) break;
      out << "  rank " << rank << " last Python frame: " << Clean(frame, 70) << "\n";
    }
  }
}

std::string EvidenceLine(const Candidate& c) {
  const Json& e = c.evidence;
  std::string line;
  const std::string unit = e.value("unit", "s/iter");
  if (unit == "s/iter") {
    line = FormatSeconds(e.value("value", 0.0)) + " vs peers " +
           FormatSeconds(e.value("peer_median", 0.0));
  } else if (unit == "GB/s") {
    line = FormatNumber("bus bandwidth %.3g GB/s", e.value("value", 0.0)) +
           FormatNumber(", %.0f%% of the link's", 100 * e.value("fraction_of_peak", 0.0)) +
           FormatNumber(" %.3g GB/s", e.value("link_peak_gbps", 0.0)) +
           FormatNumber(" (expected >= %.0f%%)", 100 * e.value("expected_min_fraction", 0.0));
  } else if (unit == "ns/byte") {
    line = FormatNumber("%.3g", e.value("value", 0.0)) + " vs " +
           FormatNumber("%.3g", e.value("peer_median", 0.0)) + " ns/byte";
  } else if (unit == "cores") {
    line = std::string(e.contains("threads") ? "threads beside the loop" : "loader workers") +
           " on a CPU " + FormatNumber("%.2f cores", e.value("value", 0.0)) +
           " vs peers " + FormatNumber("%.2f", e.value("peer_median", 0.0));
  } else {
    return "collective in flight for " + FormatSeconds(e.value("value", 0.0)) + " (" +
           FormatNumber("%.0f", e.value("deviation", 0.0)) + "x the median step); see HANG above";
  }
  const std::string by = e.value("decided_by", std::string());
  line += " (" + e.value("source", std::string()) + (by.empty() ? "" : " on " + by) + ", dev " +
          FormatNumber("%.3g", e.value("deviation", 0.0)) + ", " +
          std::to_string(e.value("windows_seen", 0)) + "/" +
          std::to_string(e.value("windows_total", 0)) + " windows)";
  if (e.contains("likely_victim_of")) line += "; likely a victim";
  if (by == "run_queue_delay" || by == "shared_run_queue") {
    const Json& q = e["run_queue"];
    line += "; waited for a CPU " + FormatSeconds(q.value("rank_s_per_iter", 0.0)) + " vs peers " +
            FormatSeconds(q.value("peers_s_per_iter", 0.0));
    if (by == "shared_run_queue") line += ", within the peers' own spread: the host's, no rank's";
  }
  if (e.contains("host_critical_path")) {
    const Json& h = e["host_critical_path"];
    line += (ChargeMeasured(e) ? "; of it cost the job " : "; of it on the critical path ") +
            FormatSeconds(h.value("reached_s_per_iter", 0.0));
  }
  return line;
}

// "dir/file.py:12:qualname" as "file.py:12:qualname": on one line, the file and the function
// say more than the directories.
std::string Short(const std::string& name) {
  const size_t colon = name.find(':');
  const size_t slash = name.rfind('/', colon == std::string::npos ? name.size() : colon);
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

// Where a lifted verdict sits (depth.cpp), what beneath it took the time, and what a data-loader
// verdict's helper processes spent it on (helpers.cpp).
// The share of its node's CPUs the work beside the loops held (evidence.workers, .threads), and
// what the loops waited for one.
std::string NodeCpusHeld(const Json& d) {
  return FormatNumber("%.0f%% of the node's ", 100 * d.value("node_cpus_held", 0.0)) +
         FormatNumber("%.0f CPUs, whose loops wait ", d.value("node_cpus", 0.0)) +
         FormatSeconds(d.value("loops_run_queue_s_per_iter", 0.0)) + " a step for one";
}

void WritePathAndParts(const Json& e, std::ostream& out) {
  std::string line;
  if (e.contains("beta")) {
    line = FormatNumber("critical path: beta %.3f", e.value("beta", 0.0));
    if (e.contains("peer_beta")) line += FormatNumber(" vs peers %.3f", e.value("peer_beta", 0.0));
    if (e.contains("expected_max_beta")) {
      line += FormatNumber(" (expected <= %.2f)", e.value("expected_max_beta", 0.0));
    }
  }
  if (e.contains("what_if")) {
    line += (line.empty() ? "" : "; ") +
            FormatNumber("job ~%.0f%% faster without this", e["what_if"].value("faster_pct", 0.0));
    if (e["what_if"].value("bounded_by", std::string()) == "node_cpus") {
      line += " (its node's CPUs allow no faster step)";
    }
  }
  if (!line.empty()) out << "      " << line << "\n";
  if (e.contains("victims")) {
    for (const Json& v : e["victims"]) {
      const std::vector<int> ranks = v.value("ranks", std::vector<int>());
      out << "      " << (ranks.size() == 1 ? "rank " : "ranks ") << RankListLabel(ranks)
          << " wait " << FormatSeconds(v.value("wait_s_per_iter", 0.0)) << " a step for it in "
          << Clean(Short(v.value("function", std::string())), 60) << "\n";
    }
  }
  if (e.contains("waits_in")) {
    out << "      the rank waits for its helpers in: "
        << Clean(Short(e.value("waits_in", std::string())), 80) << "\n";
  }
  if (e.contains("call_path") && e["call_path"].size() > 1) {
    std::string path;
    const size_t n = e["call_path"].size(), from = n > 3 ? n - 3 : 0;
    for (size_t i = from; i < n; ++i) {
      path += (i > from ? " > " : from > 0 ? "... > " : "") + Short(e["call_path"][i]);
    }
    out << "      call path: " << Clean(path, 100) << "\n";
  }
  if (e.contains("largest_parts") && !e["largest_parts"].empty()) {
    const Json& p = e["largest_parts"][0];
    out << "      largest part: " << Clean(Short(p.value("function", std::string())), 80) << " (+"
        << FormatSeconds(p.value("excess_s_per_iter", 0.0)) << ")\n";
  }
  if (e.contains("workers")) {
    const Json& w = e["workers"];
    out << "      " << w.value("processes", 0) << " loader workers: "
        << FormatNumber("%.0f%% of their time in the user's code", 100 * w.value("busy", 0.0))
        << FormatNumber(", %.0f%% on a CPU", 100 * w.value("cpu", 0.0)) << "; "
        << NodeCpusHeld(w) << "\n";
  }
  if (e.contains("threads")) {
    const Json& t = e["threads"];
    out << "      threads beside the training loop: "
        << FormatNumber("%.2f cores busy", t.value("cores", 0.0))
        << FormatNumber(" (peers' %.2f)", t.value("peers_cores", 0.0)) << "; " << NodeCpusHeld(t);
    if (t.value("loop_off_cpu_excess_s_per_iter", 0.0) > 0) {
      out << "; its loop waits " << FormatSeconds(t.value("loop_off_cpu_excess_s_per_iter", 0.0))
          << " a step more than its peers' off a CPU (the GIL)";
    }
    out << "\n";
  }
  if (e.contains("helpers")) {
    for (const Json& r : e["helpers"].value("ranks", Json::array())) {
      if (r["busiest"].empty()) continue;
      const Json& b = r["busiest"][0];
      out << "      rank " << r.value("rank", -1) << "'s helper processes ("
          << r.value("processes", 0)
          << "): " << Clean(Short(b.value("function", std::string())), 60) << " "
          << FormatSeconds(b.value("self_s", 0.0)) << " vs peers' "
          << FormatSeconds(b.value("peer_median_s", 0.0)) << "\n";
    }
  }
}

// When a fault that did not last the whole run was seen: from the middle on, or rank by rank
// (a straggler that moved).
void WriteWhen(const Json& e, std::ostream& out) {
  const auto spans = [](const Json& list) {
    std::string text;
    for (const Json& x : list) {
      text += (text.empty() ? "" : ", ") + std::to_string(x[0].get<uint64_t>()) + "-" +
              std::to_string(x[1].get<uint64_t>());
    }
    return text;
  };
  if (e.contains("iterations_by_rank")) {
    std::string line;
    for (const Json& r : e["iterations_by_rank"]) {
      line += (line.empty() ? "" : "; ") + ("rank " + std::to_string(r.value("rank", -1))) +
              " iterations " + spans(r["iterations"]);
    }
    out << "      when: " << Clean(line, 100) << "\n";
  } else if (e.contains("iterations") && e.value("windows_seen", 0) < e.value("windows_total", 0)) {
    out << "      when: iterations " << Clean(spans(e["iterations"]), 90) << "\n";
  }
}

// C4's evidence that this rank holds the others back.
std::string ArrivalLine(const Json& a) {
  // Negative where the rank's own collectives are the slower ones (its host is busy at them
  // too): the delay is then what says the peers waited.
  const double wait = a.value("peers_wait_s_per_iter", 0.0);
  return "culprit: arrives last at " +
         FormatNumber("%.0f%%", 100 * a.value("last_to_arrive_share", 0.0)) + " of collectives, " +
         FormatSeconds(a.value("delay_s", 0.0)) + " behind the median; " +
         (wait >= 0 ? "peers' collectives run " + FormatSeconds(wait) + " longer per iteration"
                    : "its own collectives run " + FormatSeconds(-wait) +
                          " longer than its peers' per iteration");
}

// The same where the collectives are invisible (DDP over gloo): the frame that holds them.
std::string PeersWaitLine(const Json& w) {
  const double peers = w.value("peers_s_per_iter", 0.0), rank = w.value("rank_s_per_iter", 0.0);
  return "culprit: peers wait " + FormatSeconds(peers - rank) + " more per iteration in " +
         Short(w.value("function", std::string())) + " (" + FormatSeconds(peers) + " vs " +
         FormatSeconds(rank) + ")";
}

void Candidates(const Report& rep, size_t top, std::ostream& out) {
  out << "\nTOP CANDIDATES (score = share of the iteration lost x persistence)\n";
  if (rep.candidates.empty()) {
    out << "  none above the threshold: no rank deviates from its peers, nothing shared by all "
           "ranks is outside its expected range\n";
    return;
  }
  out << " #  score  lost/iter  category              ranks        kind        function\n";
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    const Candidate& c = rep.candidates[i];
    char head[160];
    std::snprintf(head, sizeof head, "%2zu %6.3f  %-9s  %-20s  %-11s  %-10s  ", i + 1,
                  std::min(c.score, 999.0), FormatSeconds(c.impact_s_per_iter).c_str(),
                  c.category.c_str(), Clean(RankListLabel(c.rank_set), 11).c_str(), c.kind.c_str());
    out << head << Clean(c.function, 48) << "\n";
    out << "      " << Clean(EvidenceLine(c), 110) << "\n";
    WriteWhen(c.evidence, out);
    if (c.evidence.contains("arrival"))
      out << "      " << ArrivalLine(c.evidence["arrival"]) << "\n";
    if (c.evidence.contains("peers_wait_in"))
      out << "      " << Clean(PeersWaitLine(c.evidence["peers_wait_in"]), 110) << "\n";
    if (c.evidence.contains("top_functions") && !c.evidence["top_functions"].empty()) {
      const Json& t = c.evidence["top_functions"][0];
      out << "      largest part: " << Clean(t.value("function", std::string()), 60) << " (+"
          << FormatSeconds(t.value("excess_s_per_iter", 0.0));
      if (t.contains("achieved_tflops")) {
        out << FormatNumber(", %.3g TFLOP/s", t.value("achieved_tflops", 0.0))
            << FormatNumber(" vs peers %.3g", t.value("peer_tflops", 0.0));
      }
      out << ")\n";
    }
    WritePathAndParts(c.evidence, out);
    for (const Json& sig : c.evidence.value("signals", Json::array())) {
      out << "      why: " << Clean(sig.value("text", std::string()), 110) << "\n";
    }
  }
}

}  // namespace

void WriteText(const Report& rep, size_t top, std::ostream& out) {
  TextHeader(rep, out);
  Hangs(rep, out);
  Candidates(rep, top, out);
}

}  // namespace perftracker::analyzer
