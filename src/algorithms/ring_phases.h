// The two halves of the ring, shared by every ring collective. `shift` rotates which chunk a
// rank ends up owning: after reduce-scatter rank r owns chunk r + 1 + shift, fully reduced;
// all-gather starts from that ownership. All-reduce uses shift 0, reduce-scatter and
// all-gather -1 (rank r owns chunk r).
#pragma once

#include "algorithms/schedule_builder.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

// `first_touch`: the buffer the first reduction of each chunk reads (input when out of place,
// so nothing is copied up front). Phases are numbered from `phase0`.
//
// partials_in_scratch (a reduce-scatter, whose output is a workspace): the partial sums, each
// only sent on at the next step, take two chunk-sized areas of scratch in turn instead of a
// place in the output each (n − 2 chunks of it). A step's sums wait for the sends of those two
// steps before (the builder's hazards); with a whole chunk each way, every step of the ring can
// finish once every rank finished the one before, so the ring cannot close on itself, as slots
// of fewer slices than a chunk did (PERFORMANCE.md, "partial sums in the receive slots"). The
// builder needs partialSumRegions(sc) regions after sc's own.
void addRingReduceScatter(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int shift,
                          BufferId first_touch, uint32_t phase0, bool partials_in_scratch = false);
size_t partialSumRegions(const SlicedChunks& sc);

// Divides the owned chunk by n (ReduceOp::avg), once, before anyone copies it.
void addDivideOwned(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int owned, uint32_t phase);

// own_from_input: the first phase sends this rank's own chunk from the input and writes it
// into the output on the way (Step::copy_to_output), for an out-of-place all-gather whose own
// chunk is otherwise copied apart.
void addRingAllGather(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int shift, uint32_t phase0,
                      bool own_from_input = false);

}  // namespace coll::algo
