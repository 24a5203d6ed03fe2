// Credit-based flow control and chunking for the verbs transport, as pure logic (unit-tested
// without a device). The receiver owns `credits` landing slots of `chunk_bytes` per peer; the
// sender RDMA-writes a chunk into a slot only while it holds a credit, with immediate data
// naming the message and chunk (ImmData); the receiver hands slots back in batches (half the
// window at a time, so credit messages stay rare) once it copied or reduced them out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "base/status.h"

namespace coll::transport::verbs {

// The 32 bits of immediate data that come with every RDMA write: which message (low 16 bits of
// the per-direction message counter: enough to catch a misordered completion), the chunk's
// slot, and whether it is the message's last chunk.
struct ImmData {
  uint16_t message = 0;
  uint16_t slot = 0;  // < 2^15
  bool last = false;

  uint32_t encode() const;
  static ImmData decode(uint32_t imm);
};

// Sender side: how many slots of the peer it may still write into.
class CreditWindow {
 public:
  explicit CreditWindow(uint32_t credits) : window_(credits), available_(credits) {}
  uint32_t available() const { return available_; }
  bool tryConsume();
  // Credits the peer returned; more than were consumed means the peer broke the protocol.
  Status grant(uint32_t n, int peer);

 private:
  uint32_t window_;
  uint32_t available_;
};

// One RDMA write to post: bytes [offset, offset + bytes) of message `message` into `slot`.
struct ChunkWrite {
  uint64_t message = 0;
  size_t offset = 0;
  size_t bytes = 0;
  uint32_t slot = 0;
  bool last = false;
};

// Cuts queued messages into chunks of at most chunk_bytes and hands them out as credits allow,
// slots in ring order. A zero-byte message is one empty chunk (the receiver still learns of it).
class ChunkedSender {
 public:
  ChunkedSender(uint32_t credits, size_t chunk_bytes) : credits_(credits), chunk_bytes_(chunk_bytes), slots_(credits) {}
  void enqueue(uint64_t message, size_t bytes);
  std::optional<ChunkWrite> next();  // nullopt: nothing queued, or no credit
  Status onCredits(uint32_t n, int peer) { return credits_.grant(n, peer); }
  uint32_t credits() const { return credits_.available(); }

 private:
  struct Queued {
    uint64_t message;
    size_t bytes;
    size_t offset = 0;
  };
  CreditWindow credits_;
  size_t chunk_bytes_;
  uint32_t slots_;
  uint32_t next_slot_ = 0;
  std::deque<Queued> queue_;
};

// Receiver side: counts slots it has finished with and says when to return them.
class CreditReturner {
 public:
  explicit CreditReturner(uint32_t credits) : batch_(credits / 2 > 0 ? credits / 2 : 1) {}
  void slotFreed() { ++freed_; }
  // The credits to send back now (0: wait for more to batch them).
  uint32_t take(bool force = false);

 private:
  uint32_t batch_;
  uint32_t freed_ = 0;
};

}  // namespace coll::transport::verbs
