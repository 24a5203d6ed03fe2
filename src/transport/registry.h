// Chooses, for every peer, the transport that reaches it best: shared memory for ranks on the
// same host (by host grouping: hostname + boot id; device buffers there go through cuda_ipc,
// decided per op in src/cuda), and for ranks on other hosts the job's network transport,
// verbs > ucx > socket, agreed by all ranks (network_choice.h says when each is used).
// COLL_NET picks the network transport; COLL_TRANSPORT forces one for every peer; forcing one
// that cannot reach a peer is an error that names the peer. Every rank must create the
// transports (some set-ups are collective). The choice and its reasons are logged (NET).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "bootstrap/host_grouping.h"
#include "transport/transport.h"

namespace coll::transport {

namespace shm {
class SegmentFiles;
}

// The planes of the shared-memory segments (shm/layout.h): the collectives' transports make
// each segment hold a second plane for the point-to-point engine's, whose shared memory then
// needs no set-up of its own (no mapping, probe or store barrier).
struct ShmPlanes {
  const Config* reserve_second = nullptr;           // make the segments with a second plane of this
  std::shared_ptr<shm::SegmentFiles> serve_second;  // serve the second plane of these segments
};

struct TransportSet {
  std::vector<std::unique_ptr<Transport>> owned;
  std::vector<Transport*> for_peer;  // indexed by rank; nullptr for this rank
  std::shared_ptr<shm::SegmentFiles> shm_files;  // where made with ShmPlanes::reserve_second

  // The connection to a peer through its transport.
  Status connect(int peer, Deadline deadline, Connection** conn, Transport** via) const;
  void abort(const std::string& reason);
  void adviseLinkRate(double inter_host_Bps);  // Transport::adviseLinkRate, to each
  std::string summary(int rank) const;  // "peers 1,2,3 via shm; peers 4,5 via socket"
};

Status createTransports(const Config& config, const PeerDirectory& directory,
                        const bootstrap::HostGrouping& hosts, TransportSet* out, const ShmPlanes& planes = {});

}  // namespace coll::transport
