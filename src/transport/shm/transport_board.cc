// The shared-memory transport's small-op board (board.h, small_op_board.h): where every rank
// of the communicator is on this host, a small op is posted in the rank's own cell and combined
// from its peers' cells, with no message.
#include "transport/shm/shm_transport.h"

#include <sched.h>

#include "reduce/reduce.h"

namespace coll::transport::shm {

void ShmTransport::buildBoard() {
  if (!ownBase() || !usesBoard()) return;
  std::vector<BoardCell*> cells(dir_.size);
  cells[dir_.rank] = boardAt(ownBase());
  for (Peer& p : peers_) cells[p.rank] = boardAt(p.base);
  board_ = std::make_unique<Board>(dir_.rank, std::move(cells));
}

uint64_t ShmTransport::post(const BoardCall& call) {
  const uint64_t sequence = ++board_ops_;
  const bool has_data = call.root < 0 || call.root == dir_.rank;  // a broadcast's others only arrive
  const size_t bytes = call.count * sizeOf(call.type);
  board_->post(sequence, Board::fingerprint(call.count, call.type, call.op, call.root), call.in, has_data ? bytes : 0,
               bytes);
  return sequence;
}

Status ShmTransport::finish(uint64_t ticket, const BoardCall& call, bool wait, std::chrono::nanoseconds timeout,
                            TagTest other_op, bool* done) {
  *done = false;
  if (wait) {
    COLL_RETURN_IF_ERROR(waitForBoard(ticket, timeout, other_op));
  } else if (!quickLook(ticket) && !lookAfterYielding(ticket)) {
    // Peers asleep on this op may now have to wait for our finishing to be rung (combineBoard):
    // ring them for our post instead, in case nobody finishes this op soon.
    for (Peer& p : peers_) ring(p.header(), wake_.fd());
    return Status::ok();
  }
  *done = true;
  return combineBoard(ticket, call);
}

Status ShmTransport::combineBoard(uint64_t sequence, const BoardCall& call) {
  const uint64_t fingerprint = Board::fingerprint(call.count, call.type, call.op, call.root);
  int other = board_->disagreeing(sequence, fingerprint);
  if (other >= 0)
    return mismatchError(format("rank %d posted %s on the shared-memory board, rank %d %s", other,
                                Board::describe(board_->fingerprintOf(other, sequence)).c_str(), dir_.rank,
                                Board::describe(fingerprint).c_str()), other);
  if (call.root >= 0) {
    board_->copyFrom(sequence, call.root, call.out, call.count * sizeOf(call.type));
  } else {
    board_->combine(sequence, call.out, call.count, call.type, call.op);
    if (call.op == ReduceOp::avg) reduce::divideBy(call.out, call.count, call.type, dir_.size);
  }
  // Peers asleep on this op are woken now rather than right after posting: whoever posts last
  // sees every post at once and gets here, and by now our post has left the store buffer, so
  // the doorbell's fence costs nothing (doorbell.h: the sleeper looks again after announcing
  // itself, so one of us sees the other).
  for (Peer& p : peers_) ring(p.header(), wake_.fd());
  return Status::ok();
}

// A peer that is on its way arrives within a few hundred ns: look before reading the clock,
// then keep looking for the spin budget (COLL_SHM_SPIN). Where ranks outnumber cores (no
// spinning), once: a late peer is likely descheduled.
bool ShmTransport::quickLook(uint64_t sequence) {
  if (config_.shm_spin_us <= 0) return board_->allPosted(sequence);
  Clock::time_point until{};  // set after the first batch of looks
  for (;;) {
    for (int i = 0; i < kQuickLooks; ++i) {
      if (board_->allPosted(sequence)) return true;
      cpuRelax();
    }
    const Clock::time_point now = Clock::now();
    if (until == Clock::time_point{}) until = now + std::chrono::microseconds(config_.shm_spin_us);
    else if (now >= until) return false;
  }
}

// Where ranks outnumber cores, a peer that has not posted is likely waiting for this core:
// one yield lets it post (a rank sharing the core, most often), and the op may then finish
// where it was issued instead of going through the queue and a waiter (4 ranks on 2 cores,
// 8-byte all-reduce: that path costs each of the two ranks on a core about 1,000 instructions
// an op more). Nothing here waits for a peer. The cost: where the core's other runnable task
// is not a peer but a computation, the yield lends it the core until the scheduler's next
// tick (a few ms at most) before issuing returns; only small ops on a host whose ranks
// outnumber its cores do this, where that core is shared anyway.
bool ShmTransport::lookAfterYielding(uint64_t sequence) {
  if (config_.shm_spin_us > 0) return false;
  ::sched_yield();
  return board_->allPosted(sequence);
}

// Waits like progress(): spin, yield, then sleep on our doorbell, which peers ring after posting.
Status ShmTransport::waitForBoard(uint64_t sequence, std::chrono::nanoseconds timeout, TagTest other_op) {
  if (quickLook(sequence)) return Status::ok();
  IdleWait idle(idlePolicy(config_));
  const Deadline deadline = idle.since() + timeout;
  for (;;) {
    if (board_->allPosted(sequence)) return Status::ok();
    if (aborted()) return peerLostError(abortReason());
    Clock::time_point now = Clock::now();
    COLL_RETURN_IF_ERROR(boardPeersStatus(sequence, now, other_op));
    if (now >= deadline) {
      std::string peers;
      for (int r : board_->missing(sequence)) peers += (peers.empty() ? "peer " : ", peer ") + std::to_string(r);
      return timeoutError(format("%s did not post board op %llu on the shared-memory board in time", peers.c_str(),
                                 static_cast<unsigned long long>(sequence)));
    }
    pause(idle, now, deadline, [&] { return !board_->allPosted(sequence) && !aborted(); });
  }
}

// A peer that has not posted this op yet: is it gone, or somewhere else (it sent us a message
// of another op, which it cannot have done after posting this one and finishing it)?
Status ShmTransport::boardPeersStatus(uint64_t sequence, Clock::time_point now, TagTest other_op) {
  auto waited = [&](const ShmConnection& c) { return !board_->posted(c.peer(), sequence); };
  return sweepPeers(all_, board_checks_, processCheckDue(now), waited, [&](ShmConnection& c, bool check_process) {
    const int rank = c.peer();
    // The peer may have posted, finished the op, closed (or aborted) and exited since `waited`
    // saw it unposted (8 ranks on 2 cores, a split freed right after its op: once in CI; every
    // time with a 300 us sleep put here). Its post came before it left, so a second look finds
    // it; the cell holds a copy of its operand and stays mapped here (unlike a message path's
    // CMA descriptor, connection.cc's checkPeer, nothing in it points into the peer's memory).
    if (Status st = c.peerStatus(check_process); !st) return board_->posted(rank, sequence) ? Status::ok() : st;
    uint64_t tag = 0, bytes = 0;
    if (c.unreadMessage(&tag, &bytes) && other_op(tag) && !board_->posted(rank, sequence))
      return mismatchError(format("peer %d sent rank %d a message of another collective instead of posting board op "
                                  "%llu: the ranks disagree about the call (one of them took the message path for it)",
                                  rank, dir_.rank, static_cast<unsigned long long>(sequence)), rank);
    return Status::ok();
  });
}

}  // namespace coll::transport::shm
