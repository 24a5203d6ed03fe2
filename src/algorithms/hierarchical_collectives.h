// Hierarchical reduce-scatter and all-gather for H hosts of L ranks each (the all-reduce's are
// in hierarchical_allreduce.h). Local index l of every host forms a lane: the chunks of the
// ranks with local index l. Buffer conventions are the ring's (ring_collectives.h): chunk g of
// the n-chunk buffer belongs to rank g.
//  - reduce-scatter: inside each host, every rank sends each local peer that peer's lane's
//    chunks and reduces its own lane's (shared memory); then each lane runs a ring
//    reduce-scatter across the hosts, so each rank ends with its own chunk reduced everywhere.
//  - all-gather: each lane runs a ring all-gather across the hosts, then every rank passes
//    its lane's chunks to its local peers.
// Each host's link carries (H-1)/H of the buffer each way, where the flat ring's carries
// (n-1)/n (on 2 hosts of 2: half against three quarters), and all L ranks of a host drive it.
// Layouts whose hosts differ in size build the flat ring (named so in Schedule::algorithm).
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildHierarchicalReduceScatter(const BuildParams& p);
Schedule buildHierarchicalAllgather(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above. For these collectives the
// selector's byte count is one rank's chunk; the formulas scale it to the whole buffer.
namespace coll::algo::cost {
Prediction hierarchicalPhase(const Fabric& x, bool reduces);
Prediction ringChunked(const Fabric& x, bool reduces);
}  // namespace coll::algo::cost
