#include "cuda/runtime.h"

#include <cuda.h>  // types only (driver_entry.h)
#include <cuda_runtime.h>

#include <atomic>

#include "base/log.h"
#include "cuda/driver_entry.h"

namespace coll::cuda {
namespace {

struct Presence {
  bool present = false;
  std::string why;
};

const Presence& presence() {
  static const Presence p = [] {
    Presence r;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
      r.why = format("no GPU: %s", cudaGetErrorString(e));
    } else if (e != cudaSuccess) {
      r.why = format("no usable GPU: cudaGetDeviceCount: %s", cudaGetErrorString(e));
    } else if (n == 0) {
      r.why = "no GPU: cudaGetDeviceCount found none";
    } else {
      r.present = true;
    }
    (void)cudaGetLastError();  // the failed call above must not be reported by a later one
    return r;
  }();
  return p;
}

void destroyEvent(void* e) {
  if (e) (void)cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

}  // namespace

bool built() { return true; }
bool gpuPresent() { return presence().present; }
std::string whyNoGpu() { return presence().present ? "" : presence().why; }

void* driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    COLL_WARN("INIT", "the CUDA driver has no %s (cudaGetDriverEntryPointByVersion: %s, query result %d)", name,
              cudaGetErrorString(e), static_cast<int>(found));
    (void)cudaGetLastError();
    return nullptr;
  }
  return fn;
}

namespace {

// Whether this process has a CUDA context: current in this thread, or any GPU's primary
// context made by another thread. Without one no pointer can be device memory, and asking the
// runtime about a pointer would create one (hundreds of MiB of GPU memory) in a process that
// only ever passes host buffers.
bool findContext() {
  using GetCurrent = CUresult (*)(CUcontext*);
  using PrimaryState = CUresult (*)(CUdevice, unsigned*, int*);
  static const auto current = reinterpret_cast<GetCurrent>(driverEntry("cuCtxGetCurrent"));
  static const auto primary = reinterpret_cast<PrimaryState>(driverEntry("cuDevicePrimaryCtxGetState"));
  CUcontext ctx = nullptr;
  if (current && current(&ctx) == CUDA_SUCCESS && ctx) return true;
  int n = 0;
  if (!primary || cudaGetDeviceCount(&n) != cudaSuccess) return true;  // cannot tell: ask the runtime
  for (int d = 0; d < n; ++d) {
    unsigned flags = 0;
    int active = 0;
    if (primary(d, &flags, &active) == CUDA_SUCCESS && active) return true;
  }
  return false;
}

// Asked on every op; once a context has been seen the answer stays yes (asking the runtime is
// then harmless), so the driver is queried only until the first GPU allocation.
bool hasContext() {
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  if (!findContext()) return false;
  seen.store(true, std::memory_order_relaxed);
  return true;
}

}  // namespace

Pointer inspect(const void* p, std::string* why) {
  if (!p || !gpuPresent() || !hasContext()) {
    if (why) *why = !p ? "null pointer" : !gpuPresent() ? whyNoGpu() : "no CUDA context in this process";
    return {};
  }
  cudaPointerAttributes attr{};
  cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (why)
    *why = format("cudaPointerGetAttributes: %s, type %d, device %d", cudaGetErrorString(e), static_cast<int>(attr.type),
                  attr.device);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  // Managed memory is reachable from the host: the host paths serve it.
  if (attr.type != cudaMemoryTypeDevice) return {};
  return {true, attr.device};
}

Status check(int error, const char* call) {
  if (error == cudaSuccess) return Status::ok();
  auto e = static_cast<cudaError_t>(error);
  (void)cudaGetLastError();
  return transportError(format("%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e)));
}

Status recordReady(void* stream, int ordinal, std::shared_ptr<void>* event) {
  // The event belongs on the stream's GPU; the caller's current device is left as it was.
  int previous = -1;
  COLL_RETURN_IF_ERROR(check(cudaGetDevice(&previous), "cudaGetDevice"));
  if (previous != ordinal) COLL_RETURN_IF_ERROR(check(cudaSetDevice(ordinal), "cudaSetDevice"));
  cudaEvent_t e = nullptr;
  Status st = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  if (st) {
    *event = std::shared_ptr<void>(e, destroyEvent);
    cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
    st = check(cudaEventRecord(e, s), "cudaEventRecord (the op's stream)");
  }
  if (previous != ordinal) (void)cudaSetDevice(previous);
  return st;
}

}  // namespace coll::cuda
