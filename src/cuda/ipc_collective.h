// The cuda_ipc path: collectives between the ranks of one host on device buffers, ranks
// reading and writing each other's GPU memory directly (device_ops.h gives the overview).
//
// One op, on rank r of n:
//  1. The host waits until the op's input is ready (the caller's stream reached the op).
//  2. Exchange descriptors (IPC handles of the input and output allocations, offsets, the
//     GPU's PCI bus id) over the host transports: an all-gather of 256 bytes per rank. A
//     rank's descriptor arriving says its buffers may be read and written.
//  3. The work, queued on a stream:
//     - every rank on one GPU: rank 0 does the whole op in one or a few kernels. Processes
//       sharing a GPU take turns on it, and each turn (a context switch) cost about 140 us on
//       an H100, so n ranks each doing a share paid n turns an op;
//     - ranks on several GPUs: each rank does its share. All-reduce reduces element slice r of
//       all inputs and writes it into every output (each slice is computed once, so every
//       rank's result is bit-identical); reduce-scatter reduces chunk r; all-gather writes
//       rank r's input into every output; the rest copy what rank r receives.
//  4. Once that work has run, a 1-byte all-gather says so: no rank returns while a peer may
//     still touch its buffers.
// In place is safe: element i is read and written by one thread, which reads it first.
#pragma once

#include <string>
#include <vector>

#include "cuda/device_context.h"
#include "cuda/device_ops.h"
#include "cuda/ipc_handles.h"

namespace coll::cuda {

class IpcCollective {
 public:
  explicit IpcCollective(const DeviceEnv& env) : env_(env) {}
  Status run(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm);

 private:
  struct Peers {  // every rank's buffers, mapped into this process (own: as given)
    std::vector<const char*> in;
    std::vector<char*> out;
    bool one_gpu = true;  // every rank's buffers are on the same GPU
  };
  Status exchange(const OpRequest& op, uint64_t tag, DeviceContext& ctx, Peers* peers);
  Status doWhole(const OpRequest& op, const Peers& peers, DeviceContext& ctx);
  Status doShare(const OpRequest& op, const Peers& peers, int r, DeviceContext& ctx);
  Status copy(void* dst, const void* src, size_t bytes, DeviceContext& ctx);

  const DeviceEnv& env_;
  IpcExports exports_;
  IpcImports imports_;
  std::vector<char> mine_, all_;  // descriptors, host side
  bool logged_mode_ = false;
};

}  // namespace coll::cuda
