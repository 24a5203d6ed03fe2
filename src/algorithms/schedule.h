// A Schedule is an algorithm written down as data: the steps one rank performs for one
// collective, with the dependencies between them. The executor runs it over Connections, the
// selector can cost it, and tests can check it without any transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coll::algo {

enum class StepKind : uint8_t {
  send,        // send buffer[offset, +bytes) to peer
  recv,        // receive from peer into output[offset, +bytes)
  recvReduce,  // receive from peer into scratch[scratch_offset, +bytes), then
               // output[offset] = source[offset] op scratch (source: output, or input on first touch);
               // the result goes to scratch[partial_at] instead where that is set
  copy,        // output[offset, +bytes) = input[offset, +bytes)
  divide,      // output[offset, +bytes) /= nranks (finishes ReduceOp::avg)
  stash,       // scratch[scratch_offset, +bytes) = output[offset, +bytes): keeps this rank's own
               // operand (in place) before a receive overwrites it (ordered_reduce.h)
  combine,     // output[offset] = output[offset] op operand, the operand being input[offset]
               // (source input) or what stash kept at scratch_offset (source output)
};

// scratch: the schedule's own (Schedule::scratch_bytes), for sends of partial sums a
// recvReduce left there (Step::partial_at).
enum class BufferId : uint8_t { input, output, scratch };

inline constexpr size_t kNotPartial = ~size_t{0};

struct Step {
  StepKind kind;
  BufferId source = BufferId::output;  // send, recvReduce: which buffer to read
  int peer = -1;                       // send / recv / recvReduce
  size_t offset = 0;                   // bytes, in the output (or, for send, the source) buffer
  size_t bytes = 0;
  size_t scratch_offset = 0;           // recvReduce, stash, combine
  uint32_t phase = 0;                  // the algorithm's step number, for error messages
  uint16_t op_index = 0;               // which op's buffers and tag (several when ops are fused)
  std::vector<uint32_t> deps;          // indices of steps that must finish first
  // recvReduce only. reduce_after >= 0: the message lands in scratch without waiting for
  // step reduce_after (this rank's send of the same bytes in an exchange, which a transport
  // may still be reading, as CMA does), and is combined once that step finished.
  // received_first: combine as message op source, so both partners of an exchange compute
  // the same expression (min and max are not bitwise commutative on -0 and NaN).
  int32_t reduce_after = -1;
  bool received_first = false;
  // send only: the recvReduce (same peer, same bytes) whose result this sends, with no other
  // step between them touching those bytes. A transport may then send each part of the
  // result as it is combined, while it is in cache (Connection::postRecvReduceForward).
  int32_t forwards = -1;
  // send only, source input: output[offset, +bytes) receives the same bytes (an out-of-place
  // all-gather's own chunk). A transport that copies the message anyway (shared memory, into
  // its slots) writes this copy from its own while the bytes are in cache, reading the input
  // once (Connection::postSendCopying); elsewhere the executor copies, then sends.
  bool copy_to_output = false;
  // recvReduce only: the sum goes to scratch[partial_at, +bytes), not output[offset]: a partial
  // sum that is only sent on (by a send whose source is BufferId::scratch), so the output need
  // not hold one for every chunk (a reduce-scatter's ring: two chunks of them in turn, not n - 2).
  size_t partial_at = kNotPartial;
  bool partial() const { return partial_at != kNotPartial; }
};

// Rules the builders follow and the schedule walker (exec/schedule_walker.h: the executor, the
// test interpreter, coll-sim) relies on:
//  - a step's deps have smaller indices;
//  - steps to one peer in one direction are issued in index order, and the peer's schedule
//    issues the matching steps in the same order with the same byte counts;
//  - a step that writes a region depends on every earlier step that reads or writes it.
struct Schedule {
  std::string algorithm;  // "ring", "chain", ...
  std::vector<Step> steps;
  size_t scratch_bytes = 0;
  uint32_t num_phases = 0;
};

// Whether a rank's schedule both sends and receives and reduces nothing (an all-gather's
// ranks, a chain broadcast's middle): its core is busy copying both ways. coll's shared memory
// times both of its ways for large messages (ShmConnection::sendsByCma) and such a sender's go
// by CMA, its peers reading its memory; coll-sim models that choice with this.
inline bool copiesBothWays(const Schedule& s) {
  bool sends = false, receives = false;
  for (const Step& st : s.steps) {
    if (st.kind == StepKind::recvReduce) return false;
    sends = sends || (st.kind == StepKind::send && st.peer >= 0);
    receives = receives || (st.kind == StepKind::recv && st.peer >= 0);
  }
  return sends && receives;
}

}  // namespace coll::algo
