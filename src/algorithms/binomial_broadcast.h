// Binomial-tree broadcast: in round k every rank that has the data sends it 2^k positions on,
// so all n ranks have it after ceil(log2 n) hops instead of the chain's n-1. The root's link
// carries log2(n) copies, so for messages large enough to pipeline the chain wins.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildBinomialBroadcast(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction binomialBroadcast(const Fabric& x);
}  // namespace coll::algo::cost
