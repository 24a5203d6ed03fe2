// Authenticated set-up of one data stream: the acceptor greets with a fresh nonce, the dialer
// answers with its identity and a MAC keyed by the job secret, the acceptor acknowledges.
// Anything else is refused and logged before a byte of data is accepted.
#pragma once

#include <string>

#include "base/fd_io.h"
#include "transport/socket/wire.h"

namespace coll::transport::socket {

struct StreamIdentity {
  int rank = -1;  // who dialed
  int stream = -1;
};

// Dialer side: connect to address and authenticate as (rank -> peer, stream).
Status dialStream(const std::string& host, int port, const std::string& secret, const std::string& context,
                  int rank, int peer, int stream, int nstreams, Deadline deadline, UniqueFd* out);

// Acceptor side, on a freshly accepted socket. Fills who it is; fails (the caller logs and
// closes) on a wrong secret, a wrong target, or a malformed answer.
Status acceptStream(int fd, const std::string& secret, const std::string& context, int rank, int size,
                    int nstreams, Deadline deadline, StreamIdentity* who);

}  // namespace coll::transport::socket
