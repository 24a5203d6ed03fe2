// The shared state behind a coll::Work handle. Completed exactly once, by the progress thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "coll/error.h"

namespace coll::detail {

struct WorkState {
  uint64_t sequence = 0;
  std::string op_name;  // "allreduce"

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<Error> error;
  std::atomic<bool> finished{false};  // mirrors done, for waiters that spin before locking

  void complete(std::optional<Error> e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
      done = true;
      error = std::move(e);
    }
    finished.store(true, std::memory_order_release);
    cv.notify_all();
  }
};

}  // namespace coll::detail
