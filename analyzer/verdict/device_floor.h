// What the devices ask of a step: a job whose host is late launching can step no faster than
// its busiest device works (device_floor.cpp).
#pragma once

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

// Seconds a step the busiest rank's device works after start-up: its kernels', copies' and
// memsets' device time (Align's estimate from the sampled launches) and its collectives' at the
// fastest member's time a call (a member that arrived early waits inside the collective's
// kernels: the last to arrive shows what the transfer takes). Removing a cost on the host
// leaves this work to do, so no what-if of a host cost goes below it. Streams that overlap
// (compute beside communication) make it an overstatement, which the caller drops where it
// reaches the step. 0: no device work was timed (CPU training).
double DeviceFloor(const Dataset& ds);

}  // namespace perftracker::analyzer
