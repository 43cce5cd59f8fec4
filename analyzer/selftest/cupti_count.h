// Ground truth from CUPTI: how many kernels (by name) and copies (by direction) the device ran,
// from activity records. Used only in the workload's dedicated plain run: CUPTI allows one
// subscriber, and in the preloaded runs that is the library.
#pragma once

#include <map>
#include <string>

namespace perftracker::selftest {

struct CuptiCounts {
  std::map<std::string, long> kernels;  // by name
  std::map<std::string, long> copies;   // "HtoD", "DtoH", "DtoD", ...
  long dropped = 0;
};

// Loads libcupti (.13, else .12) and enables kernel and copy records; false (and *why) when
// CUPTI is not usable. Call before the first CUDA call.
bool StartCuptiCount(std::string* soname, std::string* why);
// Flushes every record and returns the counts.
CuptiCounts FinishCuptiCount();

}  // namespace perftracker::selftest
