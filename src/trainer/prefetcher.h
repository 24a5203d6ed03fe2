// Prefetcher: prepares batch s+1 on its own thread while step s runs (tf.data's prefetch(1)).
//
// next() returns the batch of the next step, waiting at most `timeout` for it (an input
// function that stalls fails the step with a runtime_error naming the step instead of hanging
// it); an exception thrown by the input function is rethrown by next(). The input function
// runs on the prefetch thread only, one call at a time, steps in order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace coll::trainer {

template <typename Batch>
class Prefetcher {
 public:
  using InputFn = std::function<Batch(int64_t step)>;

  Prefetcher(InputFn input, int64_t first_step, int64_t end_step, std::chrono::milliseconds timeout)
      : input_(std::move(input)), first_step_(first_step), next_step_(first_step), end_step_(end_step), timeout_(timeout),
        thread_([this] { loop(); }) {}

  ~Prefetcher() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();  // bounded: the thread finishes at most the input call in progress
  }

  Batch next() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout_, [&] { return ready_.has_value() || error_; }))
      throw std::runtime_error("input pipeline: batch of step " + std::to_string(first_step_ + consumed_) + " not ready after " +
                               std::to_string(timeout_.count()) + " ms");
    if (error_) std::rethrow_exception(error_);
    Batch b = std::move(*ready_);
    ready_.reset();
    ++consumed_;
    cv_.notify_all();  // the slot is free: prepare the next one
    return b;
  }

 private:
  void loop() {
    for (;;) {
      int64_t step;
      {
        std::unique_lock lock(mu_);
        // Idle until the consumer took the previous batch; ticks so stop is seen promptly.
        while (!stop_ && ready_.has_value()) cv_.wait_for(lock, std::chrono::milliseconds(100));
        if (stop_ || next_step_ >= end_step_) return;
        step = next_step_++;
      }
      bool failed = false;
      try {
        Batch b = input_(step);
        std::lock_guard lock(mu_);
        ready_ = std::move(b);
      } catch (...) {
        std::lock_guard lock(mu_);
        error_ = std::current_exception();
        failed = true;
      }
      cv_.notify_all();
      if (failed) return;
    }
  }

  InputFn input_;
  int64_t first_step_, next_step_, end_step_, consumed_ = 0;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after every other member is initialised
};

}  // namespace coll::trainer
