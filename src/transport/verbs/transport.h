// The verbs transport (libibverbs, RC queue pairs, RDMA write with immediate). Built whenever
// libibverbs-dev is present. Today it is the device probe and the pure logic the data path
// will stand on (qp_state.h, registration_cache.h, flow_control.h); the queue-pair data path
// itself waits for a machine with an RDMA device to test on, so createTransport reports
// Unsupported with the reason, and the registry skips verbs.
#pragma once

#include <memory>

#include "core/config.h"
#include "transport/transport.h"

namespace coll::transport::verbs {

Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out);

}  // namespace coll::transport::verbs
