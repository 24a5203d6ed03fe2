// The shared state behind a coll::Work handle. Completed exactly once, by whichever thread ran
// the op: the progress thread, or a thread that waited on a Work and ran the queued ops itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "coll/error.h"

namespace coll::detail {

struct WorkState;

// Caller-driven progress, as MPI does it: a thread that is about to block on a Work may run the
// queued ops itself instead of handing each one to the progress thread and back, which costs
// two cross-thread wake-ups per op and, with ranks outnumbering cores, a second runnable thread
// per rank competing for them.
class OpDriver {
 public:
  // Runs queued ops in issue order in the calling thread until `work` is done or nothing is
  // queued. Returns false at once when another thread is running ops.
  virtual bool driveUntilDone(const WorkState& work) = 0;
  // Someone polls or waits with a timeout instead of driving: the progress thread must run
  // whatever was queued without waking it (CommunicatorImpl::push's keeps_hot).
  virtual void kick() = 0;
  // Nobody will wait on the ops queued so far to run them (Work::onComplete): run them now,
  // without the grace left to a waiter.
  virtual void expedite() = 0;
  // A waiter gave up on the thread that runs the ops (wedged: Work::wait's watchdog). The ops
  // still queued or posted must never run after this, into buffers their caller may have freed
  // once its wait failed: fail them all with `why` (the communicator is failed, as after any
  // op's timeout). Called under the link's mu, so it runs no completion callback: the ops are
  // completed by the runner when it returns, or by the destructor.
  virtual void abandon(const Error& why) = 0;

 protected:
  ~OpDriver() = default;
};

// A Work's way back to its communicator, which may be destroyed first: the communicator clears
// `driver` under `mu` on destruction, and a waiter holds `mu` while it drives.
struct DriverLink {
  std::mutex mu;
  OpDriver* driver = nullptr;
  // The watchdog Work::wait() keeps on whoever runs the ops: steady_clock ns of the last op
  // started or finished, and how long a healthy runner can go without either (COLL_TIMEOUT,
  // which bounds every op, plus a margin; 0: no watchdog). Past that the runner is wedged
  // (a completion callback that never returns, say) and waiters fail instead of hanging.
  std::atomic<int64_t> heartbeat_ns{0};
  int64_t stall_limit_ns = 0;
  static int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void beat() { heartbeat_ns.store(nowNs(), std::memory_order_relaxed); }
};

struct WorkState {
  uint64_t sequence = 0;
  const char* op_name = "";  // "allreduce": a literal (toString), never freed
  std::shared_ptr<DriverLink> link;
  bool watched = false;  // run from the communicator's queue, so the link's watchdog applies
  int64_t queued_ns = 0;  // when it was queued (DriverLink::nowNs): the watchdog counts from here at the earliest

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<Error> error;
  std::atomic<bool> finished{false};  // mirrors done, for waiters that spin before locking
  int source = -1;  // a receive: the rank its message came from (set before done)
  // Run once, by the completing thread, after done is set (a CUDA stream waiting for the op:
  // src/cuda/stream_gate.h). Set under mu, and only while !done.
  std::function<void()> on_complete;

  // Completes a state no other thread can reach yet (its Work not handed out): no lock.
  void completeUnshared(std::optional<Error> e) {
    done = true;
    error = std::move(e);
    finished.store(true, std::memory_order_release);
  }
  // Back to new, for reuse by a later op; only while nothing else holds it.
  void reset() {
    done = false;
    error.reset();
    finished.store(false, std::memory_order_relaxed);
    on_complete = nullptr;
  }

  // Adds fn to what runs on completion, after what is there; false (nothing added) when the
  // state is done already. Caller holds mu.
  bool chainOnCompleteLocked(std::function<void()> fn) {
    if (done) return false;
    if (!on_complete) {
      on_complete = std::move(fn);
    } else {
      on_complete = [before = std::move(on_complete), fn = std::move(fn)] {
        before();
        fn();
      };
    }
    return true;
  }

  void complete(std::optional<Error> e) {
    std::function<void()> then;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
      done = true;
      error = std::move(e);
      then.swap(on_complete);
    }
    finished.store(true, std::memory_order_release);
    cv.notify_all();
    if (then) then();
  }
};

}  // namespace coll::detail
