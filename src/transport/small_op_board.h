// A one-host shortcut for small all-reduces, barriers and broadcasts, beside the message path:
// every rank posts its operand where all its peers can read it (a broadcast's non-roots post
// only that they arrived), then reads all of theirs and combines them (or copies the root's)
// itself. One step instead of log2(n), no slots, tags or matching, and nothing
// to send back: what Open MPI's and MPICH's shared-memory collectives do for small buffers.
// A transport offers one where every rank of the communicator shares its memory
// (transport/shm/board.h); the communicator uses it for these ops of at most capacity() bytes
// (COLL_SHM_BOARD_BYTES) unless COLL_ALGO forces an algorithm there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "coll/types.h"
#include "base/status.h"
#include "transport/transport.h"

namespace coll::transport {

// One board op. An all-reduce (root < 0): out = in(rank 0) op in(rank 1) op ... in rank
// order, so every rank's result is bitwise the same; avg divides at the end. A broadcast
// (root >= 0): out = the root's in (op unused; other ranks' in unread, may be null). in may
// equal out; 0 < count * size of type <= capacity().
struct BoardCall {
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = -1;
};

class SmallOpBoard {
 public:
  virtual ~SmallOpBoard() = default;
  // The largest operand, in bytes.
  virtual size_t capacity() const = 0;
  // Posts this rank's operand (copied: in may change after) as the next board op, and returns
  // its ticket. Every rank posts the same calls in the same order; one engine thread at a time.
  virtual uint64_t post(const BoardCall& call) = 0;
  // Combines op `ticket` into call.out once every rank has posted it: with wait false, only if
  // they already have (*done says whether it happened; nothing else changes otherwise); with
  // wait true, waiting up to `timeout`. Tickets finish in the order they were posted.
  // Fails with Mismatch when a peer posted a different call, or sent this rank a message whose
  // tag other_op() says belongs to a collective instead of posting (it is running another op
  // on the message path); PeerLost when one aborted, closed or died; Timeout at the deadline.
  // Errors name the ranks.
  using TagTest = bool (*)(uint64_t tag);
  virtual Status finish(uint64_t ticket, const BoardCall& call, bool wait, std::chrono::nanoseconds timeout,
                        TagTest other_op, bool* done) = 0;
};

}  // namespace coll::transport
