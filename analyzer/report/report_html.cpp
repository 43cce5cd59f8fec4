// The HTML report: one self-contained file, readable in a minute. The verdict in words first,
// then the pictures (step time per rank, the rank x function heat map, the link matrix), then
// every candidate's evidence in sentences, then the health of the inputs. No scripts and no
// external resources: it opens offline, from a mail attachment or a ticket, and a hostile name
// in an input file cannot run anything. Every string that came from an input file goes through
// HtmlEscape.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analyzer/base/utf8.h"
#include "analyzer/report/html_charts.h"
#include "analyzer/report/html_evidence.h"
#include "analyzer/report/report.h"
#include "analyzer/base/format_text.h"

namespace perftracker::analyzer {
namespace {

constexpr std::string_view kStyle = R"(<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222}
h1{font-size:20px;margin-bottom:4px}h2{font-size:16px;margin-top:32px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:0 0 6px}h3 small{color:#777;font-weight:normal}
.sub{color:#666;margin-top:0}.note{color:#666;font-size:12px}
.verdict{background:#fff4e5;border-left:6px solid #e67e22;padding:10px 16px;font-size:15px}
.verdict.ok{background:#eefaf0;border-color:#2e9e4f}.verdict.hang{background:#fdecea;border-color:#c0392b}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 6px;border:1px solid #ddd;font-size:12px}
th{background:#f4f4f4;text-align:left}
.scroll{overflow-x:auto}.heat td{min-width:22px;text-align:center;padding:2px;font-size:11px}
.heat td.name{text-align:left}
.heat td.cand{outline:2px solid #000;outline-offset:-2px;font-weight:bold}
.name{max-width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.scale{display:flex;align-items:center;gap:8px;font-size:12px;color:#555}
.scale .bar{display:inline-block;width:220px;height:12px;border:1px solid #ccc;
background:linear-gradient(to right,rgb(55,105,255),#fff,rgb(255,55,35))}
.scale.links .bar{background:linear-gradient(to right,#fff,rgb(255,55,35))}
.chart .ax{stroke:#444}.chart .grid{stroke:#eee}.chart text{font-size:11px;fill:#555}
.chart .yl{text-anchor:end}.chart .xl{text-anchor:middle}
.chart .peer{fill:none;stroke:#9aa;stroke-width:1;opacity:.6}
.chart .band{fill:#cdd5dd;opacity:.7}.chart .median{fill:none;stroke:#456;stroke-width:2;stroke-dasharray:5 3}
.chart .slow polyline{fill:none;stroke-width:2.5}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12px;margin:4px 0 18px 64px}
.legend i{display:inline-block;width:18px;height:4px;margin-right:5px;vertical-align:middle}
.legend .lmed{background:repeating-linear-gradient(to right,#456 0 5px,transparent 5px 8px)}
.legend .lband{background:#cdd5dd;height:10px}.legend .lpeer{background:#9aa}
section.cand{border:1px solid #e3e3e3;border-radius:6px;padding:10px 14px;margin:12px 0}
.path ol{margin:4px 0;padding-left:22px}.path li.flagged code{background:#ffe3e0}
pre{background:#f8f8f8;padding:8px;overflow:auto;font-size:12px}.hang{color:#a00}
code{background:#f3f3f3;padding:0 3px;border-radius:3px;word-break:break-all}
</style>)";

// The answer before the pictures: the top candidate (after any hang), in words.
void Verdict(const Report& rep, std::ostream& out) {
  if (!rep.hangs.empty()) {
    const Hang& h = rep.hangs.front();
    out << "<div class=\"verdict hang\" id=verdict><b>The job hung</b> in "
        << HtmlEscape(h.collective) << " #" << h.sequence << ": "
        << (h.ranks_missing.empty()
                ? std::string(h.ranks_without_file > 0
                                  ? "every rank with a file arrived, none completed"
                                  : "every rank arrived, none completed")
                : (h.ranks_missing.size() == 1 ? "rank " : "ranks ") +
                      HtmlEscape(RankListLabel(h.ranks_missing)) + " never arrived")
        << ", stuck " << FormatSeconds(h.stuck_s);
    if (h.ranks_without_file > 0)
      out << " (members without a file: " << h.ranks_without_file << ")";
    out << ".</div>\n";
    return;
  }
  if (rep.candidates.empty()) {
    out << "<div class=\"verdict ok\" id=verdict><b>No root cause above the threshold.</b> No "
           "rank deviates from its peers, and nothing every rank shares is outside its expected "
           "range.</div>\n";
    return;
  }
  const Candidate& c = rep.candidates.front();
  out << "<div class=verdict id=verdict><b>Most likely cause: " << HtmlEscape(c.category) << " on "
      << (c.rank_set.size() == 1 ? "rank " : "ranks ") << HtmlEscape(RankListLabel(c.rank_set))
      << "</b>, in <code>" << HtmlEscape(c.function) << "</code>, costing "
      << FormatSeconds(c.impact_s_per_iter) << " per iteration";
  if (c.evidence.contains("what_if")) {
    char pct[64];
    std::snprintf(pct, sizeof pct, "%.0f%%", c.evidence["what_if"].value("faster_pct", 0.0));
    out << "; without it the job would be about " << pct << " faster ("
        << FormatSeconds(c.evidence["what_if"].value("step_s", 0.0)) << " &rarr; "
        << FormatSeconds(c.evidence["what_if"].value("step_without_s", 0.0)) << " per step)";
  }
  out << ".";
  for (const Json& sig : c.evidence.value("signals", Json::array())) {
    out << " Why: " << HtmlEscape(sig.value("text", std::string())) << ".";
  }
  if (rep.candidates.size() > 1) {
    out << " " << rep.candidates.size() - 1 << " more candidate"
        << (rep.candidates.size() == 2 ? "" : "s") << " below.";
  }
  out << "</div>\n";
}

void HtmlHeader(const Report& rep, std::ostream& out) {
  const Dataset& ds = *rep.dataset;
  out << "<h1>perftracker report: job <code>" << HtmlEscape(ds.job_id) << "</code></h1>\n"
      << "<p class=sub>" << ds.ranks.size() << " of " << ds.expected << " ranks";
  if (!ds.missing.empty()) out << " (missing " << HtmlEscape(RankListLabel(ds.missing)) << ")";
  out << ", " << ds.files << " files, " << ds.slot_keys.size() << " aligned slots, median step "
      << FormatSeconds(rep.median_iteration_s) << ", " << rep.groups.size() << " peer group"
      << (rep.groups.size() == 1 ? "" : "s") << "</p>\n";
}

void CandidateList(const Report& rep, size_t top, std::ostream& out) {
  out << "<h2 id=candidates>Root-cause candidates</h2>\n<p class=note>Score = the share of the "
         "step lost &times; the share of the windows it was seen in.</p>\n";
  if (rep.candidates.empty()) out << "<p>None above the threshold.</p>\n";
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    CandidateSection(rep.candidates[i], i + 1, out);
  }
}

void Inputs(const Report& rep, std::ostream& out) {
  const Dataset& ds = *rep.dataset;
  out << "<h2 id=inputs>Inputs</h2>\n<p>" << ds.files << " ring files; " << ds.ranks.size()
      << " of " << ds.expected << " ranks";
  if (!ds.missing.empty()) {
    out << "; <b>missing " << HtmlEscape(RankListLabel(ds.missing)) << "</b> (no file found)";
  }
  if (!ds.helpers.empty()) out << "; " << ds.helpers.size() << " helper processes set apart";
  out << ".</p>\n";
  bool any = false;
  for (size_t i = 0; i < static_cast<size_t>(Diagnostic::kCount); ++i) {
    const auto d = static_cast<Diagnostic>(i);
    if (ds.diagnostics.Count(d) == 0) continue;
    if (!any) out << "<table><tr><th>diagnostic</th><th>count</th><th>meaning</th></tr>\n";
    any = true;
    out << "<tr><td>" << DiagnosticName(d) << "</td><td>" << ds.diagnostics.Count(d) << "</td><td>"
        << DiagnosticDoc(d) << "</td></tr>\n";
  }
  out << (any ? "</table>\n" : "<p>Clean: no damage, no drops.</p>\n");
  for (const std::string& m : ds.diagnostics.messages())
    out << "<div class=note>" << HtmlEscape(m) << "</div>\n";
  for (const SignalDeviation& d : rep.signal_warnings) {
    out << "<p class=note>Hardware: " << HtmlEscape(d.text)
        << ", with no performance deviation to explain.</p>\n";
  }
  for (const RankData& r : ds.ranks) {
    if (r.python_unrecorded_windows == 0) continue;
    out << "<p class=note>Rank " << r.rank() << ": Python functions missing from "
        << r.python_unrecorded_windows << " of " << r.windows
        << " windows (another tool's frame evaluator did not call ours).</p>\n";
  }
}

void HangList(const Report& rep, std::ostream& out) {
  if (rep.hangs.empty()) return;
  out << "<h2 id=hangs>Hangs</h2>\n";
  for (const Hang& h : rep.hangs) {
    out << "<p class=hang><b>Hang</b> " << HtmlEscape(h.collective) << " #" << h.sequence
        << ", stuck " << FormatSeconds(h.stuck_s) << ": arrived "
        << (h.ranks_arrived.empty() ? "none" : HtmlEscape(RankListLabel(h.ranks_arrived)))
        << "; never arrived "
        << (h.ranks_missing.empty() ? "none" : HtmlEscape(RankListLabel(h.ranks_missing)));
    if (h.ranks_without_file > 0) out << "; members without a file: " << h.ranks_without_file;
    if (!h.ranks_sigterm.empty()) {
      out << "; terminated (SIGTERM) " << HtmlEscape(RankListLabel(h.ranks_sigterm));
    }
    if (!h.ranks_vanished.empty()) {
      out << "; vanished without an exit record " << HtmlEscape(RankListLabel(h.ranks_vanished));
    }
    out << "</p>\n<ul>";
    for (const auto& [rank, frame] : h.last_python_frame) {
      out << "<li>rank " << rank << ": <code>" << HtmlEscape(frame) << "</code></li>";
    }
    out << "</ul>\n";
  }
}

}  // namespace

// Escapes markup and replaces bytes that are not UTF-8 (input names may hold any bytes).
std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n - 1;
      continue;
    }
    const char ch = s[i];
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

void WriteHtml(const Report& rep, size_t top, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=en><head><meta charset=\"utf-8\">"
         "<meta name=viewport content=\"width=device-width\"><title>perftracker report: "
      << HtmlEscape(rep.dataset->job_id) << "</title>\n"
      << kStyle << "</head><body>\n";
  HtmlHeader(rep, out);
  Verdict(rep, out);
  HangList(rep, out);
  StepTimeChart(rep, HighlightedRanks(rep, top), out);
  HeatMapTable(rep, top, out);
  LinkMatrixTable(rep, top, out);
  CandidateList(rep, top, out);
  Inputs(rep, out);
  out << "</body></html>\n";
}

}  // namespace perftracker::analyzer
