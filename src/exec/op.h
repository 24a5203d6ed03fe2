// One call as the progress thread sees it, and how its user buffers map onto a schedule.
// Counts follow NCCL: all-gather and gather take the per-rank send count, reduce-scatter and
// scatter the per-rank receive count, all-to-all the count exchanged with each peer.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/catalog.h"
#include "base/op_kind.h"
#include "coll/types.h"
#include "base/status.h"
#include "exec/work_state.h"

namespace coll {

struct OpRequest {
  OpKind kind = OpKind::allreduce;
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = -1;                // rooted collectives; the peer for send/recv (recv: -1 = any source)
  int tag = 0;                  // send/recv: matched by (peer, tag); >= 0
  uint64_t wire_sequence = 0;   // in the message tag: per communicator, or per peer for p2p
  std::shared_ptr<detail::WorkState> work;
  std::shared_ptr<std::vector<OpRequest>> members;  // kind == group: the grouped ops
  std::chrono::steady_clock::time_point enqueued;    // when the issuing thread queued it
  // Device (CUDA) buffers: src/cuda/. The GPU they are on, the stream the op was issued on
  // (nullptr: none given) and an event on that stream marking when the input is ready.
  int device = -1;  // -1: host memory
  void* stream = nullptr;
  std::shared_ptr<void> ready;

  size_t bytes() const { return count * sizeOf(type); }
};

// Bytes of each user buffer this rank touches (0: not read or not written here), and where
// the input would sit inside the output (or vice versa) when the op is in place.
struct BufferSizes {
  size_t in = 0, out = 0;
  std::ptrdiff_t in_place_input_at = 0;  // in place means input == output + this
};
BufferSizes sizesOf(const OpRequest& op, int rank, int nranks);

// Refuses bad input before anything is sent: null buffers with count > 0, unknown type or
// op, a root or peer out of range, a size that overflows, partially overlapping buffers.
Status validate(const OpRequest& op, int rank, int nranks);

// The op mapped onto the executor's two buffers.
struct OpPlan {
  algo::Collective collective = algo::Collective::allreduce;  // unused for p2p
  size_t total_count = 0;        // elements of the schedule's buffer (n chunks where chunked)
  bool in_place = false;
  const void* input = nullptr;   // already shifted: the schedule addresses input + offset
  void* output = nullptr;        // likewise; nullptr: use a workspace of workspace_bytes
  size_t workspace_bytes = 0;
  size_t result_offset = 0;      // where the result lies in the workspace ...
  void* result_destination = nullptr;  // ... and where to copy it when done
  size_t result_bytes = 0;
};

// Requires validate() to have passed.
OpPlan planOp(const OpRequest& op, int rank, int nranks);

// The tag on the op's messages (base/wire_tag.h): the call's kind, type, op, count, root and
// algorithm, so a rank whose call differs fails on the first message instead of mixing data.
// Point-to-point carries the kind and sequence only: both sides tag it "send", and a send
// need not name the receive's type.
uint64_t messageTag(const OpRequest& op, std::string_view algorithm);

}  // namespace coll
