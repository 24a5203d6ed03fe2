#include "store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace coll::torch_backend {
namespace {

// c10d's stores throw c10::Error, whose what() carries a C++ backtrace of a dozen frames; coll
// puts the message of a store failure into its own error, which wants the sentence alone.
template <class F>
auto withoutBacktrace(F&& call) {
  try {
    return call();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

class TorchStore final : public KeyValueStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)), host_(storeHost(store_)) {}

  void set(const std::string& key, const std::string& value) override {
    withoutBacktrace([&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
  }

  bool get(const std::string& key, std::string* value, std::chrono::milliseconds timeout) override {
    return withoutBacktrace([&] { return poll(key, value, timeout); });
  }

  int64_t add(const std::string& key, int64_t delta) override {
    return withoutBacktrace([&] { return store_->add(key, delta); });
  }

  bool check(const std::string& key) override {
    return withoutBacktrace([&] { return store_->check({key}); });
  }

  std::string host() const override { return host_; }

 private:
  // Polls check() rather than calling c10d's wait(): a TCPStore wait that times out leaves its
  // connection expecting a late reply, which then answers the next request.
  bool poll(const std::string& key, std::string* value, std::chrono::milliseconds timeout) {
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
