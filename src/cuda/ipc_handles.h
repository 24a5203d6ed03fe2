// CUDA IPC bookkeeping of one rank: exporting a buffer as (allocation handle, offset), and the
// peers' allocations this process has opened, kept open for reuse (opening costs
// far more than an op's exchange) and closed least-recently-used first past a cap.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace coll::cuda {

// This process's exported allocations. The handle of the allocation holding `p`
// (cudaIpcGetMemHandle wants an allocation's base: frameworks' caching allocators hand out
// pieces of large cudaMalloc blocks) and p's offset in it. Handles are kept per allocation,
// told apart by the driver's buffer ID, which no later allocation reuses: a buffer freed and
// another allocated at its address is exported afresh, never mistaken for the old one.
class IpcExports {
 public:
  Status get(const void* p, cudaIpcMemHandle_t* handle, uint64_t* offset);

 private:
  struct Exported {
    unsigned long long id;
    char* base;
    cudaIpcMemHandle_t handle;
    uint64_t used;
  };
  std::vector<Exported> exported_;
  uint64_t clock_ = 0;
};

// The driver's unique ID of the allocation holding p (0: unknown).
unsigned long long bufferId(const void* p);

class IpcImports {
 public:
  IpcImports() = default;
  ~IpcImports();
  IpcImports(const IpcImports&) = delete;
  IpcImports& operator=(const IpcImports&) = delete;

  // The base address, in this process, of a peer's exported allocation.
  Status memory(int peer, const cudaIpcMemHandle_t& handle, char** base);
  size_t opened() const { return opened_; }  // allocations opened so far (cache misses)

 private:
  struct Memory {
    int peer;
    cudaIpcMemHandle_t handle;
    char* base;
    uint64_t used;
  };
  std::vector<Memory> memory_;
  uint64_t clock_ = 0;
  size_t opened_ = 0;
};

}  // namespace coll::cuda
