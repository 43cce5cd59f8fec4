#include "core/rendezvous.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>

#include "core/clock.h"

namespace simgpu {
namespace {

constexpr int64_t kPollNs = 100 * 1000 * 1000;        // abort re-check period
constexpr int64_t kPeerCheckNs = 1000 * 1000 * 1000;  // dead-peer check period

struct alignas(64) CollSlot {
  std::atomic<uint64_t> seq1;  // collective seq + 1 once `arrival` is published
  Arrival arrival;
};

struct alignas(64) P2pSlot {
  std::atomic<uint64_t> send1;  // message index + 1 once the sender's side is published
  std::atomic<uint64_t> recv1;  // message index + 1 once the receiver's side is published
  P2pSide send;
  P2pSide recv;
};

struct alignas(64) SplitSlot {
  std::atomic<uint64_t> generation1;
  int32_t color;
  int32_t key;
};

std::string SegmentName(const uint8_t key[16]) {
  char name[64];
  int n = std::snprintf(name, sizeof(name), "/simgpu-");
  for (int i = 0; i < 16; ++i) n += std::snprintf(name + n, sizeof(name) - n, "%02x", key[i]);
  return name;
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000),
              static_cast<long>(timeout_ns % 1000000000)};
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct ShmGroup::Segment {
  std::atomic<uint32_t> bell;
  std::atomic<int32_t> nranks;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> unlink_votes;
  std::atomic<int32_t> pid[kMaxGroupRanks];
  std::atomic<int64_t> global_rank[kMaxGroupRanks];
  SplitSlot split[2][kMaxGroupRanks];
  // Followed by CollSlot[kCollSlots][nranks] and P2pSlot[nranks][nranks][kP2pSlots].

  static size_t Bytes(int n) {
    return sizeof(Segment) + sizeof(CollSlot) * kCollSlots * n +
           sizeof(P2pSlot) * static_cast<size_t>(n) * n * kP2pSlots;
  }
  CollSlot& Coll(int n, uint64_t seq, int rank) {
    auto* base = reinterpret_cast<CollSlot*>(this + 1);
    return base[(seq % kCollSlots) * n + rank];
  }
  P2pSlot& P2p(int n, int src, int dst, uint64_t index) {
    auto* base = reinterpret_cast<P2pSlot*>(reinterpret_cast<CollSlot*>(this + 1) + kCollSlots * n);
    return base[(static_cast<size_t>(src) * n + dst) * kP2pSlots + index % kP2pSlots];
  }
};

RendezvousStatus ShmGroup::Join(const uint8_t key[16], int nranks, int rank, int64_t global_rank,
                                std::shared_ptr<ShmGroup>* out) {
  if (nranks < 1 || nranks > kMaxGroupRanks || rank < 0 || rank >= nranks) {
    return RendezvousStatus::kInvalidArgument;
  }
  std::string name = SegmentName(key);
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return RendezvousStatus::kSystemError;
  size_t bytes = Segment::Bytes(nranks);
  struct stat st {};
  // Every rank truncates to the same size, so a late truncate never clears published data.
  bool sized = fstat(fd, &st) == 0 &&
               (static_cast<size_t>(st.st_size) >= bytes || ftruncate(fd, bytes) == 0);
  void* map = sized ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return RendezvousStatus::kSystemError;
  auto* segment = static_cast<Segment*>(map);
  int32_t expected = 0;
  int32_t my_pid = getpid();
  if ((!segment->nranks.compare_exchange_strong(expected, nranks) && expected != nranks) ||
      !segment->pid[rank].compare_exchange_strong(expected = 0, my_pid)) {
    munmap(map, bytes);
    return RendezvousStatus::kInvalidArgument;  // size mismatch or a duplicate rank
  }
  segment->global_rank[rank].store(global_rank);
  segment->joined.fetch_add(1);
  auto group = std::shared_ptr<ShmGroup>(new ShmGroup(segment, bytes, nranks, rank));
  group->Ring();
  RendezvousStatus status =
      group->WaitUntil([segment, nranks] { return segment->joined.load() >= nranks; });
  if (status != RendezvousStatus::kOk) return status;
  if (segment->unlink_votes.fetch_add(1) + 1 == nranks) shm_unlink(name.c_str());
  *out = std::move(group);
  return RendezvousStatus::kOk;
}

ShmGroup::ShmGroup(Segment* segment, size_t bytes, int nranks, int rank)
    : segment_(segment), bytes_(bytes), nranks_(nranks), rank_(rank) {}

ShmGroup::~ShmGroup() { munmap(segment_, bytes_); }

int64_t ShmGroup::GlobalRank(int group_rank) const {
  return segment_->global_rank[group_rank].load();
}

void ShmGroup::Ring() {
  segment_->bell.fetch_add(1);
  FutexWakeAll(&segment_->bell);
}

void ShmGroup::Abort() {
  aborted_.store(true);
  Ring();
}

void ShmGroup::CheckPeers() {
  for (int r = 0; r < nranks_; ++r) {
    int32_t pid = segment_->pid[r].load();
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) peer_lost_.store(true);
  }
}

RendezvousStatus ShmGroup::WaitUntil(const std::function<bool()>& ready) {
  int64_t next_peer_check = WallNowNs() + kPeerCheckNs;
  for (;;) {
    // Read the bell before the condition: a publication in between changes it and the futex
    // wait returns at once, so no wake-up is lost.
    uint32_t bell = segment_->bell.load();
    if (ready()) return RendezvousStatus::kOk;
    if (aborted_.load()) return RendezvousStatus::kAborted;
    FutexWait(&segment_->bell, bell, kPollNs);
    if (WallNowNs() >= next_peer_check) {
      // A dead peer is only reported (like NCCL's async error); the wait goes on, as a real
      // collective kernel would, until the communicator is aborted.
      CheckPeers();
      next_peer_check = WallNowNs() + kPeerCheckNs;
    }
  }
}

RendezvousStatus ShmGroup::Collective(uint64_t seq, const Arrival& mine,
                                      std::vector<Arrival>* all) {
  CollSlot& slot = segment_->Coll(nranks_, seq, rank_);
  slot.arrival = mine;
  slot.seq1.store(seq + 1, std::memory_order_release);
  Ring();
  RendezvousStatus status = WaitUntil([&] {
    for (int r = 0; r < nranks_; ++r) {
      if (segment_->Coll(nranks_, seq, r).seq1.load(std::memory_order_acquire) < seq + 1) {
        return false;
      }
    }
    return true;
  });
  if (status != RendezvousStatus::kOk) return status;
  all->resize(nranks_);
  for (int r = 0; r < nranks_; ++r) (*all)[r] = segment_->Coll(nranks_, seq, r).arrival;
  return RendezvousStatus::kOk;
}

void ShmGroup::PostSend(int peer, uint64_t index, const P2pSide& mine) {
  P2pSlot& slot = segment_->P2p(nranks_, rank_, peer, index);
  slot.send = mine;
  slot.send1.store(index + 1, std::memory_order_release);
  Ring();
}

void ShmGroup::PostRecv(int peer, uint64_t index, const P2pSide& mine) {
  P2pSlot& slot = segment_->P2p(nranks_, peer, rank_, index);
  slot.recv = mine;
  slot.recv1.store(index + 1, std::memory_order_release);
  Ring();
}

RendezvousStatus ShmGroup::WaitRecvSide(int peer, uint64_t index, P2pSide* theirs) {
  P2pSlot& slot = segment_->P2p(nranks_, rank_, peer, index);
  RendezvousStatus status = WaitUntil([&] { return slot.recv1.load() >= index + 1; });
  if (status == RendezvousStatus::kOk) *theirs = slot.recv;
  return status;
}

RendezvousStatus ShmGroup::WaitSendSide(int peer, uint64_t index, P2pSide* theirs) {
  P2pSlot& slot = segment_->P2p(nranks_, peer, rank_, index);
  RendezvousStatus status = WaitUntil([&] { return slot.send1.load() >= index + 1; });
  if (status == RendezvousStatus::kOk) *theirs = slot.send;
  return status;
}

RendezvousStatus ShmGroup::Split(uint64_t generation, int color, int key,
                                 std::vector<std::pair<int, int>>* all) {
  // Two generations alternate: a rank cannot start generation g+2 before every rank has
  // published g+1, which each does only after reading g.
  SplitSlot* slots = segment_->split[generation % 2];
  slots[rank_].color = color;
  slots[rank_].key = key;
  slots[rank_].generation1.store(generation + 1, std::memory_order_release);
  Ring();
  RendezvousStatus status = WaitUntil([&] {
    for (int r = 0; r < nranks_; ++r) {
      if (slots[r].generation1.load(std::memory_order_acquire) < generation + 1) return false;
    }
    return true;
  });
  if (status != RendezvousStatus::kOk) return status;
  all->clear();
  for (int r = 0; r < nranks_; ++r) all->emplace_back(slots[r].color, slots[r].key);
  return RendezvousStatus::kOk;
}

}  // namespace simgpu
