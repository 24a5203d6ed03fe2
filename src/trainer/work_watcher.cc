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
  }
  cv_.notify_all();
}

void WorkWatcher::loop() {
  for (;;) {
    std::unique_lock lock(mu_);
    while (queue_.empty() && !stop_) cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (queue_.empty()) return;  // stop_ and nothing left
    auto [work, event] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      work.wait();
    } catch (const Error&) {
      continue;  // the training thread's wait reports it
    }
    event.end = Clock::now();
    timeline_.record(std::move(event));
  }
}

}  // namespace coll::trainer
