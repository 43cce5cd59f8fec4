// Stage 1: find every ring file under a directory tree, decode them on all cores, fold each
// rank's windows into iteration-aligned slots as they stream by, and settle which file speaks for
// which rank (identity comes from file headers, never from file names).
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "analyzer/ingest/model.h"
#include "analyzer/ingest/select.h"

namespace perftracker::analyzer {

struct IngestOptions {
  int threads = 0;                   // 0: one per core
  // A progress bar (progress.h) goes here when reading takes over 1 s; callers pass stderr only
  // when it is a terminal (TerminalOrNull).
  std::ostream* progress = nullptr;
};

// Reads every ring file and reduced file under `root` (or `root` itself) into `ds` (its files,
// catalog and diagnostics) and returns every rank read, unsettled: helpers, restarted and
// duplicate ranks included (`reduce` keeps them all for the analysis that reads its output).
// Empty and *error when `root` cannot be listed or nothing under it is readable.
std::vector<RankData> ReadFiles(const std::string& root, const IngestOptions& options, Dataset* ds,
                                std::string* error, const WindowSelection& selection = {});

// Null and *error when `root` cannot be listed or holds no ring file at all; damaged files are
// diagnostics in the result, never errors.
// Only the windows `selection` names are folded in.
std::unique_ptr<Dataset> Ingest(const std::string& root, const IngestOptions& options,
                                std::string* error, const WindowSelection& selection = {});

}  // namespace perftracker::analyzer
