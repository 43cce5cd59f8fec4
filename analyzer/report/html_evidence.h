// A candidate's evidence in the HTML report as sentences with their numbers (html_evidence.cpp):
// what was measured against what, how sure, when, what it would save; then its call path and
// hardware evidence, and the raw JSON folded away for experts.
#pragma once

#include <ostream>
#include <string>

#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

// "On rank 5, <code>f</code> takes 40.0 ms per iteration against ..." (escaped HTML).
std::string EvidenceSentences(const Candidate& c);

// One <section class=cand> per candidate; `index` counts from 1.
void CandidateSection(const Candidate& c, size_t index, std::ostream& out);

}  // namespace perftracker::analyzer
