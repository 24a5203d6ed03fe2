#include "store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace coll::torch_backend {
namespace {

class TorchStore final : public KeyValueStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)), host_(storeHost(store_)) {}

  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }

  // Polls check() rather than calling c10d's wait(): a TCPStore wait that times out leaves its
  // connection expecting a late reply, which then answers the next request.
  bool get(const std::string& key, std::string* value, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(200);
    while (!store_->check({key})) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20'000));
    }
    auto bytes = store_->get(key);
    value->assign(bytes.begin(), bytes.end());
    return true;
  }

  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }

  bool check(const std::string& key) override { return store_->check({key}); }

  std::string host() const override { return host_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string host_;
};

}  // namespace

std::string storeHost(const c10::intrusive_ptr<c10d::Store>& store) {
  c10::intrusive_ptr<c10d::Store> s = store;
  while (s) {
    if (auto* tcp = dynamic_cast<c10d::TCPStore*>(s.get())) return tcp->getHost();
    auto* prefix = dynamic_cast<c10d::PrefixStore*>(s.get());
    if (!prefix) break;
    s = prefix->getUnderlyingStore();
  }
  // A FileStore or HashStore: the job is on one host, or MASTER_ADDR names the right network.
  const char* master = std::getenv("MASTER_ADDR");
  return master ? master : "127.0.0.1";
}

std::shared_ptr<KeyValueStore> wrapTorchStore(c10::intrusive_ptr<c10d::Store> store) {
  return std::make_shared<TorchStore>(std::move(store));
}

}  // namespace coll::torch_backend
