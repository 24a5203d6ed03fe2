// Per-GPU state of the device path, made lazily by the thread that runs ops: a stream of its
// own (non-blocking, so the legacy default stream never waits on it, nor it on that), the
// GPU's PCI bus id (ranks compare them to see whether they share a GPU), and the waits and
// pinned buffers the paths share.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>

#include "base/status.h"

namespace coll::cuda {

using Deadline = std::chrono::steady_clock::time_point;

struct DeviceContext {
  int ordinal = -1;
  cudaStream_t stream = nullptr;
  char bus_id[16] = {};             // "0000:41:00.0": the same GPU in every process
  cudaEvent_t slot_ready[2] = {};   // the staged path's two pinned slots (staged_collective.h)

  Status init(int device);
  ~DeviceContext();
};

// Blocks until everything queued on `stream` ran, or fails at the deadline (a GPU that hangs
// must not hang the communicator silently). `what` names the work in the error.
Status waitStream(cudaStream_t stream, Deadline deadline, const char* what);
Status waitEvent(cudaEvent_t event, Deadline deadline, const char* what);

// Page-locked host memory, grown on demand and kept: device copies to and from it are truly
// asynchronous (and faster than from pageable memory).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  Status reserve(size_t bytes);
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace coll::cuda
