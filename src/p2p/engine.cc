// The engine's thread: connecting, taking posts from the inbox, waiting on every transport and
// the wake-up descriptor at once, deadlines and failure. The protocol is in p2p_protocol.cc.
#include "p2p/engine_impl.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"

namespace coll::p2p {
namespace {

using transport::Clock;

constexpr auto kConnectSlice = std::chrono::milliseconds(100);  // stopping is checked between slices
constexpr auto kMaxSleep = std::chrono::milliseconds(50);       // transports check peers' liveness between waits
constexpr auto kUnpolledSlice = std::chrono::microseconds(200);  // per transport that has no descriptors
// With no op posted nobody waits on a peer, so its liveness can wait: the engine sleeps until a
// post, a message or a connection wakes it, or this long. Waking every kMaxSleep instead cost
// 256 idle ranks on one host 15 % of a core (each wake polls every local connection three
// times), as the collectives' progress thread also sleeps until pushed.
constexpr auto kIdleSleep = std::chrono::seconds(1);

timespec timespecUntil(transport::Deadline until) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max<Clock::duration>(until - Clock::now(), {}));
  return {static_cast<time_t>(ns.count() / 1'000'000'000), static_cast<long>(ns.count() % 1'000'000'000)};
}

}  // namespace

Engine::Engine(EngineOptions options, std::vector<std::unique_ptr<transport::Transport>> owned,
               std::vector<transport::Transport*> for_peer)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(owned), std::move(for_peer))) {}
Engine::~Engine() = default;
void Engine::post(std::vector<Message> messages) { impl_->post(std::move(messages)); }
void Engine::abort(const std::string& reason) { impl_->abort(reason); }
bool Engine::settle(std::chrono::steady_clock::time_point deadline) { return impl_->settle(deadline); }
std::string Engine::describeOutstanding() const { return impl_->describeOutstanding(); }
std::shared_ptr<detail::DriverLink> Engine::watchdog() const { return impl_->watchdog(); }

Engine::Impl::Impl(EngineOptions options, std::vector<std::unique_ptr<transport::Transport>> owned,
                   std::vector<transport::Transport*> for_peer)
    : opt_(std::move(options)), owned_(std::move(owned)), for_peer_(std::move(for_peer)),
      channels_(opt_.size), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      link_(std::make_shared<detail::DriverLink>()) {
  // As the communicator's runner: every op ends by its deadline, and the thread wakes at least
  // every kMaxSleep, so a beat older than COLL_TIMEOUT and a margin means it is stuck.
  const int64_t timeout_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opt_.timeout).count();
  link_->stall_limit_ns = timeout_ns + std::max<int64_t>(timeout_ns / 2, 5'000'000'000);
  link_->beat();
  link_->driver = this;  // nothing else holds the link yet
  for (transport::Transport* t : for_peer_)
    if (t && std::find(active_.begin(), active_.end(), t) == active_.end()) active_.push_back(t);
  thread_ = std::thread([this] { run(); });
}

Engine::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(link_->mu);  // a waiter abandoning the engine is done with it
    link_->driver = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake();
  thread_.join();
}

void Engine::Impl::post(std::vector<Message> messages) {
  std::optional<Error> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) {
      for (Message& m : messages) inbox_.push_back(std::move(m));
      inbox_count_.store(inbox_.size(), std::memory_order_release);
    }
    failed = failed_;
  }
  if (!failed) return wake();
  for (Message& m : messages) m.work->complete(Error(failed->code(), m.what + ": " + failed->what()));
}

void Engine::Impl::abort(const std::string& reason) { failFromAnyThread(Error(ErrorCode::PeerLost, reason)); }

bool Engine::Impl::settle(std::chrono::steady_clock::time_point deadline) {
  if (std::this_thread::get_id() == thread_.get_id()) return false;
  std::unique_lock<std::mutex> lock(mu_);
  return failed_all_cv_.wait_until(lock, deadline, [&] { return failed_all_; });
}

// The engine's thread fails every op with `error` when it next looks (takeInbox); no callback
// runs here.
void Engine::Impl::failFromAnyThread(const Error& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) failed_ = error;
  }
  failed_from_outside_.store(true, std::memory_order_release);
  for (transport::Transport* t : active_) t->abort(error.what());  // any thread may; peers fail fast
  wake();
}

std::string Engine::Impl::describeOutstanding() const {
  size_t n = outstanding_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  if (n == 0 || oldest_what_.empty()) return "";
  return n == 1 ? oldest_what_ : format("%s and %zu more", oldest_what_.c_str(), n - 1);
}

// Keeps describeOutstanding()'s text: one string copy when the oldest op changes.
void Engine::Impl::noteOldest() {
  outstanding_.store(ops_.size(), std::memory_order_relaxed);
  uint64_t oldest = ops_.empty() ? 0 : ops_.begin()->first;
  if (oldest == oldest_id_) return;
  oldest_id_ = oldest;
  std::lock_guard<std::mutex> lock(mu_);
  oldest_what_ = oldest ? ops_.begin()->second.msg.what : std::string();
}

void Engine::Impl::wake() {
  uint64_t one = 1;
  if (wake_fd_) (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void Engine::Impl::run() {
  connectAll();
  while (takeInbox()) {
    link_->beat();
    waitForNews(&completions_);
    for (const transport::Completion& c : completions_) {
      // Failed from another thread (a waiter abandoned us while a callback held this thread):
      // what is left of the batch must not touch its ops' buffers; takeInbox fails them all.
      if (failed_from_outside_.load(std::memory_order_acquire)) break;
      onCompletion(c);
    }
    completions_.clear();
    adoptConnections();
    checkDeadlines();
    noteOldest();
  }
  dead_ = true;  // the transports close as they are destroyed, as the collectives' do: no abort
  failAll(Error(ErrorCode::PeerLost, "the communicator was destroyed while the op was outstanding"), false);
}

// Every pair whose transport does not connect on demand connects once, both sides in the order
// of the pair's lower rank then higher rank, so no rank waits on one that waits on another
// (every rank runs this at start). A failure here is reported only to the ops that are
// posted: a job that never uses point-to-point must not fail because a peer left before its
// engine was connected. Sockets connect on demand: when a send first needs one (park()).
bool Engine::Impl::connectAll() {
  for (int peer = 0; peer < opt_.size; ++peer) {
    if (!for_peer_[peer] || for_peer_[peer]->connectsOnDemand()) continue;
    Status st;
    for (;;) {
      link_->beat();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_ || failed_) return false;
      }
      // A socket is asked again after a slice, on both sides, so a destructor never waits long
      // for a peer that will not come (one that finished and left before this engine reached
      // it: the dialing side retried its refused connection until the deadline, holding the
      // job's exit for COLL_TIMEOUT). The acceptor keeps accepted streams for the next call;
      // a dial cut off is made again whole. Everything else gets one call with the whole deadline.
      const bool sliced = std::string(for_peer_[peer]->name()) == "socket";
      auto slice = sliced ? std::min(opt_.connect_deadline, Clock::now() + kConnectSlice) : opt_.connect_deadline;
      st = for_peer_[peer]->connect(peer, slice, &channels_[peer].conn);
      if (st || st.code() != ErrorCode::Timeout || Clock::now() >= opt_.connect_deadline) break;
    }
    if (!st) {
      failAll(Error(st.code(), format("the point-to-point channel to peer %d could not be set up: %s", peer,
                                      st.message().c_str())), false);
      return false;
    }
    postEnvelopeRecv(peer);
  }
  return true;
}

void Engine::Impl::park(uint64_t id, Op& op) {
  const int peer = op.msg.peer;
  Channel& ch = channels_[peer];
  if (!for_peer_[peer]) {  // validated before posting; never dereference a missing transport
    complete(id, Error(ErrorCode::InvalidArgument, op.msg.what + ": no transport reaches peer " + std::to_string(peer)));
    return;
  }
  op.parked = true;
  ch.parked.push_back(id);
  connectFor(peer, op.deadline);
}

void Engine::Impl::connectFor(int peer, transport::Deadline deadline) {
  Channel& ch = channels_[peer];
  if (ch.conn || ch.connecting || ch.lost || !for_peer_[peer] || !for_peer_[peer]->connectsOnDemand()) return;
  ch.connecting = true;
  for_peer_[peer]->connectOnDemand(peer, deadline);
}

// Connections made on demand, by this rank's sends or by a peer's: the envelope receive goes
// up at once (the peer may already be sending), then the sends that waited start in order.
void Engine::Impl::adoptConnections() {
  std::vector<transport::Transport::OnDemandConnection> made;
  for (transport::Transport* t : active_)
    if (t->connectsOnDemand()) t->takeConnected(&made);
  for (const auto& m : made) {
    Channel& ch = channels_[m.peer];
    ch.connecting = false;
    if (!m.status) {
      failPeer(m.peer, Error(m.status.code(), format("point-to-point: connecting to peer %d: %s", m.peer,
                                                     m.status.message().c_str())));
      continue;
    }
    ch.conn = m.conn;
    postEnvelopeRecv(m.peer);
    std::vector<uint64_t> parked;
    parked.swap(ch.parked);
    for (uint64_t id : parked)
      if (auto it = ops_.find(id); it != ops_.end() && it->second.parked) {
        it->second.parked = false;
        startSend(id, it->second);
      }
  }
}

// Starts what was posted; false once the engine is stopping.
bool Engine::Impl::takeInbox() {
  std::vector<Message> taken;
  std::optional<Error> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    taken.swap(inbox_);
    inbox_count_.store(0, std::memory_order_release);
    failed = failed_;
  }
  if (failed && !dead_) failAll(*failed, false);  // abort() from another thread
  for (Message& m : taken) {
    if (failed) m.work->complete(Error(failed->code(), m.what + ": " + failed->what()));
    else start(std::move(m));
  }
  return true;
}

// Collects completions: a poll of every transport, a short spin while ops are outstanding,
// then one sleep on every transport's descriptors and the wake-up eventfd together.
void Engine::Impl::waitForNews(std::vector<transport::Completion>* out) {
  if (dead_) {  // only posts (failed at once) and stopping can wake us
    pollfd wake{wake_fd_.get(), POLLIN, 0};
    timespec ts = timespecUntil(Clock::now() + kMaxSleep);
    ::ppoll(&wake, 1, &ts, nullptr);
    uint64_t drained;
    (void)!::read(wake_fd_.get(), &drained, sizeof drained);
    return;
  }
  for (transport::Transport* t : active_)
    if (Status st = t->progress(out, Clock::now()); !st) return failAll(st.toError("point-to-point"), !ops_.empty());
  if (!out->empty()) return;
  auto end = Clock::now() + opt_.spin;
  while (!ops_.empty() && Clock::now() < end) {
    ::sched_yield();
    for (transport::Transport* t : active_) (void)t->progress(out, Clock::now());
    if (!out->empty() || inbox_count_.load(std::memory_order_acquire) > 0) return;
  }
  auto until = Clock::now() + (ops_.empty() ? kIdleSleep : kMaxSleep);
  if (!ops_.empty()) until = std::min(until, ops_.begin()->second.deadline);
  if (blockOnAll(until)) {
    for (transport::Transport* t : active_) (void)t->progress(out, Clock::now());
    return;
  }
  for (transport::Transport* t : active_) {  // one cannot be waited on by descriptor: take turns
    if (!out->empty() || inbox_count_.load(std::memory_order_acquire) > 0) break;
    (void)t->progress(out, std::min(until, Clock::now() + kUnpolledSlice));
  }
}

bool Engine::Impl::blockOnAll(transport::Deadline until) {
  fds_.clear();
  fds_.push_back({wake_fd_.get(), POLLIN, 0});
  for (transport::Transport* t : active_)
    if (!t->pollFds(&fds_)) return false;
  size_t armed = 0;
  bool news = inbox_count_.load(std::memory_order_acquire) > 0;
  for (; armed < active_.size() && !news; ++armed) news = !active_[armed]->armForPoll();
  if (!news) {
    timespec ts = timespecUntil(until);
    ::ppoll(fds_.data(), fds_.size(), &ts, nullptr);
  }
  for (size_t i = 0; i < armed; ++i) active_[i]->disarmAfterPoll();
  uint64_t drained;
  (void)!::read(wake_fd_.get(), &drained, sizeof drained);  // nonblocking: empties it if set
  return true;
}

void Engine::Impl::checkDeadlines() {
  bool collected = false;
  while (!ops_.empty() && ops_.begin()->second.deadline <= Clock::now()) {
    if (!collected) {  // what has arrived counts first: this thread may have been held (a callback)
      collected = true;
      collectArrived();
      adoptConnections();
      continue;
    }
    Op& late = ops_.begin()->second;
    if (late.pieces == 0) failLateAlone(ops_.begin()->first, late);
    else if (!failLateWithItsPeer(ops_.begin()->first, late)) return;
  }
}

// Takes what the transports have for us, a few rounds (an envelope's payload is asked for
// only once the envelope is read), until a round brings nothing.
void Engine::Impl::collectArrived() {
  constexpr int kRounds = 8;
  std::vector<transport::Completion> arrived;
  for (int round = 0; round < kRounds && !dead_; ++round) {
    arrived.clear();
    for (transport::Transport* t : active_)
      if (Status st = t->progress(&arrived, Clock::now()); !st) return failAll(st.toError("point-to-point"), true);
    if (arrived.empty()) return;
    for (const transport::Completion& c : arrived) onCompletion(c);
  }
}

// The transport may still read or write the op's buffers (a send not yet taken, data coming
// into a matched receive): the peer's connection fails alone, which releases them, and every
// op with that peer fails. Where a transport cannot, everything fails (false).
bool Engine::Impl::failLateWithItsPeer(uint64_t id, Op& op) {
  const int peer = op.msg.send ? op.msg.peer : op.msg.work->source;
  std::string why = op.msg.send
                        ? format("peer %d has not taken it (no matching receive was posted there, or the peer is "
                                 "stopped)", peer)
                        : format("its data from peer %d did not all arrive (the peer is stopped or slow)", peer);
  Error error(ErrorCode::Timeout, format("%s did not complete within COLL_TIMEOUT (%.1f s): %s", op.msg.what.c_str(),
                                         std::chrono::duration<double>(opt_.timeout).count(), why.c_str()));
  transport::Connection* conn = channels_[peer].conn;
  if (!conn || !conn->failAlone(Status(ErrorCode::Timeout, error.what(), peer))) {
    failAll(error, true);
    return false;
  }
  COLL_WARN("P2P", "%s; point-to-point with peer %d is closed, the rest goes on", error.what(), peer);
  const std::string cause = error.what();
  complete(id, std::move(error));
  failPeer(peer, Error(ErrorCode::Timeout, format("point-to-point with peer %d was closed after: %s", peer,
                                                  cause.c_str())));
  return true;
}

void Engine::Impl::failLateAlone(uint64_t id, Op& op) {
  std::string why;
  if (op.parked) {
    std::vector<uint64_t>& parked = channels_[op.msg.peer].parked;
    parked.erase(std::remove(parked.begin(), parked.end(), id), parked.end());
    why = format("no connection to peer %d could be made (it did not answer: stopped, or too busy)", op.msg.peer);
  } else if (op.msg.send) {
    withdrawn_sends_[id] = op.msg.peer;
    why = format("peer %d has not matched it (no receive for it was posted there, or the peer is stopped); it is "
                 "withdrawn, and a receive there that matches it later fails", op.msg.peer);
  } else if (op.matched) {
    withdrawn_recvs_[id] = op.msg.work->source;
    why = format("it matched a message of peer %d, whose data has not come (the sender is stopped or slow); it is "
                 "given up, and the data is dropped if it comes", op.msg.work->source);
  } else {
    matcher_.cancel(id);
    why = "no message matching it arrived" + unexpectedSummary();
  }
  complete(id, Error(ErrorCode::Timeout, format("%s did not complete within COLL_TIMEOUT (%.1f s): %s",
                                                op.msg.what.c_str(),
                                                std::chrono::duration<double>(opt_.timeout).count(), why.c_str())));
}

void Engine::Impl::failPeer(int peer, const Error& error) {
  Channel& ch = channels_[peer];
  if (ch.lost) return;
  ch.lost = error;
  ch.parked.clear();  // they fail below with the others
  for (auto& [id, in] : inbound_)
    if (in.source == peer && (in.envelope.kind == EnvelopeKind::rts || !in.payload_done)) in.lost = true;
  std::vector<uint64_t> doomed;
  for (auto& [id, op] : ops_) {
    const bool involved = op.msg.send ? op.msg.peer == peer
                                      : op.msg.peer == peer || (op.matched && op.msg.work->source == peer);
    if (involved) doomed.push_back(id);
  }
  for (uint64_t id : doomed) {
    matcher_.cancel(id);
    complete(id, Error(error.code(), ops_.at(id).msg.what + ": " + error.what()));
  }
}

void Engine::Impl::failAll(const Error& error, bool report) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_) {
      failed_ = error;
      first = true;
    }
  }
  if (first && report && opt_.on_failure) opt_.on_failure(error);
  if (!dead_) {
    for (transport::Transport* t : active_) t->abort(error.what());
    // A transport tells its peers in progress() (a verbs goodbye, a socket closed): drive each
    // once more, or a peer that waits on this rank learns of the abort only at its deadline.
    std::vector<transport::Completion> ignored;  // every op fails below
    for (transport::Transport* t : active_) (void)t->progress(&ignored, Clock::now());
  }
  dead_ = true;
  Error e = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return *failed_;
  }();
  std::map<uint64_t, Op> ops;
  ops.swap(ops_);
  for (auto& [id, op] : ops) op.msg.work->complete(Error(e.code(), op.msg.what + ": " + e.what()));
  (void)matcher_.takeAllPosted();  // inbound_ stays: an aborted transport may still hold its buffers
  outstanding_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed_all_ = true;
  }
  failed_all_cv_.notify_all();
}

}  // namespace coll::p2p
