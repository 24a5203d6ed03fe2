// What one side of a verbs connection publishes in the bootstrap store for the other: its
// queue pair's address and where its landing slots for the peer's chunks lie. Exchanged once
// per ordered pair of ranks under "<prefix>verbs/card/<from>/<to>". The store authenticates
// every client with the job secret, so the rkey is only ever seen by ranks of this job.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "transport/verbs/verbs_device.h"

namespace coll::transport::verbs {

struct PeerCard {
  QpAddress qp;
  uint64_t slots_addr = 0;  // credits slots of slot_bytes each, remotely writable
  uint32_t slots_rkey = 0;
  uint32_t credits = 0;     // number of slots: the writer's credit window
  uint32_t chunk_bytes = 0; // payload per slot (a slot is kSlotHeaderBytes + chunk_bytes)

  std::string encode() const;
  // Refuses a card of the wrong size or version, or with a window the protocol cannot use;
  // the error names the peer.
  static Status decode(const std::string& bytes, int peer, PeerCard* out);
};

}  // namespace coll::transport::verbs
