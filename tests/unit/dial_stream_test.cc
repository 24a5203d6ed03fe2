// The start-up dial's wait for the acceptor's greeting (src/transport/socket/handshake.cc).
// That wait is silent by design, so a peer killed as the connection to it completes, whose
// kernel dropped the connection without a FIN or reset, left the dialer waiting out its whole
// deadline (Timeout). The dialer's keepalive probes now draw a reset from such a host: PeerLost
// in a second or two. A socket put in TCP_REPAIR mode and closed vanishes in just that way
// (no FIN, no reset); that needs CAP_NET_ADMIN, and the case skips, saying so, without it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string>

#include "transport/socket/handshake.h"
#include "unit/loopback_listener.h"

namespace coll::transport::socket {
namespace {

using namespace std::chrono_literals;

struct Listener {
  int port = 0;
  UniqueFd fd = listenOnLoopback(&port);
  UniqueFd take() { return UniqueFd(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC)); }
};

struct DialResult {
  Status status;
  UniqueFd fd;
  Clock::duration took{};
};

// Rank 0 dials rank 1 (stream 0 of 1) in the background, the greeting awaited until `limit`.
std::future<DialResult> dialRankOne(int port, std::chrono::milliseconds limit) {
  return std::async(std::launch::async, [port, limit] {
    DialResult r;
    const auto start = Clock::now();
    r.status = dialStream("127.0.0.1", port, "secret", "ctx/", 0, 1, 0, 1, start + 2s, start + limit, &r.fd);
    r.took = Clock::now() - start;
    return r;
  });
}

// Closes an accepted socket without a FIN or reset: the dialer's side stays established.
bool vanishWithoutAWord(UniqueFd fd) {
  int on = 1;
  if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_REPAIR, &on, sizeof on) != 0) return false;
  fd.reset();
  return true;
}

TEST(DialStream, PeerThatVanishedWithoutAWordFailsAsPeerLostWithinSeconds) {
  Listener peer;
  auto dial = dialRankOne(peer.port, 8000ms);
  UniqueFd taken = peer.take();
  ASSERT_TRUE(taken);
  if (!vanishWithoutAWord(std::move(taken))) {
    peer.fd.reset();  // the dial now reads an ordinary close
    dial.wait();
    GTEST_SKIP() << "TCP_REPAIR refused (" << std::strerror(errno) << "): needs CAP_NET_ADMIN";
  }
  peer.fd.reset();  // the listener too: the peer has left
  DialResult r = dial.get();
  EXPECT_EQ(r.status.code(), ErrorCode::PeerLost) << r.status.message();
  EXPECT_NE(r.status.message().find("peer 1 (127.0.0.1:"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("it has left"), std::string::npos) << r.status.message();
  EXPECT_LT(r.took, 5s) << "waited for the deadline instead of finding the peer gone";
}

TEST(DialStream, SilentLivePeerStillTimesOutAtTheDeadline) {
  Listener peer;
  auto dial = dialRankOne(peer.port, 2500ms);
  UniqueFd taken = peer.take();  // accepted, never greeted: a peer busy elsewhere, or stopped
  ASSERT_TRUE(taken);
  DialResult r = dial.get();
  EXPECT_EQ(r.status.code(), ErrorCode::Timeout) << r.status.message();
  EXPECT_GE(r.took, 2400ms) << "a live peer's silence was taken for its departure";
}

TEST(DialStream, ProbesStopOnceTheStreamIsMade) {
  Listener peer;
  auto dial = dialRankOne(peer.port, 5000ms);
  UniqueFd taken = peer.take();
  ASSERT_TRUE(taken);
  StreamIdentity who;
  Status accepted = acceptStream(taken.get(), "secret", "ctx/", 1, 2, 1, Clock::now() + 5s, &who);
  ASSERT_TRUE(accepted) << accepted.message();
  EXPECT_EQ(who.rank, 0);
  DialResult r = dial.get();
  ASSERT_TRUE(r.status) << r.status.message();
  int keepalive = -1;
  socklen_t len = sizeof keepalive;
  ASSERT_EQ(::getsockopt(r.fd.get(), SOL_SOCKET, SO_KEEPALIVE, &keepalive, &len), 0);
  EXPECT_EQ(keepalive, 0) << "a data stream keeps the handshake's probes";
}

}  // namespace
}  // namespace coll::transport::socket
