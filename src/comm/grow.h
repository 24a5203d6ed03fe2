// Growing a running job: a new process joins through the job's store and the members admit it
// at a point they agree on (MPI's MPI_Comm_spawn has the members start it; here it starts on
// its own, as a replacement a scheduler restarts does, and asks to be let in).
//
// The lobby: every communicator descended from one made as "<root>" (shrunk, grown: the name
// goes "<root>/shrink1-x2/grow1") shares the store list "coll/lobby/<root>/joiners". A joiner
// appends a token of its own and waits for "coll/lobby/<root>/admitted/<token>". The members
// call grow() together: the first proposal the store holds (setIfAbsent) names the joiners to
// admit, every token in the lobby not yet admitted, and every member then writes each admitted
// token's place, "<new name> <rank> <size>", unless the key is already set. Members keep their
// ranks; joiners follow in lobby order. Then all make the new communicator as create() does,
// so its ranks and transports are as if it had started that way. A joiner whose deadline
// passes writes "withdrawn" where its place would go, so no later grow admits a process that
// left; if that came first in a grow that admitted it, the grow fails (PeerLost) on every member
// and nothing is made.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bootstrap/store.h"
#include "coll/communicator.h"

namespace coll {

// "world" for "world/shrink1-x2/grow1".
std::string lobbyOf(const std::string& name);
std::string lobbyJoinersKey(const std::string& lobby);
std::string lobbyAdmittedKey(const std::string& lobby, const std::string& token);

// What the members decided in grow #generation of the communicator named `name` (of `size`
// ranks): the joiners' tokens in rank order, agreed through `decision_key`. Writes each one's
// admission. The members' options for the new communicator: *out.
Status agreeOnJoiners(bootstrap::StoreClient& store, const std::string& decision_key, const CommOptions& current,
                      int rank, int size, uint64_t generation, std::vector<std::string>* joiners, CommOptions* out,
                      bootstrap::Deadline deadline);

// The joiner's side: asks to be let into the job whose communicators descend from
// `options.name` (under *token, a name of its own), and waits (until the deadline) for the
// members' grow(). *out: its options in the new communicator.
Status waitForAdmission(bootstrap::StoreClient& store, const CommOptions& options, bootstrap::Deadline deadline,
                        std::string* token, CommOptions* out);

// After waitForAdmission timed out (on a fresh client: a store call that timed out ends its
// connection): marks the token withdrawn, unless a grow admitted it meanwhile (*admitted, and
// *out as above).
Status withdrawFromLobby(bootstrap::StoreClient& store, const CommOptions& options, const std::string& token,
                         bool* admitted, CommOptions* out);

}  // namespace coll
