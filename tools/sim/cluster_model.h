// The modelled cluster coll-sim runs schedules on: coll's own Topology (the layout, the α-β of
// each link class and the reduction γ, exactly what the selector reads) plus the fabric the
// Topology does not describe: NICs per host, leaf switches and how oversubscribed their uplinks
// are, and the memory bandwidth the ranks of one host share.
//
// The network, as coll-sim moves bytes over it (sim_network.h):
//   rank --(NIC out)--> [leaf uplink --spine--> leaf downlink] --(NIC in)--> rank
// across hosts, where the bracket is crossed only between hosts under different leaves (the
// spine itself never blocks; oversubscription sits in the leaf uplinks), and
//   rank --(the sender's copy into the ring)--[host memory]--(the receiver's copy or reduction)--> rank
// inside a host, where a busy sender's large messages skip the sender's copy (read by CMA), as
// every sender's do where ranks queue for cores.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/topology.h"

namespace coll::sim {

struct Fabric {
  int nics_per_host = 1;         // local rank i of a host uses NIC i mod nics_per_host
  int hosts_per_leaf = 0;        // hosts under one leaf switch; 0: one switch joins them all
  double oversubscription = 1;   // a leaf's host-facing capacity over its spine-facing capacity
  double host_memory_Bps = 0;    // what all copies inside one host share; 0: no limit but each rank's β
  // Software time per message: the sender's inside a host, each end's across hosts (a socket's
  // write, and its read). < 0: where the probe's loaded step exceeds the link class's α (ranks
  // queue for cores), half the loaded step; elsewhere the link class's α / 4 (intra: the cost
  // model's per-message figure). ClusterModel::perMessageSeconds says why.
  double per_message_s = -1;
  // Software time per op on each rank, on its progress thread between one op and the next:
  // handing the op to the progress thread, waking the caller when it is done. 0: none.
  double per_op_s = 0;
  double burst_bytes = 0;        // NICs shaped by a token bucket of this many bytes (netcluster's tbf); 0: none
  // A send across hosts is done once the rest of it fits in the send buffers of its peer's
  // sockets: COLL_SOCKET_NSTREAMS (2) sockets, each asking for 4 MiB (COLL_SOCKET_BUFFER), of
  // which Linux grants twice net.core.wmem_max (212992 by default). On links under 0.5 GB/s
  // coll sends on one of them (transport/socket/transport.cc): give --send-buffer 425984 there,
  // as bench/compare_lib/sim_validate.py does.
  double send_buffer_bytes = 2 * 425984;
  // Inside a host a send is done once the rest fits in the shared-memory ring between the two
  // ranks (COLL_SHM_NSLOTS x COLL_SHM_SLOT_BYTES: 8 x 128 KiB): a larger message waits for its
  // receiver to read it, as coll's slots and CMA reads make it wait. 0: the sender never waits
  // (a transport that buffers everything).
  double shm_ring_bytes = 8 * 131072;
  // The ring is kShmSlots slots, and a message takes whole ones, each with a 64-byte header
  // (transport/shm/layout.h): the bytes of the ring a message holds until it is read. So a
  // sender runs at most 8 small messages ahead of its reader, however small, as coll's does.
  static constexpr int kShmSlots = 8;
  static constexpr double kShmSlotHeaderBytes = 64;
  double shmRingBytesOf(double message_bytes) const;
};

struct ClusterModel {
  topology::Topology topo;
  Fabric fabric;
  std::vector<int> host_of;   // per rank
  std::vector<int> local_of;  // per rank: its index among its host's ranks

  int numHosts() const { return topo.numHosts(); }
  int leafOf(int host) const { return topo.leaves.leafOf(host); }  // topo.leaves: finishCluster()
  int numLeaves() const { return topo.leaves.leaves(numHosts()); }
  // What one leaf's uplink (and downlink) to the spine carries each way.
  double leafUplinkBps() const;
  double alphaOf(bool across_hosts) const { return across_hosts ? topo.inter.alpha_s : topo.intra.alpha_s; }
  // Where the loaded step exceeds the link class's α and no per-message figure is given: ranks
  // queue for cores, and each end of a message pays half the loaded step.
  bool contended(bool across_hosts) const;
  // A message's sender's software time (and a socket reader's).
  double perMessageSeconds(bool across_hosts = false) const;
  // A receiver's software time before it touches the bytes: a socket's read; inside a host
  // nothing while idle (the reader copies or reduces straight out of the sender's memory),
  // its turn on a core where contended.
  double receiveSeconds(bool across_hosts) const;
  // The same with the ranks idle (a ping-pong, the start-up's round trips): no loaded step.
  double idlePerMessageSeconds(bool across_hosts) const;
  // The time from a message's send to its arrival (Network::alpha): contended, the wire's part
  // of the link class's α; idle, α or what the ends' software leaves of the loaded step.
  double latencySeconds(bool across_hosts) const;
  // The topology the selector sees: what coll's probe would measure here. Its ping-pong α
  // holds the software time of each end, which coll-sim charges apart from a flag's α; a
  // topology file holds probed figures already (from_file).
  topology::Topology probedTopology() const;
  bool from_file = false;
  std::string describe() const;
};

// The flags' cluster: `hosts` hosts of `per_host` ranks, numbered host by host (as every
// launcher here places them), each host with the given NIC rate (bytes/s on the wire; the
// payload rate is wire × goodput) and the documented default α and intra-host β (topology.cc).
struct ClusterFlags {
  int hosts = 1;
  int per_host = 1;
  int ranks = 0;                 // 0: hosts × per_host; else per_host must divide it
  double link_wire_Bps = 0.125e9;  // 1gbit
  double goodput = 1448.0 / 1514; // TCP payload per MTU-1500 Ethernet frame: iperf3 at tc's 1gbit gives 0.1195 GB/s
  double inter_alpha_s = -1;     // < 0: the default (topology.cc)
  double intra_alpha_s = -1;
  double intra_beta_Bps = -1;
  double gamma_Bps = -1;
  double loaded_step_s = 0;
  Fabric fabric;
};

// InvalidArgument naming the flag and the reason.
Status clusterFromFlags(const ClusterFlags& flags, ClusterModel* out);
// A coll-topology-1 file (coll-topo --json, COLL_TOPO_DUMP_FILE), with an optional "fabric"
// object: {"nics_per_host", "hosts_per_leaf", "oversubscription", "host_memory_GBps",
// "per_message_us", "per_op_us", "burst_bytes", "send_buffer_bytes", "shm_ring_bytes"}; `given` holds fabric fields set on the
// command line ("link" for --link: the inter-host β), which win over the file's. InvalidArgument
// naming the field and the reason.
Status clusterFromFile(const std::string& path, const ClusterFlags& flags, const std::vector<std::string>& given,
                       ClusterModel* out);
// Checks the fabric and fills host_of / local_of from topo.
Status finishCluster(ClusterModel* m);

}  // namespace coll::sim
