#include "bootstrap/external_store.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "base/log.h"

namespace coll::bootstrap {
namespace {

// The caller's store reports failures by throwing; inside the library they become a Status
// that names the key, so an init failure says which exchange broke.
template <class F>
Status guarded(const char* what, const std::string& key, F&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    return transportError(format("external store %s '%s' failed: %s", what, key.c_str(), e.what()));
  } catch (...) {
    return transportError(format("external store %s '%s' failed (unknown exception)", what, key.c_str()));
  }
}

class ExternalStoreClient final : public StoreClient {
 public:
  explicit ExternalStoreClient(std::shared_ptr<KeyValueStore> store) : store_(std::move(store)) {}

  Status set(const std::string& key, const std::string& value, Deadline) override {
    return guarded("set", key, [&] {
      store_->set(key, value);
      countRequest(key.size() + value.size(), 0);
      return Status::ok();
    });
  }

  // Waits in short slices so that cancel() (from another thread) takes effect promptly: the
  // caller's store has no way to interrupt a blocked get.
  Status get(const std::string& key, std::string* value, Deadline deadline) override {
    return guarded("get", key, [&] {
      for (;;) {
        if (cancelled_) return peerLostError(format("external store get '%s' cancelled", key.c_str()));
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        auto slice = std::clamp(left, std::chrono::milliseconds(1), kGetSlice);
        const bool found = store_->get(key, value, slice);
        countRequest(key.size(), found ? value->size() : 0);
        if (found) return Status::ok();
        if (Clock::now() >= deadline)
          return timeoutError(format("key '%s' did not appear in the external store before the deadline", key.c_str()));
      }
    });
  }

  Status add(const std::string& key, int64_t delta, int64_t* value, Deadline) override {
    return guarded("add", key, [&] {
      *value = store_->add(key, delta);
      countRequest(key.size() + 8, 8);
      return Status::ok();
    });
  }

  Status check(const std::string& key, bool* exists, Deadline) override {
    return guarded("check", key, [&] {
      *exists = store_->check(key);
      countRequest(key.size(), 1);
      return Status::ok();
    });
  }

  void cancel() override { cancelled_ = true; }

 private:
  static constexpr std::chrono::milliseconds kGetSlice{100};
  std::shared_ptr<KeyValueStore> store_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

std::unique_ptr<StoreClient> wrapExternalStore(std::shared_ptr<KeyValueStore> store) {
  return std::make_unique<ExternalStoreClient>(std::move(store));
}

}  // namespace coll::bootstrap
