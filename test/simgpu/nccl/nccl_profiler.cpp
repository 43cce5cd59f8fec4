#include "nccl/nccl_profiler.h"

#include <dlfcn.h>
#include <strings.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/config.h"
#include "core/rendezvous.h"
#include "nccl/profiler_abi.h"

namespace simgpu::nccl {
namespace {

namespace pa = profiler;

constexpr double kMinStepBytes = 4 << 20;
constexpr int kMaxSteps = 8;

void Info(const char* what, const char* detail) {
  if (GetConfig().verbose)
    std::fprintf(stderr, "simgpu nccl: profiler plugin: %s%s\n", what, detail);
}

const pa::Api* LoadPlugin() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env != nullptr && strcasecmp(env, "none") == 0) return nullptr;
  std::string name = env != nullptr && env[0] != '\0' ? env : "libnccl-profiler.so";
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr && env != nullptr && env[0] != '\0') {
    lib = dlopen(("libnccl-profiler-" + name + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (lib == nullptr) {
    Info("none loaded: ", name.c_str());
    return nullptr;
  }
  const auto* api = static_cast<const pa::Api*>(dlsym(lib, "ncclProfiler_v5"));
  if (api == nullptr || api->init == nullptr || api->start_event == nullptr ||
      api->stop_event == nullptr || api->record_event_state == nullptr ||
      api->finalize == nullptr) {
    Info("no usable ncclProfiler_v5 in ", name.c_str());
    return nullptr;
  }
  Info("loaded ", api->name != nullptr ? api->name : name.c_str());
  return api;
}

const pa::Api* Plugin() {
  static const pa::Api* api = LoadPlugin();
  return api;
}

// Delivers callbacks at their device time, in time order (ties in scheduling order), from one
// thread, as NCCL's proxy progress thread would. Never destroyed: its thread may outlive main.
class ProxyThread {
 public:
  static ProxyThread& Get() {
    static ProxyThread* p = new ProxyThread;
    return *p;
  }
  void At(int64_t device_ns, std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace(device_ns, std::move(f));
    }
    cv_.notify_one();
  }

 private:
  ProxyThread() {
    std::thread([this] { Run(); }).detach();
  }
  void Run() {
    prctl(PR_SET_TIMERSLACK, 1000UL);  // state changes are timed to the microsecond
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const int64_t due = queue_.begin()->first;
      if (DeviceNowNs() < due) {
        const auto wall = std::chrono::nanoseconds(DeviceToWallNs(due));
        cv_.wait_until(lock, std::chrono::steady_clock::time_point(wall));
        continue;
      }
      std::function<void()> f = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      lock.unlock();
      f();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<int64_t, std::function<void()>> queue_;
};

struct Handles {
  void* op = nullptr;
  void* step = nullptr;
};

void Schedule(const std::shared_ptr<CommProfiler>& p, int64_t t, std::function<void()> f) {
  int64_t last = p->last_event_ns.load();
  while (t > last && !p->last_event_ns.compare_exchange_weak(last, t)) {
  }
  ProxyThread::Get().At(t, std::move(f));
}

void ScheduleOp(const std::shared_ptr<CommProfiler>& p, const NetOp& op) {
  const pa::Api* api = Plugin();
  if (op.wire_bytes <= 0 || op.end_ns >= kNeverNs || op.end_ns < op.start_ns) return;
  const int steps =
      std::clamp(static_cast<int>(std::ceil(op.wire_bytes / kMinStepBytes)), 1, kMaxSteps);
  const auto chunk = static_cast<size_t>(std::ceil(op.wire_bytes / steps));
  const double period = static_cast<double>(op.end_ns - op.start_ns) / steps;
  const double on_wire =
      std::min(period, op.bytes_per_ns > 0 ? static_cast<double>(chunk) / op.bytes_per_ns : period);
  const bool want_steps = (p->mask & pa::kProxyStepEvent) != 0;
  auto h = std::make_shared<Handles>();
  const int64_t op_start = std::min(op.arrive_ns, op.start_ns);
  const pid_t pid = getpid();
  Schedule(p, op_start, [p, h, api, op, steps, chunk, pid] {
    pa::Descr d{};
    d.type = pa::kProxyOpEvent;
    d.rank = p->rank;
    d.proxy_op.pid = pid;
    d.proxy_op.channel = 0;
    d.proxy_op.peer = op.peer;
    d.proxy_op.steps = steps;
    d.proxy_op.chunk_size = static_cast<int>(std::min<size_t>(chunk, INT32_MAX));
    d.proxy_op.is_send = op.is_send ? 1 : 0;
    api->start_event(p->context, &h->op, &d);
  });
  for (int i = 0; want_steps && i < steps; ++i) {
    const int64_t begin = i == 0 ? op_start : op.start_ns + static_cast<int64_t>(i * period);
    const int64_t done = op.start_ns + static_cast<int64_t>((i + 1) * period);
    const int64_t wire_from = done - static_cast<int64_t>(on_wire);
    Schedule(p, begin, [p, h, api, i, op, chunk] {
      pa::Descr d{};
      d.type = pa::kProxyStepEvent;
      d.parent = h->op;
      d.rank = p->rank;
      d.proxy_step.step = i;
      h->step = nullptr;
      api->start_event(p->context, &h->step, &d);
      pa::StateArgs a{};
      a.proxy_step.trans_size = chunk;
      if (h->step != nullptr) {
        api->record_event_state(h->step, op.is_send ? pa::kSendGpuWait : pa::kRecvWait, &a);
      }
    });
    if (op.is_send) {
      Schedule(p, std::max(begin, wire_from), [h, api, chunk] {
        pa::StateArgs a{};
        a.proxy_step.trans_size = chunk;
        if (h->step != nullptr) api->record_event_state(h->step, pa::kSendWait, &a);
      });
    }
    Schedule(p, done, [h, api, op, chunk] {
      if (h->step == nullptr) return;
      if (!op.is_send) {
        pa::StateArgs a{};
        a.proxy_step.trans_size = chunk;
        api->record_event_state(h->step, pa::kRecvGpuWait, &a);
      }
      api->stop_event(h->step);
      h->step = nullptr;
    });
  }
  Schedule(p, op.end_ns, [h, api] {
    if (h->op != nullptr) api->stop_event(h->op);
  });
}

}  // namespace

std::shared_ptr<CommProfiler> ProfilerInitComm(const ShmGroup& group, uint64_t comm_hash) {
  const pa::Api* api = Plugin();
  if (api == nullptr) return nullptr;
  std::set<int64_t> nodes;
  for (int r = 0; r < group.nranks(); ++r) nodes.insert(NodeOf(group.GlobalRank(r)));
  auto p = std::make_shared<CommProfiler>();
  p->rank = group.rank();
  if (api->init(&p->context, comm_hash, &p->mask, nullptr, static_cast<int>(nodes.size()),
                group.nranks(), group.rank(), nullptr) != ncclSuccess) {
    Info("init declined the communicator", "");
    return nullptr;
  }
  if ((p->mask & pa::kProxyOpEvent) == 0) {
    api->finalize(p->context);
    return nullptr;  // nothing we produce is wanted
  }
  return p;
}

void ProfilerFinalizeComm(const std::shared_ptr<CommProfiler>& p) {
  if (!p) return;
  const pa::Api* api = Plugin();
  // Blocking, as ncclCommDestroy is: the plugin has seen every event of the communicator when
  // it returns (bounded: a proxy thread that cannot keep up is not waited for forever).
  const int64_t now = DeviceNowNs();
  const int64_t t = std::max(now, p->last_event_ns.load());
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finalized = done->get_future();
  ProxyThread::Get().At(t, [p, api, done] {
    api->finalize(p->context);
    done->set_value();
  });
  const int64_t wait_ns = DeviceToWallNs(t) - DeviceToWallNs(now) + 1'000'000'000;
  finalized.wait_for(std::chrono::nanoseconds(wait_ns));
}

void ProfilerNetOps(const std::shared_ptr<CommProfiler>& p, const std::vector<NetOp>& ops) {
  if (!p) return;
  for (const NetOp& op : ops) ScheduleOp(p, op);
}

}  // namespace simgpu::nccl
