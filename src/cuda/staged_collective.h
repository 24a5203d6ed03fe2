// The staged path: device buffers over transports that move host memory (sockets, shm, UCX),
// or between ranks that cannot map each other's GPU memory. The op runs on pinned host copies
// of the user's buffers through the usual schedules.
//  - All-reduce, broadcast and reduce are elementwise, so they run chunk by chunk
//    (COLL_CUDA_STAGING_CHUNK) through two pinned slots: while chunk k crosses the network,
//    chunk k+1 comes down from the GPU and chunk k-1 goes back up, all on one stream.
//  - The other ops copy their whole input down, run, and copy their output back up.
#pragma once

#include <string>

#include "cuda/device_context.h"
#include "cuda/device_ops.h"

namespace coll::cuda {

class StagedCollective {
 public:
  explicit StagedCollective(const DeviceEnv& env) : env_(env) {}
  Status run(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm);

 private:
  Status runChunked(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm);
  Status runWhole(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm);
  // The host twin of one op: pinned buffers laid out as the user's are (in place stays in
  // place), carved from `arena` at *used. Queues the device-to-host copy of the input.
  Status stageIn(const OpRequest& op, DeviceContext& ctx, char* arena, size_t* used, OpRequest* host);
  Status stageOut(const OpRequest& op, const OpRequest& host, DeviceContext& ctx);

  const DeviceEnv& env_;
  PinnedBuffer slots_;  // two chunk-sized slots
  PinnedBuffer whole_;
};

}  // namespace coll::cuda
