// coll::Work: the handle every asynchronous collective returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "coll/error.h"
#include "coll/export.h"

namespace coll {

namespace detail {
struct WorkState;
}

// A Work is a cheap, copyable handle to one collective. Any thread may call its methods.
// Ops on one communicator complete in issue order, so waiting on the newest Work implies
// every earlier one has finished too.
class COLL_API Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

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

  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace coll
