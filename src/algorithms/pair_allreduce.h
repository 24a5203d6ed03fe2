// The all-reduce of two ranks, which ring and direct both come down to: each rank reduces one
// half (its chunk) with the peer's contribution and sends the result back.
//
// What two ranks add is the order of the messages. Each rank's sends alternate between the
// reduce-scatter's slices and the all-gather's: slice j of the result goes right after slice j
// of the reduce-scatter, not after the whole reduce-scatter. So the result of a slice is sent
// while it is still in cache, and its send is marked Step::forwards, which lets a transport
// send each part of it as it is combined (shared memory writes it straight into the outbound
// slot) instead of reading it back from the output.
#pragma once

#include "algorithms/schedule_builder.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

// Adds both phases (reduce-scatter 0, all-gather 1) for p.nranks == 2.
void addPairAllreduce(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b);

}  // namespace coll::algo
