// A minimal NCCL profiler plugin (v5) for the stand-in's tests, independent of perftracker's:
// sums, per (peer, direction), the bytes of finished steps and the time they spent in
// SendWait / RecvWait, and writes them at finalize to $SIMGPU_TEST_PROFILER_OUT/<pid>-<rank>.txt.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "nccl/profiler_abi.h"

namespace {

namespace pa = simgpu::nccl::profiler;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Cell {
  uint64_t bytes = 0, ops = 0;
  int64_t wire_ns = 0;
};
struct Ctx {
  uint64_t comm = 0;
  int nranks = 0, nodes = 0, rank = 0;
  std::map<std::pair<int, int>, Cell> cells;  // (peer, is_send)
};
struct Ev {
  Ctx* ctx;
  bool is_op;
  int peer = -1, is_send = 0;
  Ev* op = nullptr;
  int state = 0;
  int64_t since = 0;
  uint64_t bytes = 0;
  int64_t wire = 0;
};

std::mutex g_mu;

ncclResult_t Init(void** context, uint64_t comm, int* mask, const char*, int nodes, int nranks,
                  int rank, pa::Logger) {
  *context = new Ctx{comm, nranks, nodes, rank, {}};
  *mask = static_cast<int>(pa::kProxyOpEvent | pa::kProxyStepEvent);
  return ncclSuccess;
}

ncclResult_t Start(void* context, void** handle, pa::Descr* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* ctx = static_cast<Ctx*>(context);
  if (d->type == pa::kProxyOpEvent) {
    auto* e = new Ev{ctx, true};
    e->peer = d->proxy_op.peer;
    e->is_send = d->proxy_op.is_send;
    *handle = e;
  } else if (d->type == pa::kProxyStepEvent) {
    auto* e = new Ev{ctx, false};
    e->op = static_cast<Ev*>(d->parent);
    e->since = Now();
    *handle = e;
  } else {
    *handle = nullptr;
  }
  return ncclSuccess;
}

void Close(Ev* e) {
  if (e->state == pa::kSendWait || e->state == pa::kRecvWait) e->op->wire += Now() - e->since;
}

ncclResult_t State(void* handle, int state, pa::StateArgs* args) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* e = static_cast<Ev*>(handle);
  if (e == nullptr || e->is_op) return ncclSuccess;
  Close(e);
  e->state = state;
  e->since = Now();
  if (args != nullptr) e->bytes = args->proxy_step.trans_size;
  return ncclSuccess;
}

ncclResult_t Stop(void* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* e = static_cast<Ev*>(handle);
  if (e == nullptr) return ncclSuccess;
  if (!e->is_op) {
    Close(e);
    e->op->bytes += e->bytes;
  } else {
    Cell& c = e->ctx->cells[{e->peer, e->is_send}];
    c.bytes += e->bytes;
    c.wire_ns += e->wire;
    ++c.ops;
  }
  delete e;
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* ctx = static_cast<Ctx*>(context);
  const char* dir = std::getenv("SIMGPU_TEST_PROFILER_OUT");
  if (dir != nullptr) {
    const std::string tmp = std::string(dir) + "/" + std::to_string(getpid()) + "-" +
                            std::to_string(ctx->comm) + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "comm %d %d %d\n", ctx->nranks, ctx->nodes, ctx->rank);
      for (const auto& [key, c] : ctx->cells) {
        std::fprintf(f, "cell %d %d %llu %lld %llu\n", key.first, key.second,
                     static_cast<unsigned long long>(c.bytes), static_cast<long long>(c.wire_ns),
                     static_cast<unsigned long long>(c.ops));
      }
      std::fclose(f);
      std::rename(tmp.c_str(), (tmp.substr(0, tmp.size() - 4) + ".txt").c_str());
    }
  }
  delete ctx;
  return ncclSuccess;
}

}  // namespace

extern "C" {
[[gnu::visibility("default")]] pa::Api ncclProfiler_v5 = {"simgpu-test", &Init,  &Start,
                                                          &Stop,         &State, &Finalize};
}
