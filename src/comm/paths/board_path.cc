#include "comm/paths/board_path.h"

#include <algorithm>
#include <chrono>

#include "algorithms/board.h"
#include "base/log.h"

namespace coll {
namespace {

// A peer on the message path sends tagged messages; any but point-to-point ones (which may
// legitimately arrive early) show it is running another collective than our board op.
bool isCollectiveTag(uint64_t tag) { return (tag & 0xff) != static_cast<uint64_t>(OpKind::send); }

bool boardKind(OpKind kind) {
  return kind == OpKind::allreduce || kind == OpKind::barrier || kind == OpKind::broadcast;
}

}  // namespace

// The board serves a communicator whose every peer one transport reaches with it (one host).
BoardPath::BoardPath(int rank, int size, const Config& config, const transport::TransportSet& transports,
                     ScheduledPath& scheduled, Ledger& ledger, OpTrace* trace)
    : config_(config), scheduled_(scheduled), ledger_(ledger), trace_(trace) {
  finished_ok_->completeUnshared(std::nullopt);
  if (size == 1 || config_.shm_board_bytes == 0) return;
  transport::Transport* t = transports.for_peer[rank == 0 ? 1 : 0];
  for (int p = 0; p < size; ++p)
    if (p != rank && transports.for_peer[p] != t) return;
  board_ = t->board();
  if (!board_) return;
  const size_t bytes = board_->capacity();
  scheduled_.setBoard(bytes, std::min(bytes, algo::cost::kBoardBroadcastBytes));
  COLL_INFO("TUNE", "board (%s) holds allreduce and barrier up to %s, broadcast up to %s; the cost model picks it "
            "for allreduce up to %s and broadcast up to %s: every rank posts its operand in shared memory and "
            "combines all %d (or copies the root's), one step instead of the message path's log2(n); "
            "COLL_SHM_BOARD_BYTES sets its cells, a COLL_ALGO rule for the size overrides the model",
            t->name(), formatBytes(bytes).c_str(), formatBytes(std::min(bytes, algo::cost::kBoardBroadcastBytes)).c_str(),
            formatBytes(scheduled_.boardUpTo(algo::Collective::allreduce)).c_str(),
            formatBytes(scheduled_.boardUpTo(algo::Collective::broadcast)).c_str(), size);
}

bool BoardPath::accepts(const OpRequest& op) const {
  if (!board_ || op.device >= 0 || !boardKind(op.kind)) return false;
  const size_t bytes = op.kind == OpKind::barrier ? 1 : op.bytes();
  const auto collective = op.kind == OpKind::broadcast ? algo::Collective::broadcast : algo::Collective::allreduce;
  return scheduled_.picksBoard(collective, bytes);
}

// The last op's WorkState, if its Work is gone.
std::shared_ptr<detail::WorkState> BoardPath::newWorkState(const OpRequest& op) {
  if (!spare_work_ || spare_work_.use_count() > 1 || !spare_work_->finished.load(std::memory_order_acquire))
    spare_work_ = std::make_shared<detail::WorkState>();
  else
    spare_work_->reset();
  return spare_work_;
}

Issued BoardPath::issue(OpRequest& op, const IssueState& state, Status* failure) {
  if (!config_.inline_ops || config_.check) return Issued::queue;
  // Behind a board op posted and waiting on its peers: the next issue or a wait finishes both
  // (CommunicatorImpl::finishReadyBoardOps); a progress thread kept polling would only contend
  // for the cores (4 ranks on 2 cores, 8 B: 7.1 us an op against 4.7).
  if (!state.engine_idle) return state.engine_held && !tickets_.empty() ? Issued::queue_behind : Issued::queue;
  // Without COLL_CHECK, begin() would only record the op in the ledger: done here, once the
  // outcome is known, so an op that finishes inline publishes the ledger once instead of twice.
  const LedgerEntry entry{op.work->sequence, op.wire_sequence, OpFingerprint::of(op, name())};
  // Only when traced: this is the fastest path coll has, a few hundred ns an op.
  const auto posted = trace_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const transport::BoardCall call = boardCall(op);
  const uint64_t ticket = board_->post(call);
  bool done = false;
  Status st = board_->finish(ticket, call, false, config_.timeout, &isCollectiveTag, &done);
  if (st && !done) {
    // Not keeping the progress thread hot: its polls every 200 us would preempt this rank (it
    // shares the core) and make the next board op late on its peers, which would then queue
    // theirs: measured, one op in 600 left pending kept 2 ranks at 0.40 us instead of 0.33.
    ledger_.started(entry);
    tickets_.emplace_back(op.work->sequence, ticket);
    return Issued::queue_quietly;
  }
  if (trace_)
    trace_->record({toString(op.kind), name(), op.work->sequence, op.bytes(), posted, posted,
                    std::chrono::steady_clock::now(), st.isOk()});
  ledger_.ran(entry, st.isOk());
  if (!st) {
    *failure = st;
    return Issued::taken;
  }
  // Its state is free for the next op (newWorkState) and its Work shares one that finished well.
  op.work->completeUnshared(std::nullopt);
  op.work = finished_ok_;
  return Issued::taken;
}

// An op posted at issue finishes now; one that was queued behind others is posted first.
Status BoardPath::run(const OpRequest& op, RunReport* report) {
  report->algorithm = name();
  const transport::BoardCall call = boardCall(op);
  uint64_t ticket = 0;
  if (!tickets_.empty() && tickets_.front().first == op.work->sequence) {
    ticket = tickets_.front().second;
    tickets_.pop_front();
  } else {
    COLL_RETURN_IF_ERROR(scheduled_.begin(op, report->algorithm, &report->refused));
    ticket = board_->post(call);
  }
  bool done = false;
  return board_->finish(ticket, call, true, config_.timeout, &isCollectiveTag, &done);
}

bool BoardPath::finishWithoutWaiting(const OpRequest& op, Status* st) {
  if (!config_.inline_ops || config_.check) return false;  // the call check is an exchange: run() makes it
  const transport::BoardCall call = boardCall(op);
  if (tickets_.empty()) {
    bool refused = false;
    *st = scheduled_.begin(op, name(), &refused);  // without COLL_CHECK: the ledger's record, never an error
    if (!*st) return false;
    tickets_.emplace_back(op.work->sequence, board_->post(call));
  } else if (tickets_.front().first != op.work->sequence) {
    return false;
  }
  bool done = false;
  *st = board_->finish(tickets_.front().second, call, false, config_.timeout, &isCollectiveTag, &done);
  if (*st && !done) return false;
  tickets_.pop_front();
  return true;
}

transport::BoardCall BoardPath::boardCall(const OpRequest& op) {
  if (op.kind == OpKind::barrier) return {barrier_byte_, barrier_byte_, 1, DataType::u8, ReduceOp::max, -1};
  if (op.kind == OpKind::broadcast) return {op.input, op.output, op.count, op.type, ReduceOp::sum, op.root};
  return {op.input, op.output, op.count, op.type, op.op, -1};
}

}  // namespace coll
