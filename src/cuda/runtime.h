// What the rest of coll asks of CUDA, with no CUDA header in sight: whether a GPU is there,
// whether a pointer is device memory, and the event that orders an op after its stream's work.
// A build without CUDA links runtime_stub.cc instead: no GPU, every pointer is host memory.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace coll::cuda {

// True in a build with CUDA (nvcc was found at configure time).
bool built();

// A GPU this process can use. "CUDA driver version is insufficient" (no driver: a machine
// without a GPU) and "no CUDA-capable device" both read as none. Asked once per process.
bool gpuPresent();
// Why gpuPresent() is false, in words, for logs and test skips.
std::string whyNoGpu();

struct Pointer {
  bool device = false;  // cudaMalloc'd memory (managed memory is reachable from the host: not device)
  int ordinal = -1;     // its GPU
};
// why (optional): what the driver said, for diagnostics.
Pointer inspect(const void* p, std::string* why = nullptr);

// A cudaError_t as a Status naming the call: "cudaMemcpyAsync: invalid argument".
Status check(int error, const char* call);

// An event recorded now on `stream` (nullptr: the legacy default stream): the op reads its
// input only after the work queued there before it. Destroyed with the last reference.
Status recordReady(void* stream, int ordinal, std::shared_ptr<void>* event);

}  // namespace coll::cuda
