// Recursive halving-doubling all-reduce (Rabenseifner): reduce-scatter by recursive halving,
// then all-gather by recursive doubling (patterns/halving_doubling.h). Each rank moves the
// ring's 2(p-1)/p of the buffer but in 2 log2 p steps instead of 2(p-1): the choice for
// mid-sized messages where the ring's step count costs more than its perfect link use.
// A world that is not a power of two folds its first 2(n - p) ranks in pairs first (the even
// rank hands its data over and gets the result back): two more steps, and the folded pairs'
// links carry the whole buffer.
// Bit-identical results: each block is finished (and averaged) by one owner, then copied.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildRhdAllreduce(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction rhdAllreduce(const Fabric& x);
}  // namespace coll::algo::cost
