// The HTML report's pictures. SVG is written inline (no xmlns: an HTML parser does not need it,
// and the report names no URL at all), tables are coloured with inline styles.
#include "analyzer/report/html_charts.h"
#include "analyzer/base/format_text.h"
#include "analyzer/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

// Beyond these the heat map and the link matrix stop being readable on a screen.
constexpr size_t kMaxHeatRows = 20;
constexpr size_t kMaxColumns = 32;
// Up to this many ranks every peer is a line of its own; beyond, a band.
constexpr size_t kMaxPeerLines = 64;

// White at 0, red at +100 % or more, blue below: slower is red whatever the metric.
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

// The legend of CellColor: both sides of the median, or only the slow side.
void ColorScale(std::string_view low, std::string_view high, bool one_sided, std::ostream& out) {
  out << "<div class=\"scale" << (one_sided ? " links" : "") << "\"><span>" << low
      << "</span><span class=bar></span><span>" << high << "</span></div>\n";
}

// Mean step time of every rank in every aligned slot (NaN where the rank has none).
std::vector<std::vector<double>> StepTimes(const Dataset& ds) {
  std::vector<std::vector<double>> out;
  for (const RankData& r : ds.ranks) {
    std::vector<double> y(ds.slot_keys.size(), NAN);
    for (size_t k = 0; k < ds.slot_keys.size(); ++k) {
      const Slot* s = r.FindSlot(ds.slot_keys[k]);
      if (s != nullptr && s->iterations > 0) y[k] = s->MeanIterationNs() * 1e-9;
    }
    out.push_back(std::move(y));
  }
  return out;
}

struct Axes {
  double x0 = 64, x1 = 900, y0 = 16, y1 = 236;  // plot area in SVG units
  size_t slots = 1;
  double lo = 0, hi = 1;
  double X(size_t k) const {
    return slots <= 1 ? (x0 + x1) / 2 : x0 + (x1 - x0) * static_cast<double>(k) / (slots - 1);
  }
  // A value above the axis (a start-up slot) is drawn on its top edge.
  double Y(double v) const { return y1 - (y1 - y0) * (std::min(v, hi) - lo) / (hi - lo); }
};

std::string Points(const Axes& a, const std::vector<double>& y) {
  std::string pts;
  for (size_t k = 0; k < y.size(); ++k) {
    if (std::isnan(y[k])) continue;
    pts += FormatNumber("%.1f,", a.X(k)) + FormatNumber("%.1f ", a.Y(y[k]));
  }
  return pts;
}

// Iterations each aligned slot covers, over all ranks.
std::vector<std::pair<uint64_t, uint64_t>> SlotIterations(const Dataset& ds) {
  std::vector<std::pair<uint64_t, uint64_t>> out(ds.slot_keys.size(), {UINT64_MAX, 0});
  for (const RankData& r : ds.ranks) {
    for (size_t k = 0; k < ds.slot_keys.size(); ++k) {
      if (const Slot* s = r.FindSlot(ds.slot_keys[k])) {
        out[k].first = std::min(out[k].first, s->iter_begin);
        out[k].second = std::max(out[k].second, s->iter_end);
      }
    }
  }
  return out;
}

void ChartAxes(const Dataset& ds, const Axes& a, std::ostream& out) {
  out << "<line x1=" << a.x0 << " y1=" << a.y1 << " x2=" << a.x1 << " y2=" << a.y1
      << " class=ax /><line x1=" << a.x0 << " y1=" << a.y0 << " x2=" << a.x0 << " y2=" << a.y1
      << " class=ax />\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = a.lo + (a.hi - a.lo) * i / 4;
    out << "<text x=" << a.x0 - 6 << FormatNumber(" y=%.1f", a.Y(v) + 4) << " class=yl>"
        << FormatSeconds(v) << "</text><line x1=" << a.x0 << FormatNumber(" y1=%.1f", a.Y(v))
        << " x2=" << a.x1 << FormatNumber(" y2=%.1f", a.Y(v)) << " class=grid />\n";
  }
  const auto iters = SlotIterations(ds);
  const size_t step = std::max<size_t>(1, (iters.size() + 7) / 8);
  for (size_t k = 0; k < iters.size(); k += step) {
    if (iters[k].first == UINT64_MAX) continue;
    out << "<text x=" << FormatNumber("%.1f", a.X(k)) << " y=" << a.y1 + 16 << " class=xl>"
        << iters[k].first << "&ndash;" << iters[k].second << "</text>\n";
  }
  out << "<text x=" << (a.x0 + a.x1) / 2 << " y=" << a.y1 + 34
      << " class=xl>iterations (aligned slots)</text>\n";
}

}  // namespace

std::string_view HighlightColor(size_t i) {
  static constexpr std::string_view kColors[kMaxHighlighted] = {
      "#d62728", "#ff7f0e", "#9467bd", "#e377c2", "#8c564b", "#17becf", "#bcbd22", "#1f77b4"};
  return kColors[i % kMaxHighlighted];
}

std::vector<int> HighlightedRanks(const Report& rep, size_t top) {
  std::vector<int> out;
  const size_t ranks = rep.dataset->ranks.size();
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    const std::vector<int>& set = rep.candidates[i].rank_set;
    if (set.size() * 2 > ranks) continue;
    for (const int r : set) {
      if (out.size() < kMaxHighlighted && std::find(out.begin(), out.end(), r) == out.end()) {
        out.push_back(r);
      }
    }
  }
  return out;
}

namespace {

// One value per rank and aligned slot as lines: the highlighted ranks in colour, the others thin
// and grey, or beyond kMaxPeerLines a min-max band; their median dashed.
void LineChart(const Dataset& ds, const std::vector<std::vector<double>>& y, std::string_view id,
               std::string_view title, const std::vector<int>& highlighted, std::ostream& out) {
  Axes a;
  a.slots = ds.slot_keys.size();
  // The axis fits the steady state. Each rank's first slot holds start-up (compilation, the
  // allocator's and the loader's first fill, NCCL's set-up) and can be ten steps long; fitted to
  // it, the steady state is a flat line at the bottom. Start-up still shows: on the top edge,
  // labelled with its value.
  double lo = INFINITY, hi = 0, all_lo = INFINITY, all_hi = 0;
  for (const auto& row : y) {
    bool first = true;
    for (const double v : row) {
      if (std::isnan(v)) continue;
      all_lo = std::min(all_lo, v), all_hi = std::max(all_hi, v);
      if (!first) lo = std::min(lo, v), hi = std::max(hi, v);
      first = false;
    }
  }
  if (hi <= 0) lo = all_lo, hi = all_hi;  // one slot each: nothing but start-up to show
  // Margins of a tenth of the spread; a flat run still gets an axis of a few percent.
  const double pad = std::max((hi - lo) * 0.1, hi * 0.02);
  a.lo = std::max(0.0, lo - pad), a.hi = hi + pad;
  out << "<svg class=chart id=" << id << " width=920 height=280 viewBox=\"0 0 920 280\" "
      << "role=img><title>" << title << "</title>\n";
  ChartAxes(ds, a, out);
  const bool above_axis = all_hi > a.hi;
  if (above_axis) {
    for (size_t k = 0; k < a.slots; ++k) {
      double top = 0;
      for (const auto& row : y) {
        if (!std::isnan(row[k]) && row[k] > a.hi) top = std::max(top, row[k]);
      }
      if (top > 0) {
        out << "<text x=" << FormatNumber("%.1f", a.X(k)) << " y=" << a.y0 - 4
            << " class=\"xl above\">&uarr; " << FormatSeconds(top) << "</text>\n";
      }
    }
  }
  std::vector<size_t> peers;
  for (size_t ri = 0; ri < ds.ranks.size(); ++ri) {
    const int rank = ds.ranks[ri].rank();
    if (std::find(highlighted.begin(), highlighted.end(), rank) == highlighted.end()) {
      peers.push_back(ri);
    }
  }
  std::vector<double> mn(a.slots, NAN), med(a.slots, NAN), mx(a.slots, NAN);
  for (size_t k = 0; k < a.slots; ++k) {
    std::vector<double> v;
    for (const size_t ri : peers) {
      if (!std::isnan(y[ri][k])) v.push_back(y[ri][k]);
    }
    if (v.empty()) continue;
    mn[k] = *std::min_element(v.begin(), v.end());
    mx[k] = *std::max_element(v.begin(), v.end());
    med[k] = Median(v);
  }
  if (peers.size() > kMaxPeerLines) {
    std::string band = Points(a, mx);
    for (size_t k = a.slots; k-- > 0;) {
      if (!std::isnan(mn[k]))
        band += FormatNumber("%.1f,", a.X(k)) + FormatNumber("%.1f ", a.Y(mn[k]));
    }
    out << "<polygon class=band points=\"" << band << "\"><title>peers: min to max</title>"
        << "</polygon>\n";
  } else {
    for (const size_t ri : peers) {
      out << "<polyline class=peer points=\"" << Points(a, y[ri]) << "\"><title>rank "
          << ds.ranks[ri].rank() << "</title></polyline>\n";
    }
  }
  out << "<polyline class=median points=\"" << Points(a, med)
      << "\"><title>peers' median</title></polyline>\n";
  for (size_t h = 0; h < highlighted.size(); ++h) {
    for (size_t ri = 0; ri < ds.ranks.size(); ++ri) {
      if (ds.ranks[ri].rank() != highlighted[h]) continue;
      out << "<g class=slow style=\"stroke:" << HighlightColor(h) << ";fill:" << HighlightColor(h)
          << "\"><title>rank " << highlighted[h] << "</title><polyline points=\""
          << Points(a, y[ri]) << "\" />";
      for (size_t k = 0; k < a.slots; ++k) {
        if (!std::isnan(y[ri][k])) {
          out << "<circle r=3 cx=" << FormatNumber("%.1f", a.X(k))
              << FormatNumber(" cy=%.1f", a.Y(y[ri][k])) << " />";
        }
      }
      out << "</g>\n";
    }
  }
  out << "</svg>\n<div class=legend>";
  for (size_t h = 0; h < highlighted.size(); ++h) {
    out << "<span><i style=\"background:" << HighlightColor(h) << "\"></i>rank " << highlighted[h]
        << "</span>";
  }
  out << "<span><i class=lmed></i>median of the other " << peers.size() << " ranks</span><span><i "
      << (peers.size() > kMaxPeerLines ? "class=lband></i>their min&ndash;max"
                                       : "class=lpeer></i>each of them")
      << "</span>";
  if (above_axis) out << "<span>&uarr; start-up, above the axis: drawn on its top edge</span>";
  out << "</div>\n";
}

bool HasValues(const std::vector<std::vector<double>>& y) {
  return std::any_of(y.begin(), y.end(), [](const std::vector<double>& row) {
    return std::any_of(row.begin(), row.end(), [](double v) { return v > 0; });
  });
}

}  // namespace

void StepTimeChart(const Report& rep, const std::vector<int>& highlighted, std::ostream& out) {
  const Dataset& ds = *rep.dataset;
  const auto steps = StepTimes(ds);
  out << "<h2 id=steptime>Step time per rank over the run</h2>\n";
  if (!HasValues(steps)) {
    out << "<p>No rank recorded an iteration.</p>\n";
    return;
  }
  LineChart(ds, steps, "steptime-svg", "mean step time per aligned slot, per rank", highlighted,
            out);
  if (!HasValues(rep.own_step_s)) return;
  out << "<h3>Step time outside collectives</h3>\n<p class=note>In synchronous training every "
         "rank runs at the pace of the slowest, so the step times above agree; what differs is "
         "how long each rank waits inside the collectives. Without that wait, a straggler stands "
         "out (collectives that overlap computation make this a lower bound).</p>\n";
  LineChart(ds, rep.own_step_s, "owntime-svg", "mean step time outside collectives", highlighted,
            out);
}

namespace {

// Rank columns of a table capped at kMaxColumns: the candidates' ranks first, then those that
// deviate most, shown in rank order.
std::vector<size_t> PickColumns(const std::vector<int>& ranks, const std::vector<double>& weight,
                                const std::vector<int>& must) {
  std::vector<size_t> order(ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (order.size() <= kMaxColumns) return order;
  const auto first = [&](size_t i) {
    return std::find(must.begin(), must.end(), ranks[i]) != must.end();
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (first(x) != first(y)) return first(x);
    return weight[x] > weight[y];
  });
  order.resize(kMaxColumns);
  std::sort(order.begin(), order.end());
  return order;
}

// The (metric, rank) cells the top candidates name.
std::set<std::pair<size_t, int>> CandidateCells(const Report& rep, size_t top) {
  std::set<std::pair<size_t, int>> cells;
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    const Candidate& c = rep.candidates[i];
    for (size_t row = 0; row < rep.heat.keys.size(); ++row) {
      if (rep.heat.keys[row] != std::pair{c.catalog_function, c.aggregate}) continue;
      for (const int r : c.rank_set) cells.insert({row, r});
    }
  }
  return cells;
}

}  // namespace

void HeatMapTable(const Report& rep, size_t top, std::ostream& out) {
  const HeatMap& h = rep.heat;
  out << "<h2 id=heatmap>Rank &times; function: deviation from the peer-group median</h2>\n";
  if (h.rows.empty() || h.ranks.empty()) {
    out << "<p>No function to compare.</p>\n";
    return;
  }
  const auto outlined = CandidateCells(rep, top);
  // Rows that deviate most first; candidates' rows always kept.
  std::vector<double> row_max(h.rows.size()), col_max(h.ranks.size());
  for (size_t i = 0; i < h.rows.size(); ++i) {
    for (size_t r = 0; r < h.ranks.size(); ++r) {
      row_max[i] = std::max(row_max[i], std::abs(h.cells[i][r]));
      col_max[r] = std::max(col_max[r], std::abs(h.cells[i][r]));
    }
  }
  std::vector<size_t> rows(h.rows.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  const auto named = [&](size_t row) {
    return outlined.lower_bound({row, INT32_MIN}) != outlined.end() &&
           outlined.lower_bound({row, INT32_MIN})->first == row;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](size_t x, size_t y) {
    if (named(x) != named(y)) return named(x);
    return row_max[x] > row_max[y];
  });
  if (rows.size() > kMaxHeatRows) rows.resize(kMaxHeatRows);
  std::vector<int> must;
  for (const auto& [row, rank] : outlined) must.push_back(rank);
  const std::vector<size_t> cols = PickColumns(h.ranks, col_max, must);
  if (cols.size() < h.ranks.size()) {
    double rest = 0;
    for (size_t r = 0; r < h.ranks.size(); ++r) {
      if (!std::binary_search(cols.begin(), cols.end(), r)) rest = std::max(rest, col_max[r]);
    }
    out << "<p class=note>Showing " << cols.size() << " of " << h.ranks.size()
        << " ranks: the candidates' and those that deviate most; every other rank stays within "
        << FormatNumber("&plusmn;%.0f%%", 100 * rest) << ".</p>\n";
  }
  ColorScale("&minus;100% (faster)", "+100% or more (slower)", false, out);
  out << "<div class=scroll><table class=heat><tr><th>function</th>";
  for (const size_t r : cols) out << "<th>" << h.ranks[r] << "</th>";
  out << "</tr>\n";
  for (const size_t i : rows) {
    out << "<tr><td class=name title=\"" << HtmlEscape(h.rows[i]) << "\">" << HtmlEscape(h.rows[i])
        << "</td>";
    for (const size_t r : cols) {
      const double dev = h.cells[i][r];
      const std::string pct = FormatNumber("%+.0f%%", 100 * dev);
      out << "<td" << (outlined.count({i, h.ranks[r]}) ? " class=cand" : "")
          << " style=\"background:" << CellColor(dev) << "\" title=\"rank " << h.ranks[r] << ": "
          << pct << "\">" << (std::abs(dev) >= 0.05 ? pct : "") << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table></div>\n";
  if (!outlined.empty())
    out << "<p class=note>Outlined: the cells the candidates below name.</p>\n";
}

namespace {

std::set<std::pair<int, int>> SlowPairs(const Report& rep, size_t top) {
  std::set<std::pair<int, int>> pairs;
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    const Json& e = rep.candidates[i].evidence;
    if (!e.contains("slow_pairs")) continue;
    for (const Json& p : e["slow_pairs"]) {
      if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number()) {
        pairs.insert({p[0].get<int>(), p[1].get<int>()});
        pairs.insert({p[1].get<int>(), p[0].get<int>()});
      }
    }
  }
  return pairs;
}

}  // namespace

void LinkMatrixTable(const Report& rep, size_t top, std::ostream& out) {
  const LinkMatrix& m = rep.links;
  if (m.cells.empty()) return;
  std::map<std::pair<int, int>, double> gbps;
  std::map<int, double> slowest;  // per rank: its slowest link's GB/s
  std::vector<double> all;
  for (const LinkRate& c : m.cells) {
    gbps[{c.from, c.to}] = c.gbps;
    if (!m.net) gbps[{c.to, c.from}] = c.gbps;  // a pair measured at both ends together
    for (const int r : {c.from, c.to}) {
      slowest[r] = slowest.count(r) ? std::min(slowest[r], c.gbps) : c.gbps;
    }
    all.push_back(c.gbps);
  }
  const double median = Median(all);
  std::vector<int> ranks;
  std::vector<double> weight;
  for (const auto& [r, g] : slowest) ranks.push_back(r), weight.push_back(median / g);
  const auto slow = SlowPairs(rep, top);
  std::vector<int> must;
  for (const auto& [a, b] : slow) must.push_back(a);
  const std::vector<size_t> cols = PickColumns(ranks, weight, must);
  out << "<h2 id=links>Links: " << (m.net ? "sender &rarr; receiver" : "rank &harr; peer")
      << " throughput (GB/s)</h2>\n<p class=note>"
      << (m.net ? "Network wire time per byte (NCCL profiler proxy events, sender side)"
                : "Point-to-point transfers, the device time of both ends together")
      << "; median link " << FormatNumber("%.3g GB/s", median);
  if (cols.size() < ranks.size()) {
    out << "; showing " << cols.size() << " of " << ranks.size()
        << " ranks, the candidates' and those with the slowest links";
  }
  out << ".</p>\n";
  ColorScale("at the median or faster", "half the median or slower", true, out);
  out << "<div class=scroll><table class=\"heat links\"><tr><th>from \\ to</th>";
  for (const size_t c : cols) out << "<th>" << ranks[c] << "</th>";
  out << "</tr>\n";
  for (const size_t r : cols) {
    out << "<tr><th>" << ranks[r] << "</th>";
    for (const size_t c : cols) {
      const auto it = gbps.find({ranks[r], ranks[c]});
      if (it == gbps.end()) {
        out << "<td></td>";
        continue;
      }
      // Slower than the median is red: 0 at the median, +100% at half of it.
      const double dev = std::max(0.0, median / it->second - 1);
      out << "<td" << (slow.count({ranks[r], ranks[c]}) ? " class=cand" : "")
          << " style=\"background:" << CellColor(dev) << "\" title=\"" << ranks[r] << " to "
          << ranks[c] << FormatNumber(": %.3g GB/s\">", it->second)
          << (cols.size() <= 16 ? FormatNumber("%.3g", it->second) : "") << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table></div>\n";
}

}  // namespace perftracker::analyzer
