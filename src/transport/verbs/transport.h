// The verbs transport: libibverbs RC queue pairs, one per peer, moving chunks by RDMA write
// with immediate into the peer's landing slots under credit flow control (connection.h says
// how). Built whenever libibverbs-dev is present. createTransport reports Unsupported, with
// the device probe's reason, on a machine without an RDMA device, and the registry then skips
// verbs; elsewhere it opens the device (ibv_device_ops.h).
//
// Every verbs call goes through VerbsDevice (verbs_device.h), so createTransportOver() runs
// the same protocol over the unit tests' in-memory fake NICs.
//
// Start-up: creating the transport creates a queue pair and landing slots for every peer and
// publishes a card for each (peer_card.h). The first connect() reads every peer's card, walks
// every queue pair to RTS and publishes "ready" for each (so ranks that connect in different
// orders never wait on each other in a cycle); each connect() then waits for its peer's
// "ready": the peer's queue pair can receive before anything is written to it.
#pragma once

#include <memory>

#include "base/config.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_device.h"

namespace coll::transport::verbs {

struct VerbsOptions {
  // Landing slots per peer and payload per slot: 16 x 128 KiB = 2 MiB pinned per peer, enough
  // to keep a 100 Gb/s link busy over a few µs of round trip while credits come back.
  uint32_t credits = 16;
  uint32_t chunk_bytes = 128 << 10;
  size_t registration_cache_bytes = size_t{1} << 30;  // send buffers kept registered
};

Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out);

// The same transport over any device; the caller picks the options (tests: small windows).
Status createTransportOver(const Config& config, const PeerDirectory& directory, std::unique_ptr<VerbsDevice> device,
                           const VerbsOptions& options, std::unique_ptr<Transport>* out);

}  // namespace coll::transport::verbs
