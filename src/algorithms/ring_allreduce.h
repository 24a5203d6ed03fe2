// Ring all-reduce: reduce-scatter then all-gather around the ring, each chunk cut into slices
// so that sending, receiving and reducing overlap. Every link carries 2(n-1)/n of the buffer,
// the bandwidth optimum; latency grows with 2(n-1) steps, so small messages prefer trees.
// Bit-identical results: each chunk is reduced in one order by one owner, then copied.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildRingAllreduce(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction ringAllreduce(const Fabric& x);
}  // namespace coll::algo::cost
