// One suite for every StoreClient (src/bootstrap/store.h), instantiated for each
// implementation: the TCP client of coll's own store server, and the wrapper over a caller's
// KeyValueStore (src/bootstrap/external_store.h; torch.distributed hands its store over this
// way), here over an in-memory store of the test's. What init relies on must hold for both:
// values round-trip, get waits for a later set and no longer than its deadline, counters are
// atomic across clients, check never waits, barriers release everyone, cancel() unblocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/external_store.h"
#include "bootstrap/store.h"

namespace coll::bootstrap {
namespace {

using namespace std::chrono_literals;

Deadline in(std::chrono::milliseconds d) { return Clock::now() + d; }

// A thread-safe KeyValueStore, as a framework's would be.
class MemoryStore final : public KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      values_[key] = value;
    }
    cv_.notify_all();
  }
  bool get(const std::string& key, std::string* value, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; })) return false;
    *value = values_[key];
    return true;
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t now = (values_.count(key) ? std::stoll(values_[key]) : 0) + delta;
    values_[key] = std::to_string(now);
    cv_.notify_all();
    return now;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

// Makes clients of one store: every client of a factory sees the same keys.
class StoreFactory {
 public:
  virtual ~StoreFactory() = default;
  virtual std::unique_ptr<StoreClient> client() = 0;
};

class TcpFactory final : public StoreFactory {
 public:
  TcpFactory() : secret_(generateSecret()) {
    Status st = StoreServer::start("127.0.0.1", 0, secret_, &server_);
    EXPECT_TRUE(st) << st.message();
  }
  std::unique_ptr<StoreClient> client() override {
    std::unique_ptr<StoreClient> c;
    Status st = StoreClient::connect("127.0.0.1:" + std::to_string(server_->port()), secret_, in(5s), &c);
    EXPECT_TRUE(st) << st.message();
    return c;
  }

 private:
  std::string secret_;
  std::unique_ptr<StoreServer> server_;
};

class ExternalFactory final : public StoreFactory {
 public:
  std::unique_ptr<StoreClient> client() override { return wrapExternalStore(store_); }

 private:
  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>();
};

class StoreClientConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") factory_ = std::make_unique<TcpFactory>();
    else factory_ = std::make_unique<ExternalFactory>();
  }
  std::unique_ptr<StoreClient> client() { return factory_->client(); }

  std::unique_ptr<StoreFactory> factory_;
};

TEST_P(StoreClientConformance, SetThenGetFromAnotherClient) {
  auto a = client(), b = client();
  ASSERT_TRUE(a->set("k", "value", in(5s)));
  ASSERT_TRUE(a->set("empty", "", in(5s)));
  std::string v = "stale";
  ASSERT_TRUE(b->get("k", &v, in(5s)));
  EXPECT_EQ(v, "value");
  ASSERT_TRUE(b->get("empty", &v, in(5s)));
  EXPECT_EQ(v, "");
  ASSERT_TRUE(b->set("k", "second", in(5s)));
  ASSERT_TRUE(a->get("k", &v, in(5s)));
  EXPECT_EQ(v, "second") << "a set replaces the value";
}

TEST_P(StoreClientConformance, BinaryValueRoundTrips) {
  auto a = client();
  std::string bytes(70000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + 7);
  ASSERT_TRUE(a->set("bin", bytes, in(5s)));
  std::string v;
  ASSERT_TRUE(a->get("bin", &v, in(5s)));
  EXPECT_EQ(v, bytes);
}

TEST_P(StoreClientConformance, GetWaitsForALaterSet) {
  auto a = client(), b = client();
  std::string v;
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(b->set("late", "here", in(5s)));
  });
  Status st = a->get("late", &v, in(10s));
  setter.join();
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(v, "here");
}

TEST_P(StoreClientConformance, GetTimesOutAtItsDeadlineNamingTheKey) {
  auto a = client();
  std::string v;
  auto t0 = Clock::now();
  Status st = a->get("never/set", &v, in(300ms));
  auto waited = Clock::now() - t0;
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::Timeout) << st.message();
  EXPECT_NE(st.message().find("never/set"), std::string::npos) << st.message();
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 5s) << "bounded by the deadline, not by some longer wait";
}

TEST_P(StoreClientConformance, CheckNeverWaits) {
  auto a = client();
  bool exists = true;
  auto t0 = Clock::now();
  ASSERT_TRUE(a->check("absent", &exists, in(5s)));
  EXPECT_FALSE(exists);
  EXPECT_LT(Clock::now() - t0, 2s);
  ASSERT_TRUE(a->set("present", "1", in(5s)));
  ASSERT_TRUE(a->check("present", &exists, in(5s)));
  EXPECT_TRUE(exists);
}

TEST_P(StoreClientConformance, AddIsAtomicAcrossClients) {
  constexpr int kThreads = 4, kAdds = 50;
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> seen(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t, c = client()] {
      for (int i = 0; i < kAdds; ++i) {
        int64_t value = 0;
        EXPECT_TRUE(c->add("counter", 1, &value, in(5s)));
        seen[t].push_back(value);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int64_t> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i + 1)) << "each add saw its own value";
  int64_t value = 0;
  ASSERT_TRUE(client()->add("counter", -5, &value, in(5s)));
  EXPECT_EQ(value, kThreads * kAdds - 5) << "negative deltas too";
}

// What the survivors of a failure agree through (comm/agreement.h).
TEST_P(StoreClientConformance, AppendedItemsComeBackInOrderFromEveryClient) {
  constexpr int kThreads = 4, kItems = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t, c = client()] {
      for (int i = 0; i < kItems; ++i) EXPECT_TRUE(c->append("list", std::to_string(t) + std::string(1, '\0') + std::to_string(i), in(5s)));
    });
  for (auto& t : threads) t.join();
  std::vector<std::string> items;
  ASSERT_TRUE(client()->readList("list", &items, in(5s)));
  ASSERT_EQ(items.size(), static_cast<size_t>(kThreads * kItems));
  std::vector<int> next(kThreads, 0);
  for (const std::string& item : items) {
    size_t zero = item.find('\0');
    ASSERT_NE(zero, std::string::npos) << "a NUL byte survives";
    int t = std::stoi(item.substr(0, zero)), i = std::stoi(item.substr(zero + 1));
    EXPECT_EQ(i, next[t]++) << "one client's items keep their order";
  }
  std::vector<std::string> none{"stale"};
  auto start = Clock::now();
  ASSERT_TRUE(client()->readList("no such list", &none, in(5s)));
  EXPECT_TRUE(none.empty());
  EXPECT_LT(Clock::now() - start, 1s) << "readList never waits for the key";
}

TEST_P(StoreClientConformance, SetIfAbsentKeepsTheFirstValueForEveryone) {
  constexpr int kThreads = 4;
  std::vector<std::string> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t, c = client()] { EXPECT_TRUE(c->setIfAbsent("decision", "from " + std::to_string(t), &held[t], in(5s))); });
  for (auto& t : threads) t.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(held[t], held[0]) << "one winner";
  std::string value;
  ASSERT_TRUE(client()->get("decision", &value, in(5s)));
  EXPECT_EQ(value, held[0]);
}

TEST_P(StoreClientConformance, AClosedConnectionAppendsItsItemOnlyOnCollsOwnStore) {
  auto watcher = client();
  {
    auto dying = client();
    Status st = dying->appendWhenClosed("gone", "7", in(5s));
    if (GetParam() == "external") {
      EXPECT_EQ(st.code(), ErrorCode::Unsupported);
      return;
    }
    ASSERT_TRUE(st) << st.message();
    std::vector<std::string> items;
    ASSERT_TRUE(watcher->readList("gone", &items, in(5s)));
    EXPECT_TRUE(items.empty()) << "nothing while it is open";
  }
  std::vector<std::string> items;
  auto end = Clock::now() + 5s;
  while (items.empty() && Clock::now() < end) {
    ASSERT_TRUE(watcher->readList("gone", &items, in(5s)));
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(items, std::vector<std::string>{"7"});
}

TEST_P(StoreClientConformance, BarrierReleasesEveryCallerTogether) {
  constexpr int kCallers = 3;
  std::atomic<int> arrived{0}, left{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t) {
    threads.emplace_back([&, t, c = client()] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * t));
      arrived.fetch_add(1);
      Status st = c->barrier("b", kCallers, in(10s));
      EXPECT_TRUE(st) << st.message();
      EXPECT_EQ(arrived.load(), kCallers) << "nobody leaves before everyone arrived";
      left.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(left.load(), kCallers);
}

TEST_P(StoreClientConformance, CancelUnblocksAParkedGetAndFailsLaterCalls) {
  auto a = client();
  Status st;
  auto t0 = Clock::now();
  std::thread waiter([&] {
    std::string v;
    st = a->get("parked", &v, in(30s));
  });
  std::this_thread::sleep_for(100ms);
  a->cancel();
  waiter.join();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), ErrorCode::PeerLost) << st.message();
  EXPECT_LT(Clock::now() - t0, 10s) << "cancel() must not wait for the get's deadline";
  std::string v;
  EXPECT_FALSE(a->get("parked", &v, in(1s))) << "a cancelled client stays cancelled";
}

INSTANTIATE_TEST_SUITE_P(Implementations, StoreClientConformance, ::testing::Values("tcp", "external"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace coll::bootstrap
