// The pages of an outbound ring (in the peer's segment): taken as they are first written,
// given back after a one-off burst (layout.h: a host's shared memory follows what is in use).
#include <algorithm>

#include "base/log.h"
#include "transport/shm/connection.h"

namespace coll::transport::shm {

// Reserves the pages a write of `bytes` reaches in the slot at head_. A ring's memory is taken as
// it is first written (layout.h), so a ring that only carries small messages holds a page a slot.
bool ShmConnection::reserveSlot(size_t bytes) {
  uint32_t& reserved = reserved_[head_ % e_.outbound.nslots];
  if (bytes <= reserved) return true;
  uint8_t* slot = e_.outbound.slot(head_);
  Status st = commitRange(slot + reserved, bytes - reserved,
                          format("a slot of the ring that carries messages to peer %d", e_.peer));
  if (!st) {
    fail(st);
    return false;
  }
  const auto start = reinterpret_cast<uintptr_t>(slot);
  reserved = static_cast<uint32_t>(std::min<uint64_t>(e_.outbound.slot_bytes, roundUpToPage(start + bytes) - start));
  return true;
}

// Only the sender writes the ring, and once the peer has released every slot we published
// (its tail has caught up with our head) it reads none of them again until we publish more:
// the pages past each slot's first (its header and a small message) can go. The first page
// stays, so a pair that goes back to small messages takes no page faults for them.
void ShmConnection::releaseIdleBuffers() {
  if (!started_ || !failure_.isOk() || !sends_.empty()) return;
  if (e_.outbound.control->tail.load(std::memory_order_acquire) != head_) return;  // the peer still reads some
  for (uint32_t i = 0; i < e_.outbound.nslots; ++i) {
    if (reserved_[i] <= kPageBytes) continue;
    if (releaseRange(e_.outbound.slot(i) + kPageBytes, reserved_[i] - kPageBytes)) reserved_[i] = kPageBytes;
  }
}

}  // namespace coll::transport::shm
