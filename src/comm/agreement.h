// Agreement among the survivors of a failure, with ULFM's guarantees (MPIX_Comm_agree): every
// rank that returns gets the same value and the same set of failed ranks, even when ranks die
// during the agreement, and none waits longer than its deadline. The rendezvous store decides:
// each rank appends its vote to one list, waits until every rank has voted or is known failed,
// proposes a decision, and the first proposal the store holds (setIfAbsent) is everyone's.
//
// A rank is known failed when the store saw its presence connection end (its process died),
// when the probe of a revoke found it silent (stopped, or wedged with its responder), or when
// a voter reports it (its ledger question went unanswered). A rank nobody reports is waited for
// until the deadline. A rank that votes after the decision, or is counted failed in it, learns
// so: it gets PeerLost saying the survivors went on without it, never a decision of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bootstrap/store.h"

namespace coll {

struct AgreementCall {
  std::string key;       // this agreement's namespace in the store, e.g. "coll/world/agree/3/"
  std::string gone_key;  // the list the store appends a rank to when its presence ends
  // A probe every live rank answers by appending itself to this list (a revoke's question);
  // empty: none. A rank not in it by probe_end is known failed.
  std::string answered_key;
  bootstrap::Deadline probe_end{};
  int rank = 0, size = 0;
  uint64_t value = ~uint64_t{0};  // this rank's contribution; the result is the AND of the survivors'
  std::vector<int> suspected;     // ranks this rank knows failed
  bootstrap::Deadline deadline{};
  std::string what = "agree";  // names the call in messages ("shrink #1")
};

struct AgreementResult {
  uint64_t value = 0;
  std::vector<int> failed;  // sorted
};

Status agree(bootstrap::StoreClient& store, const AgreementCall& call, AgreementResult* out);

// "{1,3}" for messages.
std::string rankSet(const std::vector<int>& ranks);

}  // namespace coll
