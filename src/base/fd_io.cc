#include "base/fd_io.h"

#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <memory>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "base/log.h"

namespace coll {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() { reset(); }

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int millisUntil(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

namespace {

// Waits for `events` on fd; Timeout at the deadline.
Status waitFd(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, millisUntil(deadline));
    if (r > 0) return Status::ok();
    if (r == 0) return timeoutError(format("%s: no progress before the deadline", what));
    if (errno != EINTR) return transportError(format("%s: poll: %s", what, std::strerror(errno)));
  }
}

// Linux may give a connect to a port of this host where nothing listens yet that very port as
// its source port: TCP's simultaneous open then connects the socket to itself. Its owner would
// wait for a greeting it never gets (a store client, until the deadline) or read back its own
// hello as the peer's (a transport handshake: "wrong job secret"). The port lies in the
// ephemeral range whenever a launcher found it by bind(0), as torchrun's c10d rendezvous does.
bool connectedToItself(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t self_len = sizeof self, peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  return self_len == peer_len && std::memcmp(&self, &peer, self_len) == 0;
}

Status connectOnce(const addrinfo* ai, Deadline deadline, UniqueFd* out, int* err) {
  UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd) return transportError(format("socket: %s", std::strerror(errno)));
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) { *err = errno; return Status::ok(); }
    COLL_RETURN_IF_ERROR(waitFd(fd.get(), POLLOUT, deadline, "connect"));
    socklen_t len = sizeof *err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, err, &len);
    if (*err != 0) return Status::ok();
  }
  if (connectedToItself(fd.get())) {
    // Reset, not closed: a closed one would sit in TIME_WAIT for a minute on the very port its
    // listener is about to bind, and bind would fail even with SO_REUSEADDR.
    linger reset{1, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    *err = ECONNREFUSED;  // as good as refused: nothing listens there yet, so retry
    return Status::ok();
  }
  *err = 0;
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *out = std::move(fd);
  return Status::ok();
}

using AddressList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// host:port's stream addresses, every family.
Status resolveTcp(const std::string& host, int port, AddressList* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) return invalidArgument(format("cannot resolve '%s': %s", host.c_str(), gai_strerror(rc)));
  out->reset(res);
  return Status::ok();
}

}  // namespace

void setLivenessProbes(int fd, bool on) {
  int enable = on ? 1 : 0, idle_s = 1, interval_s = 1, count = 127;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &enable, sizeof enable);
  if (!on) return;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

Status connectTcp(const std::string& host, int port, Deadline deadline, UniqueFd* out) {
  AddressList res(nullptr, freeaddrinfo);
  COLL_RETURN_IF_ERROR(resolveTcp(host, port, &res));
  int err = 0;
  auto pause = std::chrono::milliseconds(10);
  while (Clock::now() < deadline) {
    for (const addrinfo* ai = res.get(); ai; ai = ai->ai_next) {
      COLL_RETURN_IF_ERROR(connectOnce(ai, deadline, out, &err));
      if (err == 0) return Status::ok();
    }
    std::this_thread::sleep_for(pause);  // listener not up yet: back off, up to 0.5 s
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  return timeoutError(format("connect to %s:%d: %s (kept retrying until the deadline)", host.c_str(),
                             port, err ? std::strerror(err) : "no answer"));
}

Status connectTcpOnce(const std::string& host, int port, Deadline deadline, UniqueFd* out, bool* listening) {
  AddressList res(nullptr, freeaddrinfo);
  COLL_RETURN_IF_ERROR(resolveTcp(host, port, &res));
  int err = 0;
  for (const addrinfo* ai = res.get(); ai; ai = ai->ai_next) {
    COLL_RETURN_IF_ERROR(connectOnce(ai, deadline, out, &err));
    if (err == 0) break;
  }
  *listening = err == 0;
  if (err != 0 && err != ECONNREFUSED)
    return transportError(format("connect to %s:%d: %s", host.c_str(), port, std::strerror(err)));
  return Status::ok();
}

Status writeAll(int fd, const void* buf, size_t n, Deadline deadline, const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) { p += w; n -= static_cast<size_t>(w); continue; }
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      COLL_RETURN_IF_ERROR(waitFd(fd, POLLOUT, deadline, what));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    return peerLostError(format("%s: send: %s", what, std::strerror(errno)));
  }
  return Status::ok();
}

Status readAll(int fd, void* buf, size_t n, Deadline deadline, const char* what) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) { p += r; n -= static_cast<size_t>(r); continue; }
    if (r == 0) {
      // A peer that died is no longer connected: getpeername fails and the address is lost.
      std::string who = peerAddress(fd);
      return peerLostError(format("%s: connection closed by %s", what, who == "?" ? "the other end" : who.c_str()));
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      COLL_RETURN_IF_ERROR(waitFd(fd, POLLIN, deadline, what));
      continue;
    }
    if (errno == EINTR) continue;
    return peerLostError(format("%s: recv: %s", what, std::strerror(errno)));
  }
  return Status::ok();
}

namespace {
std::string formatSockaddr(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    return format("%s:%d", host, port);
  }
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return format("[%s]:%d", host, port);
  }
  return "?";
}
}  // namespace

std::string localAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return formatSockaddr(ss);
}

std::string peerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return formatSockaddr(ss);
}

}  // namespace coll
