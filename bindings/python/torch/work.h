// The c10d::Work the coll backend returns, and the thread that completes it.
//
// coll runs every op on its own threads; nothing here runs collectives. The Completer waits
// on coll's Work handles of collectives in issue order (they complete in that order) and then
// finishes the torch Work: copies results into non-contiguous or listed outputs, marks the
// Future (whose value is the output List[Tensor], as DDP expects) and wakes waiters. Sends and
// receives complete in any order, as their partners arrive, so they must never wait behind a
// collective (a rank may send only after its receive finished): coll tells the Completer when
// each finished (Work::onComplete) and a second thread of it finishes their torch Works in that
// order. Callbacks chained on the Future therefore run on the Completer's threads, never on
// coll's and never inside the autograd thread.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "coll/work.h"

namespace coll::torch_backend {

class CollWork : public c10d::Work {
 public:
  // `outputs` is what result() and the Future return; `keep` holds every tensor the op reads
  // or writes until it completes; `finish_ok` runs after success (copy-back), may be empty.
  // profiling_title: "<backend>:<op>" ("coll:all_reduce"), the name of the op's event in
  // torch's profiler, as gloo's are named; it must outlive the Work (profilingTitle() gives one).
  // inputs: the op's input tensors, whose shapes the profiler records (empty: the outputs').
  // devices: the GPU the tensors live on (none for the CPU), which the Future must declare.
  CollWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
           std::function<void()> finish_ok, const char* profiling_title = nullptr, std::vector<at::Tensor> inputs = {},
           std::vector<c10::Device> devices = {});

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // A receive's sender (recvAnysource); set before completion.
  int sourceRank() const override { return source_; }
  void setSourceRank(int rank) { source_ = rank; }

  // Called once, by the Completer: error == nullptr means every coll op succeeded.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::function<void()> finish_ok_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_ = -1;
};

// The Work of a coalesced block (ProcessGroupColl::endCoalescing): done when every member is,
// so that waiting on it also waits for each member's copy-back.
class CoalescedWork : public c10d::Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<CollWork>> members);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<c10::intrusive_ptr<CollWork>> members_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // completes with the last member's
};

// "<backend>:<op>" for an op type, interned (the profiler keeps the pointer, not a copy).
const char* profilingTitle(const std::string& backend, c10d::OpType type);

class Completer {
 public:
  Completer();
  ~Completer();  // drains: every queued wait is bounded by its op's deadline

  // The coll ops that make up `work`, in issue order. in_any_order: point-to-point ops,
  // finished as they complete instead of in issue order.
  void add(std::vector<coll::Work> ops, c10::intrusive_ptr<CollWork> work, bool in_any_order = false);

 private:
  struct Entry {
    std::vector<coll::Work> ops;
    c10::intrusive_ptr<CollWork> work;
  };
  void loop();
  void anyOrderLoop();
  static void finish(Entry& entry);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;        // collectives, in issue order
  std::deque<Entry> ready_;        // point-to-point entries whose ops all finished
  size_t in_flight_ = 0;           // point-to-point entries not yet in ready_
  bool stopping_ = false;
  std::thread thread_;
  std::thread any_order_thread_;
};

}  // namespace coll::torch_backend
