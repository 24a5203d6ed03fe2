#include "transport/socket/on_demand.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/log.h"
#include "bootstrap/store.h"
#include "transport/socket/handshake.h"

namespace coll::transport::socket {
namespace {

constexpr auto kHandshakeLimit = std::chrono::seconds(5);  // per accepted stream; bounds a silent intruder
constexpr auto kMaxPause = std::chrono::milliseconds(500);  // between dials refused (the peer is not listening yet)
constexpr auto kMaxGreetWait = std::chrono::milliseconds(1600);  // for a greeting, before dialing again

// Reads what has arrived, until `in` holds `want` bytes. 1: it does; 0: more is to come;
// -1: closed (*err 0) or failed (*err the errno).
int readSome(int fd, std::string* in, size_t want, int* err) {
  while (in->size() < want) {
    char buf[64];
    ssize_t r = ::recv(fd, buf, std::min(sizeof buf, want - in->size()), MSG_DONTWAIT);
    if (r > 0) {
      in->append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    *err = r == 0 ? 0 : errno;
    return -1;
  }
  return 1;
}

// A handshake message is a few bytes on a fresh socket: it goes whole or the socket is gone.
bool sendWhole(int fd, const void* data, size_t n) {
  return ::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(n);
}

void setOptions(int fd, int buffer_bytes) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buffer_bytes <= 0) return;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
}

}  // namespace

OnDemandConnector::OnDemandConnector(Identity me, int listener, AddressOf address_of)
    : me_(std::move(me)), listener_(listener), address_of_(std::move(address_of)) {}

void OnDemandConnector::want(int peer, Deadline deadline) {
  if (connected_.count(peer) || pending_.count(peer)) return;
  std::string address;
  if (Status st = address_of_(peer, deadline, &address); !st) {
    Made m;
    m.peer = peer;
    m.status = Status(st.code(), format("reading peer %d's address: %s", peer, st.message().c_str()), peer);
    failed_.push_back(std::move(m));
    return;
  }
  Pending& p = pending_[peer];
  p.dialing = true;
  p.address = address;
  for (int s = 0; s < me_.nstreams; ++s) {
    Dialing d;
    d.peer = peer;
    d.stream = s;
    d.deadline = deadline;
    d.retry_at = Clock::now();
    dials_.push_back(std::move(d));
  }
}

void OnDemandConnector::advance(std::vector<Made>* made) {
  for (Made& m : failed_) made->push_back(std::move(m));
  failed_.clear();
  acceptWaiting();
  advanceAccepts(made);
  for (size_t i = 0; i < dials_.size(); ++i)  // by index: a failure drops its peer's other dials
    if (!dials_[i].done) advanceDial(dials_[i], made);
  dials_.erase(std::remove_if(dials_.begin(), dials_.end(), [](const Dialing& d) { return d.done; }), dials_.end());
}

void OnDemandConnector::addPollFds(std::vector<pollfd>* fds) const {
  fds->push_back({listener_, POLLIN, 0});
  for (const Accepting& a : accepts_) fds->push_back({a.fd.get(), POLLIN, 0});
  for (const Dialing& d : dials_)
    if (d.fd) fds->push_back({d.fd.get(), POLLIN, 0});  // a refused connect shows as POLLERR
}

void OnDemandConnector::clear() {
  accepts_.clear();
  dials_.clear();
  pending_.clear();
  failed_.clear();
}

// Greets every dialer waiting at the listener; their answers are read by advanceAccepts().
void OnDemandConnector::acceptWaiting() {
  for (;;) {
    UniqueFd fd(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;  // none waiting (or out of descriptors: the dialer retries, the op's deadline bounds it)
    setOptions(fd.get(), 0);
    Accepting a;
    a.fd = std::move(fd);
    a.nonce = bootstrap::randomNonce();
    a.limit = Clock::now() + kHandshakeLimit;
    std::string hello = makeGreeting(a.nonce);
    if (sendWhole(a.fd.get(), hello.data(), hello.size())) accepts_.push_back(std::move(a));
  }
}

void OnDemandConnector::advanceAccepts(std::vector<Made>* made) {
  for (size_t i = 0; i < accepts_.size();) {
    Accepting& a = accepts_[i];
    int err = 0;
    int r = readSome(a.fd.get(), &a.in, sizeof(HandshakeReply), &err);
    if (r == 0 && Clock::now() < a.limit) {
      ++i;
      continue;
    }
    if (r == 1) answer(a, made);
    else if (r == 0)
      COLL_WARN("NET", "refused connection from %s: no handshake within %lld s", peerAddress(a.fd.get()).c_str(),
                static_cast<long long>(kHandshakeLimit.count()));
    // Closed before answering: a dialer that dropped its dial (the other side's won).
    accepts_.erase(accepts_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

// A dialer's answer is in: check it, then keep the stream, or tell a lower rank that our own
// dial to it wins.
void OnDemandConnector::answer(Accepting& a, std::vector<Made>* made) {
  HandshakeReply reply;
  std::memcpy(&reply, a.in.data(), sizeof reply);
  StreamIdentity who;
  if (Status st = checkReply(reply, me_.secret, me_.context, a.nonce, me_.rank, me_.size, me_.nstreams, &who); !st) {
    COLL_WARN("NET", "refused connection from %s: %s", peerAddress(a.fd.get()).c_str(), st.message().c_str());
    return;
  }
  if (connected_.count(who.rank)) {  // its dial crossed ours, which it has acknowledged: ours stands
    COLL_INFO("NET", "closed a second connection from rank %d (one is made)", who.rank);
    return;
  }
  Pending& p = pending_[who.rank];
  if (p.dialing && me_.rank > who.rank) {
    (void)sendWhole(a.fd.get(), &kBusyMagic, sizeof kBusyMagic);
    return;
  }
  if (p.dialing) {  // a higher rank dials us while we dial it: its connection is the one
    dropDials(who.rank);
    p.dialing = false;
  }
  if (!sendWhole(a.fd.get(), &kHelloMagic, sizeof kHelloMagic)) return;
  p.streams[who.stream] = std::move(a.fd);
  finishIfWhole(who.rank, made);
}

void OnDemandConnector::advanceDial(Dialing& d, std::vector<Made>* made) {
  const auto now = Clock::now();
  if (now >= d.deadline) {
    std::string why = d.last_errno ? std::strerror(d.last_errno) : (d.fd ? "no answer" : "not reached");
    return fail(d.peer, timeoutError(format("peer %d did not answer at %s before the deadline (%s; it may have "
                                            "left, or be stopped)", d.peer, pending_[d.peer].address.c_str(),
                                            why.c_str()), d.peer), made);
  }
  if (!d.fd) {
    if (now >= d.retry_at) startConnect(d);
    if (!d.fd) return failIfRefused(d, made);
  }
  int err = 0;
  if (!d.greeted) {
    int r = readSome(d.fd.get(), &d.in, kGreetingBytes, &err);
    if (r == 0 && now >= d.greet_by) return redialSilent(d);
    if (r == 0) return;
    if (r < 0) {
      retryLater(d, err ? err : ECONNRESET);
      return failIfRefused(d, made);
    }
    bootstrap::Nonce nonce;
    if (Status st = readGreeting(d.in.data(), pending_[d.peer].address, d.peer, &nonce); !st) return fail(d.peer, st, made);
    HandshakeReply reply = makeReply(me_.secret, me_.context, nonce, me_.rank, d.peer, d.stream, me_.nstreams);
    if (!sendWhole(d.fd.get(), &reply, sizeof reply)) return retryLater(d, errno);
    d.greeted = true;
    d.in.clear();
  }
  int r = readSome(d.fd.get(), &d.in, sizeof(uint32_t), &err);
  if (r == 0) return;
  uint32_t magic = 0;
  if (r == 1) std::memcpy(&magic, d.in.data(), sizeof magic);
  if (magic == kBusyMagic) {  // the peer is higher and dials us: wait for its connection
    dropDials(d.peer);
    pending_[d.peer].dialing = false;
    return;
  }
  if (magic != kHelloMagic)
    return fail(d.peer, peerLostError(format("peer %d (%s) refused our handshake (different job secret or "
                                             "COLL_SOCKET_NSTREAMS?)", d.peer, pending_[d.peer].address.c_str()),
                                      d.peer), made);
  d.done = true;
  pending_[d.peer].streams[d.stream] = std::move(d.fd);
  finishIfWhole(d.peer, made);
}

void OnDemandConnector::startConnect(Dialing& d) {
  std::string host;
  int port = 0;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string& address = pending_[d.peer].address;
  if (!bootstrap::splitHostPort(address, &host, &port).isOk() ||
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
    return retryLater(d, EADDRNOTAVAIL);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return retryLater(d, errno);
  setOptions(fd.get(), me_.buffer_bytes);  // before connect: the window scale is agreed in the SYN
  if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) != 0 && errno != EINPROGRESS) return retryLater(d, errno);
  d.fd = std::move(fd);
  d.in.clear();
  d.greeted = false;
  d.greet_by = Clock::now() + d.greet_wait;
}

// A live peer greets as soon as its progress thread runs. A connection that stays silent can
// be one the kernel completed while the peer's listener was closing (it was killed): the peer
// side forgot it without a reset, so only a new dial (refused) tells. The wait doubles so a
// slow but live peer is not dialed over and over.
void OnDemandConnector::redialSilent(Dialing& d) {
  COLL_INFO("NET", "no greeting from peer %d at %s within %lld ms: dialing again", d.peer,
            pending_[d.peer].address.c_str(), static_cast<long long>(d.greet_wait.count()));
  d.greet_wait = std::min(d.greet_wait * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxGreetWait));
  d.fd.reset();
  startConnect(d);  // last_errno stays: a silent dial is no error of its own
}

void OnDemandConnector::retryLater(Dialing& d, int err) {
  d.fd.reset();
  d.last_errno = err;
  d.retry_at = Clock::now() + d.pause;
  d.pause = std::min(d.pause * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxPause));
}

// A peer publishes its address only once it listens, and listens until it closes: a refused
// dial means it has left, and its ops fail now rather than at their deadline. Anything else
// (no route yet, out of ports) is retried until the deadline.
void OnDemandConnector::failIfRefused(Dialing& d, std::vector<Made>* made) {
  if (d.last_errno != ECONNREFUSED) return;
  fail(d.peer, peerLostError(format("peer %d no longer listens at %s (connection refused): it has left",
                                    d.peer, pending_[d.peer].address.c_str()), d.peer), made);
}

void OnDemandConnector::dropDials(int peer) {
  for (Dialing& d : dials_)
    if (d.peer == peer) {
      d.done = true;
      d.fd.reset();
    }
}

void OnDemandConnector::fail(int peer, Status status, std::vector<Made>* made) {
  dropDials(peer);
  pending_.erase(peer);
  Made m;
  m.peer = peer;
  m.status = std::move(status);
  made->push_back(std::move(m));
}

void OnDemandConnector::finishIfWhole(int peer, std::vector<Made>* made) {
  Pending& p = pending_[peer];
  if (static_cast<int>(p.streams.size()) < me_.nstreams) return;
  Made m;
  m.peer = peer;
  for (auto& [stream, fd] : p.streams) m.fds.push_back(std::move(fd));
  m.remote = peerAddress(m.fds.front().get());
  m.status = Status::ok();
  pending_.erase(peer);
  connected_.insert(peer);
  made->push_back(std::move(m));
}

}  // namespace coll::transport::socket
