// Reduction kernels for device memory: every DataType and ReduceOp, with the host kernels'
// semantics (reduce/reduce.h): integer sum/prod wrap, min/max keep the accumulator when a
// comparison is false (NaN), f16/bf16 are combined in f32 and rounded back after every step,
// avg is a sum divided once at the end. A CUDA build only (src/cuda/reduce_kernels.cu).
#pragma once

#include <cstddef>

#include "coll/types.h"

namespace coll::cuda {

// The most buffers one launch reads or writes: one per rank of a host.
inline constexpr int kMaxOperands = 16;

// out[k][i] = in[0][i] op in[1][i] op ... op in[n_in-1][i] (left to right, the same order
// everywhere, so every rank's copy of a result is bit-identical), for every output k, divided
// by `divisor` when it is above 1. An output may be an input (in place): each element's
// inputs are read before any of its outputs is written.
struct Operands {
  const void* in[kMaxOperands] = {};
  void* out[kMaxOperands] = {};
  int n_in = 0;
  int n_out = 0;
};

// Queues the kernel on `stream` (a cudaStream_t; nullptr: the legacy default stream) and
// returns the launch's cudaError_t as an int (0: queued).
int launchReduce(const Operands& operands, size_t count, DataType type, ReduceOp op, int divisor, void* stream);

}  // namespace coll::cuda
