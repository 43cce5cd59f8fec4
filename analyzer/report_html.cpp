// The HTML report: one self-contained file (no scripts, no external resources) with the rank x
// function heat map and every candidate's evidence. Every string that came from an input file
// goes through HtmlEscape.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analyzer/report.h"

namespace perftracker::analyzer {
namespace {

constexpr std::string_view kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{padding:3px 6px;border:1px solid #ddd;font-size:12px}
th{background:#f4f4f4;text-align:left}.heat td{width:28px;text-align:center;padding:2px}
.name{max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
pre{background:#f8f8f8;padding:8px;overflow:auto;font-size:12px}.hang{color:#a00}
</style>)";

// Green (at the median) to red (twice the median or more); blue below.
std::string CellColor(double dev) {
  const double x = std::clamp(std::abs(dev), 0.0, 1.0);
  char buf[48];
  if (dev >= 0) {
    std::snprintf(buf, sizeof buf, "rgb(255,%d,%d)", static_cast<int>(255 - 200 * x),
                  static_cast<int>(255 - 220 * x));
  } else {
    std::snprintf(buf, sizeof buf, "rgb(%d,%d,255)", static_cast<int>(255 - 200 * x),
                  static_cast<int>(255 - 150 * x));
  }
  return buf;
}

void HeatTable(const Report& rep, std::ostream& out) {
  const HeatMap& h = rep.heat;
  out << "<h2>Rank &times; function: deviation from the peer-group median</h2>\n"
         "<table class=heat><tr><th>function</th>";
  for (const int r : h.ranks) out << "<th>" << r << "</th>";
  out << "</tr>\n";
  for (size_t i = 0; i < h.rows.size(); ++i) {
    out << "<tr><td class=name title=\"" << HtmlEscape(h.rows[i]) << "\">" << HtmlEscape(h.rows[i])
        << "</td>";
    for (const double dev : h.cells[i]) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%+.0f%%", 100 * dev);
      out << "<td style=\"background:" << CellColor(dev) << "\" title=\"" << pct << "\">"
          << (std::abs(dev) >= 0.05 ? pct : "") << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
}

void CandidateList(const Report& rep, size_t top, std::ostream& out) {
  out << "<h2>Root-cause candidates</h2>\n";
  if (rep.candidates.empty()) out << "<p>None above the threshold.</p>\n";
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    const Candidate& c = rep.candidates[i];
    char head[128];
    std::snprintf(head, sizeof head, "#%zu score %.3f, %s lost per iteration", i + 1, c.score,
                  FormatSeconds(c.impact_s_per_iter).c_str());
    out << "<h3>" << head << ": " << HtmlEscape(c.category) << " on ranks "
        << HtmlEscape(RankListLabel(c.rank_set)) << "</h3>\n<p>" << HtmlEscape(c.kind) << " <code>"
        << HtmlEscape(c.function) << "</code></p>\n<pre>" << HtmlEscape(JsonText(c.evidence, 2))
        << "</pre>\n";
  }
}

void Inputs(const Report& rep, std::ostream& out) {
  const Dataset& ds = *rep.dataset;
  out << "<h2>Inputs</h2>\n<p>job <code>" << HtmlEscape(ds.job_id) << "</code>: " << ds.ranks.size()
      << " of " << ds.expected << " ranks";
  if (!ds.missing.empty()) out << ", missing " << HtmlEscape(RankListLabel(ds.missing));
  out << "; " << ds.files << " files; median step " << FormatSeconds(rep.median_iteration_s)
      << "</p>\n<table><tr><th>diagnostic</th><th>count</th><th>meaning</th></tr>\n";
  for (size_t i = 0; i < static_cast<size_t>(Diagnostic::kCount); ++i) {
    const auto d = static_cast<Diagnostic>(i);
    if (ds.diagnostics.Count(d) == 0) continue;
    out << "<tr><td>" << DiagnosticName(d) << "</td><td>" << ds.diagnostics.Count(d) << "</td><td>"
        << DiagnosticDoc(d) << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const std::string& m : ds.diagnostics.messages())
    out << "<div>" << HtmlEscape(m) << "</div>\n";
}

void HangList(const Report& rep, std::ostream& out) {
  for (const Hang& h : rep.hangs) {
    out << "<p class=hang><b>Hang</b> " << HtmlEscape(h.collective) << " #" << h.sequence
        << ": arrived " << HtmlEscape(RankListLabel(h.ranks_arrived)) << ", missing "
        << HtmlEscape(RankListLabel(h.ranks_missing));
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

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const size_t n = b < 0x80           ? 1
                   : (b >> 5) == 0x6  ? 2
                   : (b >> 4) == 0xe  ? 3
                   : (b >> 3) == 0x1e ? 4
                                      : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  return n;
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
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>perftracker report</title>\n"
      << kStyle << "</head><body>\n<h1>perftracker report</h1>\n";
  Inputs(rep, out);
  HangList(rep, out);
  CandidateList(rep, top, out);
  HeatTable(rep, out);
  out << "</body></html>\n";
}

}  // namespace perftracker::analyzer
