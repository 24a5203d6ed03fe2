// The verbs transport's wire format. Data: the writer RDMA-writes each chunk, a SlotHeader
// followed by the payload, into one of the reader's landing slots, with immediate data
// (flow_control.h's ImmData) naming the message, the slot and whether it is the last chunk.
// Control: zero-byte sends whose immediate is a ControlImm (credits handed back, goodbye).
// The completion's opcode tells the two apart (RDMA write with immediate vs send).
#pragma once

#include <cstdint>

namespace coll::transport::verbs {

// Written in front of every chunk (a gather of two pieces: this header from the writer's
// header slab, the payload straight from the user's registered buffer). The reader checks
// tag and total length against its posted receive before it copies anything out.
struct SlotHeader {
  uint64_t tag = 0;
  uint64_t total_bytes = 0;  // of the whole message
  uint64_t offset = 0;       // of this chunk in the message
  uint64_t message = 0;      // per-direction message counter, all 64 bits
};

// Payloads start cache-line aligned; a slot is kSlotHeaderBytes + chunk_bytes.
inline constexpr uint32_t kSlotHeaderBytes = 64;
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

// Bounds a peer's card must respect: slots fit ImmData's 15 bits with room to spare, and the
// receive queue (two receives per credit, see connection.cc) stays within what NICs offer.
inline constexpr uint32_t kMaxCredits = 1024;
inline constexpr uint32_t kMaxChunkBytes = 16u << 20;

// Immediate data of control sends: bit 31 set is a goodbye (low bits: GoodbyeReason), clear
// is a credit return of that many slots.
inline constexpr uint32_t kGoodbyeBit = 1u << 31;
enum class GoodbyeReason : uint32_t { closed = 1, aborted = 2, failed = 3 };

}  // namespace coll::transport::verbs
