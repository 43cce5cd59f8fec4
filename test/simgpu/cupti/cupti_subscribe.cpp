// Subscribers, timestamps and versions. CUPTI 13.0 allows one subscriber: a second
// cuptiSubscribe fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, which is how a
// collector finds out that another tool (Kineto, Nsight) already owns CUPTI. Callbacks are
// accepted but never invoked: the simulator only produces activity records.
#include <cupti.h>

#include <atomic>

#include "core/clock.h"

namespace simgpu::cupti {
namespace {

struct Subscriber {
  CUpti_CallbackFunc callback;
  void* user_data;
};

std::atomic<Subscriber*> g_subscriber{nullptr};

}  // namespace
}  // namespace simgpu::cupti

namespace sp = simgpu::cupti;

extern "C" {

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* user_data) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  auto* mine = new sp::Subscriber{callback, user_data};
  sp::Subscriber* expected = nullptr;
  if (!sp::g_subscriber.compare_exchange_strong(expected, mine)) {
    delete mine;
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(mine);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  auto* mine = reinterpret_cast<sp::Subscriber*>(subscriber);
  sp::Subscriber* expected = mine;
  if (!mine || !sp::g_subscriber.compare_exchange_strong(expected, nullptr)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  delete mine;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain,
                                CUpti_CallbackId) {
  return subscriber ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiEnableDomain(uint32_t, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain) {
  return subscriber ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = static_cast<uint64_t>(simgpu::DeviceNowNs());
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetVersion(uint32_t* version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiFinalize(void) { return CUPTI_SUCCESS; }

CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

}  // extern "C"
