// The settings of the point-to-point engine's own transports (p2p/engine.h): its
// connections carry envelopes and point-to-point payloads only, so fewer, smaller shared-
// memory slots than the collectives' (a quarter of their memory per peer), one TCP stream per
// peer made when first sent to, and no small-op board. coll-doctor sizes /dev/shm with it.
#pragma once

#include <algorithm>

#include "base/config.h"

namespace coll {

inline Config p2pConfig(const Config& config) {
  Config c = config;
  c.shm_board_bytes = 0;
  c.shm_nslots = 4;
  c.shm_slot_bytes = std::min<size_t>(config.shm_slot_bytes, 64 << 10);
  c.socket_nstreams = 1;
  c.socket_on_demand = true;  // a peer nobody sends to costs no socket
  return c;
}

}  // namespace coll
