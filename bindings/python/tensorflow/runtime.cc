#include "runtime.h"

#include <cstring>

#include "coll/error.h"

namespace coll::tensorflow_ops {

Completions::Completions() : thread_([this] { loop(); }) {}

Completions::~Completions() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Completions::add(coll::Work work, std::function<void(const coll::Work&)> fn) {
  coll::Work watched = work;
  auto entry = std::make_shared<Entry>(Entry{std::move(work), std::move(fn)});
  // onComplete runs on coll's thread: it only queues. Adding it also starts the op at once (no
  // TensorFlow thread waits to run it inline).
  watched.onComplete([this, entry] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(*entry));
    }
    cv_.notify_one();
  });
}

void Completions::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
    if (ready_.empty()) return;
    Entry e = std::move(ready_.front());
    ready_.pop_front();
    lock.unlock();
    e.fn(e.work);
    lock.lock();
  }
}

Runtime& Runtime::get() {
  static Runtime* runtime = new Runtime();  // never destroyed: kernels may finish during exit
  return *runtime;
}

void Runtime::init() {
  std::lock_guard<std::mutex> lock(mu_);
  if (comm_) return;
  comm_ = coll::Communicator::fromEnvironment();
  completions_ = std::make_unique<Completions>();
}

void Runtime::shutdown() {
  std::unique_ptr<coll::Communicator> comm;
  std::unique_ptr<Completions> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    comm.swap(comm_);
    completions.swap(completions_);
  }
  comm.reset();         // waits for the ops queued (each bounded by its deadline)
  completions.reset();  // then hands the last of them back
}

bool Runtime::initialized() {
  std::lock_guard<std::mutex> lock(mu_);
  return comm_ != nullptr;
}

coll::Work Runtime::issue(const std::function<coll::Work(coll::Communicator&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!comm_)
    throw coll::Error(coll::ErrorCode::InvalidArgument, "coll.tensorflow.init() was not called in this process");
  return fn(*comm_);
}

int Runtime::rank() {
  std::lock_guard<std::mutex> lock(mu_);
  return comm_ ? comm_->rank() : -1;
}

int Runtime::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return comm_ ? comm_->size() : -1;
}

}  // namespace coll::tensorflow_ops

// The C entry points coll/tensorflow.py calls through ctypes on this same library: 0 on
// success, else a message in `error` (truncated to `len`).
extern "C" {

__attribute__((visibility("default"))) int coll_tf_init(char* error, int len) {
  try {
    coll::tensorflow_ops::Runtime::get().init();
    return 0;
  } catch (const std::exception& e) {
    std::strncpy(error, e.what(), static_cast<size_t>(len - 1));
    error[len - 1] = '\0';
    return 1;
  }
}

__attribute__((visibility("default"))) void coll_tf_shutdown() { coll::tensorflow_ops::Runtime::get().shutdown(); }

__attribute__((visibility("default"))) int coll_tf_rank() { return coll::tensorflow_ops::Runtime::get().rank(); }

__attribute__((visibility("default"))) int coll_tf_size() { return coll::tensorflow_ops::Runtime::get().size(); }
}
