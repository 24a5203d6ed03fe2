// Reductions whose every element is combined in rank order, ((x0 op x1) op x2) ... op x(n-1),
// whatever the chunking, slicing or transport: what COLL_DETERMINISTIC=1 runs, so a result is
// bit-identical across runs, algorithms, chunk sizes, transports and entry points for one
// world size (floating-point addition is not associative; the order is the answer).
//
// Chunk c of the buffer belongs to rank c, which receives every other rank's slices of it and
// folds them in rank order: rank 0's arrives by a plain receive (or is its own input), each
// later rank's by a receive that combines, and the owner's own input joins at its place by a
// local combine (stash keeps it first where the op is in place). The chunks are then sent to
// everyone (all-reduce), to the root (reduce), or stay (reduce-scatter). Each rank moves what
// a direct reduce-scatter and all-gather move: bandwidth-optimal; the price is that the folds
// of one slice run one after another instead of as the messages arrive.
#pragma once

#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildOrderedAllreduce(const BuildParams& p);
Schedule buildOrderedReduceScatter(const BuildParams& p);
Schedule buildOrderedReduce(const BuildParams& p);

}  // namespace coll::algo
