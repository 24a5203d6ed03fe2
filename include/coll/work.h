// coll::Work: the handle every asynchronous collective returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "coll/error.h"
#include "coll/export.h"

namespace coll {

namespace detail {
struct WorkState;
}

// A Work is a cheap, copyable handle to one op. Any thread may call its methods. Collectives
// on one communicator complete in issue order, so waiting on the newest one implies every
// earlier collective has finished too; host sends and receives complete as their partners
// arrive, in any order.
class COLL_API Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state);
  // An op's Work over a state it may share with other ops (one that finished, say): the
  // sequence is the Work's own.
  Work(std::shared_ptr<detail::WorkState> state, uint64_t sequence) : state_(std::move(state)), sequence_(sequence) {}

  // True once the op finished, successfully or not. Never blocks.
  bool test() const;

  // Blocks until the op finishes; the op's own deadline (COLL_TIMEOUT) bounds this wait.
  // Throws coll::Error if the op failed.
  void wait() const;

  // Blocks at most `timeout`. Returns false if the op is still running (it keeps running;
  // wait again or abort the communicator). Throws coll::Error if the op failed.
  bool wait(std::chrono::milliseconds timeout) const;

  // The error, once the op has failed; nullopt while running or after success.
  std::optional<Error> error() const;

  // The op's sequence number on its communicator (0, 1, 2, ... in issue order).
  uint64_t sequence() const;

  // Runs fn once the op finished, successfully or not: at once, in this thread, if it has;
  // else on the thread that completes it, which is coll's: keep fn short, never block in it
  // and never call coll from it. Callbacks run in the order they were added. A caller that
  // finishes its ops by callback (as TensorFlow's asynchronous kernels do) does not wait to
  // run them in its own thread, so coll's thread starts the op, and those queued before it,
  // at once rather than leaving a waiter the first 100 us.
  void onComplete(std::function<void()> fn) const;

  // A completed receive: the rank its message came from (the answer for kAnySource); -1
  // before completion and for other ops.
  int source() const;

  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkState> state_;
  uint64_t sequence_ = 0;
};

}  // namespace coll
