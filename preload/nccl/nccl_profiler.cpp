// NCCL profiler plugin (ncclProfiler_v5): libperftracker.so is also the profiler NCCL loads, so
// the proxy events of network connections reach the same recorder as the hooks. Each finished
// proxy operation becomes one call of a collective pattern (op net_send / net_recv, comm_id =
// NCCL's commHash, comm_rank = ours, peer = the remote rank in the communicator, device time =
// time on the wire), so per-link cells ride the existing window format and the analyzer maps
// peers to global ranks through the live slots like any communicator.
//
// NCCL only makes proxy events for network (inter-node) transport: intra-node P2P/NVLink links
// have none, which is why the matrix covers network links only.
#include <dlfcn.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "preload/core/log.h"
#include "preload/core/recorder.h"
#include "preload/nccl/nccl_profiler_abi.h"
#include "preload/nccl/net_links.h"

namespace perftracker::preload {
namespace {

namespace np = nccl_profiler;

std::atomic<bool> g_enabled{false};  // we set NCCL_PROFILER_PLUGIN to ourselves
pid_t g_pid = 0;

// Sizes vary a little between calls (last chunks, protocols): 5 significant bits keep the
// per-byte time within 3% and the number of patterns per connection small.
uint64_t RoundBytes(uint64_t b) {
  if (b < 64) return b;
  const int shift = 63 - __builtin_clzll(b) - 4;
  const uint64_t half = uint64_t{1} << (shift - 1);
  return ((b + half) >> shift) << shift;
}

// Connection::cache memoizes the pattern slot: (rounded bytes << 32) | (slot + 1). Sizes of
// 4 GiB and more skip the memo (and intern every time, a cold path).
void Emit(net::Connection& c, const net::Transfer& t) {
  if (!Active()) return;
  const uint64_t bytes = RoundBytes(t.bytes);
  const uint64_t memo = c.cache.load(std::memory_order_relaxed);
  Slot slot = kNoSlot;
  if (memo != 0 && (memo >> 32) == bytes) {
    slot = static_cast<Slot>(memo & 0xffffffffu) - 1;
  } else {
    const net::Comm& comm = *c.comm;
    slot = InternCollective(
        comm.id, comm.size, comm.rank,
        t.is_send ? format::CollectiveOp::kNetSend : format::CollectiveOp::kNetRecv, t.peer, bytes,
        t.is_send ? "net_send" : "net_recv");
    if (slot != kNoSlot && bytes <= 0xffffffffu) {
      c.cache.store((bytes << 32) | (static_cast<uint64_t>(slot) + 1), std::memory_order_relaxed);
    }
  }
  if (slot == kNoSlot) return;
  // Launch and completion together: nothing stays in flight, so hang detection never sees
  // these communicators as stuck.
  RecordCollectiveLaunch(slot, t.seq, t.start_ns, 0);
  RecordCollectiveDone(slot, t.seq, t.wire_ns > 0 ? t.wire_ns : 1);
}

net::NetLinks& Links() {
  static net::NetLinks links(&Emit);
  return links;
}

ncclResult_t Init(void** context, uint64_t comm_id, int* mask, const char*, int, int nranks,
                  int rank, np::Logger) {
  if (context == nullptr || mask == nullptr) return ncclInvalidArgument;
  *context = nullptr;
  *mask = 0;
  // Not ours to run (a process that only inherited NCCL_PROFILER_PLUGIN): NCCL drops the plugin.
  if (!g_enabled.load(std::memory_order_acquire) || !Active()) return ncclInternalError;
  if (nranks <= 0 || rank < 0) return ncclSuccess;
  net::Comm* comm =
      Links().OpenComm(comm_id, static_cast<uint32_t>(nranks), static_cast<uint32_t>(rank));
  if (comm == nullptr) return ncclSuccess;
  *context = comm;
  *mask = static_cast<int>(np::kProxyOp | np::kProxyStep);
  return ncclSuccess;
}

ncclResult_t StartEvent(void* context, void** handle, np::EventDescrV5* d) {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  if (context == nullptr || d == nullptr) return ncclSuccess;
  if (d->type == np::kProxyOp) {
    // PXN: an op made by another process is run by our proxy; it is that process's link.
    if (d->proxy_op.pid != g_pid) return ncclSuccess;
    *handle = Links().StartOp(
        static_cast<net::Comm*>(context), d->proxy_op.peer, d->proxy_op.is_send != 0,
        static_cast<uint64_t>(std::max(d->proxy_op.chunk_size, 0)), d->proxy_op.steps, NowNs());
  } else if (d->type == np::kProxyStep) {
    *handle = Links().StartStep(d->parent, NowNs());
  }
  return ncclSuccess;
}

ncclResult_t StopEvent(void* handle) {
  if (handle != nullptr) Links().Stop(handle, NowNs());
  return ncclSuccess;
}

ncclResult_t RecordState(void* handle, int state, np::StateArgsV5* args) {
  if (handle == nullptr) return ncclSuccess;
  uint64_t bytes = 0;
  if (args != nullptr && state >= np::kSendGpuWait && state <= np::kRecvGpuWait) {
    bytes = args->proxy_step.trans_size;
  }
  Links().StepState(handle, state, bytes, NowNs());
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  if (context != nullptr) Links().CloseComm(static_cast<net::Comm*>(context));
  return ncclSuccess;
}

}  // namespace

// Called once at start-up of an active rank, before NCCL can initialize: NCCL reads
// NCCL_PROFILER_PLUGIN when its first communicator is created.
void ConfigureNcclProfilerPlugin() {
  g_pid = getpid();
  Dl_info info{};
  char self[PATH_MAX];
  if (dladdr(reinterpret_cast<void*>(&ConfigureNcclProfilerPlugin), &info) == 0 ||
      info.dli_fname == nullptr || realpath(info.dli_fname, self) == nullptr) {
    Warn("cannot locate libperftracker.so: no per-link network data (NCCL profiler plugin)");
    return;
  }
  const char* current = getenv("NCCL_PROFILER_PLUGIN");
  if (current == nullptr || current[0] == '\0') {
    if (setenv("NCCL_PROFILER_PLUGIN", self, 1) == 0) g_enabled.store(true);
    return;
  }
  char theirs[PATH_MAX];
  if (realpath(current, theirs) != nullptr && std::strcmp(theirs, self) == 0) {
    g_enabled.store(true);
    return;
  }
  if (strcasecmp(current, "none") != 0) {
    Warn(
        "NCCL_PROFILER_PLUGIN=%s is another profiler plugin (NCCL loads one): no per-link "
        "network data",
        current);
  }
}

}  // namespace perftracker::preload

// NCCL looks this symbol up by name in the library NCCL_PROFILER_PLUGIN names.
extern "C" {
[[gnu::visibility("default")]] perftracker::preload::nccl_profiler::ProfilerV5 ncclProfiler_v5 = {
    "perftracker",
    &perftracker::preload::Init,
    &perftracker::preload::StartEvent,
    &perftracker::preload::StopEvent,
    &perftracker::preload::RecordState,
    &perftracker::preload::Finalize,
};
}
