// Which transport carries a job's traffic between hosts: verbs > ucx > socket, agreed by every
// rank (both ends of a connection must speak the same transport, and verbs and UCX set up
// endpoints towards every peer, so the choice is one for the whole job). Ranks on one host keep
// talking through shared memory whatever is chosen here.
//
// Each rank states what it can run (NetworkCaps); rank 0 reads them all and publishes the
// choice with the reason for every transport passed over, so the log says why, e.g.
// "socket (verbs: rank 2: no RDMA device ...; ucx: rank 2: no RDMA device for UCX to use)".
//
// UCX is preferred over sockets only where it has an RDMA device to use: over TCP it is a
// second TCP stack, measured at 0.98x coll's own sockets on the simulated 4-host cluster
// (docs/PERFORMANCE.md, "UCX"), so it wins nothing there. COLL_NET=ucx|verbs|socket chooses for remote
// peers and keeps shared memory inside hosts (as NCCL_NET does); COLL_TRANSPORT forces one
// transport for every peer.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "transport/transport.h"

namespace coll::transport {

struct NetworkCaps {
  bool verbs = false;  // the verbs transport opened here
  bool ucx = false;    // coll has UCX and this host an RDMA device for it
  std::string why_not_verbs, why_not_ucx;

  std::string encode() const;
  static bool decode(const std::string& text, NetworkCaps* out);
};

struct NetworkChoice {
  std::string transport;  // "verbs", "ucx" or "socket"
  std::string why;        // what was passed over and the first rank that could not run it
};

// The preferred transport every rank can run; `wanted` ("" = automatic, else COLL_NET's value)
// must be runnable by all, or InvalidArgument/Unsupported names the first rank that cannot.
Status agreeOnNetwork(const std::vector<NetworkCaps>& caps, const std::string& wanted, NetworkChoice* out);

// This host's capability for UCX over RDMA: whether an RDMA device is listed in sysfs.
bool rdmaDevicePresent(std::string* why_not);

// Publishes this rank's caps and returns the job's agreed choice (collective: every rank calls
// it; O(n) store requests in all, rank 0 reading the n).
Status exchangeNetworkChoice(const PeerDirectory& dir, const NetworkCaps& mine, const std::string& wanted,
                             Deadline deadline, NetworkChoice* out);

}  // namespace coll::transport
