// The ring beyond all-reduce. Buffer conventions (the communicator maps user buffers onto
// them): p.count is the element count of the whole n-chunk buffer; chunk c belongs to rank c.
//  - all-gather: input = this rank's chunk (the executor's input is shifted so that input at
//    chunk r's offset is the user's send buffer); output = all n chunks. in_place: the send
//    buffer already is chunk r of the output.
//  - reduce-scatter: input = all n chunks; output = an n-chunk workspace; the result is chunk r
//    of it, which the executor writes straight into the user's buffer where no step straddles
//    it (exec/executor.h, OpBuffers::result), and the communicator copies out elsewhere.
//  - reduce: input = the buffer; output = the root's receive buffer, or a workspace elsewhere;
//    ring reduce-scatter, then every chunk's owner sends it to the root.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildRingAllgather(const BuildParams& p);
Schedule buildRingReduceScatter(const BuildParams& p);
Schedule buildRingReduce(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction ringPhase(const Fabric& x, bool reduces);
}  // namespace coll::algo::cost
