#include "analyzer/selftest/cupti_count.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace perftracker::selftest {
namespace {

// The library has a table like this one (preload/cuda/cupti.cpp), kept apart on purpose: these
// counts are the ground truth the library's own CUPTI path is judged against, so they share none
// of its code, and the workload links nothing of the library (it must run plain as well).
struct Api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
};
Api g_api;
std::mutex g_mu;  // CUPTI completes buffers on its own threads
CuptiCounts g_counts;

constexpr size_t kBufferBytes = 8 << 20;

const char* CopyName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    default:
      return "other";
  }
}

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* record = nullptr;
  while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      // `name` sits at the same offset in every kernel record version CUPTI 12 and 13 deliver.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      ++g_counts.kernels[k->name != nullptr ? k->name : "?"];
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      ++g_counts.copies[CopyName(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record)->copyKind)];
    }
  }
  std::free(buffer);
}

template <typename Fn>
bool ResolveCupti(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

bool StartCuptiCount(std::string* soname, std::string* why) {
  void* lib = nullptr;
  for (const char* s : {"libcupti.so.13", "libcupti.so.12"}) {
    if ((lib = dlopen(s, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
      *soname = s;
      break;
    }
  }
  if (lib == nullptr) {
    *why = "libcupti.so.13, libcupti.so.12 not found";
    return false;
  }
  if (!ResolveCupti(lib, "cuptiActivityRegisterCallbacks", &g_api.register_callbacks) ||
      !ResolveCupti(lib, "cuptiActivityEnable", &g_api.enable) ||
      !ResolveCupti(lib, "cuptiActivityFlushAll", &g_api.flush_all) ||
      !ResolveCupti(lib, "cuptiActivityGetNextRecord", &g_api.next_record) ||
      !ResolveCupti(lib, "cuptiActivityGetNumDroppedRecords", &g_api.dropped)) {
    *why = *soname + " lacks the Activity API";
    return false;
  }
  if (g_api.register_callbacks(Requested, Completed) != CUPTI_SUCCESS ||
      g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      g_api.enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
    *why = "CUPTI activity records could not be enabled (another profiler?)";
    return false;
  }
  return true;
}

CuptiCounts FinishCuptiCount() {
  g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mu);
  size_t dropped = 0;
  if (g_api.dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_counts.dropped = long(dropped);
  return g_counts;
}

}  // namespace perftracker::selftest
