// Recursive doubling all-reduce: log2 p steps, in each of which a rank exchanges its whole
// buffer with the partner v ^ 2^s and combines the two. The fewest steps of any algorithm
// here (8 ranks: 3, against rhd's and the tree's 6 and the ring's 14), at the price of moving
// the whole buffer every step: the choice for small buffers, where a step's fixed cost
// outweighs its bytes. On 2 ranks it is a single exchange.
// A world that is not a power of two folds as rhd does (patterns/halving_doubling.h): two
// more steps, the donors' data reduced by their absorbers and the result handed back.
// Bit-identical results: both partners of an exchange combine the lower virtual rank's value
// first (Step::received_first), so they compute the same expression.
// An exchange in place must not overwrite what its own send still reads (a transport may read
// it late, as CMA does): the partner's data lands in scratch and is combined once the send
// left (Step::reduce_after), so large forced buffers cannot deadlock either.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildRdAllreduce(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction rdAllreduce(const Fabric& x);
}  // namespace coll::algo::cost
