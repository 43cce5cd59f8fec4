// The pictures of the HTML report (html_charts.cpp): inline SVG and coloured tables, no
// scripts. Every string from an input file goes through HtmlEscape, inside SVG text and
// attributes too. Each chart bounds its size, so a job of thousands of ranks still gives a file
// of a few hundred kB.
#pragma once

#include <ostream>
#include <vector>

#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

// Colours of the highlighted ranks, in order; more highlighted ranks than this are not drawn.
inline constexpr size_t kMaxHighlighted = 8;
std::string_view HighlightColor(size_t i);

// The ranks the top candidates name, at most kMaxHighlighted, in candidate order. Rank sets
// that hold most of the job (a cost every rank shares) highlight nothing.
std::vector<int> HighlightedRanks(const Report& rep, size_t top);

// Mean step time per aligned slot: each highlighted rank a coloured line, the others as thin
// grey lines (a band min-median-max when there are many).
void StepTimeChart(const Report& rep, const std::vector<int>& highlighted, std::ostream& out);

// Rank x function deviations from the peer median, a colour scale, the top candidates' cells
// outlined; rows and rank columns capped.
void HeatMapTable(const Report& rep, size_t top, std::ostream& out);

// Rank x peer throughput (C4's matrix), the slow pairs of the candidates outlined; nothing when
// no link was measured.
void LinkMatrixTable(const Report& rep, size_t top, std::ostream& out);

}  // namespace perftracker::analyzer
