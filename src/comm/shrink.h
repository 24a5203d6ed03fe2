// Shrinking a communicator: after a failure the survivors build a new communicator without
// the ranks they exclude (dead, stopped or unwanted), as ncclCommShrink and MPI ULFM's
// MPI_Comm_shrink do, and carry on. The plan is pure rank arithmetic: which position each
// survivor takes and under which name (store namespace) the new communicator rendezvouses.
#pragma once

#include <cstdint>
#include <vector>

#include "bootstrap/store.h"
#include "coll/communicator.h"
#include "base/status.h"

namespace coll {

// The options of the shrunk communicator as seen by old rank `rank` of `size`: same store
// and secret, rank renumbered densely in old rank order (old 0 1 _ 3 -> new 0 1 2), and a
// name no earlier communicator on that store used: "<name>/shrink<generation>-x<excluded>",
// e.g. "world/shrink1-x2". `generation` counts the shrinks of the parent (1 for the first),
// so every survivor that shrinks the same parent the same way derives the same name.
// InvalidArgument when excluded names a rank out of range, twice, or the caller itself (so the
// caller always remains).
Status planShrink(const CommOptions& parent, int rank, int size, const std::vector<int>& excluded,
                  uint64_t generation, CommOptions* out);

// The agreement step ULFM's shrink has: every survivor publishes the ranks it excludes and
// reads every other survivor's, so that survivors who disagree (one still counts a rank the
// others exclude) fail at once with Mismatch naming each one's list, instead of rendezvousing
// under different names until their deadline. `key_prefix`: the parent's namespace. A
// survivor that never publishes fails it with Timeout naming that rank.
Status agreeOnShrink(bootstrap::StoreClient& store, const std::string& key_prefix, uint64_t generation, int rank,
                     int size, const std::vector<int>& excluded, bootstrap::Deadline deadline);

}  // namespace coll
