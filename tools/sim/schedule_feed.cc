#include "schedule_feed.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "symmetry.h"

namespace coll::sim {
namespace {

constexpr int kWindow = 64;  // schedules built ahead of the one being taken: bounds the memory

class Feed {
 public:
  Feed(const ClusterModel& m, const SimRequest& q, int ranks)
      : m_(m), q_(q), ranks_(ranks), slot_(kWindow), held_(kWindow, -1) {}

  Status run(const std::function<Status(int, const algo::Schedule&)>& take) {
    const int workers = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 2);
    std::vector<std::thread> threads;
    for (int t = 0; t < workers; ++t) threads.emplace_back([this, t, workers] { build(t, workers); });
    Status st;
    for (int r = 0; r < ranks_ && st; ++r) {
      algo::Schedule s = next(r);
      st = take(r, s);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
    return st;
  }

 private:
  void build(int first, int stride) {
    for (int r = first; r < ranks_; r += stride) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || r < taken_ + kWindow; });
        if (stop_) return;
      }
      algo::Schedule s = q_.algorithm->build(buildParamsFor(m_, q_, r));
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot_[static_cast<size_t>(r % kWindow)] = std::move(s);
        held_[static_cast<size_t>(r % kWindow)] = r;
      }
      cv_.notify_all();
    }
  }

  algo::Schedule next(int r) {
    std::unique_lock<std::mutex> lock(mu_);
    const size_t i = static_cast<size_t>(r % kWindow);
    cv_.wait(lock, [&] { return held_[i] == r; });
    algo::Schedule s = std::move(slot_[i]);
    held_[i] = -1;
    taken_ = r + 1;
    lock.unlock();
    cv_.notify_all();
    return s;
  }

  const ClusterModel& m_;
  const SimRequest& q_;
  const int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<algo::Schedule> slot_;
  std::vector<int> held_;  // the rank whose schedule each slot holds; -1: empty
  int taken_ = 0;          // ranks below it were handed over
  bool stop_ = false;
};

}  // namespace

Status buildInOrder(const ClusterModel& m, const SimRequest& q, int ranks,
                    const std::function<Status(int, const algo::Schedule&)>& take) {
  return Feed(m, q, ranks).run(take);
}

}  // namespace coll::sim
