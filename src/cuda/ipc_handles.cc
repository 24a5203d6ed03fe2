#include "cuda/ipc_handles.h"

#include <cuda.h>  // types only: the driver call is found at run time, so libcuda is not linked

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "cuda/driver_entry.h"
#include "cuda/runtime.h"

namespace coll::cuda {
namespace {

// A process keeps at most this many peer allocations mapped. A training job passes the same
// few buffers (its gradient buckets) every step; a cap bounds what a job that allocates
// afresh each step can pin in its peers' address spaces.
constexpr size_t kMaxMappedAllocations = 64;

using GetAddressRange = CUresult (*)(CUdeviceptr* base, size_t* size, CUdeviceptr ptr);

Status allocationBase(const void* p, char** base) {
  static const auto get = reinterpret_cast<GetAddressRange>(driverEntry("cuMemGetAddressRange"));
  if (!get) return unsupportedError("cuMemGetAddressRange is not available from this CUDA driver");
  CUdeviceptr b = 0;
  size_t size = 0;
  CUresult r = get(&b, &size, reinterpret_cast<CUdeviceptr>(p));
  if (r != CUDA_SUCCESS) return transportError(format("cuMemGetAddressRange(%p): CUresult %d", p, static_cast<int>(r)));
  *base = reinterpret_cast<char*>(b);
  return Status::ok();
}

}  // namespace

unsigned long long bufferId(const void* p) {
  using GetAttribute = CUresult (*)(void* data, CUpointer_attribute which, CUdeviceptr ptr);
  static const auto get = reinterpret_cast<GetAttribute>(driverEntry("cuPointerGetAttribute"));
  unsigned long long id = 0;
  if (!get || get(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return 0;
  return id;
}

Status IpcExports::get(const void* p, cudaIpcMemHandle_t* handle, uint64_t* offset) {
  ++clock_;
  const unsigned long long id = bufferId(p);
  for (Exported& e : exported_)
    if (id != 0 && e.id == id) {
      e.used = clock_;
      *handle = e.handle;
      *offset = static_cast<uint64_t>(static_cast<const char*>(p) - e.base);
      return Status::ok();
    }
  char* base = nullptr;
  COLL_RETURN_IF_ERROR(allocationBase(p, &base));
  Status st = check(cudaIpcGetMemHandle(handle, base), "cudaIpcGetMemHandle");
  if (!st)
    return Status(st.code(), st.message() + " (CUDA IPC needs memory from cudaMalloc; set COLL_CUDA_IPC=0 to stage "
                                            "through host memory instead)");
  *offset = static_cast<uint64_t>(static_cast<const char*>(p) - base);
  if (id == 0) return Status::ok();
  if (exported_.size() >= kMaxMappedAllocations)
    exported_.erase(std::min_element(exported_.begin(), exported_.end(), [](auto& a, auto& b) { return a.used < b.used; }));
  exported_.push_back({id, base, *handle, clock_});
  return Status::ok();
}

IpcImports::~IpcImports() {
  for (const Memory& m : memory_) (void)cudaIpcCloseMemHandle(m.base);
}

Status IpcImports::memory(int peer, const cudaIpcMemHandle_t& handle, char** base) {
  ++clock_;
  for (Memory& m : memory_)
    if (m.peer == peer && std::memcmp(&m.handle, &handle, sizeof handle) == 0) {
      m.used = clock_;
      *base = m.base;
      return Status::ok();
    }
  if (memory_.size() >= kMaxMappedAllocations) {
    auto oldest = std::min_element(memory_.begin(), memory_.end(), [](auto& a, auto& b) { return a.used < b.used; });
    (void)cudaIpcCloseMemHandle(oldest->base);
    memory_.erase(oldest);
  }
  void* p = nullptr;
  Status st = check(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  if (!st) return Status(st.code(), format("%s (memory of peer %d)", st.message().c_str(), peer), peer);
  memory_.push_back({peer, handle, static_cast<char*>(p), clock_});
  ++opened_;
  *base = static_cast<char*>(p);
  return Status::ok();
}

}  // namespace coll::cuda
