// The rendezvous store: a small key-value service used only to exchange addresses at start-up.
// Data never flows through it. Every connection proves knowledge of the job secret with a
// challenge-response (see auth.h) before any request is served; others are refused and logged.
//
// Wire format (all integers little-endian): request = u32 magic 'CST1', u32 type, u32 key
// length, u32 value length, key, value. Reply = u32 status, u32 value length, value. Keys are
// at most 4 KiB and values 1 MiB; larger lengths are refused before anything is allocated.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/fd_io.h"
#include "base/status.h"

namespace coll::bootstrap {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Serves the store from a background thread until destroyed.
class StoreServer {
 public:
  // bind_host "0.0.0.0" or an address; port 0 picks a free port. Fails with Transport when
  // the port is taken.
  static Status start(const std::string& bind_host, int port, const std::string& secret,
                      std::unique_ptr<StoreServer>* out);
  virtual ~StoreServer() = default;
  virtual int port() const = 0;
};

// What one client asked of its store: requests (a get parked on a missing key is one) and
// their bytes each way. Start-up reports it; coll-sim's start-up model is checked against it.
struct StoreTraffic {
  int64_t requests = 0;
  int64_t bytes_out = 0;
  int64_t bytes_in = 0;
};

// One client connection. Not thread-safe: one thread uses it at a time.
class StoreClient {
 public:
  // Retries connecting until the deadline (the server may start later than its clients).
  static Status connect(const std::string& address, const std::string& secret, Deadline deadline,
                        std::unique_ptr<StoreClient>* out);
  // The handshake over a connection already open to `address` (store_port_range.h).
  static Status open(UniqueFd fd, const std::string& address, const std::string& secret, Deadline deadline,
                     std::unique_ptr<StoreClient>* out);
  virtual ~StoreClient() = default;

  virtual Status set(const std::string& key, const std::string& value, Deadline deadline) = 0;
  // Blocks until the key exists or the deadline passes (Timeout naming the key).
  virtual Status get(const std::string& key, std::string* value, Deadline deadline) = 0;
  // Atomically adds delta to a counter (missing = 0) and returns the new value.
  virtual Status add(const std::string& key, int64_t delta, int64_t* value, Deadline deadline) = 0;
  // Whether the key exists now; never waits for it (unlike get).
  virtual Status check(const std::string& key, bool* exists, Deadline deadline) = 0;
  // Returns once `count` callers have reached the barrier named `name`.
  Status barrier(const std::string& name, int count, Deadline deadline);

  // Lists, for what survivors of a failure must agree on (store_lists.cc). Items are appended
  // atomically and read back in append order; an item is any bytes. coll's own store does each
  // in one call; over a caller's store they are built from add/set/get (an appender that dies
  // between its add and its set leaves a hole that readers skip after a second).
  virtual Status append(const std::string& key, const std::string& item, Deadline deadline);
  // Every item of the list now; empty when there is none. Never waits for the key.
  virtual Status readList(const std::string& key, std::vector<std::string>* items, Deadline deadline);
  // Sets the key unless it exists; *held: the value it holds afterwards (`value`, or the one
  // set first). Over a caller's store the first claimant must live to set it.
  virtual Status setIfAbsent(const std::string& key, const std::string& value, std::string* held,
                             Deadline deadline);
  // When this connection ends (the process died, or closed it) the store appends `item` to the
  // list `key`: how the survivors learn that a rank is gone. Unsupported over a caller's store.
  virtual Status appendWhenClosed(const std::string& key, const std::string& item, Deadline deadline);
  // The one call allowed from another thread: makes a call blocked in this client (a get
  // parked on a missing key) fail at once with PeerLost, and every later call too. Used to
  // stop a thread that waits on the store for as long as a communicator lives.
  virtual void cancel() = 0;

  const StoreTraffic& traffic() const { return traffic_; }

 protected:
  void countRequest(size_t out, size_t in) {
    ++traffic_.requests;
    traffic_.bytes_out += static_cast<int64_t>(out);
    traffic_.bytes_in += static_cast<int64_t>(in);
  }

 private:
  StoreTraffic traffic_;
};

// Opens a fresh connection to the same store (a client whose wait timed out is closed).
using StoreConnect = std::function<Status(Deadline, std::unique_ptr<StoreClient>*)>;

// "host:port" -> (host, port); IPv6 as "[::1]:port".
Status splitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace coll::bootstrap
