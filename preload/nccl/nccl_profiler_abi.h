// The NCCL profiler plugin interface, version 5 (`ncclProfiler_v5`, NCCL 2.26-2.28; NCCL 2.28.9
// is what /usr/local/cuda ships). Written from the layout documented in NVIDIA/nccl
// ext-profiler/README.md and src/include/plugin/profiler/profiler_v5.h + nccl_profiler.h; the
// static_asserts pin every offset we read, so a mismatch fails the build instead of a job.
//
// NCCL dlopens the library named by NCCL_PROFILER_PLUGIN, looks up `ncclProfiler_v5` (falling
// back to v4..v1), calls init once per communicator and then start/stop/recordEventState from
// its own threads (user thread for Group/Coll/P2p, proxy progress thread for ProxyOp/ProxyStep).
#pragma once

#include <nccl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace perftracker::preload::nccl_profiler {

// Event type bits (descriptor `type`, init's activation mask).
enum : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,
  kNetPlugin = 1u << 7,
};

// ProxyStep states (ncclProfilerEventState_t values).
enum State : int {
  kSendGpuWait = 8,  // waiting for the GPU to fill the step's buffer
  kSendWait = 9,     // handed to the network, waiting for the transfer to complete
  kRecvWait = 10,    // posted to the network, waiting for data
  kRecvFlushWait = 11,
  kRecvGpuWait = 12,   // received, waiting for the GPU to consume it
  kSendPeerWait = 20,  // waiting for the receiver's credit (clear to send)
};

struct EventDescrV5 {
  uint64_t type;
  void* parent;  // the parent event's handle (Coll/P2p for a ProxyOp, ProxyOp for a ProxyStep)
  int rank;      // rank in the communicator
  union {
    struct {
      bool graph_captured;
      int group_depth;
    } group_api;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graph_captured;
    } coll_api;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graph_captured;
    } p2p_api;
    struct {
      void* stream;
    } kernel_launch;
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
      pid_t pid;  // process that made the op: its parent handle is only ours if it is us
      uint8_t channel;
      int peer;        // remote rank in the communicator
      int steps;       // network transfers of this op
      int chunk_size;  // bytes of one step
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      uint8_t channel;
      uint64_t gpu_timer;
    } kernel_ch;
    struct {
      int64_t id;
      void* data;
    } net_plugin;
  };
};

union StateArgsV5 {
  struct {
    size_t trans_size;  // bytes of this step
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    uint64_t gpu_timer;
  } kernel_ch;
};

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);

struct ProfilerV5 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t comm_id, int* activation_mask,
                       const char* comm_name, int nodes, int nranks, int rank, Logger log);
  ncclResult_t (*start_event)(void* context, void** handle, EventDescrV5* descr);
  ncclResult_t (*stop_event)(void* handle);
  ncclResult_t (*record_event_state)(void* handle, int state, StateArgsV5* args);
  ncclResult_t (*finalize)(void* context);
};

// x86-64 / aarch64 LP64 layout of NCCL 2.28's ncclProfilerEventDescr_v5_t.
static_assert(offsetof(EventDescrV5, parent) == 8);
static_assert(offsetof(EventDescrV5, rank) == 16);
static_assert(offsetof(EventDescrV5, coll) == 24);
static_assert(sizeof(EventDescrV5) == 112);
static_assert(offsetof(EventDescrV5, coll.channels) == 24 + 56);
static_assert(offsetof(EventDescrV5, coll.parent_group) == 24 + 80);
static_assert(offsetof(EventDescrV5, p2p.peer) == 24 + 32);
static_assert(offsetof(EventDescrV5, proxy_op.channel) == 24 + 4);
static_assert(offsetof(EventDescrV5, proxy_op.peer) == 24 + 8);
static_assert(offsetof(EventDescrV5, proxy_op.steps) == 24 + 12);
static_assert(offsetof(EventDescrV5, proxy_op.chunk_size) == 24 + 16);
static_assert(offsetof(EventDescrV5, proxy_op.is_send) == 24 + 20);
static_assert(sizeof(StateArgsV5) == 8);
static_assert(sizeof(ProfilerV5) == 6 * sizeof(void*));
static_assert(sizeof(ncclResult_t) == sizeof(int));

}  // namespace perftracker::preload::nccl_profiler
