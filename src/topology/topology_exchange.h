// Builds the job's Topology at init, the same on every rank: either loaded from
// COLL_TOPO_FILE (to reproduce a selection without the hardware), or the host grouping plus
// each host's detected hardware (published in the store by the host's first rank) plus the
// link probe's figures (COLL_PROBE=0: the documented defaults). With COLL_TOPO_DUMP_FILE,
// rank 0 writes the result as JSON.
#pragma once

#include <string>

#include "bootstrap/host_grouping.h"
#include "topology/link_probe.h"
#include "topology/topology.h"

namespace coll::topology {

struct TopologyOptions {
  bool probe = true;
  std::string load_file;  // COLL_TOPO_FILE
  std::string dump_file;  // COLL_TOPO_DUMP_FILE
};

// Collective over the job. A file whose rank count differs from the job's is refused
// (InvalidArgument naming both); a failed probe fails init with the peer named.
Status buildJobTopology(const TopologyOptions& options, const ProbeContext& ctx, const bootstrap::HostGrouping& hosts,
                        Topology* out);

}  // namespace coll::topology
