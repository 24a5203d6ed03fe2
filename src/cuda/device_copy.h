// One source's bytes into several destinations in one kernel (a CUDA build only,
// src/cuda/copy_kernels.cu): the cuda_ipc path's broadcast and all-gather read each source
// once and write it everywhere it goes, where one cudaMemcpy per (source, destination) pair
// read every source once per destination.
#pragma once

#include <cstddef>

#include "cuda/device_reduce.h"

namespace coll::cuda {

// For every source s and destination d: bytes from src[s] to dst[d] + s * dst_step.
// (All-gather: src[s] is rank s's input, dst[d] rank d's output, dst_step the bytes of one
// input; broadcast: one source, dst_step 0.) A destination may be its own source (in place).
struct FanOut {
  const void* src[kMaxOperands] = {};
  void* dst[kMaxOperands] = {};
  int n_src = 0;
  int n_dst = 0;
  size_t dst_step = 0;
};

// Queues the copy on `stream` (a cudaStream_t) and returns the launch's cudaError_t as an int.
int launchFanOut(const FanOut& fan, size_t bytes, void* stream);

}  // namespace coll::cuda
