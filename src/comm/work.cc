#include "coll/work.h"

#include <algorithm>
#include <string>

#include "base/spin_wait.h"
#include "exec/work_state.h"

namespace coll {
namespace {
const Error kInvalidWork(ErrorCode::InvalidArgument, "wait on an empty coll::Work (default-constructed)");

// Calls fn(driver) under the link's lock while the op is unfinished and its communicator alive.
template <typename Fn>
void withDriver(detail::WorkState& state, Fn&& fn) {
  if (state.finished.load(std::memory_order_acquire) || !state.link) return;
  std::lock_guard<std::mutex> lock(state.link->mu);
  if (state.link->driver) fn(*state.link->driver);
}
// Runs the queued ops up to this one in the calling thread, unless another thread is at it.
void driveInline(detail::WorkState& state) {
  withDriver(state, [&](detail::OpDriver& d) { d.driveUntilDone(state); });
}
// For a thread that will not drive: makes sure the progress thread runs the op.
void kickProgress(detail::WorkState& state) {
  withDriver(state, [](detail::OpDriver& d) { d.kick(); });
}
// For a caller that finishes the op by callback: the progress thread runs it at once.
void expediteProgress(detail::WorkState& state) {
  withDriver(state, [](detail::OpDriver& d) { d.expedite(); });
}
// This wait gives up on a wedged runner: the ops still queued must never run after it returns
// (their callers may free the buffers), so their communicator fails (OpDriver::abandon).
void abandonRunner(detail::WorkState& state, const Error& why) {
  std::lock_guard<std::mutex> lock(state.link->mu);
  if (state.link->driver) state.link->driver->abandon(why);
}
// How often a waiter checks the runner's heartbeat.
constexpr auto kWatchdogPoll = std::chrono::milliseconds(500);

// Timeout when the ops' runner has neither started nor finished an op for longer than a
// healthy one can (DriverLink::stall_limit_ns).
std::optional<Error> runnerWedged(const detail::WorkState& state) {
  const detail::DriverLink* link = state.link.get();
  if (!state.watched || !link || link->stall_limit_ns <= 0) return std::nullopt;
  const int64_t since = std::max(link->heartbeat_ns.load(std::memory_order_relaxed), state.queued_ns);
  const int64_t silent = detail::DriverLink::nowNs() - since;
  if (silent <= link->stall_limit_ns) return std::nullopt;
  return Error(ErrorCode::Timeout,
               std::string(state.op_name) + " #" + std::to_string(state.sequence) +
                   ": the thread running this communicator's ops has neither started nor finished one for " +
                   std::to_string(silent / 1'000'000'000) + " s, longer than any op may take (COLL_TIMEOUT and a "
                   "margin): it is wedged (in a completion callback that does not return, say); this wait gives up");
}

}  // namespace

bool Work::test() const {
  if (!state_) throw kInvalidWork;
  kickProgress(*state_);
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

void Work::wait() const {
  if (!state_) throw kInvalidWork;
  driveInline(*state_);
  spinUntil([&] { return state_->finished.load(std::memory_order_acquire); });
  // finished is stored (release) after done and error, which never change again.
  if (state_->finished.load(std::memory_order_acquire)) {
    if (state_->error) throw *state_->error;
    return;
  }
  std::unique_lock<std::mutex> lock(state_->mu);
  // The runner completes every op by its own deadline (COLL_TIMEOUT from when it starts), so
  // this wait is bounded by the ops queued before it, unless the runner itself is wedged.
  while (!state_->cv.wait_for(lock, kWatchdogPoll, [&] { return state_->done; })) {
    if (std::optional<Error> wedged = runnerWedged(*state_)) {
      lock.unlock();
      abandonRunner(*state_, *wedged);
      throw *wedged;
    }
  }
  if (state_->error) throw *state_->error;
}

bool Work::wait(std::chrono::milliseconds timeout) const {
  if (!state_) throw kInvalidWork;
  kickProgress(*state_);
  std::unique_lock<std::mutex> lock(state_->mu);
  if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) return false;
  if (state_->error) throw *state_->error;
  return true;
}

std::optional<Error> Work::error() const {
  if (!state_) return std::nullopt;
  kickProgress(*state_);
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->error;
}

Work::Work(std::shared_ptr<detail::WorkState> state)
    : state_(std::move(state)), sequence_(state_ ? state_->sequence : 0) {}

uint64_t Work::sequence() const { return sequence_; }

void Work::onComplete(std::function<void()> fn) const {
  if (!state_) throw kInvalidWork;
  bool added;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    added = state_->chainOnCompleteLocked(fn);
  }
  if (!added) return fn();
  expediteProgress(*state_);  // nobody may wait on it to run it: start it now
}

int Work::source() const {
  if (!state_ || !state_->finished.load(std::memory_order_acquire)) return -1;
  return state_->source;
}

}  // namespace coll
