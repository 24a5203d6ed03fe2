#include "transport/socket/handshake.h"

#include <cstring>

#include "bootstrap/auth.h"
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

Status dialStream(const std::string& host, int port, const std::string& secret, const std::string& context,
                  int rank, int peer, int stream, int nstreams, Deadline connect_deadline,
                  Deadline deadline, UniqueFd* out) {
  UniqueFd fd;
  COLL_RETURN_IF_ERROR(connectTcp(host, port, connect_deadline, &fd));
  char hello[4 + sizeof(bootstrap::Nonce)];
  COLL_RETURN_IF_ERROR(readAll(fd.get(), hello, sizeof hello, deadline, "data handshake"));
  uint32_t magic;
  std::memcpy(&magic, hello, 4);
  if (magic != kHelloMagic) return transportError(format("%s:%d is not a coll rank (bad greeting)", host.c_str(), port), peer);
  bootstrap::Nonce nonce;
  std::memcpy(nonce.data(), hello + 4, nonce.size());
  HandshakeReply r{0, rank, peer, stream, nstreams};
  r.mac = replyMac(secret, context, nonce, r);
  COLL_RETURN_IF_ERROR(writeAll(fd.get(), &r, sizeof r, deadline, "data handshake"));
  uint32_t ack = 0;
  Status st = readAll(fd.get(), &ack, sizeof ack, deadline, "data handshake");
  if (!st || ack != kHelloMagic)
    return peerLostError(format("peer %d (%s:%d) refused our handshake (different job secret or "
                                "COLL_SOCKET_NSTREAMS?)", peer, host.c_str(), port), peer);
  *out = std::move(fd);
  return Status::ok();
}

Status acceptStream(int fd, const std::string& secret, const std::string& context, int rank, int size,
                    int nstreams, Deadline deadline, StreamIdentity* who) {
  bootstrap::Nonce nonce = bootstrap::randomNonce();
  char hello[4 + sizeof nonce];
  std::memcpy(hello, &kHelloMagic, 4);
  std::memcpy(hello + 4, nonce.data(), nonce.size());
  COLL_RETURN_IF_ERROR(writeAll(fd, hello, sizeof hello, deadline, "data handshake"));
  HandshakeReply r{};
  COLL_RETURN_IF_ERROR(readAll(fd, &r, sizeof r, deadline, "data handshake"));
  if (r.mac != replyMac(secret, context, nonce, r)) return transportError("wrong job secret");
  if (r.peer != rank || r.rank < 0 || r.rank >= size || r.rank == rank)
    return transportError(format("handshake names rank %d -> %d, but this is rank %d of %d", r.rank, r.peer, rank, size));
  if (r.nstreams != nstreams || r.stream < 0 || r.stream >= nstreams)
    return transportError(format("rank %d uses COLL_SOCKET_NSTREAMS=%d, this rank %d", r.rank, r.nstreams, nstreams));
  COLL_RETURN_IF_ERROR(writeAll(fd, &kHelloMagic, 4, deadline, "data handshake"));
  who->rank = r.rank;
  who->stream = r.stream;
  return Status::ok();
}

}  // namespace coll::transport::socket
