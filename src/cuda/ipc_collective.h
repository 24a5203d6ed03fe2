// The cuda_ipc path: collectives between the ranks of one host on device buffers, each rank
// reading and writing its peers' GPU memory directly (device_ops.h gives the overview).
//
// One op, on rank r of n:
//  1. After the op's input is ready on its stream, record this rank's interprocess event.
//  2. Exchange descriptors (IPC handles of the input and output allocations, offsets, the
//     event's handle) over the host transports: an all-gather of 256 bytes per rank.
//  3. Wait, on this rank's own stream, for every peer's event, then do rank r's share:
//     all-reduce reduces element slice r of all inputs and writes it into every output (each
//     slice is computed once, so every rank's result is bit-identical); reduce-scatter reduces
//     chunk r; the rest copy what rank r receives.
//  4. Once that work has run, a 1-byte all-gather says so: no rank returns while a peer may
//     still touch its buffers.
// In place is safe: element i of a slice is read and written only by that slice's owner, and
// read before it is written.
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
  };
  Status exchange(const OpRequest& op, uint64_t tag, DeviceContext& ctx, Peers* peers);
  Status doShare(const OpRequest& op, const Peers& peers, DeviceContext& ctx);
  Status copy(void* dst, const void* src, size_t bytes, DeviceContext& ctx);

  const DeviceEnv& env_;
  IpcExports exports_;
  IpcImports imports_;
  std::vector<char> mine_, all_;  // descriptors, host side
};

}  // namespace coll::cuda
