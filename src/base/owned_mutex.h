// A mutex that knows which thread holds it and can be waited for with a deadline: abort()
// waits for the thread running an op to let go of its engine, unless the caller is that thread
// (a completion callback that aborts), which would wait on itself.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace coll {

class OwnedMutex {
 public:
  void lock() {
    mu_.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    if (!mu_.try_lock_until(deadline)) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    mu_.unlock();
  }
  // Exact for the calling thread: only it can have stored its own id.
  bool heldByThisThread() const { return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

 private:
  std::timed_mutex mu_;
  std::atomic<std::thread::id> owner_{};
};

}  // namespace coll
