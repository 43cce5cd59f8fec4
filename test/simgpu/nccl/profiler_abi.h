// The part of NCCL's profiler plugin interface v5 (NCCL 2.28) the stand-in drives, written from
// the layout documented in NVIDIA/nccl ext-profiler/README.md and
// src/include/plugin/profiler/profiler_v5.h. Kept apart from preload's copy on purpose: each
// side is checked against the documented offsets, not against the other.
#ifndef SIMGPU_NCCL_PROFILER_ABI_H_
#define SIMGPU_NCCL_PROFILER_ABI_H_

#include <nccl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace simgpu::nccl::profiler {

enum : uint64_t {
  kGroupEvent = 1u << 0,
  kCollEvent = 1u << 1,
  kP2pEvent = 1u << 2,
  kProxyOpEvent = 1u << 3,
  kProxyStepEvent = 1u << 4,
};

enum State : int {
  kSendGpuWait = 8,
  kSendWait = 9,
  kRecvWait = 10,
  kRecvFlushWait = 11,
  kRecvGpuWait = 12,
  kSendPeerWait = 20,
};

struct Descr {
  uint64_t type;
  void* parent;
  int rank;
  union {
    struct {
      uint64_t seq;
      const char* func;
      const void* send_buff;
      void* recv_buff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t channels;
      uint8_t warps;
      const char* algo;
      const char* proto;
      void* parent_group;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t channels;
      void* parent_group;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channel;
      int peer;
      int steps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
  };
};

union StateArgs {
  struct {
    size_t trans_size;
  } proxy_step;
  void* data;
};

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);

struct Api {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t comm_id, int* activation_mask,
                       const char* comm_name, int nodes, int nranks, int rank, Logger log);
  ncclResult_t (*start_event)(void* context, void** handle, Descr* descr);
  ncclResult_t (*stop_event)(void* handle);
  ncclResult_t (*record_event_state)(void* handle, int state, StateArgs* args);
  ncclResult_t (*finalize)(void* context);
};

static_assert(offsetof(Descr, rank) == 16);
static_assert(offsetof(Descr, coll) == 24);
static_assert(sizeof(Descr) == 112);
static_assert(offsetof(Descr, coll.algo) == 24 + 64);
static_assert(offsetof(Descr, p2p.peer) == 24 + 32);
static_assert(offsetof(Descr, proxy_op.peer) == 24 + 8);
static_assert(offsetof(Descr, proxy_op.is_send) == 24 + 20);
static_assert(sizeof(StateArgs) == 8);
static_assert(sizeof(Api) == 6 * sizeof(void*));

}  // namespace simgpu::nccl::profiler

#endif  // SIMGPU_NCCL_PROFILER_ABI_H_
