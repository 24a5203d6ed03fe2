#include "pair_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "base/log.h"
#include "bootstrap/store.h"

namespace coll::doctor {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x43444f43;  // "CODC"
constexpr size_t kChunk = 64 << 10;

struct Header {
  uint32_t magic;
  uint32_t reserved;
  uint64_t bytes;
};

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Waits for `events` on fd until the deadline: false when it passed.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, msLeft(deadline)) > 0;
}

// Moves all of [data, data + n) through fd (send or recv) before the deadline; returns the
// bytes moved, and errno-style cause in *why when short.
size_t moveAll(int fd, uint8_t* data, size_t n, bool sending, Clock::time_point deadline, std::string* why) {
  size_t done = 0;
  while (done < n) {
    if (!waitFor(fd, sending ? POLLOUT : POLLIN, deadline)) {
      *why = "timed out";
      break;
    }
    ssize_t k = sending ? ::send(fd, data + done, std::min(n - done, kChunk), MSG_NOSIGNAL)
                        : ::recv(fd, data + done, std::min(n - done, kChunk), 0);
    if (k == 0) {
      *why = "closed by the peer";
      break;
    }
    if (k < 0 && errno != EAGAIN && errno != EINTR) {
      *why = std::strerror(errno);
      break;
    }
    if (k > 0) done += static_cast<size_t>(k);
  }
  return done;
}

std::string connectFailure(int err) {
  switch (err) {
    case ECONNREFUSED: return "refused (nothing listens on that port there, or a firewall rejects it)";
    case EHOSTUNREACH:
    case ENETUNREACH: return format("unreachable (%s: no route, or the interface is down)", std::strerror(err));
    case ETIMEDOUT: return "timed out (a firewall drops the packets, or the host is gone)";
    default: return std::strerror(err);
  }
}

// Serves one probe: reads the header and the bytes, answers with the count received.
void serve(int fd) {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  std::string why;
  Header h{};
  if (moveAll(fd, reinterpret_cast<uint8_t*>(&h), sizeof h, false, deadline, &why) != sizeof h) return;
  if (h.magic != kMagic || h.bytes > (256u << 20)) return;
  std::vector<uint8_t> sink(kChunk);
  uint64_t got = 0;
  while (got < h.bytes) {
    size_t n = moveAll(fd, sink.data(), std::min<uint64_t>(kChunk, h.bytes - got), false, deadline, &why);
    got += n;
    if (!why.empty()) break;
  }
  moveAll(fd, reinterpret_cast<uint8_t*>(&got), sizeof got, true, deadline, &why);
}

}  // namespace

Status ProbeListener::open(const std::string& address, std::unique_ptr<ProbeListener>* out) {
  std::unique_ptr<ProbeListener> l(new ProbeListener());
  l->fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (address.empty()) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  else if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1)
    return invalidArgument(format("probe listener: '%s' is not an IPv4 address", address.c_str()));
  if (!l->fd_ || ::bind(l->fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(l->fd_.get(), 64) != 0)
    return transportError(format("probe listener on %s: %s", address.c_str(), std::strerror(errno)));
  socklen_t len = sizeof sa;
  ::getsockname(l->fd_.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  l->address_ = format("%s:%d", address.empty() ? "0.0.0.0" : address.c_str(), ntohs(sa.sin_port));
  l->acceptor_ = std::thread([p = l.get()] { p->acceptLoop(); });
  *out = std::move(l);
  return Status::ok();
}

ProbeListener::~ProbeListener() {
  stopping_ = true;
  ::shutdown(fd_.get(), SHUT_RDWR);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a probe still arriving (a stalled transfer) ends now
    for (int fd : serving_) ::shutdown(fd, SHUT_RDWR);
  }
  if (acceptor_.joinable()) acceptor_.join();
  for (std::thread& t : servers_) t.join();
  for (int fd : serving_) ::close(fd);
}

void ProbeListener::acceptLoop() {
  while (!stopping_) {
    if (!waitFor(fd_.get(), POLLIN, Clock::now() + std::chrono::milliseconds(200))) continue;
    int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    serving_.push_back(c);  // closed by the destructor, after its server thread is joined
    servers_.emplace_back(serve, c);
  }
}

ProbeResult probe(int peer, const std::string& address, const ProbeLimits& limits) {
  ProbeResult r;
  r.peer = peer;
  r.stage = "connect";
  const auto start = Clock::now();
  auto finish = [&](std::string why) {
    r.why = std::move(why);
    r.ok = r.why.empty();
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return r;
  };
  std::string host;
  int port = 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (!bootstrap::splitHostPort(address, &host, &port) || ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1)
    return finish(format("bad probe address '%s'", address.c_str()));
  sa.sin_port = htons(static_cast<uint16_t>(port));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  auto deadline = start + limits.connect;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (errno != EINPROGRESS) return finish(connectFailure(errno));
    if (!waitFor(fd.get(), POLLOUT, deadline)) return finish(connectFailure(ETIMEDOUT));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return finish(connectFailure(err));
  }
  r.stage = "transfer";
  deadline = Clock::now() + limits.transfer;
  Header h{kMagic, 0, limits.bytes};
  std::vector<uint8_t> payload(limits.bytes, 0x5a);
  std::string why;
  size_t sent = moveAll(fd.get(), reinterpret_cast<uint8_t*>(&h), sizeof h, true, deadline, &why);
  if (sent == sizeof h) sent = moveAll(fd.get(), payload.data(), payload.size(), true, deadline, &why);
  uint64_t got = 0;
  if (why.empty()) moveAll(fd.get(), reinterpret_cast<uint8_t*>(&got), sizeof got, false, deadline, &why);
  if (why.empty() && got == limits.bytes) return finish("");
  return finish(format("connected, but the transfer %s: the peer confirmed %s of %zu bytes within %.1f s",
                       why.empty() ? "came up short" : why.c_str(), why.empty() ? std::to_string(got).c_str() : "none",
                       limits.bytes, std::chrono::duration<double>(limits.transfer).count()));
}

}  // namespace coll::doctor
