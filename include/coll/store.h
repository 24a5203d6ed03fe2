// coll::KeyValueStore: a rendezvous store the caller already has.
//
// A communicator exchanges its peers' addresses through a key-value store at start-up (data
// never flows through it). By default it uses its own authenticated store; a framework that
// already runs one (torch.distributed's c10d::Store, a job service) hands it over through
// CommOptions::store instead, so the job needs a single rendezvous point.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "coll/export.h"

namespace coll {

// Implementations must allow calls from two threads at once (a communicator's progress thread
// and the thread that answers its peers' questions after a failure).
class COLL_API KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits at most `timeout` for the key to exist. Returns false on timeout.
  virtual bool get(const std::string& key, std::string* value, std::chrono::milliseconds timeout) = 0;
  // Atomically adds delta to a counter (missing = 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Whether the key exists now, without waiting.
  virtual bool check(const std::string& key) {
    std::string ignored;
    return get(key, &ignored, std::chrono::milliseconds(0));
  }
  // The host the store runs on, if known: the socket transport uses the interface that routes
  // there when COLL_SOCKET_IFNAME is unset. Empty: the interface of the default route.
  virtual std::string host() const { return {}; }
};

}  // namespace coll
