// Runs one rank's Schedule over Connections: posts every step whose dependencies are done (in
// per-peer order), drives the transport, reduces received slices, and stops at the first
// failure or at the op's deadline.
#pragma once

#include <functional>
#include <vector>

#include "algorithms/schedule.h"
#include "coll/types.h"
#include "transport/transport.h"

namespace coll {

// One op's buffers and wire tag. A fused schedule (a group of point-to-point ops) has one per
// op, and each step names its op by Step::op_index.
struct OpBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  uint64_t tag = 0;  // identifies the op on the wire (sequence number and kind)
};

struct ExecContext {
  std::vector<OpBuffers> ops;  // at least one
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int nranks = 1;
  transport::Deadline deadline;
  // Returns the connection to a peer (establishing it if needed) and the transport to drive.
  std::function<Status(int peer, transport::Connection**, transport::Transport**)> connect;
  std::vector<char>* scratch = nullptr;  // grown to schedule.scratch_bytes and reused
};

// A failed Status names the peer, the cause and "step k/n"; the caller adds the op's name.
Status execute(const algo::Schedule& schedule, ExecContext& ctx);

}  // namespace coll
