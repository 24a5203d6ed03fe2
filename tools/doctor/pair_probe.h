// coll-doctor's connection test between two ranks on different hosts: rank a dials the
// listener rank b opened on the interface coll would use, within a deadline, then sends a few
// MiB and waits for b to confirm it received them all. A failure is named by what the kernel
// said: refused, unreachable, timed out (a firewall that drops, a host that is gone), or a
// transfer that stalls after the connection was made (full-size packets lost on the way: an
// MTU larger than the path carries).
#pragma once

#include <atomic>
#include <mutex>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/fd_io.h"
#include "base/status.h"

namespace coll::doctor {

struct ProbeResult {
  int peer = -1;
  bool ok = false;
  std::string stage;  // "connect" or "transfer"
  std::string why;    // empty when ok
  double ms = 0;      // how long the probe took
};

// Accepts probes until destroyed; every connection is served on a thread of its own.
class ProbeListener {
 public:
  // Binds `address` (IPv4; "" binds every interface) on an ephemeral port.
  static Status open(const std::string& address, std::unique_ptr<ProbeListener>* out);
  ~ProbeListener();
  std::string address() const { return address_; }  // "a.b.c.d:port"

 private:
  ProbeListener() = default;
  void acceptLoop();
  UniqueFd fd_;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::vector<std::thread> servers_;
  std::mutex mu_;
  std::vector<int> serving_;  // connections being served, shut down when the listener goes
};

struct ProbeLimits {
  std::chrono::milliseconds connect{3000};
  std::chrono::milliseconds transfer{5000};
  size_t bytes = 4 << 20;
};

// Dials `address` ("host:port") and runs the transfer; never throws, never waits past the limits.
ProbeResult probe(int peer, const std::string& address, const ProbeLimits& limits);

}  // namespace coll::doctor
