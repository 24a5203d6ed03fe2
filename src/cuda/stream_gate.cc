#include "cuda/stream_gate.h"

#include <cuda.h>  // types only (driver_entry.h)
#include <cuda_runtime.h>

#include <new>

#include "base/log.h"
#include "cuda/driver_entry.h"
#include "cuda/runtime.h"

namespace coll::cuda {
namespace {

using WaitValue64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned);

WaitValue64 waitValue() {
  static const auto fn = reinterpret_cast<WaitValue64>(driverEntry("cuStreamWaitValue64"));
  return fn;
}

// Ops complete in issue order, but a failure completes the queued ones from another thread:
// never move the counter back.
void release(std::atomic<uint64_t>* counter, uint64_t ticket) {
  uint64_t seen = counter->load(std::memory_order_relaxed);
  while (seen < ticket && !counter->compare_exchange_weak(seen, ticket, std::memory_order_release)) {
  }
}

}  // namespace

Status StreamGate::init() {
  if (counter_) return Status::ok();
  if (!waitValue()) return unsupportedError("the CUDA driver has no cuStreamWaitValue64: streams cannot wait for ops");
  void* p = nullptr;
  COLL_RETURN_IF_ERROR(check(cudaHostAlloc(&p, sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable),
                             "cudaHostAlloc (stream gate)"));
  counter_ = new (p) std::atomic<uint64_t>(0);
  return check(cudaHostGetDevicePointer(&counter_on_device_, p, 0), "cudaHostGetDevicePointer (stream gate)");
}

Status StreamGate::hold(void* stream, const std::shared_ptr<detail::WorkState>& work) {
  COLL_RETURN_IF_ERROR(init());
  const uint64_t ticket = ++next_ticket_;
  CUstream s = stream ? static_cast<CUstream>(stream) : CU_STREAM_LEGACY;
  CUresult r = waitValue()(s, reinterpret_cast<CUdeviceptr>(counter_on_device_), ticket, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) return transportError(format("cuStreamWaitValue64: CUresult %d", static_cast<int>(r)));
  std::atomic<uint64_t>* counter = counter_;
  std::lock_guard<std::mutex> lock(work->mu);
  if (!work->chainOnCompleteLocked([counter, ticket] { release(counter, ticket); })) release(counter, ticket);
  return Status::ok();
}

}  // namespace coll::cuda
