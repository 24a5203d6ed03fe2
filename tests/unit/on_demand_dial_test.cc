// A dial whose connection the peer never greets (src/transport/socket/on_demand.cc). When a
// peer is killed as a connection to it completes, the kernel can leave the dialer's socket
// established with nothing behind it and no reset sent; the dialer must find out by dialing
// again (refused: the peer has left) rather than wait out the op's deadline. Here the "peer" is
// a bare listening socket this test drives by hand: it accepts and stays silent, then closes
// its listener (the dead peer), or keeps listening silently (a stopped one).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <thread>
#include <vector>

#include "transport/socket/on_demand.h"
#include "unit/loopback_listener.h"

namespace coll::transport::socket {
namespace {

using namespace std::chrono_literals;

struct SilentPeer {
  UniqueFd listener;
  std::string address;
  std::vector<UniqueFd> taken;  // connections accepted and never greeted
  SilentPeer() {
    int port = 0;
    listener = listenOnLoopback(&port, SOCK_NONBLOCK);
    address = "127.0.0.1:" + std::to_string(port);
  }
  void acceptAll() {
    while (listener) {
      UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd) return;
      taken.push_back(std::move(fd));
    }
  }
};

struct Dialer {
  int own_port = 0;
  UniqueFd own_listener = listenOnLoopback(&own_port, SOCK_NONBLOCK);
  OnDemandConnector connector;
  explicit Dialer(const std::string& peer_address)
      : connector(OnDemandConnector::Identity{0, 2, 1, "secret", "ctx/", 0}, own_listener.get(),
                  [peer_address](int, Deadline, std::string* address) {
                    *address = peer_address;
                    return Status::ok();
                  }) {}
  // Advances until the peer's dial ends; `each` runs between rounds.
  template <typename Each>
  OnDemandConnector::Made runUntilDone(Each each, std::chrono::milliseconds limit) {
    auto stop = Clock::now() + limit;
    std::vector<OnDemandConnector::Made> made;
    while (made.empty() && Clock::now() < stop) {
      connector.advance(&made);
      each();
      std::this_thread::sleep_for(2ms);
    }
    return made.empty() ? OnDemandConnector::Made{} : std::move(made.front());
  }
};

TEST(OnDemandDial, SilentConnectionToAPeerThatLeftFailsAsPeerLostLongBeforeTheDeadline) {
  SilentPeer peer;
  Dialer dialer(peer.address);
  const auto start = Clock::now();
  dialer.connector.want(1, start + 20s);
  OnDemandConnector::Made m = dialer.runUntilDone([&] {
    peer.acceptAll();
    if (!peer.taken.empty()) peer.listener.reset();  // "killed": the taken socket stays, silent
  }, 10s);
  ASSERT_EQ(m.peer, 1) << "the dial neither succeeded nor failed within 10 s";
  EXPECT_EQ(m.status.code(), ErrorCode::PeerLost) << m.status.message();
  EXPECT_NE(m.status.message().find("no longer listens"), std::string::npos) << m.status.message();
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(OnDemandDial, SilentLivePeerIsDialedAgainAndTimesOutAtTheDeadline) {
  SilentPeer peer;
  Dialer dialer(peer.address);
  const auto start = Clock::now();
  dialer.connector.want(1, start + 1s);
  OnDemandConnector::Made m = dialer.runUntilDone([&] { peer.acceptAll(); }, 10s);
  ASSERT_EQ(m.peer, 1) << "the dial did not end at its deadline";
  EXPECT_EQ(m.status.code(), ErrorCode::Timeout) << m.status.message();
  EXPECT_NE(m.status.message().find("peer 1 did not answer"), std::string::npos) << m.status.message();
  EXPECT_GE(peer.taken.size(), 2u) << "a silent connection was not dialed again";
  EXPECT_LE(peer.taken.size(), 6u) << "dialed again too often: the wait must grow";
}

}  // namespace
}  // namespace coll::transport::socket
