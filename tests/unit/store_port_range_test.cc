// A store on a derived port that is taken (src/bootstrap/store_port_range.h): rank 0 serves on
// the next free port and the others find it there, passing over a silent listener and another
// job's store, whichever of them starts first; nothing found is a Timeout naming the range.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/store_port_range.h"

namespace coll::bootstrap {
namespace {

using namespace std::chrono_literals;

Deadline in(std::chrono::milliseconds d) { return Clock::now() + d; }

// Something else listening on a port of 127.0.0.1 that never says a word (the kernel still
// completes the TCP handshake): what a foreign service on the derived port looks like.
class SilentListener {
 public:
  explicit SilentListener(int port = 0) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    ok_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_.get(), 16) == 0;
    socklen_t len = sizeof a;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  bool ok() const { return ok_; }
  int port() const { return port_; }

 private:
  UniqueFd fd_;
  bool ok_ = false;
  int port_ = 0;
};

std::string at(int port) { return "127.0.0.1:" + std::to_string(port); }

void expectServes(StoreClient& c) {
  std::string value;
  ASSERT_TRUE(c.set("k", "v", in(5s)));
  ASSERT_TRUE(c.get("k", &value, in(5s)));
  EXPECT_EQ(value, "v");
}

TEST(StorePortRange, ServesOnTheNextFreePortAndTheClientFindsItPastASilentListener) {
  SilentListener taken;
  ASSERT_TRUE(taken.ok());
  std::string secret = generateSecret();
  std::unique_ptr<StoreServer> server;
  Status st = serveOnFirstFreePort("127.0.0.1", taken.port(), 4, secret, &server);
  ASSERT_TRUE(st) << st.message();
  EXPECT_GT(server->port(), taken.port());
  EXPECT_LT(server->port(), taken.port() + 4);
  std::unique_ptr<StoreClient> client;
  std::string found;
  auto start = Clock::now();
  st = connectInPortRange(at(taken.port()), 4, secret, in(20s), &client, &found);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(found, at(server->port()));
  EXPECT_LT(Clock::now() - start, 10s) << "the silent listener held the client past its greeting wait";
  expectServes(*client);
}

TEST(StorePortRange, AnotherJobsStoreIsPassedOver) {
  std::string mine = generateSecret(), theirs = generateSecret();
  std::unique_ptr<StoreServer> other, ours;
  ASSERT_TRUE(StoreServer::start("127.0.0.1", 0, theirs, &other));
  Status st = serveOnFirstFreePort("127.0.0.1", other->port(), 4, mine, &ours);
  ASSERT_TRUE(st) << st.message();
  ASSERT_NE(ours->port(), other->port());
  std::unique_ptr<StoreClient> client;
  std::string found;
  st = connectInPortRange(at(other->port()), 4, mine, in(20s), &client, &found);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(found, at(ours->port()));
  expectServes(*client);
}

TEST(StorePortRange, AClientThatStartsFirstFindsTheStoreWhenItComesUp) {
  SilentListener taken;
  ASSERT_TRUE(taken.ok());
  std::string secret = generateSecret();
  std::unique_ptr<StoreClient> client;
  std::string found;
  Status st;
  std::thread early([&] { st = connectInPortRange(at(taken.port()), 4, secret, in(30s), &client, &found); });
  std::this_thread::sleep_for(300ms);
  std::unique_ptr<StoreServer> server;
  Status served = serveOnFirstFreePort("127.0.0.1", taken.port(), 4, secret, &server);
  early.join();
  ASSERT_TRUE(served) << served.message();
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(found, at(server->port()));
  expectServes(*client);
}

TEST(StorePortRange, NoStoreOfThisJobIsATimeoutNamingTheRangeAndWhatAnswered) {
  std::string theirs = generateSecret();
  std::unique_ptr<StoreServer> other;
  ASSERT_TRUE(StoreServer::start("127.0.0.1", 0, theirs, &other));
  std::unique_ptr<StoreClient> client;
  std::string found;
  Status st = connectInPortRange(at(other->port()), 2, generateSecret(), in(1500ms), &client, &found);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::Timeout);
  std::string range = std::to_string(other->port()) + "-" + std::to_string(other->port() + 1);
  EXPECT_NE(st.message().find(range), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("wrong job secret"), std::string::npos) << st.message();
}

TEST(StorePortRange, OneTryIsThatPortOnly) {
  SilentListener taken;
  ASSERT_TRUE(taken.ok());
  std::unique_ptr<StoreServer> server;
  Status st = serveOnFirstFreePort("127.0.0.1", taken.port(), 1, generateSecret(), &server);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("cannot listen on 127.0.0.1:" + std::to_string(taken.port())), std::string::npos)
      << st.message();
}

TEST(StorePortRange, EveryPortTakenNamesTheFirstAndHowManyMore) {
  // Two neighbouring ports held here (a port's neighbour may be some other socket's: try again).
  std::unique_ptr<SilentListener> first, second;
  for (int attempt = 0; attempt < 50 && !(second && second->ok()); ++attempt) {
    first = std::make_unique<SilentListener>();
    ASSERT_TRUE(first->ok());
    second = std::make_unique<SilentListener>(first->port() + 1);
  }
  ASSERT_TRUE(second->ok()) << "no two neighbouring free ports in 50 tries";
  std::unique_ptr<StoreServer> server;
  Status st = serveOnFirstFreePort("127.0.0.1", first->port(), 2, generateSecret(), &server);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find(std::to_string(first->port())), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("none of the next 1 ports"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace coll::bootstrap
