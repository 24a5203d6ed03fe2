#include "transport/socket/handshake.h"

#include <cstring>

#include "base/log.h"

namespace coll::transport::socket {
namespace {

uint64_t replyMac(const std::string& secret, const std::string& context, const bootstrap::Nonce& nonce,
                  const HandshakeReply& r) {
  std::string msg = std::string(kMacContext) + context;
  msg.append(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  msg.append(reinterpret_cast<const char*>(&r.rank), 4 * sizeof(int32_t));  // rank, peer, stream, nstreams
  return bootstrap::computeMac(secret, msg);
}

}  // namespace

std::string makeGreeting(const bootstrap::Nonce& nonce) {
  std::string hello(kGreetingBytes, '\0');
  std::memcpy(hello.data(), &kHelloMagic, 4);
  std::memcpy(hello.data() + 4, nonce.data(), nonce.size());
  return hello;
}

Status readGreeting(const char* bytes, const std::string& where, int peer, bootstrap::Nonce* nonce) {
  uint32_t magic;
  std::memcpy(&magic, bytes, 4);
  if (magic != kHelloMagic) return transportError(format("%s is not a coll rank (bad greeting)", where.c_str()), peer);
  std::memcpy(nonce->data(), bytes + 4, nonce->size());
  return Status::ok();
}

HandshakeReply makeReply(const std::string& secret, const std::string& context, const bootstrap::Nonce& nonce,
                         int rank, int peer, int stream, int nstreams) {
  HandshakeReply r{0, rank, peer, stream, nstreams};
  r.mac = replyMac(secret, context, nonce, r);
  return r;
}

Status checkReply(const HandshakeReply& r, const std::string& secret, const std::string& context,
                  const bootstrap::Nonce& nonce, int rank, int size, int nstreams, StreamIdentity* who) {
  if (r.mac != replyMac(secret, context, nonce, r)) return transportError("wrong job secret");
  if (r.peer != rank || r.rank < 0 || r.rank >= size || r.rank == rank)
    return transportError(format("handshake names rank %d -> %d, but this is rank %d of %d", r.rank, r.peer, rank, size));
  if (r.nstreams != nstreams || r.stream < 0 || r.stream >= nstreams)
    return transportError(format("rank %d uses COLL_SOCKET_NSTREAMS=%d, this rank %d", r.rank, r.nstreams, nstreams));
  who->rank = r.rank;
  who->stream = r.stream;
  return Status::ok();
}

Status dialStream(const std::string& host, int port, const std::string& secret, const std::string& context,
                  int rank, int peer, int stream, int nstreams, Deadline connect_deadline,
                  Deadline deadline, UniqueFd* out) {
  UniqueFd fd;
  COLL_RETURN_IF_ERROR(connectTcp(host, port, connect_deadline, &fd));
  // The acceptor greets first, and only once its own loop gets to this peer, so the wait is
  // silent by design; probes tell a peer that is gone (the reset) from one that is busy.
  setLivenessProbes(fd.get(), true);
  char hello[kGreetingBytes];
  if (Status st = readAll(fd.get(), hello, sizeof hello, deadline, "data handshake"); !st) {
    if (st.code() != ErrorCode::PeerLost) return st;
    return peerLostError(format("peer %d (%s:%d) dropped the connection before greeting us: it has left (%s)", peer,
                                host.c_str(), port, st.message().c_str()), peer);
  }
  bootstrap::Nonce nonce;
  COLL_RETURN_IF_ERROR(readGreeting(hello, format("%s:%d", host.c_str(), port), peer, &nonce));
  HandshakeReply r = makeReply(secret, context, nonce, rank, peer, stream, nstreams);
  COLL_RETURN_IF_ERROR(writeAll(fd.get(), &r, sizeof r, deadline, "data handshake"));
  uint32_t ack = 0;
  Status st = readAll(fd.get(), &ack, sizeof ack, deadline, "data handshake");
  if (!st || ack != kHelloMagic)
    return peerLostError(format("peer %d (%s:%d) refused our handshake (different job secret or "
                                "COLL_SOCKET_NSTREAMS?)", peer, host.c_str(), port), peer);
  setLivenessProbes(fd.get(), false);  // a data stream's waits have their ops' deadlines
  *out = std::move(fd);
  return Status::ok();
}

Status acceptStream(int fd, const std::string& secret, const std::string& context, int rank, int size,
                    int nstreams, Deadline deadline, StreamIdentity* who) {
  bootstrap::Nonce nonce = bootstrap::randomNonce();
  std::string hello = makeGreeting(nonce);
  COLL_RETURN_IF_ERROR(writeAll(fd, hello.data(), hello.size(), deadline, "data handshake"));
  HandshakeReply r{};
  COLL_RETURN_IF_ERROR(readAll(fd, &r, sizeof r, deadline, "data handshake"));
  COLL_RETURN_IF_ERROR(checkReply(r, secret, context, nonce, rank, size, nstreams, who));
  return writeAll(fd, &kHelloMagic, 4, deadline, "data handshake");
}

}  // namespace coll::transport::socket
