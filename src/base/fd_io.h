// Blocking socket I/O on raw file descriptors where every call has a deadline. Used for
// handshakes and the store client, where a simple blocking style reads best; bulk data goes
// through the asynchronous transports instead.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"

namespace coll {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Connects to host:port (numeric or resolvable), retrying refused connections until the
// deadline, since the listener may not be up yet. TCP_NODELAY is set.
Status connectTcp(const std::string& host, int port, Deadline deadline, UniqueFd* out);
// Keepalive probes every second on a connection that stays silent (on), or none (off). A
// probe reaching a host that no longer has the connection is answered with a reset, so a peer
// that vanished without a FIN or reset (the kernel dropped a half-made connection of a closing
// listener) is found within a second or two. Ample probe count: unanswered probes (the peer's
// accept queue full) fail the connection only after 128 s, past the usual handshake deadline.
void setLivenessProbes(int fd, bool on);
// One attempt at each of host's addresses, no retry: *listening is false when nothing
// listens there (refused), and the status an error only for a real failure (no route, the
// deadline, an unresolvable host). For a caller that tries several ports in turn.
Status connectTcpOnce(const std::string& host, int port, Deadline deadline, UniqueFd* out, bool* listening);

// Reads or writes exactly n bytes. PeerLost on EOF or reset, Timeout at the deadline.
// `what` names the exchange for error messages ("store handshake", "data handshake").
Status writeAll(int fd, const void* buf, size_t n, Deadline deadline, const char* what);
Status readAll(int fd, void* buf, size_t n, Deadline deadline, const char* what);

// Milliseconds until the deadline, clamped to [0, INT_MAX], for poll().
int millisUntil(Deadline deadline);

// "10.0.0.2:5120" of the socket's own (local) or remote end.
std::string localAddress(int fd);
std::string peerAddress(int fd);

}  // namespace coll
