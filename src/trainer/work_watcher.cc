#include "trainer/work_watcher.h"

namespace coll::trainer {

WorkWatcher::WorkWatcher(Timeline& timeline) : timeline_(timeline), thread_([this] { loop(); }) {}

WorkWatcher::~WorkWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WorkWatcher::watch(Work work, TimelineEvent event) {
  if (!timeline_.enabled()) return;
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(std::move(work), std::move(event));
    ++unrecorded_;
  }
  cv_.notify_all();
}

bool WorkWatcher::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return unrecorded_ == 0; });
}

void WorkWatcher::loop() {
  for (;;) {
    std::unique_lock lock(mu_);
    while (queue_.empty() && !stop_) cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (queue_.empty()) return;  // stop_ and nothing left
    auto [work, event] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    bool ok = true;
    try {
      work.wait();
    } catch (const Error&) {
      ok = false;  // the training thread's wait reports it
    }
    if (ok) {
      event.end = Clock::now();
      timeline_.record(std::move(event));
    }
    lock.lock();
    --unrecorded_;
    cv_.notify_all();
  }
}

}  // namespace coll::trainer
