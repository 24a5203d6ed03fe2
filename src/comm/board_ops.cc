// The communicator's side of the small-op board (transport/small_op_board.h): which ops go
// there, posting them at issue where nothing is ahead of them, and finishing them in order.
#include "comm/communicator_impl.h"

#include <algorithm>

#include "base/log.h"

namespace coll {
namespace {

const std::string kBoardAlgorithm = "board";

// A peer on the message path sends tagged messages; any but point-to-point ones (which may
// legitimately arrive early) show it is running another collective than our board op.
bool isCollectiveTag(uint64_t tag) { return (tag & 0xff) != static_cast<uint64_t>(OpKind::send); }

// Broadcasts above this go by the message path even where the board would hold them: the
// root's copy into the slots and the receivers' copy out overlap there, while the board
// makes everyone wait for everyone. 2 ranks, 8-byte broadcast: 0.33 us on the board, 0.6 on
// the message path; 2 KiB: 0.75 against 1.16; 4 KiB: 1.17 against 1.0-1.07.
constexpr size_t kBoardBroadcastBytes = 2048;

bool boardKind(OpKind kind) {
  return kind == OpKind::allreduce || kind == OpKind::barrier || kind == OpKind::broadcast;
}

}  // namespace

// The board serves a communicator whose every peer one transport reaches with it (one host).
void CommunicatorImpl::findBoard() {
  if (size_ == 1 || config_.shm_board_bytes == 0) return;
  transport::Transport* t = transports_.for_peer[rank_ == 0 ? 1 : 0];
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && transports_.for_peer[p] != t) return;
  board_ = t->board();
  if (!board_) return;
  board_bytes_ = board_->capacity();
  board_broadcast_bytes_ = std::min(board_bytes_, kBoardBroadcastBytes);
  COLL_INFO("TUNE", "allreduce and barrier of 1 B to %s, broadcast to %s -> board (%s): every rank posts its "
            "operand in shared memory and combines all %d (or copies the root's), one step instead of the message "
            "path's log2(n); COLL_SHM_BOARD_BYTES sets the limit, a COLL_ALGO rule for the size overrides it",
            formatBytes(board_bytes_).c_str(), formatBytes(board_broadcast_bytes_).c_str(), t->name(), size_);
}

bool CommunicatorImpl::onBoard(const OpRequest& op) const {
  if (!board_ || !boardKind(op.kind)) return false;
  const size_t bytes = op.kind == OpKind::barrier ? 1 : op.bytes();
  const size_t limit = op.kind == OpKind::broadcast ? board_broadcast_bytes_ : board_bytes_;
  if (bytes == 0 || bytes > limit) return false;
  const auto collective = op.kind == OpKind::broadcast ? algo::Collective::broadcast : algo::Collective::allreduce;
  return !selector_->forced(collective, bytes);
}

// A board op issued with nothing queued or running is posted at once by the issuing thread,
// and finished there if every rank has posted too: the queue, the hand-over and the wake-up
// would cost more than the op (a few hundred ns). Nobody else can see its WorkState yet, so
// it completes without the state's lock. Otherwise it is queued, posted, and finishes when
// waited on or by the progress thread, like any op: issuing never blocks on peers.
bool CommunicatorImpl::runNowOnBoard(OpRequest& op, Work* handle) {
  if (!board_ || !config_.inline_ops || config_.check || op.device >= 0) return false;
  std::unique_lock<std::mutex> engine(engine_mu_, std::try_to_lock);
  if (!engine.owns_lock() || queued_.load(std::memory_order_acquire) > 0 || failed_.load(std::memory_order_acquire) ||
      !onBoard(op))
    return false;
  // Without COLL_CHECK, beginOp() would only record the op in the ledger: done here, once the
  // outcome is known, so an op that finishes inline publishes the ledger once instead of twice.
  const LedgerEntry entry{op.work->sequence, op.wire_sequence, OpFingerprint::of(op, kBoardAlgorithm)};
  // Only when traced: this is the fastest path coll has, a few hundred ns an op.
  const auto posted = trace_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const transport::BoardCall call = boardCall(op);
  op.board_ticket = board_->post(call);
  bool done = false;
  Status st = board_->finish(op.board_ticket, call, false, config_.timeout, &isCollectiveTag, &done);
  if (st && !done) {
    // Not keeping the progress thread hot: its polls every 200 us would preempt this rank (it
    // shares the core) and make the next board op late on its peers, which would then queue
    // theirs: measured, one op in 600 left pending kept 2 ranks at 0.40 us instead of 0.33.
    ledger_.started(entry);
    *handle = Work(op.work);
    push(std::move(op), false);
    return true;
  }
  if (trace_)
    trace_->record({toString(op.kind), kBoardAlgorithm, op.work->sequence, op.bytes(), posted, posted,
                    std::chrono::steady_clock::now(), st.isOk()});
  ledger_.ran(entry, st.isOk());
  if (st) op.work->completeUnshared(std::nullopt);
  else onFailure(op, st.toError(opLabel(op, kBoardAlgorithm)));
  *handle = Work(std::move(op.work));  // the op is done with it: no reference count traffic
  return true;
}

// A WorkState for an op that may run on the board: the last one's, if its Work is gone.
std::shared_ptr<detail::WorkState> CommunicatorImpl::newWorkState(const OpRequest& op) {
  if (!board_ || !boardKind(op.kind)) return std::make_shared<detail::WorkState>();
  if (!spare_work_ || spare_work_.use_count() > 1 || !spare_work_->finished.load(std::memory_order_acquire))
    spare_work_ = std::make_shared<detail::WorkState>();
  else
    spare_work_->reset();
  return spare_work_;
}

// A board op that was not posted when issued (queued behind others) is posted now.
Status CommunicatorImpl::runOnBoard(const OpRequest& issued, std::string* algorithm, bool* refused) {
  *algorithm = kBoardAlgorithm;
  const transport::BoardCall call = boardCall(issued);
  uint64_t ticket = issued.board_ticket;
  if (ticket == 0) {
    COLL_RETURN_IF_ERROR(beginOp(issued, *algorithm, refused));
    ticket = board_->post(call);
  }
  bool done = false;
  return board_->finish(ticket, call, true, config_.timeout, &isCollectiveTag, &done);
}

transport::BoardCall CommunicatorImpl::boardCall(const OpRequest& op) {
  if (op.kind == OpKind::barrier) return {barrier_byte_, barrier_byte_, 1, DataType::u8, ReduceOp::max, -1};
  if (op.kind == OpKind::broadcast) return {op.input, op.output, op.count, op.type, ReduceOp::sum, op.root};
  return {op.input, op.output, op.count, op.type, op.op, -1};
}

}  // namespace coll
