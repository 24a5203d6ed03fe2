#include "store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>

namespace coll::torch_backend {
namespace {

class TorchStore final : public KeyValueStore {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)), host_(storeHost(store_)) {}

  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }

  bool get(const std::string& key, std::string* value, std::chrono::milliseconds timeout) override {
    try {
      store_->wait({key}, timeout);
    } catch (const c10::Error&) {
      if (!store_->check({key})) return false;  // c10d reports a wait timeout by throwing
    }
    auto bytes = store_->get(key);
    value->assign(bytes.begin(), bytes.end());
    return true;
  }

  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }

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
