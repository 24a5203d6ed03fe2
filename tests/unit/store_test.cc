// The rendezvous store (src/bootstrap/store.h) on 127.0.0.1:0, in one process: clients on
// threads, plus raw sockets that speak the wire format badly on purpose.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "base/fd_io.h"

namespace coll::bootstrap {
namespace {

using namespace std::chrono_literals;

Deadline in(std::chrono::milliseconds d) { return Clock::now() + d; }

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    secret_ = generateSecret();
    Status st = StoreServer::start("127.0.0.1", 0, secret_, &server_);
    ASSERT_TRUE(st) << st.message();
    ASSERT_GT(server_->port(), 0);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  std::unique_ptr<StoreClient> client(const std::string& secret = "") {
    std::unique_ptr<StoreClient> c;
    Status st = StoreClient::connect(address_, secret.empty() ? secret_ : secret, in(5s), &c);
    EXPECT_TRUE(st) << st.message();
    return c;
  }

  // A raw TCP connection that has read the server's greeting (magic + nonce).
  UniqueFd rawConnection(Nonce* nonce) {
    UniqueFd fd;
    Status st = connectTcp("127.0.0.1", server_->port(), in(5s), &fd);
    EXPECT_TRUE(st) << st.message();
    char hello[4 + sizeof(Nonce)];
    st = readAll(fd.get(), hello, sizeof hello, in(5s), "test greeting");
    EXPECT_TRUE(st) << st.message();
    uint32_t magic;
    std::memcpy(&magic, hello, 4);
    EXPECT_EQ(magic, store_wire::kHelloMagic);
    std::memcpy(nonce->data(), hello + 4, nonce->size());
    return fd;
  }

  // A raw connection that authenticated properly, ready for requests.
  UniqueFd authenticatedRaw() {
    Nonce nonce;
    UniqueFd fd = rawConnection(&nonce);
    std::string msg = std::string(store_wire::kMacContext) + std::string(nonce.begin(), nonce.end());
    uint64_t mac = computeMac(secret_, msg);
    EXPECT_TRUE(writeAll(fd.get(), &mac, sizeof mac, in(5s), "test mac"));
    uint32_t ack = 0;
    EXPECT_TRUE(readAll(fd.get(), &ack, sizeof ack, in(5s), "test ack"));
    EXPECT_EQ(ack, store_wire::kHelloMagic);
    return fd;
  }

  // The server closed the connection (EOF or reset), rather than answering or hanging.
  static void expectClosedByServer(int fd) {
    char byte;
    Status st = readAll(fd, &byte, 1, in(5s), "waiting for close");
    EXPECT_FALSE(st) << "the server answered a request it should have refused";
    EXPECT_EQ(st.code(), ErrorCode::PeerLost) << st.message();
  }

  // The server still serves a fresh, well-behaved client.
  void expectStillServing() {
    auto c = client();
    ASSERT_TRUE(c);
    std::string key = "alive/" + std::to_string(counter_++), value;
    ASSERT_TRUE(c->set(key, "yes", in(5s)));
    Status st = c->get(key, &value, in(5s));
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(value, "yes");
  }

  std::string secret_, address_;
  std::unique_ptr<StoreServer> server_;
  int counter_ = 0;
};

TEST_F(StoreTest, SetThenGet) {
  auto a = client(), b = client();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->set("k1", "v1", in(5s)));
  std::string value;
  ASSERT_TRUE(b->get("k1", &value, in(5s)));
  EXPECT_EQ(value, "v1");
  ASSERT_TRUE(a->set("k1", "v2", in(5s)));  // overwrite
  ASSERT_TRUE(b->get("k1", &value, in(5s)));
  EXPECT_EQ(value, "v2");
  // Empty and binary values survive.
  std::string binary("\0\x01\xff\n", 4);
  ASSERT_TRUE(a->set("bin", binary, in(5s)));
  ASSERT_TRUE(a->get("bin", &value, in(5s)));
  EXPECT_EQ(value, binary);
  ASSERT_TRUE(a->set("empty", "", in(5s)));
  ASSERT_TRUE(b->get("empty", &value, in(5s)));
  EXPECT_EQ(value, "");
}

TEST_F(StoreTest, LargestValueRoundTrips) {
  auto c = client();
  ASSERT_TRUE(c);
  std::string big(store_wire::kMaxValue, 'x');
  big[12345] = 'y';
  ASSERT_TRUE(c->set("big", big, in(10s)));
  std::string value;
  ASSERT_TRUE(c->get("big", &value, in(10s)));
  EXPECT_EQ(value, big);
}

TEST_F(StoreTest, BlockingGetIsReleasedByALaterSetFromAnotherClient) {
  auto waiter = client(), setter = client();
  ASSERT_TRUE(waiter && setter);
  std::atomic<bool> returned{false};
  Status st;
  std::string value;
  std::thread t([&] {
    st = waiter->get("later", &value, in(10s));
    returned = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(returned.load()) << "get returned before the key existed";
  auto t0 = Clock::now();
  ASSERT_TRUE(setter->set("later", "here", in(5s)));
  t.join();
  EXPECT_TRUE(st) << st.message();
  EXPECT_EQ(value, "here");
  EXPECT_LT(Clock::now() - t0, 2s);
}

TEST_F(StoreTest, SeveralWaitersOnOneKeyAreAllReleased) {
  const int kWaiters = 4;
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int i = 0; i < kWaiters; ++i) clients.push_back(client());
  std::vector<std::string> values(kWaiters);
  std::vector<Status> statuses(kWaiters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i)
    threads.emplace_back([&, i] { statuses[i] = clients[i]->get("shared", &values[i], in(10s)); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(client()->set("shared", "go", in(5s)));
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_TRUE(statuses[i]) << statuses[i].message();
    EXPECT_EQ(values[i], "go");
  }
}

TEST_F(StoreTest, GetTimeoutNamesTheKey) {
  auto c = client();
  ASSERT_TRUE(c);
  std::string value;
  auto t0 = Clock::now();
  Status st = c->get("never/set/key", &value, in(300ms));
  auto took = Clock::now() - t0;
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::Timeout);
  EXPECT_NE(st.message().find("never/set/key"), std::string::npos) << st.message();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  expectStillServing();
}

TEST_F(StoreTest, AddCounters) {
  auto c = client();
  ASSERT_TRUE(c);
  int64_t v = 0;
  ASSERT_TRUE(c->add("ctr", 5, &v, in(5s)));
  EXPECT_EQ(v, 5);
  ASSERT_TRUE(c->add("ctr", -7, &v, in(5s)));
  EXPECT_EQ(v, -2);
  ASSERT_TRUE(c->add("other", 0, &v, in(5s)));
  EXPECT_EQ(v, 0);  // missing counts as 0
  ASSERT_TRUE(c->add("big", int64_t{1} << 40, &v, in(5s)));
  EXPECT_EQ(v, int64_t{1} << 40);

  // Concurrent adds from several clients are atomic.
  const int kThreads = 6, kAdds = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      auto mine = client();
      int64_t x;
      for (int k = 0; k < kAdds; ++k)
        if (!mine || !mine->add("shared-ctr", 1, &x, in(5s))) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(c->add("shared-ctr", 0, &v, in(5s)));
  EXPECT_EQ(v, kThreads * kAdds);
}

TEST_F(StoreTest, BarrierReleasesAllThreadsTogether) {
  const int kThreads = 5;
  std::atomic<int> arrived{0}, left_early{0};
  std::vector<Status> statuses(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      auto c = client();
      if (!c) return;
      if (i == kThreads - 1) std::this_thread::sleep_for(200ms);  // the last one is late
      ++arrived;
      statuses[i] = c->barrier("b1", kThreads, in(10s));
      if (arrived.load() < kThreads) ++left_early;
    });
  for (auto& t : threads) t.join();
  for (const Status& st : statuses) EXPECT_TRUE(st) << st.message();
  EXPECT_EQ(left_early.load(), 0) << "a thread left the barrier before everyone arrived";
}

TEST_F(StoreTest, BarrierTimesOutNamingItself) {
  auto c = client();
  ASSERT_TRUE(c);
  Status st = c->barrier("lonely", 2, in(300ms));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::Timeout);
  EXPECT_NE(st.message().find("lonely"), std::string::npos) << st.message();
}

TEST_F(StoreTest, WrongSecretIsRefusedWithAClearError) {
  std::unique_ptr<StoreClient> c;
  auto t0 = Clock::now();
  Status st = StoreClient::connect(address_, "not-the-secret", in(5s), &c);
  ASSERT_FALSE(st);
  EXPECT_FALSE(c);
  EXPECT_LT(Clock::now() - t0, 3s) << "refusal should be immediate, not a timeout";
  EXPECT_NE(st.message().find("secret"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(address_), std::string::npos) << "should name the store: " << st.message();
  expectStillServing();
}

TEST_F(StoreTest, OversizedKeyAndValueAreRefusedClientSide) {
  auto c = client();
  ASSERT_TRUE(c);
  Status st = c->set(std::string(store_wire::kMaxKey + 1, 'k'), "v", in(5s));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
  std::string value;
  st = c->get(std::string(store_wire::kMaxKey + 1, 'k'), &value, in(5s));
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
  st = c->set("k", std::string(store_wire::kMaxValue + 1, 'v'), in(5s));
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
  // Refused before anything was sent: the connection is still usable.
  ASSERT_TRUE(c->set("after", "ok", in(5s)));
  ASSERT_TRUE(c->get("after", &value, in(5s)));
  EXPECT_EQ(value, "ok");
  // The largest key is fine.
  ASSERT_TRUE(c->set(std::string(store_wire::kMaxKey, 'k'), "max", in(5s)));
}

TEST_F(StoreTest, GarbageInsteadOfAHandshakeIsRefused) {
  Nonce nonce;
  UniqueFd fd = rawConnection(&nonce);
  const char garbage[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_TRUE(writeAll(fd.get(), garbage, sizeof garbage, in(5s), "garbage"));
  expectClosedByServer(fd.get());
  expectStillServing();
}

TEST_F(StoreTest, MalformedHeaderAfterHandshakeIsRefused) {
  UniqueFd fd = authenticatedRaw();
  unsigned char junk[64];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(i * 37 + 11);
  ASSERT_TRUE(writeAll(fd.get(), junk, sizeof junk, in(5s), "junk header"));
  expectClosedByServer(fd.get());
  expectStillServing();
}

TEST_F(StoreTest, HugeLengthsInAValidHeaderAreRefusedBeforeAllocating) {
  for (auto [key_len, value_len] : {std::pair<uint32_t, uint32_t>{store_wire::kMaxKey + 1, 0},
                                    {1, store_wire::kMaxValue + 1}, {0xffffffffu, 0xffffffffu}}) {
    UniqueFd fd = authenticatedRaw();
    store_wire::RequestHeader h{store_wire::kRequestMagic, store_wire::kSet, key_len, value_len};
    ASSERT_TRUE(writeAll(fd.get(), &h, sizeof h, in(5s), "huge header"));
    expectClosedByServer(fd.get());
  }
  expectStillServing();
}

TEST_F(StoreTest, UnknownRequestTypeIsRefused) {
  UniqueFd fd = authenticatedRaw();
  store_wire::RequestHeader h{store_wire::kRequestMagic, 77, 1, 0};
  ASSERT_TRUE(writeAll(fd.get(), &h, sizeof h, in(5s), "bad type"));
  ASSERT_TRUE(writeAll(fd.get(), "k", 1, in(5s), "bad type key"));
  expectClosedByServer(fd.get());
  expectStillServing();
}

TEST_F(StoreTest, SilentConnectionDoesNotBlockOthers) {
  Nonce nonce;
  UniqueFd silent = rawConnection(&nonce);  // greeted, never answers
  UniqueFd half = authenticatedRaw();
  store_wire::RequestHeader h{store_wire::kRequestMagic, store_wire::kSet, 100, 0};
  ASSERT_TRUE(writeAll(half.get(), &h, 8, in(5s), "half a header"));  // and stops mid-header
  auto t0 = Clock::now();
  expectStillServing();
  EXPECT_LT(Clock::now() - t0, 2s);
}

}  // namespace
}  // namespace coll::bootstrap
