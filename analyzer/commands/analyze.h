// The analysis pipeline after ingest, which analyze, diff, watch and export share: peers ->
// detect -> verdicts -> the report's model.
#pragma once

#include <memory>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

Report Analyze(std::unique_ptr<Dataset> dataset, const Thresholds& thresholds);

// A rank's step after start-up: the median of its slots' mean iteration, start-up's left out.
// The step analyze reports (the median over ranks) and diff compares.
double SteadyIteration(const RankData& r);

}  // namespace perftracker::analyzer
