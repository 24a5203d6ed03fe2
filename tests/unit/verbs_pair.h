// Two verbs transports (ranks 0 and 1) over fake NICs and an in-memory store, connected, for
// the data-path tests. drive() runs both transports' progress from the calling thread until
// the expected completions came or a deadline passed; each test bounds its own waits.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "bootstrap/store.h"
#include "transport/verbs/transport.h"
#include "unit/fake_verbs_device.h"

namespace coll::transport::verbs::testing {

using namespace std::chrono_literals;

// The store's contract, in memory: blocking get with a deadline, nothing else needed here.
class MemoryStore {
 public:
  class Client : public bootstrap::StoreClient {
   public:
    explicit Client(MemoryStore* s) : s_(s) {}
    Status set(const std::string& key, const std::string& value, Deadline) override {
      std::lock_guard<std::mutex> lock(s_->mu_);
      s_->kv_[key] = value;
      s_->cv_.notify_all();
      return Status::ok();
    }
    Status get(const std::string& key, std::string* value, Deadline deadline) override {
      std::unique_lock<std::mutex> lock(s_->mu_);
      if (!s_->cv_.wait_until(lock, deadline, [&] { return s_->kv_.count(key) > 0; }))
        return timeoutError("store: key " + key + " did not appear before the deadline");
      *value = s_->kv_[key];
      return Status::ok();
    }
    Status add(const std::string&, int64_t, int64_t*, Deadline) override { return internalError("unused"); }
    Status check(const std::string& key, bool* exists, Deadline) override {
      std::lock_guard<std::mutex> lock(s_->mu_);
      *exists = s_->kv_.count(key) > 0;
      return Status::ok();
    }
    void cancel() override {}

   private:
    MemoryStore* s_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
};

inline VerbsOptions smallWindow() {
  VerbsOptions o;
  o.credits = 4;
  o.chunk_bytes = 64;  // messages of a few hundred bytes already take several chunks
  o.registration_cache_bytes = 1 << 20;
  return o;
}

struct VerbsPair {
  fake::FakeFabric fabric;
  MemoryStore store;
  std::unique_ptr<MemoryStore::Client> clients[2];
  fake::FakeNic* nic[2] = {};
  std::unique_ptr<Transport> t[2];
  Connection* c[2] = {};
  std::map<uint64_t, Status> done[2];  // cookie -> status, per rank

  // Creates both transports and connects them (the connects wait for each other: two threads).
  void start(VerbsOptions options = smallWindow(), bool real = false) {
    real_device = real;
    for (int r = 0; r < 2; ++r) ASSERT_TRUE(create(r, options).isOk());
    Status st[2];
    std::thread other([&] { st[1] = t[1]->connect(0, Clock::now() + 5s, &c[1]); });
    st[0] = t[0]->connect(1, Clock::now() + 5s, &c[0]);
    other.join();
    ASSERT_TRUE(st[0].isOk()) << st[0].message();
    ASSERT_TRUE(st[1].isOk()) << st[1].message();
  }

  bool real_device = false;  // both ranks on this machine's RDMA device (loopback)

  Status create(int rank, const VerbsOptions& options) {
    clients[rank] = std::make_unique<MemoryStore::Client>(&store);
    PeerDirectory dir{rank, 2, "secret", "test/", clients[rank].get(), "localhost"};
    Config config;
    config.timeout = 5s;
    if (real_device) return createTransport(config, dir, &t[rank]);
    return createTransportOver(config, dir, fabric.addNic("nic" + std::to_string(rank), &nic[rank]), options, &t[rank]);
  }

  void collect(int rank, Deadline until) {
    if (!t[rank]) return;  // closed by the test
    std::vector<Completion> out;
    Status st = t[rank]->progress(&out, until);
    for (Completion& comp : out) done[rank][comp.cookie] = comp.status;
  }

  // Until every cookie in want[r] completed on rank r, or 5 s passed. False on timeout.
  bool drive(const std::set<uint64_t>& want0, const std::set<uint64_t>& want1) {
    Deadline end = Clock::now() + 5s;
    auto all = [&](int r, const std::set<uint64_t>& w) {
      for (uint64_t k : w)
        if (!done[r].count(k)) return false;
      return true;
    };
    while (!(all(0, want0) && all(1, want1))) {
      if (Clock::now() > end) return false;
      collect(0, Clock::now());
      collect(1, Clock::now());
    }
    return true;
  }
};

// Bytes that depend on the message and the position, so a misplaced chunk shows.
inline std::vector<uint8_t> pattern(size_t bytes, int seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

}  // namespace coll::transport::verbs::testing
