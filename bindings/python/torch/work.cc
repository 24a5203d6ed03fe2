#include "work.h"

#include <ATen/core/jit_type.h>

#include <stdexcept>

#include "coll/error.h"

namespace coll::torch_backend {

CollWork::CollWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                   std::function<void()> finish_ok)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      keep_(std::move(keep)),
      finish_ok_(std::move(finish_ok)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void CollWork::complete(std::exception_ptr error) {
  if (!error && finish_ok_) {
    try {
      finish_ok_();
    } catch (...) {
      error = std::current_exception();
    }
  }
  keep_.clear();
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

Completer::Completer() : thread_([this] { loop(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Completer::add(std::vector<coll::Work> ops, c10::intrusive_ptr<CollWork> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Entry{std::move(ops), std::move(work)});
  }
  cv_.notify_one();
}

void Completer::loop() {
  for (;;) {
    Entry entry;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      for (const auto& op : entry.ops) op.wait();  // each bounded by its op's deadline
    } catch (const coll::Error& e) {
      // RuntimeError in Python; the code leads so scripts can tell a timeout from a lost peer.
      error = std::make_exception_ptr(std::runtime_error(std::string("coll ") + toString(e.code()) + ": " + e.what()));
    } catch (...) {
      error = std::current_exception();
    }
    entry.work->complete(error);
  }
}

}  // namespace coll::torch_backend
