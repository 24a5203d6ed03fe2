// What coll's TensorFlow kernels share in one process: the communicator (made by
// coll.tensorflow.init() from the launcher's environment), the lock that keeps its issuing to
// one thread at a time, and the thread that hands finished ops back to TensorFlow.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "coll/communicator.h"

namespace coll::tensorflow_ops {

// Runs each finished op's callback (TensorFlow's `done`, which may run the kernels that were
// waiting on it) on a thread of its own: coll's progress thread must never run them.
class Completions {
 public:
  Completions();
  ~Completions();  // runs what is queued, then stops
  // `fn` runs once `work` finished (successfully or not), after those added before it finished.
  void add(coll::Work work, std::function<void(const coll::Work&)> fn);

 private:
  struct Entry {
    coll::Work work;
    std::function<void(const coll::Work&)> fn;
  };
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> ready_;
  bool stopping_ = false;
  std::thread thread_;
};

class Runtime {
 public:
  static Runtime& get();
  // Makes the communicator from the launcher's environment (collrun, torchrun, mpirun, srun);
  // idempotent. Throws coll::Error.
  void init();
  void shutdown();
  bool initialized();
  // Issues under the issue lock; throws coll::Error when init() was not called.
  coll::Work issue(const std::function<coll::Work(coll::Communicator&)>& fn);
  int rank();
  int size();
  Completions& completions() { return *completions_; }

 private:
  std::mutex mu_;
  std::unique_ptr<coll::Communicator> comm_;
  std::unique_ptr<Completions> completions_;
};

}  // namespace coll::tensorflow_ops
