// The analysis pipeline after ingest, which analyze, diff, watch and export share: peers ->
// detect -> verdicts -> the report's model.
#pragma once

#include <memory>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

Report Analyze(std::unique_ptr<Dataset> dataset, const Thresholds& thresholds);

// The iteration where a rank's start-up slot begins, or UINT64_MAX when that slot is the rank's
// only one with iterations (then it is kept: it is all there is).
uint64_t StartupBegin(const RankData& r);
// A rank's step after start-up: the median of its slots' mean iteration, start-up's left out.
// The step analyze reports (the median over ranks) and diff compares.
double SteadyIteration(const RankData& r);

}  // namespace perftracker::analyzer
