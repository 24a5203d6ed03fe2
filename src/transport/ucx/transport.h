// The UCX transport: UCP (tag API) over whatever UCX finds (shared memory and CMA on one host,
// TCP, InfiniBand/RoCE). UCX's own variables choose its transports (e.g. UCX_TLS=tcp,
// UCX_NET_DEVICES=eth0). The registry uses it for every peer under COLL_TRANSPORT=ucx, and for
// the peers on other hosts where it is the job's network transport (network_choice.h).
//
// One UCP context and worker per communicator. Set-up is not collective: each rank publishes
// its worker address (and its pid, to be watched on one kernel) under key_prefix + "ucx/<rank>";
// connect() reads the peer's and creates an endpoint, so either side may connect first.
//
// Waiting (progress): progress the worker and match receives; idle, spin 20 µs, yield up to
// 200 µs, then sleep on the worker's event fd in slices of at most 20 ms (so abort() from
// another thread is seen within one slice).
//
// Closing: the destructor sends every peer a goodbye (its receives then fail with PeerLost
// once nothing is left to match), flushes and closes the endpoints within 1 s. abort() makes the
// next progress() say goodbye with the reason, fail every connection, and return PeerLost.
#pragma once

#include <memory>
#include <vector>

#include "base/config.h"
#include "transport/transport.h"

namespace coll::transport::ucx {

// `serves[p]`: whether peer p is reached through this transport (empty: every peer). Both ends
// of a pair must agree, as host grouping does.
Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out,
                       std::vector<bool> serves = {});

}  // namespace coll::transport::ucx
