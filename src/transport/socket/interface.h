// Which local address the socket transport listens on.
#pragma once

#include <string>

#include "base/status.h"

namespace coll::transport::socket {

struct ChosenInterface {
  std::string name;     // "eth0"
  std::string address;  // "10.213.0.2"
  std::string reason;   // why, for the log
  int mtu = 0;          // from /sys/class/net (0: unknown)
  std::string state;    // its operstate: "up", "down", "unknown" (loopback, veth peers of some kinds)
};

// The kernel's cap on socket receive and send buffers (net.core.rmem_max, wmem_max), 0 when
// unreadable: a COLL_SOCKET_BUFFER above it is silently cut down to it.
uint64_t socketBufferCap();

// COLL_SOCKET_IFNAME (an interface name; "^lo" style exclusions are not supported) when set;
// otherwise the interface the kernel would route to `rendezvous_host` through, because a
// peer that can reach the store can reach that address too.
Status chooseInterface(const std::string& ifname, const std::string& rendezvous_host, ChosenInterface* out);

}  // namespace coll::transport::socket
