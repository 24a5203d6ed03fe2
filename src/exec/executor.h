// Runs one rank's Schedule over Connections: posts every step whose dependencies are done (in
// per-peer order), drives the transport, reduces received slices, and stops at the first
// failure or at the op's deadline.
#pragma once

#include <poll.h>

#include <functional>
#include <vector>

#include "algorithms/schedule.h"
#include "coll/types.h"
#include "exec/schedule_walker.h"
#include "transport/transport.h"

namespace coll {

// One op's buffers and wire tag. A fused schedule (a group of point-to-point ops) has one per
// op, and each step names its op by Step::op_index.
struct OpBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  uint64_t tag = 0;  // identifies the op on the wire (sequence number and kind)
  // Output bytes [result_at, +result_bytes) lie at `result` instead of in `output`: the chunk a
  // reduce-scatter keeps, reduced straight into the caller's buffer while the rest of the output
  // is a workspace (saves copying it out after). Only where the schedule allows it
  // (exec/result_window.h).
  char* result = nullptr;
  size_t result_at = 0;
  size_t result_bytes = 0;
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
  // The op's buffers are far larger than the caches (Config::stream_bytes): passed to every
  // connection as Connection::setStreamingReceives.
  bool stream_receives = false;
  // How long to keep polling the schedule's transports (yielding the core in between) before
  // sleeping in the kernel, unless the only one polls by itself (Config::socket_spin_us).
  std::chrono::microseconds spin{0};
};

// What the executor derives from a Schedule before it can run it: the walk (dependencies, lanes:
// schedule_walker.h) and the transport fusions it may ask for. Computed once per schedule, so
// a schedule run again (schedule_cache.h) costs no allocation.
struct ExecPlan : WalkPlan {
  std::vector<int32_t> forward_send;  // per step: for a recvReduce, the send of its result (Step::forwards), or -1
  std::vector<int32_t> relay_send;    // per step: for a recv, the send that passes its bytes on as they are, or -1
  // A hash of the schedule (its algorithm; every step's kind, buffer, peer, place and size):
  // equal for every run of it, the kind of op a transport times its ways by (Connection::opBegins).
  uint64_t kind = 0;

  static ExecPlan of(const algo::Schedule& schedule);
};

// The executor's per-run bookkeeping, kept between runs so its vectors keep their memory.
struct ExecState {
  WalkState walk;
  std::vector<uint8_t> fused;    // recvReduce steps the transport reduces as the bytes arrive
  std::vector<transport::Connection*> lane_conn;
  std::vector<transport::Transport*> lane_via;  // the transport of each lane's connection
  std::vector<transport::Transport*> active;  // transports this schedule's peers use
  std::vector<transport::Completion> completions;
  std::vector<pollfd> fds;
};

// A failed Status names the peer, the cause and "step k/n"; the caller adds the op's name.
Status execute(const algo::Schedule& schedule, ExecContext& ctx);
// The same with the plan and the bookkeeping supplied (a cached schedule, a reused state).
Status execute(const algo::Schedule& schedule, const ExecPlan& plan, ExecContext& ctx, ExecState* state);

}  // namespace coll
