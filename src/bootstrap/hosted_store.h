// Stores that the bootstrap starts in this process before anyone can be told where they are
// (PMI, Open MPI single-host, collGetUniqueId). They live until the process exits, because
// ranks may still be connecting after this rank's communicator is gone.
#pragma once

#include <string>

#include "base/status.h"

namespace coll::bootstrap {

// Starts a store on all interfaces and returns "address:port" where `address` is what other
// hosts should dial (see primaryAddress) or 127.0.0.1 when local_only.
Status startHostedStore(const std::string& secret, bool local_only, std::string* address);

// The address other hosts reach this one by: COLL_SOCKET_IFNAME's when set, else the first
// up, non-loopback IPv4 interface, else 127.0.0.1.
std::string primaryAddress();

}  // namespace coll::bootstrap
