// Hangs, from the live slots (C4D's two hang classes). A communicator is hung when one of its
// ranks has had collectives in flight without the communicator moving (no launch, no
// completion) for 5 iterations, 10 s and twice the longest step after start-up, by its own
// clock:
//  - the hung collective is the first one no member completed; ranks that never launched it
//    never arrived (non-communication hang): they are the suspects, with their last Python
//    frame. Peers that launched further ahead asynchronously, each as far as its host got, do
//    not make a rank that launched it a suspect;
//  - when every rank launched the collective and none completed it, the transfer itself is
//    stuck (communication hang).
// A job that finished is not hung: when every member with a file exited normally (live-slot
// exit state NormalExit), the collective its last flush found in flight is not reported. A
// reported hang says which members were terminated (SIGTERM flush) and which vanished (still
// "running" while another rank of the job recorded its exit: SIGKILL, a crash, or still running
// when the files were copied).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

struct Hang {
  std::string collective;  // "all_reduce on comm 0x5eed0001"
  uint64_t comm_id = 0;
  uint64_t sequence = 0;
  std::vector<int> ranks_arrived;
  std::vector<int> ranks_missing;
  std::vector<std::pair<int, std::string>> last_python_frame;  // per missing (or stuck) rank
  bool communication = false;                                  // everyone arrived, nobody finished
  double stuck_s = 0;  // longest time a rank has waited in it
  int comm_size = 0;
  int ranks_without_file = 0;              // members the communicator has but no file speaks for
  std::vector<int> ranks_exited_normally;  // members whose live slot says NormalExit
  std::vector<int> ranks_sigterm;          // ... Sigterm
  std::vector<int> ranks_vanished;         // ... Running, while some rank of the job exited
};

std::vector<Hang> DetectHangs(const Dataset& ds, double median_iteration_ns);

}  // namespace perftracker::analyzer
