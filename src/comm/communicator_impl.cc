#include "comm/communicator_impl.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "algorithms/patterns/ring.h"
#include "base/descriptor_limit.h"
#include "base/log.h"
#include "bootstrap/roll_call.h"
#include "comm/device_request.h"
#include "comm/launcher_lifeline.h"
#include "comm/p2p_config.h"
#include "comm/shrink.h"
#include "comm/stall_report.h"
#include "cuda/runtime.h"

namespace coll {
CommunicatorImpl::CommunicatorImpl(const CommOptions& options, const Config& config)
    : config_(config), rank_(options.rank), size_(options.size), local_rank_(options.local_rank),
      key_prefix_("coll/" + options.name + "/"), secret_(options.secret.empty() ? config.job_secret : options.secret),
      ledger_(options.rank) {
  if (options.timeout.count() > 0) config_.timeout = options.timeout;
  options_ = options;
  options_.secret = secret_;
  options_.timeout = config_.timeout;
  if (!config_.trace_file.empty()) trace_ = std::make_unique<OpTrace>(config_.trace_file, options.name, rank_, size_);
  gpu_present_ = cuda::gpuPresent();
}

Status CommunicatorImpl::create(const CommOptions& options, const Config& global,
                                std::unique_ptr<CommunicatorImpl>* out,
                                std::shared_ptr<bootstrap::StoreServer> inherited_store) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size)
    return invalidArgument(format("rank %d / size %d is not a valid position", options.rank, options.size));
  if (!global.problems.empty()) {
    std::string all;
    for (const std::string& p : global.problems) all += (all.empty() ? "" : "; ") + p;
    return invalidArgument("bad environment: " + all);
  }
  std::unique_ptr<CommunicatorImpl> impl(new CommunicatorImpl(options, global));
  StartupReport& startup = impl->startup_;
  impl->store_server_ = std::move(inherited_store);
  const Config& config = impl->config_;  // the global one, with the caller's timeout
  if (impl->secret_.empty())
    return invalidArgument("no job secret: set COLL_JOB_SECRET (collrun and collGetUniqueId make one)");
  setLogRank(options.rank);
  watchLauncher(config.launcher_fd);  // before any wait: a dead collrun must not be waited for
  std::vector<select::AlgoRule> rules;
  COLL_RETURN_IF_ERROR(select::parseAlgoOverride(config.algo, &rules));  // before anyone waits on us
  COLL_RETURN_IF_ERROR(impl->connectStore(options));
  startup.endPhase("store", impl->store_.get());
  // Launch mistakes (a duplicate rank, a disagreeing world size, a rank that never starts)
  // are named here, on every rank, before they can surface as something else.
  bootstrap::RollCall roll{impl->rank_, impl->size_,
                           options.store ? std::string("the store") : "the store at " + impl->options_.store_address,
                           impl->store_server_ != nullptr, impl->storeConnector()};
  COLL_RETURN_IF_ERROR(bootstrap::rollCall(*impl->store_, impl->key_prefix_, roll, transport::Clock::now() + config.timeout));
  startup.endPhase("roll call", impl->store_.get());
  COLL_RETURN_IF_ERROR(LedgerResponder::start(
      impl->storeConnector(), impl->key_prefix_, &impl->ledger_,
      [p = impl.get()](int64_t question, const std::string& why) { p->revokedBy(question, why); },
      transport::Clock::now() + config.timeout, &impl->responder_));
  COLL_RETURN_IF_ERROR(impl->announcePresence());
  startup.endPhase("presence", impl->store_.get(),
                   impl->presence_ ? impl->presence_->traffic() : bootstrap::StoreTraffic{});
  auto deadline = transport::Clock::now() + config.timeout;
  COLL_RETURN_IF_ERROR(bootstrap::exchangeHostIds(*impl->store_, impl->key_prefix_, impl->rank_, impl->size_,
                                                 bootstrap::localHostId(config.host_id, impl->rank_), deadline, &impl->hosts_,
                                                 impl->storeConnector()));
  startup.endPhase("hosts", impl->store_.get());
  if (impl->local_rank_ < 0) impl->local_rank_ = impl->hosts_.local_rank;
  impl->budgetDescriptors();
  transport::PeerDirectory dir{impl->rank_, impl->size_, impl->secret_, impl->key_prefix_, impl->store_.get(),
                               impl->store_host_};
  // The segments hold the point-to-point engine's plane too (P2pPath::start).
  const Config engine_config = p2pConfig(config);
  transport::ShmPlanes planes;
  planes.reserve_second = &engine_config;
  COLL_RETURN_IF_ERROR(transport::createTransports(config, dir, impl->hosts_, &impl->transports_, planes));
  startup.endPhase("transports", impl->store_.get());
  COLL_RETURN_IF_ERROR(impl->startPaths(options, dir, std::move(rules)));
  // Nobody leaves init before everybody is connected, so rank 0 may stop serving the store
  // without stranding a late rank.
  COLL_RETURN_IF_ERROR(impl->store_->barrier(impl->key_prefix_ + "init", impl->size_,
                                             transport::Clock::now() + config.timeout));
  startup.endPhase("barrier", impl->store_.get());
  impl->link_->driver = impl.get();  // waiters drive ops only where config.inline_ops (driveUntilDone)
  // Every op ends by COLL_TIMEOUT from its start; the margin covers what an op does around its
  // transfers (the ledger's question, closing connections) and a loaded machine.
  const auto timeout_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(config.timeout).count();
  impl->link_->stall_limit_ns = timeout_ns + std::max<int64_t>(timeout_ns / 2, 5'000'000'000);
  impl->link_->beat();
  impl->thread_ = std::thread([p = impl.get()] { p->progressLoop(); });
  COLL_INFO("INIT", "rank %d of %d %s", impl->rank_, impl->size_, startup.describe().c_str());
  *out = std::move(impl);
  return Status::ok();
}

Status CommunicatorImpl::shrink(const std::vector<int>& excluded, std::unique_ptr<CommunicatorImpl>* out) {
  refuseInForkedChild("shrink");
  CommOptions plan;
  COLL_RETURN_IF_ERROR(planShrink(options_, rank_, size_, excluded, ++shrinks_, &plan));
  COLL_RETURN_IF_ERROR(agreeOnShrink(*store_, key_prefix_, shrinks_, rank_, size_, excluded,
                                     transport::Clock::now() + config_.timeout));
  COLL_INFO("INIT", "rank %d of %d shrinks to rank %d of %d as '%s'", rank_, size_, plan.rank, plan.size,
            plan.name.c_str());
  return create(plan, config_, out, store_server_);
}

// Open files this rank will hold: what is open now, a point-to-point socket to every peer on
// another host (the engine connects them all), the ring neighbours' streams, store clients,
// listeners and wake sockets, and a margin.
void CommunicatorImpl::budgetDescriptors() {
  std::error_code ec;
  uint64_t open_now = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++open_now;
  const uint64_t remote_peers = static_cast<uint64_t>(size_ - hosts_.local_size);
  const uint64_t needed = open_now + remote_peers + 2 * static_cast<uint64_t>(config_.socket_nstreams) + 16;
  const DescriptorBudget budget = ensureDescriptors(needed);
  const std::string said = describeDescriptors(budget, rank_, size_);
  if (budget.short_of_it) COLL_WARN("INIT", "%s", said.c_str());
  else if (!said.empty()) COLL_INFO("INIT", "%s", said.c_str());
}

// The point-to-point engine first (its transports connect on demand), then the neighbours'
// connections, over which the scheduled path probes the links; the board and device paths
// stand on the scheduled one. Init thread, before the progress thread exists.
Status CommunicatorImpl::startPaths(const CommOptions& options, const transport::PeerDirectory& dir,
                                    std::vector<select::AlgoRule> rules) {
  COLL_RETURN_IF_ERROR(P2pPath::start(config_, dir, hosts_, transports_.shm_files, storeConnector(),
                                      [this](const Error& e) { fail(Error(e.code(), format("rank %d: %s", rank_, e.what()))); },
                                      &p2p_));
  startup_.endPhase("point-to-point", store_.get(), p2p_->startTraffic());
  ledger_.setPointToPoint([p2p = p2p_.get()] { return p2p->describeOutstanding(); });
  COLL_RETURN_IF_ERROR(connectNeighbours());
  startup_.endPhase("neighbours", store_.get());
  scheduled_ = std::make_unique<ScheduledPath>(rank_, size_, config_, hosts_, transports_, ledger_);
  COLL_RETURN_IF_ERROR(scheduled_->init(*store_, key_prefix_, std::move(rules)));
  startup_.endPhase("topology", store_.get());
  device_ = std::make_unique<DevicePath>(rank_, size_, hosts_.num_hosts == 1, config_, *scheduled_, ledger_);
  board_ = std::make_unique<BoardPath>(rank_, size_, config_, transports_, *scheduled_, ledger_, trace_.get());
  paths_ = {p2p_.get(), device_.get(), board_.get(), scheduled_.get()};
  return Status::ok();
}

// The first path that accepts the op; the scheduled path accepts every host op, the device
// path every device op.
ExecutionPath& CommunicatorImpl::pathFor(const OpRequest& op) {
  for (ExecutionPath* path : paths_)
    if (path->accepts(op)) return *path;
  return *scheduled_;
}

Status CommunicatorImpl::connectNeighbours() {
  if (size_ == 1) return Status::ok();
  auto deadline = transport::Clock::now() + config_.timeout;
  transport::Connection* conn = nullptr;
  transport::Transport* via = nullptr;
  COLL_RETURN_IF_ERROR(transports_.connect(algo::ring::left(rank_, size_), deadline, &conn, &via));
  return transports_.connect(algo::ring::right(rank_, size_), deadline, &conn, &via);
}

CommunicatorImpl::~CommunicatorImpl() {
  {
    std::lock_guard<std::mutex> lock(link_->mu);  // waits for a thread driving ops inline
    link_->driver = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sayClosed();
  // Before the paths go: a revoke it is answering fails them. Before the store server too.
  responder_.reset();
  if (trace_) {
    if (Status st = trace_->write(); !st) COLL_WARN("INIT", "%s", st.message().c_str());
    else COLL_INFO("INIT", "op trace written to %s", trace_->path().c_str());
  }
  ledger_.setPointToPoint(nullptr);  // the ledger must not point at a destroyed engine
  p2p_.reset();
}

// A healthy communicator tells its peers' ledger responders that it closed, so they stop polling
// the store (ledger_exchange.h, postClosing); not if a peer already did, nor after a failure,
// when the store may be gone with the failed rank.
void CommunicatorImpl::sayClosed() {
  if (size_ == 1 || failed_ || !responder_ || responder_->peerClosed() || !store_) return;
  constexpr auto kClosingLimit = std::chrono::seconds(2);
  Status st = postClosing(*store_, key_prefix_, rank_, transport::Clock::now() + kClosingLimit);
  if (!st) COLL_INFO("STORE", "rank %d: could not tell the others it closed: %s", rank_, st.message().c_str());
}

// The child has the parent's connections but not its progress thread (see fork_guard.h).
void CommunicatorImpl::refuseInForkedChild(const char* what) const {
  if (!inForkedChild()) return;
  throw Error(ErrorCode::InvalidArgument,
              format("%s (rank %d): called in a forked child (pid %d) of the process that made the communicator "
                     "(pid %d); a communicator cannot cross fork(): make a new one in the child",
                     what, rank_, static_cast<int>(::getpid()), static_cast<int>(created_.pid)));
}

Work CommunicatorImpl::enqueue(OpRequest&& op) {
  refuseInForkedChild(toString(op.kind));
  Status st = validate(op, rank_, size_);
  // Without a GPU, markDevice() only refuses a stream: not a call an op.
  if (st && (gpu_present_ || op.stream)) st = markDevice(op, rank_, size_);
  if (!st) throw st.toError(format("%s (rank %d)", toString(op.kind), rank_));
  if (group_depth_ > 0 && !isPointToPoint(op.kind))
    throw Error(ErrorCode::InvalidArgument, format("%s (rank %d): only send and recv may be issued between groupStart "
                                                   "and groupEnd", toString(op.kind), rank_));
  ExecutionPath& path = pathFor(op);
  op.work = path.newWorkState(op);
  op.work->sequence = next_sequence_++;
  op.work->op_name = toString(op.kind);
  // A p2p op's runner is the engine's thread, whose heartbeat its Work watches.
  const std::shared_ptr<detail::DriverLink>& link = &path == p2p_.get() ? p2p_->watchdog() : link_;
  if (op.work->link != link) op.work->link = link;  // a reused state (newWorkState) has it: no refcount traffic
  op.work->watched = true;
  // queued_ns is set by push() from the clock read it makes anyway: an op a path finishes at
  // issue is never queued, and the watchdog never looks at it.
  // Collectives are numbered per communicator; point-to-point per peer and direction, since
  // only the two ranks involved count it (pipeline stages issue different numbers of them) and
  // my n-th send to p meets p's n-th receive from me, whatever else either of us exchanged.
  op.wire_sequence = isPointToPoint(op.kind) ? p2p_sequence_[2 * op.root + (op.kind == OpKind::send ? 1 : 0)]++
                                             : collective_sequence_++;
  if (!isPointToPoint(op.kind)) ledger_.issued(collective_sequence_);
  if (group_depth_ > 0) {  // held back until groupEnd releases the whole group at once
    Work work(op.work);
    op.work->queued_ns = detail::DriverLink::nowNs();
    group_.push_back(std::move(op));
    return work;
  }
  if (op.device >= 0 && op.stream) return enqueueOnStream(std::move(op));
  Work work;
  Nudge nudge = Nudge::keep_hot;
  if (issueOnPath(path, op, &work, &nudge)) return work;
  work = Work(op.work);
  push(std::move(op), nudge);
  return work;
}

// The path may start or take the op at issue (execution_path.h). True: it did, and *work is
// the op's (a finished op's state moves into it: no reference count traffic).
bool CommunicatorImpl::issueOnPath(ExecutionPath& path, OpRequest& op, Work* work, Nudge* nudge) {
  const uint64_t sequence = op.work->sequence;
  IssueState state;
  std::optional<Error> failed;
  if (failed_.load(std::memory_order_acquire)) {
    failed = firstError();
    state.failed = &*failed;
  }
  std::unique_lock<OwnedMutex> engine;
  if (path.startsAtIssue()) {
    engine = std::unique_lock<OwnedMutex>(engine_mu_, std::try_to_lock);
    if (engine.owns_lock() && !failed && &path == board_.get() && queued_.load(std::memory_order_acquire) > 0)
      catchUpOnBoard();
    state.engine_held = engine.owns_lock();
    state.engine_idle = engine.owns_lock() && queued_.load(std::memory_order_acquire) == 0 && !failed;
  }
  Status failure;
  switch (path.issue(op, state, &failure)) {
    case Issued::queue:
      return false;
    case Issued::queue_quietly:
      *nudge = Nudge::none;
      return false;
    case Issued::queue_behind:
      *nudge = Nudge::wake_if_cold;
      return false;
    case Issued::taken:
      break;
  }
  if (!failure) onFailure(op, failure.toError(opLabel(op, path.name())));
  // Paths leave the state in op: moved into the Work, no reference-count traffic (the board's
  // few hundred nanoseconds notice it). It may be one shared by finished ops (board_path.h).
  *work = Work(std::move(op.work), sequence);
  return true;
}

std::optional<Error> CommunicatorImpl::firstError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

// An op on device buffers with a stream: the stream waits for it (stream_gate.h).
Work CommunicatorImpl::enqueueOnStream(OpRequest&& op) {
  Work work(op.work);
  // cuda_ipc ops on a stream complete before the call returns (cuda/device_ops.h says why).
  const bool finish_now = device_->finishesAtIssue(op);
  OpRequest held;  // what holdStreams() needs, after op has moved into the queue
  held.device = op.device;
  held.stream = op.stream;
  held.work = op.work;
  push(std::move(op));
  if (finish_now) {
    work.wait();
    return work;
  }
  Status st = device_->holdStreams(held);
  if (!st) throw st.toError(format("%s (rank %d)", held.work->op_name, rank_));
  return work;
}

void CommunicatorImpl::setAlgorithms(const std::string& text) {
  refuseInForkedChild("setAlgorithms");
  std::vector<select::AlgoRule> rules;
  Status st = select::parseAlgoOverride(text, &rules);
  if (!st) throw Error(ErrorCode::InvalidArgument, format("setAlgorithms(\"%s\"): %s", text.c_str(), st.message().c_str()));
  std::lock_guard<OwnedMutex> engine(engine_mu_);  // a running op finishes under the rules it began with
  size_t queued = queued_.load();
  if (queued > 0)
    throw Error(ErrorCode::InvalidArgument,
                format("setAlgorithms(\"%s\"): %zu op(s) of this communicator still queued; wait on them first, so "
                       "that every rank switches between the same two ops", text.c_str(), queued));
  scheduled_->setRules(std::move(rules));
  COLL_INFO("TUNE", "algorithm rules for the ops issued from now on: %s",
            text.empty() ? "none (the selector decides)" : text.c_str());
}

void CommunicatorImpl::groupStart() {
  refuseInForkedChild("groupStart");
  ++group_depth_;
}

void CommunicatorImpl::groupEnd() {
  refuseInForkedChild("groupEnd");
  if (group_depth_ == 0) throw Error(ErrorCode::InvalidArgument, format("groupEnd (rank %d) without groupStart", rank_));
  if (--group_depth_ > 0 || group_.empty()) return;
  // Host members go to the p2p engine together; device members run as one op as before.
  std::vector<OpRequest> host;
  for (auto it = group_.begin(); it != group_.end();) {
    if (p2p_->accepts(*it)) {
      host.push_back(std::move(*it));
      it = group_.erase(it);
    } else {
      ++it;
    }
  }
  if (!host.empty()) {
    std::optional<Error> failed = firstError();
    p2p_->post(std::move(host), failed ? &*failed : nullptr);
  }
  if (group_.empty()) return;
  OpRequest group;
  group.kind = OpKind::group;
  group.members = std::make_shared<std::vector<OpRequest>>(std::move(group_));
  group_.clear();
  group.work = std::make_shared<detail::WorkState>();
  group.work->sequence = group.members->front().work->sequence;
  group.work->op_name = "group";
  group.work->link = link_;
  group.work->watched = true;
  group.work->queued_ns = detail::DriverLink::nowNs();
  Status st = markDeviceGroup(group);
  if (!st) throw st.toError(format("groupEnd (rank %d)", rank_));
  OpRequest held;
  held.device = group.device;
  held.members = group.members;
  held.work = group.work;
  push(std::move(group));
  st = device_->holdStreams(held);
  if (!st) throw st.toError(format("groupEnd (rank %d)", rank_));
}

// The first failure asks every rank where it is (the ledger) so the error can say who never
// arrived; the connections close first, so peers stuck in this op fail now, not at their
// deadline, while the question is out.
void CommunicatorImpl::onFailure(OpRequest& op, Error error) {
  if (!asyncError()) {
    closeConnectionsNow(format("rank %d aborted after: %s", rank_, error.what()));
    ledger_.failed(error.what());
    error = withLedger(op, error);
  }
  COLL_WARN("INIT", "%s", error.what());
  fail(error);
  complete(op, error);
}

Error CommunicatorImpl::withLedger(const OpRequest& op, const Error& error) {
  if (size_ == 1) return error;
  // Live peers answer within milliseconds (a parked thread wakes, one store round trip), even
  // 8 ranks on 2 loaded cores; one silent after this long is stopped or dead. Every survivor
  // of a dead rank pays this once, so it is kept short.
  const auto window = std::min<transport::Clock::duration>(std::chrono::milliseconds(250), config_.timeout / 4);
  LedgerSnapshot mine = ledger_.snapshot();
  LedgerEntry entry = mine.current;
  LedgerAnswers answers =
      askLedgers(*store_, key_prefix_, rank_, size_, mine, entry.collective, transport::Clock::now() + window,
                 store_server_ != nullptr);
  COLL_INFO("STORE", "rank %d: ledger question about %s: %d store calls%s", rank_, entry.label().c_str(),
            answers.store_calls, answers.reused ? " (another rank's question, read whole)" : "");
  if (answers.store_problem.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (int r = 0; r < static_cast<int>(answers.of_rank.size()); ++r)
      if (r != rank_ && !answers.of_rank[r]) silent_ranks_.insert(r);
  }
  entry.sequence = op.work->sequence;
  return Error(error.code(), std::string(error.what()) + "; " + describeStall(entry, rank_, answers, hosts_.host_of_rank));
}

void CommunicatorImpl::closeConnectionsNow(const std::string& reason) {
  transports_.abort(reason);
  std::vector<transport::Completion> ignored;
  for (auto& t : transports_.owned) (void)t->progress(&ignored, transport::Clock::now());
}

std::string CommunicatorImpl::opLabel(const OpRequest& op, const std::string& algorithm) const {
  std::string label = format("%s #%llu (", toString(op.kind), static_cast<unsigned long long>(op.work->sequence));
  if (!algorithm.empty()) label += algorithm + ", ";
  label += formatBytes(op.bytes());
  if (isPointToPoint(op.kind)) label += format(", peer %d", op.root);
  else if (op.root >= 0) label += format(", root %d", op.root);
  return label + format(") on rank %d", rank_);
}

// The first error sticks; every queued op fails with it, and closing the connections makes
// the peers fail fast instead of waiting for their own deadline.
void CommunicatorImpl::fail(const Error& error) {
  std::deque<OpRequest> pending;
  markFailed(error, &pending);
  for (OpRequest& op : pending)
    complete(op, Error(error.code(), opLabel(op, "") + ": communicator already failed: " + error.what()));
}

// Work::wait gave up on the wedged progress thread (OpDriver::abandon): fail() without running
// callbacks, since the waiter holds the link's lock. The ops left in the queue fail with `why`
// when the thread returns (runNext sees first_error_); none runs into its buffers.
void CommunicatorImpl::abandon(const Error& why) {
  if (firstError()) return;
  COLL_WARN("INIT", "communicator failed: %s", why.what());
  markFailed(why, nullptr);
}

// fail()'s part that runs no callback: the first error, the transports and paths aborted.
// pending: takes the queued ops (nullptr: they stay, and fail when the progress thread pops them).
void CommunicatorImpl::markFailed(const Error& error, std::deque<OpRequest>* pending) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_error_) first_error_ = error;
    failed_.store(true, std::memory_order_release);
    if (pending) {
      pending->swap(queue_);
      queued_.store(0, std::memory_order_relaxed);
    }
  }
  const std::string reason = format("rank %d aborted after: %s", rank_, error.what());
  transports_.abort(reason);
  for (ExecutionPath* path : paths_) path->abort(reason);
  {
    // After abort(): the progress() this wakes must see the transport aborted.
    std::lock_guard<std::mutex> lock(mu_);
    close_pending_ = true;
  }
  queue_cv_.notify_all();
}

void CommunicatorImpl::abort(const std::string& reason) {
  if (inForkedChild()) {  // aborting would close the parent's connections under it: nothing to do here
    COLL_WARN("INIT", "abort() in a forked child (pid %d) ignored: the communicator belongs to pid %d",
              static_cast<int>(::getpid()), static_cast<int>(created_.pid));
    return;
  }
  fail(Error(ErrorCode::PeerLost, format("rank %d: %s", rank_, reason.c_str())));
  settleAfterAbort();
}

// abort() returns once the ops it failed have finished, so that the caller may free their
// buffers: the op running under the engine stops at its next poll of the aborted transports
// (milliseconds), the p2p engine fails its ops when its thread next looks. Bounded, since the
// thread may be held in a completion callback: after kAbortSettle a warning says that buffers
// may still be in use. A callback that aborts holds the engine itself: the op it ran is done.
void CommunicatorImpl::settleAfterAbort() {
  constexpr auto kAbortSettle = std::chrono::seconds(5);
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::min<std::chrono::steady_clock::duration>(kAbortSettle, config_.timeout);
  bool settled = engine_mu_.heldByThisThread();
  if (!settled) {
    std::unique_lock<OwnedMutex> engine(engine_mu_, deadline);
    settled = engine.owns_lock();
  }
  for (ExecutionPath* path : paths_) settled = path->settle(deadline) && settled;
  if (!settled)
    COLL_WARN("INIT", "abort() on rank %d: an op was still running %.1f s later (its thread is held, perhaps in a "
              "completion callback); its buffers may still be in use", rank_,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

std::optional<Error> CommunicatorImpl::asyncError() const { return firstError(); }

std::string CommunicatorImpl::describe() const {
  return format("rank %d of %d (local rank %d of %d, %d host(s)): %s", rank_, size_, local_rank_, hosts_.local_size,
                hosts_.num_hosts, transports_.summary(rank_).c_str());
}

}  // namespace coll
