// WorkWatcher: timestamps the completion of asynchronous collectives for the timeline.
//
// The training thread waits for a bucket only when the optimizer needs it, which may be long
// after the all-reduce finished; to draw when communication really ended, one watcher thread
// waits on each watched Work in turn (ops on a communicator complete in issue order, so one
// thread in issue order loses nothing) and records the event when it completes. Errors are
// left to the training thread's own wait, which rethrows them. Work::wait is bounded by the
// op's deadline (COLL_TIMEOUT); the idle wait for new work ticks every 100 ms to notice stop.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "coll/work.h"
#include "trainer/timeline.h"

namespace coll::trainer {

class WorkWatcher {
 public:
  explicit WorkWatcher(Timeline& timeline);
  ~WorkWatcher();  // finishes the queue (each wait bounded), then joins
  WorkWatcher(const WorkWatcher&) = delete;
  WorkWatcher& operator=(const WorkWatcher&) = delete;

  // `event` has name, lane, step, start and bytes; its end is set when `work` completes.
  void watch(Work work, TimelineEvent event);
  // Returns once every watched Work's event is recorded, or false after `timeout`.
  bool flush(std::chrono::milliseconds timeout);

 private:
  void loop();

  Timeline& timeline_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Work, TimelineEvent>> queue_;
  size_t unrecorded_ = 0;  // watched, event not yet recorded
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace coll::trainer
