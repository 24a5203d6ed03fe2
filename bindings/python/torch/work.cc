#include "work.h"

#include <ATen/core/jit_type.h>
#include <torch/version.h>

#include <atomic>
#include <optional>
#include <set>
#include <stdexcept>

#include "coll/error.h"

namespace coll::torch_backend {

namespace {

// The event names gloo gives its ops, which torch's tests look for.
const char* opName(c10d::OpType type) {
  switch (type) {
    case c10d::OpType::BROADCAST: return "broadcast";
    case c10d::OpType::ALLREDUCE: return "all_reduce";
    case c10d::OpType::ALLREDUCE_COALESCED: return "all_reduce";  // as gloo names them
    case c10d::OpType::REDUCE: return "reduce";
    case c10d::OpType::ALLGATHER: return "all_gather";
    case c10d::OpType::_ALLGATHER_BASE: return "_all_gather_base";
    case c10d::OpType::ALLGATHER_COALESCED: return "all_gather";
    case c10d::OpType::GATHER: return "gather";
    case c10d::OpType::SCATTER: return "scatter";
    case c10d::OpType::REDUCE_SCATTER: return "reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE: return "_reduce_scatter_base";
    case c10d::OpType::ALLTOALL_BASE:
    case c10d::OpType::ALLTOALL: return "all_to_all";
    case c10d::OpType::SEND: return "send";
    case c10d::OpType::RECV: return "recv";
    case c10d::OpType::RECVANYSOURCE: return "recvAnySource";
    case c10d::OpType::BARRIER: return "barrier";
    default: return "unknown";
  }
}

// The tensors whose shapes torch's profiler records, in the optional type of this torch's
// c10d::Work constructor (c10::optional before torch 2.2, std::optional since).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
using ProfiledTensors = std::optional<std::vector<at::Tensor>>;
#else
using ProfiledTensors = c10::optional<std::vector<at::Tensor>>;
#endif
ProfiledTensors profiledInputs(const char* profiling_title, const std::vector<at::Tensor>& tensors) {
  if (!profiling_title) return ProfiledTensors();
  return ProfiledTensors(tensors);
}

}  // namespace

const char* profilingTitle(const std::string& backend, c10d::OpType type) {
  static std::mutex mu;
  static std::set<std::string> titles;  // never shrinks: a handful of strings
  std::lock_guard<std::mutex> lock(mu);
  return titles.insert(backend + ":" + opName(type)).first->c_str();
}

CollWork::CollWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                   std::function<void()> finish_ok, const char* profiling_title, std::vector<at::Tensor> inputs,
                   std::vector<c10::Device> devices)
    : c10d::Work(rank, type, profiling_title, profiledInputs(profiling_title, inputs.empty() ? outputs : inputs)),
      outputs_(std::move(outputs)),
      keep_(std::move(keep)),
      finish_ok_(std::move(finish_ok)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::move(devices))) {}

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

CoalescedWork::CoalescedWork(int rank, std::vector<c10::intrusive_ptr<CollWork>> members)
    : c10d::Work(rank, c10d::OpType::UNKNOWN), members_(std::move(members)) {
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(
      c10::FutureType::create(c10::ListType::create(c10::TensorType::get())));
  for (const auto& m : members_) futures.push_back(m->getFuture());
  future_ = c10::collectAll(futures);
}

bool CoalescedWork::isCompleted() {
  for (const auto& m : members_)
    if (!m->isCompleted()) return false;
  return true;
}

bool CoalescedWork::isSuccess() const {
  for (const auto& m : members_)
    if (!m->isSuccess()) return false;
  return true;
}

std::exception_ptr CoalescedWork::exception() const {
  for (const auto& m : members_)
    if (auto e = m->exception()) return e;
  return nullptr;
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  for (const auto& m : members_)
    if (!m->wait(timeout)) return false;
  return true;
}

Completer::Completer() : thread_([this] { loop(); }), any_order_thread_([this] { anyOrderLoop(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  any_order_thread_.join();
}

void Completer::add(std::vector<coll::Work> ops, c10::intrusive_ptr<CollWork> work, bool in_any_order) {
  if (!in_any_order) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(Entry{std::move(ops), std::move(work)});
    }
    cv_.notify_all();
    return;
  }
  auto entry = std::make_shared<Entry>(Entry{std::move(ops), std::move(work)});
  auto left = std::make_shared<std::atomic<size_t>>(entry->ops.size() + 1);  // +1: released below
  auto arrived = [this, entry, left] {
    if (left->fetch_sub(1) != 1) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(*entry));
      --in_flight_;
      cv_.notify_all();  // under the lock: the Completer may be destroyed once in_flight_ is 0
    }
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_;
  }
  for (const coll::Work& op : entry->ops) op.onComplete(arrived);  // may run at once, here
  arrived();
}

void Completer::finish(Entry& entry) {
  std::exception_ptr error;
  try {
    for (const auto& op : entry.ops) op.wait();  // each bounded by its op's deadline
  } catch (const coll::Error& e) {
    // RuntimeError in Python; the code leads so scripts can tell a timeout from a lost peer,
    // and a timeout says "Timed out", the words torch's own code and tests match on.
    const std::string timed_out = e.code() == ErrorCode::Timeout ? "Timed out (" + std::string(e.what()) + ")" : e.what();
    error = std::make_exception_ptr(std::runtime_error(std::string("coll ") + toString(e.code()) + ": " + timed_out));
  } catch (...) {
    error = std::current_exception();
  }
  if (entry.ops.size() == 1) entry.work->setSourceRank(entry.ops[0].source());
  entry.work->complete(error);
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
    finish(entry);
  }
}

// Point-to-point entries, in the order they finished (their waits return at once).
void Completer::anyOrderLoop() {
  for (;;) {
    Entry entry;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !ready_.empty() || (stopping_ && in_flight_ == 0); });
      if (ready_.empty()) return;  // stopping and drained
      entry = std::move(ready_.front());
      ready_.pop_front();
    }
    finish(entry);
  }
}

}  // namespace coll::torch_backend
