// Who runs a communicator's ops, one at a time in issue order: the progress thread, or a thread
// waiting on a Work, which runs the ops queued up to its own (work_state.h says why). Both
// take engine_mu_ before popping an op, so ops start in issue order whoever runs them.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

#include "comm/communicator_impl.h"
#include "base/log.h"
#include "base/spin_wait.h"

namespace coll {
namespace {

using Clock = std::chrono::steady_clock;

// How long a queued op is left to a thread that may be about to wait on it (and run it inline)
// before the progress thread takes it. A thread that waits right after issuing (a blocking
// call, torch's async_op=False) arrives within a microsecond or two; an op nobody waits on yet
// (DDP's buckets, overlapped with the backward pass) starts this late at most.
constexpr auto kInlineGrace = std::chrono::microseconds(100);
// While ops keep coming, the idle progress thread polls the queue this often rather than being
// woken by each push: a wake-up costs the issuing thread a system call (about a microsecond,
// as much as a whole small all-reduce over shared memory), the poll costs the idle thread a
// few microseconds of CPU 5,000 times a second (about 1% of a core).
constexpr std::chrono::microseconds kHotPoll{200};
// While every op is run inline by a waiter (blocking calls in a loop), the poll period doubles
// up to this. Each poll is a context switch, and where a rank is bound to one core (collrun
// --bind-to core, Open MPI's default) the poll preempts the thread running the op: measured on
// this 2-core VM, 2 pinned ranks, 1 KiB all-reduce waited on one by one (-K 1), the 200 us
// polls made the 99th percentile 20-55 us against a median of 1.5 (about one op in 150 paid
// for two switches). An op nobody waits on then starts at most this late, once: the progress
// thread runs it and polls at kHotPoll again.
constexpr std::chrono::microseconds kRelaxedPoll{3200};
// How long issuing a board op waits for the board ops queued before it (catchUpOnBoard).
constexpr auto kBoardCatchUp = std::chrono::milliseconds(2);
// After this long without a new op the progress thread sleeps until a push wakes it.
constexpr auto kHotFor = std::chrono::milliseconds(20);

}  // namespace

void CommunicatorImpl::push(OpRequest op, Nudge nudge) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw Error(ErrorCode::InvalidArgument, "communicator is being destroyed");
    op.enqueued = Clock::now();
    op.work->queued_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(op.enqueued.time_since_epoch()).count();
    if (nudge == Nudge::keep_hot) last_push_ = op.enqueued;
    else unkicked_.store(true, std::memory_order_relaxed);
    queue_.push_back(std::move(op));
    queued_.fetch_add(1, std::memory_order_release);
    wake = (progress_cold_ && nudge != Nudge::none) || !config_.inline_ops;
  }
  if (wake) queue_cv_.notify_one();
}

void CommunicatorImpl::kick() {
  if (!config_.inline_ops) return;  // the progress thread runs every op without being asked
  if (!unkicked_.exchange(false, std::memory_order_acq_rel)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);  // not between the progress thread's look and its wait
  }
  queue_cv_.notify_one();
}

void CommunicatorImpl::expedite() {
  if (!config_.inline_ops) return;  // the progress thread runs every op at once anyway
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return;  // already taken
    expedited_ = true;
  }
  queue_cv_.notify_one();
}

// A group's members finish with the group.
void CommunicatorImpl::complete(OpRequest& op, const std::optional<Error>& error) {
  if (op.members)
    for (OpRequest& member : *op.members) member.work->complete(error);
  op.work->complete(error);
}

void CommunicatorImpl::progressLoop() {
  ::pthread_setname_np(::pthread_self(), "coll-progress");  // top, perf and soaks tell it apart
  for (;;) {
    if (!config_.inline_ops) spinUntil([&] { return queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!waitForWork(lock)) return;
    }
    std::lock_guard<OwnedMutex> engine(engine_mu_);  // waits while a waiter drives ops inline
    bool close = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      close = close_pending_;
      close_pending_ = false;
    }
    if (close) {
      // The transport is driven by the engine_mu_ holder: it closes the connections of an
      // aborted transport inside progress(), so peers fail now rather than at their deadline.
      std::vector<transport::Completion> ignored;
      for (auto& t : transports_.owned) (void)t->progress(&ignored, transport::Clock::now());
      continue;
    }
    bool ran = false;
    while (runNext()) ran = true;
    if (ran) {
      std::lock_guard<std::mutex> lock(mu_);
      hot_poll_ = kHotPoll;  // nobody ran these inline
    }
  }
}

// Sleeps until there is something for the progress thread to do: a connection to close, or a
// queued op that nobody took inline within kInlineGrace. False: destroyed, nothing left to run.
bool CommunicatorImpl::waitForWork(std::unique_lock<std::mutex>& lock) {
  for (;;) {
    progress_cold_ = false;
    if (close_pending_) return true;
    auto now = Clock::now();
    if (!queue_.empty()) {
      auto due = queue_.front().enqueued + kInlineGrace;
      if (stopping_ || !config_.inline_ops || expedited_ || now >= due) {
        expedited_ = false;  // the loop runs everything queued before it looks again
        return true;
      }
      queue_cv_.wait_until(lock, due);
      continue;
    }
    expedited_ = false;  // what it was for has run, here or in a waiter
    if (stopping_) {
      return false;
    } else if (config_.inline_ops && now - last_push_ < kHotFor) {
      queue_cv_.wait_for(lock, hot_poll_);
      // Nothing was left for us since the last look: waiters ran every op. Look less often.
      if (queue_.empty()) hot_poll_ = std::min(hot_poll_ * 2, kRelaxedPoll);
    } else {
      progress_cold_ = true;
      queue_cv_.wait(lock);
    }
  }
}

bool CommunicatorImpl::driveUntilDone(const detail::WorkState& work) {
  if (!config_.inline_ops || inForkedChild()) return false;
  std::unique_lock<OwnedMutex> engine(engine_mu_, std::try_to_lock);
  if (!engine.owns_lock()) return false;
  while (!work.finished.load(std::memory_order_acquire) && runNext()) {
  }
  return true;
}

// Pops the oldest queued op and runs it. engine_mu_ held. False: nothing queued.
bool CommunicatorImpl::runNext() {
  OpRequest op;
  std::optional<Error> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return false;
    op = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    failed = first_error_;
  }
  runOp(op, failed);
  return true;
}

void CommunicatorImpl::runOp(OpRequest& op, const std::optional<Error>& failed) {
  if (failed) {
    complete(op, Error(failed->code(), opLabel(op, "") + ": communicator already failed: " + failed->what()));
    return;
  }
  link_->beat();
  // The path the op was issued to: nothing its choice depends on changes while an op is queued
  // (setAlgorithms refuses then).
  ExecutionPath& path = pathFor(op);
  RunReport report;
  const auto started = trace_ ? Clock::now() : Clock::time_point{};  // no clock read untraced
  Status st = path.run(op, &report);
  ran(op, st, report, started);
}

// What every op does once its path is done with it, on whichever thread ran it.
void CommunicatorImpl::ran(OpRequest& op, const Status& st, const RunReport& report, Clock::time_point started) {
  if (trace_)
    trace_->record({toString(op.kind), report.algorithm, op.work->sequence, op.bytes(), op.enqueued, started,
                    Clock::now(), st.isOk()});
  ledger_.completed(st.isOk());
  if (st) {
    complete(op, std::nullopt);
  } else if (report.refused) {  // every rank refused it before data moved: the communicator is intact
    complete(op, st.toError(opLabel(op, report.algorithm)));
  } else {
    onFailure(op, st.toError(opLabel(op, report.algorithm)));
  }
  link_->beat();
}

// Issuing a board op behind queued ones: finishes those that are ready, and gives the peers a
// little while (yielding the core) to post the rest. Issuing without waiting, a rank that found
// one op not ready queued every later op of a loop behind it (they are cheaper to queue than
// to run), its peers did the same, and the ranks never came back into step: 4 ranks on 2
// cores, 8 B all-reduces issued in a loop and waited on at its end, went from 2 us an op to
// 4-5 a few thousand ops into a job, where waiting on each op kept 1.8 all along. Bounded, so
// that a program whose peers need something this rank does after issuing (a send) still runs:
// each issue then waits kBoardCatchUp at most. engine_mu_ held.
void CommunicatorImpl::catchUpOnBoard() {
  if (!finishReadyBoardOps()) return;
  // Without inline ops, or with the call check (an exchange), the board finishes nothing here
  // (BoardPath::finishWithoutWaiting): the queued ops are the progress thread's, not late ones.
  if (!config_.inline_ops || config_.check) return;
  const auto until = Clock::now() + kBoardCatchUp;
  do {
    ::sched_yield();
  } while (finishReadyBoardOps() && Clock::now() < until);
}

// Board ops at the head of the queue that every rank has posted: finished by the thread that
// issues the next op, before it issues it, so that small ops issued back to back (as
// all_reduce_perf does) keep to the issuing thread instead of moving to the progress thread,
// whose hand-over and wake-ups cost more than the op. Nothing here waits for a peer: the first
// op that is not ready stops it. engine_mu_ held. True: it stopped at a board op that may
// finish later (not every peer has posted it yet).
bool CommunicatorImpl::finishReadyBoardOps() {
  for (;;) {
    OpRequest* head = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() || first_error_) return false;
      head = &queue_.front();  // stays where it is: only engine_mu_'s holder pops
    }
    if (&pathFor(*head) != board_.get()) return false;
    const auto started = trace_ ? Clock::now() : Clock::time_point{};
    Status st;
    if (!board_->finishWithoutWaiting(*head, &st)) return st.isOk();
    OpRequest op;
    {
      std::lock_guard<std::mutex> lock(mu_);
      op = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    RunReport report;
    report.algorithm = board_->name();
    ran(op, st, report, started);
  }
}

}  // namespace coll
