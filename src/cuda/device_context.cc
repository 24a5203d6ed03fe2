#include "cuda/device_context.h"

#include <thread>

#include "base/log.h"
#include "cuda/runtime.h"

namespace coll::cuda {

Status DeviceContext::init(int device) {
  ordinal = device;
  COLL_RETURN_IF_ERROR(check(cudaSetDevice(device), "cudaSetDevice"));
  COLL_RETURN_IF_ERROR(check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  for (cudaEvent_t& e : slot_ready)
    COLL_RETURN_IF_ERROR(check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
  return check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
}

DeviceContext::~DeviceContext() {
  if (ordinal < 0) return;
  (void)cudaSetDevice(ordinal);
  for (cudaEvent_t e : slot_ready)
    if (e) (void)cudaEventDestroy(e);
  if (stream) (void)cudaStreamDestroy(stream);
}

namespace {

// Device work of an op takes microseconds to a few milliseconds: poll (yielding the core)
// for a while, then sleep in growing steps so a long wait does not burn a core. A sleep costs
// at least the timer slack (50 us by default), which measured here as 200-300 us added to
// every small op when the poll gave up after a few microseconds; the poll lasts 10 ms so that
// an op of a few milliseconds (256 MiB on 8 ranks of one GPU) is not rounded up to a sleep.
template <class Query>
Status waitUntil(Query query, Deadline deadline, const char* what) {
  constexpr auto kPollFor = std::chrono::milliseconds(10);
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    cudaError_t e = query();
    if (e == cudaSuccess) return Status::ok();
    if (e != cudaErrorNotReady) return check(e, what);
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return timeoutError(format("deadline expired waiting for the GPU to finish %s", what));
    if (now - start < kPollFor) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::microseconds(500));
  }
}

}  // namespace

Status waitStream(cudaStream_t stream, Deadline deadline, const char* what) {
  return waitUntil([&] { return cudaStreamQuery(stream); }, deadline, what);
}

Status waitEvent(cudaEvent_t event, Deadline deadline, const char* what) {
  return waitUntil([&] { return cudaEventQuery(event); }, deadline, what);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) (void)cudaFreeHost(data_);
}

Status PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return Status::ok();
  if (data_) (void)cudaFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
  void* p = nullptr;
  Status st = check(cudaMallocHost(&p, bytes), "cudaMallocHost");
  if (!st) return Status(st.code(), format("%s (pinned staging of %s)", st.message().c_str(), formatBytes(bytes).c_str()));
  data_ = static_cast<char*>(p);
  bytes_ = bytes;
  return Status::ok();
}

}  // namespace coll::cuda
