// A transport's abort() as its progress thread sees it. abort() may come from any thread, at
// any time; the progress thread polls raised() between waits and fails everything with the
// first reason given.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace coll::transport {

class AbortSignal {
 public:
  // Records the reason (the first one sticks). True for the call that raised it, which may
  // then do what must happen once (waking a sleeper, telling peers through shared memory).
  bool raise(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (reason_.empty()) reason_ = reason;
    }
    return !raised_.exchange(true, std::memory_order_acq_rel);
  }
  bool raised() const { return raised_.load(std::memory_order_acquire); }
  std::string reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_;
  }

 private:
  std::atomic<bool> raised_{false};
  mutable std::mutex mu_;
  std::string reason_;
};

}  // namespace coll::transport
