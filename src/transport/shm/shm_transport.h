// The shared-memory transport behind createTransport (transport.h): the class, its waiting
// constants and the templates its two files share. transport.cc sets it up and runs it,
// transport_board.cc serves the small-op board. Private to src/transport/shm.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/idle_wait.h"
#include "base/log.h"
#include "transport/abort_signal.h"
#include "transport/shm/check_turns.h"
#include "transport/shm/board.h"
#include "transport/shm/connection.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/segment.h"
#include "transport/shm/wake_socket.h"
#include "transport/small_op_board.h"
#include "transport/transport.h"

namespace coll::transport::shm {

// Longest sleep on the doorbell: how often a waiting rank checks that its peers still live.
constexpr auto kSleepSlice = std::chrono::milliseconds(50);
// After spinning, poll with sched_yield in between until this long idle, then sleep. A yield
// hands the core to a runnable peer (ranks outnumbering cores) and costs well under a µs when
// nobody else wants the core; waking a sleeper costs the peer a FUTEX_WAKE and the sleeper
// about 30 µs (measured on this 2-core VM: 64 KiB CMA ping-pong went from 11 to 39 µs one-way
// when the sender slept), so sleeping only pays after gaps several times that long. With 4
// ranks on 2 cores, passing a token round a ring took 2-3 µs per hop this way against 6-17
// µs with 10 µs of spinning and 4 yields (bench/transport_pingpong --ranks 4).
constexpr auto kYieldPhase = std::chrono::microseconds(100);

// Process death costs a system call a peer (a poll of its pidfd): a liveness sweep asks it of
// at most this many of the connections it looks at, in turn, so a dead peer is found within
// ceil(waited-on peers / this) sweeps. Checking every peer each time cost a host L² system
// calls a sweep: with 128 ranks on 2 cores waiting on the board, 0.8 M polls of pidfds in a
// 2.5 s job, and start-up grew faster than the square of the ranks. The flags a peer sets
// when it aborts or closes are loads, and are looked at on every sweep.
constexpr size_t kDeathChecksPerSweep = 16;

// Looks at the board between two reads of the clock (pause: about 10 ns each here).
constexpr int kQuickLooks = 64;

// The idle phases (base/idle_wait.h): spin COLL_SHM_SPIN, yield kYieldPhase, then sleep on
// the doorbell in kSleepSlice slices.
inline IdlePolicy idlePolicy(const Config& config) {
  return {std::chrono::microseconds(config.shm_spin_us), kYieldPhase, kSleepSlice, 16};
}

// The segments of this rank and its local peers as mapped: one mapping, one probe and one
// pidfd a peer, shared by the transports that serve the segments' planes (layout.h). The
// first plane's transport fills it at its set-up; a second plane's takes it over
// (createSecondPlane).
class SegmentFiles {
 public:
  struct PeerFile {
    int rank = -1;
    Mapping mapping;
    bool readable = false;  // our probe: we may read its memory (CMA)
    std::shared_ptr<const PeerProcess> process;
  };
  Mapping own;                  // empty where this rank has no local peer
  std::vector<PeerFile> peers;  // in rank order, as the sorted local peers
  bool second = false;          // the segments hold a second plane
  WakeSocket second_wake;       // bound for the second plane; its transport takes it
  bool second_taken = false;
};

class ShmTransport : public Transport, public SmallOpBoard {
 public:
  // second: the configuration of a second plane every segment is to hold (nullptr: none).
  ShmTransport(const Config& config, const PeerDirectory& dir, std::vector<int> local_peers,
               const Config* second = nullptr)
      : config_(config), dir_(dir), local_peers_(std::move(local_peers)), files_(std::make_shared<SegmentFiles>()) {
    // Channel i of a segment is its owner's i-th local peer in rank order (layout.h).
    std::sort(local_peers_.begin(), local_peers_.end());
    if (second) {
      files_->second = true;
      second_geometry_ = geometryFor(*second, local_peers_.size());
    }
  }
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  bool pollsBeforeSleeping() const override { return true; }
  Status connect(int peer, Deadline deadline, Connection** out) override;
  Status progress(std::vector<Completion>* out, Deadline until) override;
  bool pollFds(std::vector<pollfd>* fds) override;
  bool armForPoll() override;
  void disarmAfterPoll() override;
  void abort(const std::string& reason) override;
  SmallOpBoard* board() override { return board_ && config_.shm_board_bytes > 0 ? this : nullptr; }

  size_t capacity() const override { return std::min(config_.shm_board_bytes, kBoardPayloadBytes); }
  uint64_t post(const BoardCall& call) override;
  Status finish(uint64_t ticket, const BoardCall& call, bool wait, std::chrono::nanoseconds timeout, TagTest other_op,
                bool* done) override;

  Status setUp(Deadline deadline);
  // Serves the second plane of segments another transport's setUp mapped: no store traffic.
  Status adoptSecondPlane(std::shared_ptr<SegmentFiles> files);
  const std::shared_ptr<SegmentFiles>& files() const { return files_; }

  static Geometry geometryFor(const Config& config, size_t local_peers);

 private:
  struct Peer {
    int rank = -1;
    uint8_t* base = nullptr;  // the plane of its segment this transport serves
    uint32_t channel = 0;     // ours in its segment
    SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base); }
  };

  std::string key(int rank) const { return dir_.key_prefix + "shm/" + std::to_string(rank); }
  Status validatePeers() const;
  Status createOwn();
  void writeHeader(SegmentHeader* h, const Geometry& g, WakeSocket& wake, const std::string& wake_for) const;
  Status mapPeer(size_t index, Deadline deadline);
  Status checkPlane(const SegmentHeader* h, size_t offset, const SegmentFiles::PeerFile& f) const;
  Status findChannel(Peer& p) const;
  void probePeer(size_t index);
  void helloWake(SegmentHeader* mine, SegmentHeader* theirs, const WakeSocket& from) const;
  uint8_t* ownBase() const { return own_base_; }
  SegmentHeader* ownHeader() const { return reinterpret_cast<SegmentHeader*>(own_base_); }
  SegmentHeader* ownSecondHeader() const { return reinterpret_cast<SegmentHeader*>(files_->own.base() + files_->own.header()->second_plane); }
  void removeNames() const;
  void buildConnections();
  bool pollAll();
  void takeNews();
  void checkPeers(Clock::time_point now);
  // Whether this sweep looks for dead processes (every kSleepSlice).
  bool processCheckDue(Clock::time_point now);
  // visit(connection, check_process) for each connection of `among` that `waited(connection)`
  // selects, from the one whose turn it is; check_process for the first kDeathChecksPerSweep.
  template <typename Waited, typename Visit>
  Status sweepPeers(const std::vector<ShmConnection*>& among, CheckTurns& turns, bool check_process, Waited waited,
                    Visit visit);
  // quiet(): nothing arrived meanwhile, so sleeping is safe (the doorbell's last look).
  template <typename Quiet>
  void pause(const IdleWait& idle, Clock::time_point now, Deadline until, Quiet quiet);
  bool quiet() { return !pollAll() && completions_.empty() && !aborted(); }
  void buildBoard();
  // Only where every rank of the communicator is on this host: the board has a cell per rank.
  bool usesBoard() const { return config_.shm_board_bytes > 0 && local_peers_.size() + 1 == static_cast<size_t>(dir_.size); }
  uint64_t hostRanks() const;  // hostRanksFingerprint of this rank and its local peers
  int sharedCores() const;
  void decideOversubscribed();
  Status waitForBoard(uint64_t sequence, std::chrono::nanoseconds timeout, TagTest other_op);
  Status combineBoard(uint64_t sequence, const BoardCall& call);
  bool quickLook(uint64_t sequence);
  bool lookAfterYielding(uint64_t sequence);
  Status boardPeersStatus(uint64_t sequence, Clock::time_point now, TagTest other_op);
  bool aborted() const { return abort_.raised(); }
  std::string abortReason() const { return abort_.reason(); }

  Config config_;
  PeerDirectory dir_;
  std::vector<int> local_peers_;
  Geometry geometry_;
  Geometry second_geometry_;  // where files_->second
  std::shared_ptr<SegmentFiles> files_;
  uint8_t* own_base_ = nullptr;  // our segment's plane this transport serves; nullptr: no segment
  SegmentHeader private_header_;  // the doorbell when this rank has no segment
  SegmentHeader* self_ = &private_header_;
  WakeSocket wake_;
  bool fd_wait_ok_ = false;  // peers can wake us in poll() (wake_socket.h)
  std::vector<Peer> peers_;  // parallel to local_peers_; fixed after setUp (abort() reads it)
  std::map<int, std::unique_ptr<ShmConnection>> connections_;
  std::vector<ShmConnection*> all_;     // every connection, in peer order
  std::vector<ShmConnection*> active_;  // those with requests outstanding: pollAll polls these
  std::vector<Completion> completions_;
  std::unique_ptr<Board> board_;  // where every rank of the communicator is on this host
  uint64_t board_ops_ = 0;
  Clock::time_point next_liveness_check_{};
  CheckTurns board_checks_{kDeathChecksPerSweep};   // over all_, waiting on the board
  CheckTurns active_checks_{kDeathChecksPerSweep};  // over active_, waiting on messages
  CheckTurns parked_checks_{kDeathChecksPerSweep};  // over all_, the parked ones
  bool parks_ = false;  // receives park (the second plane's transport: layout.h)
  bool logged_no_cma_ = false;
  AbortSignal abort_;
};

// --- templates both files use ----------------------------------------------------------

template <typename Waited, typename Visit>
Status ShmTransport::sweepPeers(const std::vector<ShmConnection*>& among, CheckTurns& turns, bool check_process,
                                Waited waited, Visit visit) {
  return turns.sweep(among.size(), check_process, [&](size_t i) { return waited(*among[i]); },
                     [&](size_t i, bool check) { return visit(*among[i], check); });
}

template <typename Quiet>
void ShmTransport::pause(const IdleWait& idle, Clock::time_point now, Deadline until, Quiet quiet) {
  idle.pause(now, until, [&](Clock::duration slice) {
    uint32_t seq = prepareSleep(&self_->doorbell);
    // A last look after announcing ourselves: whatever a peer did before seeing us is visible now.
    if (quiet()) sleep(&self_->doorbell, seq, slice);
    finishSleep(&self_->doorbell);
  });
}

}  // namespace coll::transport::shm
