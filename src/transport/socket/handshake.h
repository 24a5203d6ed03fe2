// Authenticated set-up of one data stream: the acceptor greets with a fresh nonce, the dialer
// answers with its identity and a MAC keyed by the job secret, the acceptor acknowledges (or,
// for connections made on demand, says it is dialing the dialer itself: on_demand.h).
// Anything else is refused and logged before a byte of data is accepted.
#pragma once

#include <string>

#include "base/fd_io.h"
#include "bootstrap/auth.h"
#include "transport/socket/wire.h"

namespace coll::transport::socket {

struct StreamIdentity {
  int rank = -1;  // who dialed
  int stream = -1;
};

// The handshake's steps, for callers that drive the sockets themselves (on_demand.cc).
inline constexpr size_t kGreetingBytes = 4 + sizeof(bootstrap::Nonce);
std::string makeGreeting(const bootstrap::Nonce& nonce);
// A greeting read from host:port; fills its nonce.
Status readGreeting(const char* bytes, const std::string& where, int peer, bootstrap::Nonce* nonce);
HandshakeReply makeReply(const std::string& secret, const std::string& context, const bootstrap::Nonce& nonce,
                         int rank, int peer, int stream, int nstreams);
// The acceptor's check of an answer to its greeting: the right secret, addressed to this rank
// of this job, with the same stream count.
Status checkReply(const HandshakeReply& r, const std::string& secret, const std::string& context,
                  const bootstrap::Nonce& nonce, int rank, int size, int nstreams, StreamIdentity* who);

// Dialer side: connect to address and authenticate as (rank -> peer, stream). `deadline`
// bounds reaching the listener (refused connections are retried until then); the handshake,
// once connected, has until `handshake_deadline` (the acceptor answers only when it gets to
// this peer, and a handshake cut off would leave it a dead stream). A peer that vanished
// meanwhile without a word is found by keepalive probes (setLivenessProbes): PeerLost.
Status dialStream(const std::string& host, int port, const std::string& secret, const std::string& context,
                  int rank, int peer, int stream, int nstreams, Deadline deadline, Deadline handshake_deadline,
                  UniqueFd* out);

// Acceptor side, on a freshly accepted socket. Fills who it is; fails (the caller logs and
// closes) on a wrong secret, a wrong target, or a malformed answer.
Status acceptStream(int fd, const std::string& secret, const std::string& context, int rank, int size,
                    int nstreams, Deadline deadline, StreamIdentity* who);

}  // namespace coll::transport::socket
