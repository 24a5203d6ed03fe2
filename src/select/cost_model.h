// The α-β-γ cost model: a predicted time for running one algorithm of the catalogue on one
// collective of a given size over a topology::Topology. The selector picks the smallest prediction;
// `coll-topo --explain` prints them all.
//
// The formulas live beside their builders (src/algorithms/, cost::ringAllreduce and so on,
// named in each catalogue entry); their conventions are stated in algorithms/cost/fabric.h.
// This file turns the job's Topology into the Fabric they read: the idle and loaded α, the
// link classes, the hosts' layout. Algorithms without a formula, or that refuse the layout
// (hierarchical on unbalanced hosts), come back unsupported with a reason the selector logs.
#pragma once

#include <cstddef>

#include "algorithms/catalog.h"
#include "topology/topology.h"

namespace coll::select {

using Prediction = algo::cost::Prediction;

// elem_size: bytes per element, so that formulas can tell how many chunks of a small buffer
// are empty.
Prediction predictTime(algo::Collective collective, const char* algorithm, size_t bytes, size_t elem_size,
                       const topology::Topology& topo, size_t slice_bytes);

}  // namespace coll::select
