// What the NCCL hooks know about each communicator: an id every member rank computes alike, its
// size and our rank in it (through the public API only), and the per-communicator sequence
// number of collectives.
//
// Who writes, who reads: init/split hooks register a communicator (any thread); collective hooks
// read it and bump `seq` (usually one thread per communicator, atomics all the same). Entries
// live in a fixed table keyed by the ncclComm_t pointer and are never freed: a destroyed
// communicator's entry is reused when NCCL hands out the same pointer again (Register resets
// it). Full table: the communicator's collectives are passed through unrecorded.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>

#include "preload/core/recorder.h"
#include "preload/core/symbols.h"

namespace perftracker::preload {

struct CommEntry {
  std::atomic<uintptr_t> key{0};
  std::atomic<bool> live{false};
  uint64_t id = 0;
  std::atomic<bool> identity_known{false};  // size/rank read once the communicator is ready
  // Atomic: two threads' first collectives on one communicator may both fill them in (the same
  // values); identity_known's release/acquire orders them for readers.
  std::atomic<uint32_t> size{0};
  std::atomic<uint32_t> rank{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<uint32_t> splits{0};  // children made so far: names the next child alike on all ranks
  // A non-blocking communicator's launch that returned ncclInProgress: its work is not on its
  // stream yet. 1 + its sequence number (0: none), its collective slot and stream; taken by the
  // ncclCommGetAsyncError hook once NCCL reports the launch done (nccl_async.cpp).
  std::atomic<uint64_t> pending_seq{0};
  std::atomic<Slot> pending_slot{kNoSlot};
  std::atomic<uintptr_t> pending_stream{0};
};

// 64-bit FNV-1a: deterministic across processes and builds, unlike std::hash.
uint64_t HashBytes(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);

// Records that `comm` exists with `id` (after a successful init or split).
void RegisterComm(ncclComm_t comm, uint64_t id);
// Marks `comm` gone (destroy, abort).
void ForgetComm(ncclComm_t comm);
// The entry of `comm`, registering a communicator we never saw created (made before we were
// active, or by an entry point we do not hook) under an id derived from the order of first
// sight. Null when the table is full.
CommEntry* FindComm(ncclComm_t comm);
// The entry of `comm` if it is registered, else null (registers nothing: for calls whose order
// differs between ranks, such as a watchdog's polling).
CommEntry* KnownComm(ncclComm_t comm);
// Fills size/rank through ncclCommCount/ncclCommUserRank if not yet known. False while NCCL
// cannot tell (a non-blocking communicator still initializing).
bool EnsureIdentity(CommEntry* entry, ncclComm_t comm, const void* caller);

// Notes that collective `seq` (`slot`, on `stream`) of `entry` returned ncclInProgress: its
// work reaches the stream later, so it gets no device time, only a completion marker recorded
// once ncclCommGetAsyncError reports success (nccl_async.cpp). Keeps the highest sequence
// number: its completion implies the earlier ones'.
void NotePending(CommEntry* entry, Slot slot, uint64_t seq, cudaStream_t stream);

// The collective pattern slot of (communicator, op, peer, bytes), interned once.
Slot CollectiveSlot(CommEntry* entry, format::CollectiveOp op, int32_t peer, uint64_t bytes,
                    const char* name);

// Bytes of one element of `type` (0 for an unknown type).
uint64_t DtypeBytes(ncclDataType_t type);

// NCCL version check, done once through ncclGetVersion: an unknown major version makes every
// NCCL hook a pass-through after one warning.
bool NcclSupported();

// True when an NCCL call should be recorded: an active rank, a known NCCL, not inside a hook.
// (Not the CUDA runtime check: NCCL links its own runtime and may run without libcudart.)
inline bool NcclTracing() { return !t_in_hook && Active() && NcclSupported(); }

}  // namespace perftracker::preload
