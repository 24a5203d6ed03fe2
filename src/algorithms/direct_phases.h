// The phases the direct ("two-shot") algorithms share: every rank talks to every other, in
// turns that keep the ranks on different peers at each moment.
#pragma once

#include <vector>

#include "algorithms/schedule_builder.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

// Peers in the order rank+1, rank+2, ...: at each moment the ranks talk to different peers.
std::vector<int> peersInTurn(const BuildParams& p);

// Every chunk but this rank's, straight to its owner (chunk c to rank c), read from the input
// (the output where in place): the sending half of a direct reduce-scatter, as step `phase`.
void addSendToOwners(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase);

// The above, and chunk r reduced from the input and every peer's chunk r into the output, as
// they arrive in turn (divided by n for avg): a direct reduce-scatter, the first half of a
// direct all-reduce.
void addDirectReduceScatter(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase);

// Chunk r (this rank's, finished in the output) straight to every peer, and every peer's chunk
// straight into the output: the second half of a direct all-reduce, as step `phase`.
void addDirectAllGather(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase);

}  // namespace coll::algo
