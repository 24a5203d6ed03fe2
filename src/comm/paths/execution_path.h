// One way of running an op. The communicator (comm/communicator_impl.h) is the context: it
// holds what every op shares (init, the queue and who runs it, failure handling) and hands each
// request to the first path that accepts it; each path owns what only its ops need. This is
// gloo's split between `gloo/context.h` (state only) and one object per way of running an op
// (`allreduce_ring.h`, `allreduce_bcube.h`), and UCC's task with post and progress.
//
// The paths, in the order they are asked (docs/ARCHITECTURE.md, "Execution paths"):
//   p2p        host sends and receives, on the point-to-point engine (p2p_path.h)
//   device     buffers in CUDA device memory (device_path.h)
//   board      small one-host all-reduces, barriers and broadcasts (board_path.h)
//   scheduled  everything else: a schedule from the selector, run by the executor
//              (scheduled_path.h)
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "exec/op.h"

namespace coll {

// What run() tells the communicator about an op besides its Status.
struct RunReport {
  std::string algorithm;  // for the op's label, the trace and the ledger ("ring", "board", "staged", ...)
  bool refused = false;   // every rank refused it before any data moved (COLL_CHECK): the communicator is intact
};

// What the communicator knows when an op is issued.
struct IssueState {
  // This thread holds the engine (no other thread runs ops), nothing is queued ahead and the
  // communicator has not failed: a path may start the op now and keep issue order.
  bool engine_idle = false;
  bool engine_held = false;  // this thread holds the engine, ops may be queued ahead
  const Error* failed = nullptr;  // the communicator's first error, if it failed
};

// What issue() did with an op.
enum class Issued {
  queue,          // nothing yet: queue it; run() takes it in issue order
  queue_quietly,  // started, not finished: queue it without waking the progress thread (board_path.h says why)
  // Not started, behind a started op that the thread issuing the next one or a waiter will
  // finish: queue it without keeping the progress thread polling, but wake it if it sleeps, since
  // peers wait for this op to start even if nobody here waits on it.
  queue_behind,
  taken,          // the path has it (the p2p engine) or finished it: the Work completes without the queue
};

class ExecutionPath {
 public:
  virtual ~ExecutionPath() = default;
  virtual const char* name() const = 0;

  // Whether this path runs the op: the same answer on every rank for the same call. Issuing
  // thread, after the op was validated.
  virtual bool accepts(const OpRequest& op) const = 0;

  // The op's Work state. A path may hand out a reused one (the board: allocation is a visible
  // share of its few hundred nanoseconds). Issuing thread.
  virtual std::shared_ptr<detail::WorkState> newWorkState(const OpRequest& op) {
    return std::make_shared<detail::WorkState>();
  }

  // Whether issue() wants IssueState::engine_idle (the communicator then tries the engine's
  // lock and holds it through issue()).
  virtual bool startsAtIssue() const { return false; }

  // At issue, on the issuing thread, before the op is queued. A path that finished the op here
  // completed its Work, or, with *failure set, left failing it to the communicator. op.work
  // stays in op whatever happens: the communicator makes the op's Work from it.
  virtual Issued issue(OpRequest& op, const IssueState& state, Status* failure) { return Issued::queue; }

  // Runs a queued op to the end, on the thread that holds the engine (the progress thread or a
  // waiter), in issue order. A failed Status names the peer and the cause; the communicator
  // adds the op's label.
  virtual Status run(const OpRequest& op, RunReport* report) = 0;

  // The communicator failed (any thread): fail what the path holds outside the queue.
  virtual void abort(const std::string& reason) {}

  // After abort(): waits until no op the path holds outside the queue can touch its buffers
  // (the engine's holder runs the queued ones). False: `deadline` came first. Any thread.
  virtual bool settle(std::chrono::steady_clock::time_point deadline) { return true; }
};

}  // namespace coll
