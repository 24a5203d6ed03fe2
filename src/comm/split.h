// Splitting a communicator, as MPI_Comm_split and ncclCommSplit do: every rank calls it with a
// color and a key; ranks with the same color form a new communicator, ordered by key and then
// by old rank; a negative color (kSplitNoColor) takes part in the exchange but joins nothing.
// The plan is pure arithmetic over every rank's (color, key), which the parent communicator
// all-gathers first: each new communicator rendezvouses over the parent's store under a name
// of its own ("<parent>/split<generation>-c<color>"), so groups never see each other's keys.
#pragma once

#include <cstdint>
#include <vector>

#include "coll/communicator.h"
#include "base/status.h"

namespace coll {

struct SplitChoice {
  int32_t color = 0;
  int32_t key = 0;
};

// The options of the communicator old rank `rank` joins, given every rank's choice; false in
// *joins for a negative color (then *out is untouched). `generation` counts the parent's
// splits (1 for the first), the same on every rank since every rank calls split.
Status planSplit(const CommOptions& parent, int rank, const std::vector<SplitChoice>& choices, uint64_t generation,
                 CommOptions* out, bool* joins);

}  // namespace coll
