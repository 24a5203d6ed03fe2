// The socket transport: TCP over any IP network, on Boost.Asio.
#pragma once

#include <memory>

#include "base/config.h"
#include "transport/transport.h"

namespace coll::transport::socket {

// Opens the listening socket on the chosen interface (see interface.h) and publishes its
// address in the store. Connections are made on demand by connect(): the higher rank dials,
// the lower accepts, so two ranks never dial each other at once.
Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out);

}  // namespace coll::transport::socket
