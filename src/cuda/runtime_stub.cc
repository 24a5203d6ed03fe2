// A build without CUDA: no GPU, every pointer is host memory, and the device path is never
// taken (the communicator asks inspect() first).
#include "cuda/device_ops.h"
#include "cuda/runtime.h"
#include "cuda/stream_gate.h"

namespace coll::cuda {

bool built() { return false; }
bool gpuPresent() { return false; }
std::string whyNoGpu() { return "coll was built without CUDA (nvcc was not found at configure time)"; }
Pointer inspect(const void*, std::string* why) {
  if (why) *why = whyNoGpu();
  return {};
}
Status check(int error, const char* call) {
  return error == 0 ? Status::ok() : unsupportedError(std::string(call) + ": coll was built without CUDA");
}
Status recordReady(void*, int, std::shared_ptr<void>*) { return unsupportedError("CUDA streams need a CUDA build of coll"); }
Status StreamGate::hold(void*, const std::shared_ptr<detail::WorkState>&) {
  return unsupportedError("CUDA streams need a CUDA build of coll");
}
Status StreamGate::init() { return Status::ok(); }

bool takesIpcPath(const OpRequest&, int, bool, const Config&) { return false; }

struct DeviceOps::Impl {};
DeviceOps::DeviceOps(DeviceEnv) {}
DeviceOps::~DeviceOps() = default;
const char* DeviceOps::pathFor(const OpRequest&) const { return "none"; }
Status DeviceOps::execute(const OpRequest&, uint64_t, std::string*) {
  return unsupportedError("device buffers need a CUDA build of coll");
}

}  // namespace coll::cuda
