// Makes work queued on a CUDA stream after an op wait until the op completes, without a host
// callback: the stream waits (cuStreamWaitValue64, on the GPU) for a counter in mapped pinned
// memory to reach the op's ticket, and the thread that completes the op writes it. A host
// function blocking on the stream instead deadlocked: a thread copying to pageable memory on
// that stream waits inside the driver while holding it, and the op's own CUDA calls wait there.
//
// One gate per communicator: its ops complete in issue order, so a ticket's release also
// releases every earlier one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "exec/work_state.h"

namespace coll::cuda {

class StreamGate {
 public:
  // Queues the wait on `stream` (a cudaStream_t; nullptr: the legacy default stream) and
  // arranges for `work`'s completion, success or failure, to release it.
  Status hold(void* stream, const std::shared_ptr<detail::WorkState>& work);

 private:
  Status init();

  // Mapped pinned memory, written here and polled by GPUs. Never freed: a stream may still be
  // queued to read it after the communicator is gone.
  std::atomic<uint64_t>* counter_ = nullptr;
  void* counter_on_device_ = nullptr;
  uint64_t next_ticket_ = 0;  // issuing thread only
};

}  // namespace coll::cuda
