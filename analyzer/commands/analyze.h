// The analysis pipeline after ingest, which analyze, diff, watch and export share: peers ->
// detect -> verdicts -> the report's model.
#pragma once

#include <memory>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

Report Analyze(std::unique_ptr<Dataset> dataset, const Thresholds& thresholds);

}  // namespace perftracker::analyzer
