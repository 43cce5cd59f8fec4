// Cross-process rendezvous in shared memory: the wire that NCCL stand-in communicators use.
//
// One segment per communicator, /dev/shm/simgpu-<key>, keyed by the 16 first bytes of the
// ncclUniqueId. All-zero bytes are a valid initial state, so ranks may create and join it in any
// order without an initialisation race. It holds, per rank, the arrival published at each
// collective (a ring of kCollSlots sequence numbers), p2p channels for every ordered pair, and
// split requests. Every rank writes only its own slots; everybody reads. Publication is a
// release-store of a sequence number; waiters sleep on a futex "bell" that every publication
// rings (never spin: 16 ranks share 2 cores), re-checking every 100 ms for a local abort and
// every second for dead peers.
//
// The segment name is unlinked once every rank has mapped it, so no file outlives the job unless
// a rank dies during initialisation.
#ifndef SIMGPU_CORE_RENDEZVOUS_H_
#define SIMGPU_CORE_RENDEZVOUS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace simgpu {

inline constexpr int kMaxGroupRanks = 256;
inline constexpr int kCollSlots = 8;
inline constexpr int kP2pSlots = 32;

// What a rank publishes when its stream reaches a collective.
struct Arrival {
  int64_t arrival_ns = 0;        // device time the collective reached the head of the stream
  int64_t extra_ns = 0;          // a stall on this rank (kNeverNs: forever)
  double ring_bytes_per_ns = 0;  // this rank's link to its ring successor
  double tree_bytes_per_ns = 0;  // this rank's link to its tree parent (0 for the root)
};

// One side of a point-to-point transfer.
struct P2pSide {
  int64_t arrival_ns = 0;
  uint64_t bytes = 0;
  double bytes_per_ns = 0;
};

enum class RendezvousStatus { kOk, kInvalidArgument, kSystemError, kAborted };

class ShmGroup {
 public:
  // Maps (creating if needed) the segment for `key` and blocks until all `nranks` have joined.
  static RendezvousStatus Join(const uint8_t key[16], int nranks, int rank, int64_t global_rank,
                               std::shared_ptr<ShmGroup>* out);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  int nranks() const { return nranks_; }
  int rank() const { return rank_; }
  int64_t GlobalRank(int group_rank) const;

  // Publishes this rank's arrival at collective `seq`, then waits for every rank's.
  RendezvousStatus Collective(uint64_t seq, const Arrival& mine, std::vector<Arrival>* all);

  // The `index`-th message from this rank to `peer` (send) or from `peer` (recv). Post both
  // sides of a group first, then wait for the peers, so paired sends/receives never deadlock.
  void PostSend(int peer, uint64_t index, const P2pSide& mine);
  void PostRecv(int peer, uint64_t index, const P2pSide& mine);
  RendezvousStatus WaitRecvSide(int peer, uint64_t index, P2pSide* theirs);  // for a send
  RendezvousStatus WaitSendSide(int peer, uint64_t index, P2pSide* theirs);  // for a recv

  // Host-side exchange for ncclCommSplit number `generation`: every rank's (color, key).
  RendezvousStatus Split(uint64_t generation, int color, int key,
                         std::vector<std::pair<int, int>>* all);

  // Fails every current and future wait of this process on the group (ncclCommAbort).
  void Abort();
  bool aborted() const { return aborted_.load(); }
  // Set once a peer process is found dead while we wait for it.
  bool peer_lost() const { return peer_lost_.load(); }

 private:
  struct Segment;
  ShmGroup(Segment* segment, size_t bytes, int nranks, int rank);
  RendezvousStatus WaitUntil(const std::function<bool()>& ready);
  void Ring();
  void CheckPeers();

  Segment* segment_;
  size_t bytes_;
  int nranks_;
  int rank_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> peer_lost_{false};
};

}  // namespace simgpu

#endif  // SIMGPU_CORE_RENDEZVOUS_H_
