// Hardware and host signals (FORMAT.md "signals") compared across ranks. A signal that deviates
// on a verdict's ranks, in the verdict's part of the machine, is the verdict's reason ("SM clock
// 1,523 MHz vs peers 1,980 MHz; throttle reasons: HW thermal slowdown"); one that deviates with
// no verdict to explain is a warning, never a candidate: a warm GPU that keeps pace costs nothing.
#pragma once

#include <string>
#include <vector>

#include "analyzer/base/json_window.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/candidate.h"
#include "analyzer/verdict/signal_specs.h"

namespace perftracker::analyzer {

struct SignalDeviation {
  std::string name;  // "gpu.sm_clock_mhz"
  SignalScope scope = SignalScope::kHost;
  std::vector<int> ranks;  // the rank, or every rank of the host for a node-wide signal
  std::string host;        // node-wide signals: the host
  std::string device;      // the instance that deviates most ("mlx5_0/1", a GPU's bus id)
  double value = 0;        // in the spec's unit (flags: the bits)
  double peers = 0;        // the other ranks' median (flags: the bits most of them have)
  double max = 0;          // the maximum it could be (clocks, PCIe), 0 when unknown
  std::string text;        // one sentence for reports
  Json ToJson() const;
};

// Every deviating signal of the dataset's ranks, rank order.
std::vector<SignalDeviation> SignalDeviations(const Dataset& ds);

// Attaches each deviation to the candidates it explains (their ranks overlap, the scope fits the
// category) as evidence "signals"; returns those that explain none (the report's warnings).
std::vector<SignalDeviation> AttachSignals(std::vector<SignalDeviation> deviations,
                                           std::vector<Candidate>* candidates);

}  // namespace perftracker::analyzer
