// Hierarchical all-reduce for H hosts of L ranks each: an intra-host reduce-scatter (direct,
// over shared memory) leaves local rank l owning part l of the buffer reduced across its host;
// a ring all-reduce among the H ranks with local index l combines part l across hosts, so all
// L local ranks drive the network at once, each with 1/L of the data; an intra-host all-gather
// spreads the parts. Each host's link carries 2(H-1)/H of the buffer instead of the flat
// ring's 2(n-1)/n, and no intra-host hop touches the network.
// Needs every host to hold the same number of ranks; otherwise it builds the flat ring (and
// says so in Schedule::algorithm).
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildHierarchicalAllreduce(const BuildParams& p);

// Whether the host layout suits it: several hosts, more than one rank each, all equal.
bool hierarchicalFits(const std::vector<std::vector<int>>* hosts);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction hierarchicalAllreduce(const Fabric& x);
}  // namespace coll::algo::cost
