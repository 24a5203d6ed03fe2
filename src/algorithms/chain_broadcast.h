// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, the buffer cut into slices so
// every link streams at once. Each link carries the buffer once, so for large messages the
// time approaches size / link bandwidth regardless of n (plus n-1 slice latencies).
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildChainBroadcast(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction chainBroadcast(const Fabric& x);
}  // namespace coll::algo::cost
