// coll::Error: what every failed call or Work reports at the API boundary.
#pragma once

#include <stdexcept>
#include <string>

#include "coll/export.h"

namespace coll {

// The order matches collResult_t in coll.h (offset by one: collSuccess is 0).
enum class ErrorCode : int {
  Timeout = 1,       // a deadline (COLL_TIMEOUT or a caller's) expired
  PeerLost,          // a peer closed its connection, crashed or aborted
  Mismatch,          // ranks disagree about the call (op, count, dtype, root)
  InvalidArgument,   // refused before anything was sent
  Unsupported,       // valid request this build or machine cannot serve
  Transport,         // a network or memory-transport failure other than a lost peer
  Internal,          // a bug in coll
};

COLL_API const char* toString(ErrorCode code);

// The message names the op, its sequence number and the peers, e.g.
// "allreduce #42 (ring, 64 MiB): peer 3 (10.0.0.4:5120) closed the connection at step 5/14".
class COLL_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace coll
