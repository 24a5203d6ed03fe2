// The board path: small all-reduces, barriers and broadcasts of a communicator whose ranks all
// share one host, on the transport's small-op board (transport/small_op_board.h): every rank
// posts its operand in shared memory and combines all of them, one step instead of the message
// path's log2(n). The board is a catalogue entry (algorithms/board.h): the selector scores it
// like any algorithm, and this path takes what it picks the board for.
//
// An op issued with nothing queued or running is posted at once by the issuing thread, and
// finished there if every rank has posted too: the queue, the hand-over and the wake-up would
// cost more than the op (a few hundred ns); its Work then shares a state with every other op
// finished so (finished_ok_). Otherwise it is queued, posted when its turn
// comes, and finishes when waited on or by the progress thread, like any op, or by the thread
// issuing the next board op once every rank has posted it (finishWithoutWaiting): issuing
// never blocks on peers.
//
// Threading: issue() and run() under the communicator's engine (tickets_ is theirs);
// accepts() and newWorkState() on the issuing thread.
#pragma once

#include <deque>
#include <memory>
#include <utility>

#include "base/config.h"
#include "comm/ledger.h"
#include "comm/op_trace.h"
#include "comm/paths/execution_path.h"
#include "comm/paths/scheduled_path.h"
#include "transport/registry.h"
#include "transport/small_op_board.h"

namespace coll {

class BoardPath final : public ExecutionPath {
 public:
  // The board of the transport that reaches every peer, if it offers one (else the path
  // accepts nothing). Init thread, once the transports exist.
  BoardPath(int rank, int size, const Config& config, const transport::TransportSet& transports,
            ScheduledPath& scheduled, Ledger& ledger, OpTrace* trace);

  const char* name() const override { return "board"; }
  bool accepts(const OpRequest& op) const override;
  std::shared_ptr<detail::WorkState> newWorkState(const OpRequest& op) override;
  bool startsAtIssue() const override { return true; }
  Issued issue(OpRequest& op, const IssueState& state, Status* failure) override;
  Status run(const OpRequest& op, RunReport* report) override;
  // The op at the head of the queue, if it can finish without waiting: posts it if it was not
  // (in queue order, so the board's sequence stays every rank's), looks once. True: it finished,
  // *st its outcome, and run() must not see it. Under the engine (CommunicatorImpl::
  // finishReadyBoardOps).
  bool finishWithoutWaiting(const OpRequest& op, Status* st);

 private:
  transport::BoardCall boardCall(const OpRequest& op);

  const Config& config_;
  ScheduledPath& scheduled_;  // the call check (COLL_CHECK) and the selector
  Ledger& ledger_;
  OpTrace* trace_;  // null: untraced
  transport::SmallOpBoard* board_ = nullptr;
  std::shared_ptr<detail::WorkState> spare_work_;  // the last board op's, reused once nobody holds it
  // The state of every op that finished well at issue, shared by their Works (each keeps its own
  // sequence): a loop that issues a thousand small ops before waiting (as all_reduce_perf does)
  // then allocates no state per op. Held by a thousand Works, a state per op took 0.3 us an op
  // more on 2 ranks (15,096 page faults in 200,000 ops against 2,632), half the op. Never reset.
  std::shared_ptr<detail::WorkState> finished_ok_ = std::make_shared<detail::WorkState>();
  std::deque<std::pair<uint64_t, uint64_t>> tickets_;  // (op sequence, ticket) of ops posted at issue, in order
  uint8_t barrier_byte_[1] = {0};
};

}  // namespace coll
