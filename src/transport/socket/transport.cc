#include "transport/socket/transport.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "bootstrap/store.h"
#include "base/log.h"
#include "transport/abort_signal.h"
#include "transport/socket/connection.h"
#include "transport/socket/handshake.h"
#include "transport/socket/interface.h"
#include "transport/socket/on_demand.h"

namespace coll::transport::socket {
namespace {

constexpr auto kHandshakeLimit = std::chrono::seconds(5);  // per accepted stream; bounds a silent intruder
// How often progress() looks at the listener for dials on demand while nothing is being set up
// (an accept4 a call would tax the engine's spin; its poll wakes on the listener anyway).
constexpr auto kListenerCheck = std::chrono::microseconds(200);
// Below this rate between hosts one TCP stream per peer carries the link, and striping over
// more only costs: on netcluster 4 x 1 at 1 Gbit/s (2026-12-04, all_reduce_perf -Q, two
// interleaved rounds) one stream took the 2 MiB all-reduce by rhd from 37-38 ms to 31-32,
// tree 52-53 to 41-43, direct 38-45 to 32-33, ring level (26-28); at 64 MiB ring level,
// the others 3-7 % faster; on 2 x 2 hierarchical level at 2 MiB and 1-2 % faster at 64 MiB.
// Two streams of one peer share a FIFO queue in which the one with the smaller window waits
// out the other's backlog at every round trip, and a step is done only when both are.
// Where the CPUs are the limit (10 Gbit/s and unshaped veth here) two streams are faster
// (docs/PERFORMANCE.md, Tried: one TCP stream per peer), so they stay above it.
constexpr double kOneStreamCarriesBps = 0.5e9;

void setBuffers(int fd, int bytes) {
  if (bytes <= 0) return;  // 0: leave the kernel's autotuning alone
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

class SocketTransport : public Transport {
 public:
  SocketTransport(const Config& config, const PeerDirectory& dir) : config_(config), dir_(dir) {}

  const char* name() const override { return "socket"; }

  Status open() {
    ChosenInterface iface;
    COLL_RETURN_IF_ERROR(chooseInterface(config_.socket_ifname, dir_.store_host, &iface));
    COLL_RETURN_IF_ERROR(listenOn(iface.address));
    std::string addr = localAddress(listener_.get());
    COLL_INFO("NET", "socket transport listens on %s (interface %s, mtu %d, %s: %s), %d stream(s) per peer",
              addr.c_str(), iface.name.c_str(), iface.mtu, iface.state.c_str(), iface.reason.c_str(),
              config_.socket_nstreams);
    const uint64_t cap = socketBufferCap();
    if (cap > 0 && cap < static_cast<uint64_t>(config_.socket_buffer_bytes))  // what coll-doctor warns about
      COLL_INFO("NET", "the kernel caps socket buffers at %s (net.core.rmem_max/wmem_max), below COLL_SOCKET_BUFFER "
                "%s: long links may run below their rate", formatBytes(cap).c_str(),
                formatBytes(static_cast<size_t>(config_.socket_buffer_bytes)).c_str());
    if (config_.socket_on_demand) startOnDemand();
    return dir_.store->set(key(dir_.rank), addr, Clock::now() + config_.timeout);
  }

  bool connectsOnDemand() const override { return on_demand_ != nullptr; }

  void connectOnDemand(int peer, Deadline deadline) override {
    if (on_demand_ && !connections_.count(peer)) on_demand_->want(peer, deadline);
  }

  void takeConnected(std::vector<OnDemandConnection>* out) override {
    out->insert(out->end(), made_.begin(), made_.end());
    made_.clear();
  }

  Status connect(int peer, Deadline deadline, Connection** out) override {
    auto it = connections_.find(peer);
    if (it == connections_.end()) {
      std::vector<UniqueFd> fds;
      std::string remote;
      Status st = dir_.rank > peer ? dial(peer, deadline, &fds, &remote) : acceptFrom(peer, deadline, &fds, &remote);
      if (!st) return st;
      auto conn = std::make_unique<SocketConnection>(io_, peer, remote, std::move(fds), &completions_,
                                                     config_.socket_wake_bytes, config_.socket_relay);
      conn->setStripe(stripe_);
      COLL_INFO("NET", "connected to %s", conn->describe().c_str());
      it = connections_.emplace(peer, std::move(conn)).first;
    }
    *out = it->second.get();
    return Status::ok();
  }

  Status progress(std::vector<Completion>* out, Deadline until) override {
    if (on_demand_ && !abort_.raised()) advanceOnDemand();
    if (completions_.empty() && until > Clock::now()) io_.run_one_until(until);
    io_.poll();
    if (abort_.raised()) failAll();
    out->insert(out->end(), std::make_move_iterator(completions_.begin()), std::make_move_iterator(completions_.end()));
    completions_.clear();
    if (abort_.raised()) return peerLostError(abort_.reason());
    return Status::ok();
  }

  bool pollFds(std::vector<pollfd>* fds) override {
    for (auto& [peer, conn] : connections_) conn->addPollFds(fds);
    if (on_demand_) on_demand_->addPollFds(fds);
    return true;
  }

  // Connections made before (the probe's) change too: every rank advises right after the probe,
  // which finished posting on both ends of each, and before posting anything else.
  void adviseLinkRate(double inter_host_Bps) override {
    if (!config_.socket_nstreams_auto || advised_ || !(inter_host_Bps > 0)) return;
    advised_ = true;
    if (inter_host_Bps >= kOneStreamCarriesBps || config_.socket_nstreams == 1) return;
    stripe_ = 1;
    for (auto& [peer, conn] : connections_) conn->setStripe(stripe_);
    COLL_INFO("NET", "links between hosts carry %.3f GB/s, below %.1f that one TCP stream carries: one of the %d "
              "streams per peer in use (setting COLL_SOCKET_NSTREAMS uses them all)", inter_host_Bps / 1e9,
              kOneStreamCarriesBps / 1e9, config_.socket_nstreams);
  }

  bool armForPoll() override { return completions_.empty() && made_.empty() && !abort_.raised(); }

  void abort(const std::string& reason) override {
    abort_.raise(reason);
    io_.stop();  // wakes a progress() blocked in run_one_until
  }

 private:
  std::string key(int rank) const { return dir_.key_prefix + "socket/" + std::to_string(rank); }

  void failAll() {
    if (on_demand_) on_demand_->clear();
    Status st = peerLostError(abort_.reason());
    for (auto& [peer, conn] : connections_) conn->fail(st);
  }

  Status listenOn(const std::string& address) {
    sockaddr_storage ss{};
    socklen_t len;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      len = sizeof *v4;
    } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      len = sizeof *v6;
    } else {
      return invalidArgument(format("cannot listen on '%s': not a numeric address", address.c_str()));
    }
    listener_ = UniqueFd(::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listener_) return transportError(format("socket: %s", std::strerror(errno)));
    setBuffers(listener_.get(), config_.socket_buffer_bytes);  // accepted sockets inherit these
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(listener_.get(), 256) != 0)
      return transportError(format("cannot listen on %s: %s", address.c_str(), std::strerror(errno)));
    return Status::ok();
  }

  Status dial(int peer, Deadline deadline, std::vector<UniqueFd>* fds, std::string* remote) {
    COLL_RETURN_IF_ERROR(dir_.store->get(key(peer), remote, deadline));
    std::string host;
    int port;
    COLL_RETURN_IF_ERROR(bootstrap::splitHostPort(*remote, &host, &port));
    for (int s = 0; s < config_.socket_nstreams; ++s) {
      UniqueFd fd;
      // A caller waiting in slices (the p2p engine) bounds the dial, not a handshake under way.
      Status st = dialStream(host, port, dir_.secret, dir_.key_prefix, dir_.rank, peer, s, config_.socket_nstreams,
                             deadline, std::max(deadline, Clock::now() + kHandshakeLimit), &fd);
      if (!st) return Status(st.code(), format("connecting to peer %d (%s): %s", peer, remote->c_str(), st.message().c_str()), peer);
      setBuffers(fd.get(), config_.socket_buffer_bytes);
      fds->push_back(std::move(fd));
    }
    return Status::ok();
  }

  // Accepts (and authenticates) connections from anyone until `peer`'s streams are all here;
  // streams of other peers wait in pending_ for their own connect() call.
  Status acceptFrom(int peer, Deadline deadline, std::vector<UniqueFd>* fds, std::string* remote) {
    auto& mine = pending_[peer];
    while (static_cast<int>(mine.size()) < config_.socket_nstreams) {
      pollfd p{listener_.get(), POLLIN, 0};
      int r = ::poll(&p, 1, millisUntil(deadline));
      if (r == 0)
        return timeoutError(format("peer %d did not connect before the deadline (%zu of %d streams arrived)", peer,
                                   mine.size(), config_.socket_nstreams), peer);
      if (r < 0 && errno != EINTR) return transportError(format("poll on listener: %s", std::strerror(errno)));
      if (r > 0) acceptOne(deadline);
    }
    for (auto& [stream, fd] : mine) fds->push_back(std::move(fd));
    *remote = peerAddress(fds->front().get());
    pending_.erase(peer);
    return Status::ok();
  }

  void acceptOne(Deadline deadline) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    StreamIdentity who;
    // Not cut short by the caller's deadline: a caller may wait in slices (the p2p engine),
    // and a handshake cut off halfway would fail the dialing peer.
    Deadline limit = Clock::now() + kHandshakeLimit;
    Status st = acceptStream(fd.get(), dir_.secret, dir_.key_prefix, dir_.rank, dir_.size, config_.socket_nstreams,
                             limit, &who);
    if (!st) {
      COLL_WARN("NET", "refused connection from %s: %s", peerAddress(fd.get()).c_str(), st.message().c_str());
      return;
    }
    pending_[who.rank][who.stream] = std::move(fd);
  }

  void startOnDemand() {
    OnDemandConnector::Identity me{dir_.rank, dir_.size, config_.socket_nstreams, dir_.secret, dir_.key_prefix,
                                   config_.socket_buffer_bytes};
    on_demand_ = std::make_unique<OnDemandConnector>(
        me, listener_.get(), [this](int peer, Deadline deadline, std::string* address) {
          return dir_.store->get(key(peer), address, deadline);
        });
  }

  // Turns the streams of every peer whose set-up finished into its connection.
  void advanceOnDemand() {
    const auto now = Clock::now();
    if (!on_demand_->busy() && now < next_listener_check_) return;
    next_listener_check_ = now + kListenerCheck;
    std::vector<OnDemandConnector::Made> made;
    on_demand_->advance(&made);
    for (OnDemandConnector::Made& m : made) {
      if (!m.status) {
        made_.push_back({m.peer, nullptr, m.status});
        continue;
      }
      auto conn = std::make_unique<SocketConnection>(io_, m.peer, m.remote, std::move(m.fds), &completions_,
                                                     config_.socket_wake_bytes, config_.socket_relay);
      conn->setStripe(stripe_);
      COLL_INFO("NET", "connected on demand to %s", conn->describe().c_str());
      made_.push_back({m.peer, conn.get(), Status::ok()});
      connections_[m.peer] = std::move(conn);
    }
  }

  Config config_;
  PeerDirectory dir_;
  asio::io_context io_{1};
  // Without outstanding work an io_context stops itself and later run calls return at once.
  asio::executor_work_guard<asio::io_context::executor_type> keep_running_{io_.get_executor()};
  UniqueFd listener_;
  std::map<int, std::map<int, UniqueFd>> pending_;  // peer -> stream -> authenticated socket
  std::map<int, std::unique_ptr<SocketConnection>> connections_;
  std::vector<Completion> completions_;
  std::unique_ptr<OnDemandConnector> on_demand_;  // config_.socket_on_demand
  Clock::time_point next_listener_check_{};
  std::vector<OnDemandConnection> made_;  // for takeConnected()
  AbortSignal abort_;
  size_t stripe_ = SIZE_MAX;  // streams each connection stripes over (adviseLinkRate)
  bool advised_ = false;      // the first advice holds: later ones could find messages in flight
};

}  // namespace

Status createTransport(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* out) {
  auto t = std::make_unique<SocketTransport>(config, directory);
  COLL_RETURN_IF_ERROR(t->open());
  *out = std::move(t);
  return Status::ok();
}

}  // namespace coll::transport::socket
