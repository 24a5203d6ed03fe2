#include "comm/communicator_impl.h"

#include <unistd.h>

#include <cstring>

#include "algorithms/catalog.h"
#include "algorithms/direct_collectives.h"
#include "algorithms/patterns/ring.h"
#include "bootstrap/roll_call.h"
#include "comm/call_check.h"
#include "comm/device_request.h"
#include "cuda/runtime.h"
#include "comm/launcher_lifeline.h"
#include "exec/executor.h"
#include "base/log.h"
#include "base/wire_tag.h"
#include "comm/shrink.h"
#include "comm/stall_report.h"
#include "topology/autotune.h"
#include "topology/topology_exchange.h"

namespace coll {
namespace {

// Ops this big wait on sockets without polling first (Config::socket_spin_us): a wake-up is
// small beside their transfer, and a rank polling for the next chunk of a long transfer takes
// the core from ranks still computing. Measured on netcluster 4 x 1 at 1 Gbit/s, 4 ranks on 2
// cores (bench/scripts/trainer_overlap.sh, CPU-bound backward, 9 MiB buckets): polling during
// every op made the overlapped step 0.896-0.939 of the single all-reduce's against 0.888-0.892
// without, and the backward 129-138 ms against 111-114.
constexpr size_t kBandwidthBoundBytes = 256 << 10;

}  // namespace

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
  impl->store_server_ = std::move(inherited_store);
  const Config& config = impl->config_;  // the global one, with the caller's timeout
  if (impl->secret_.empty())
    return invalidArgument("no job secret: set COLL_JOB_SECRET (collrun and collGetUniqueId make one)");
  setLogRank(options.rank);
  watchLauncher(config.launcher_fd);  // before any wait: a dead collrun must not be waited for
  std::vector<topology::AlgoRule> rules;
  COLL_RETURN_IF_ERROR(topology::parseAlgoOverride(config.algo, &rules));  // before anyone waits on us
  COLL_RETURN_IF_ERROR(impl->connectStore(options));
  // Launch mistakes (a duplicate rank, a disagreeing world size, a rank that never starts)
  // are named here, on every rank, before they can surface as something else.
  bootstrap::RollCall roll{impl->rank_, impl->size_,
                           options.store ? std::string("the store") : "the store at " + options.store_address,
                           impl->store_server_ != nullptr, impl->storeConnector(options)};
  COLL_RETURN_IF_ERROR(bootstrap::rollCall(*impl->store_, impl->key_prefix_, roll, transport::Clock::now() + config.timeout));
  COLL_RETURN_IF_ERROR(LedgerResponder::start(impl->storeConnector(options), impl->key_prefix_, &impl->ledger_,
                                              transport::Clock::now() + config.timeout, &impl->responder_));
  auto deadline = transport::Clock::now() + config.timeout;
  COLL_RETURN_IF_ERROR(topology::exchangeHostIds(*impl->store_, impl->key_prefix_, impl->rank_, impl->size_,
                                                 topology::localHostId(config.host_id, impl->rank_), deadline, &impl->hosts_));
  if (impl->local_rank_ < 0) impl->local_rank_ = impl->hosts_.local_rank;
  transport::PeerDirectory dir{impl->rank_, impl->size_, impl->secret_, impl->key_prefix_, impl->store_.get(),
                               impl->store_host_};
  COLL_RETURN_IF_ERROR(transport::createTransports(config, dir, impl->hosts_, &impl->transports_));
  COLL_RETURN_IF_ERROR(impl->startP2p(options, dir));
  COLL_RETURN_IF_ERROR(impl->connectNeighbours());
  COLL_RETURN_IF_ERROR(impl->initSelector(std::move(rules)));
  impl->findBoard();
  // Nobody leaves init before everybody is connected, so rank 0 may stop serving the store
  // without stranding a late rank.
  COLL_RETURN_IF_ERROR(impl->store_->barrier(impl->key_prefix_ + "init", impl->size_,
                                             transport::Clock::now() + config.timeout));
  if (config.inline_ops) impl->link_->driver = impl.get();
  // Every op ends by COLL_TIMEOUT from its start; the margin covers what an op does around its
  // transfers (the ledger's question, closing connections) and a loaded machine.
  const auto timeout_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(config.timeout).count();
  impl->link_->stall_limit_ns = timeout_ns + std::max<int64_t>(timeout_ns / 2, 5'000'000'000);
  impl->link_->beat();
  impl->thread_ = std::thread([p = impl.get()] { p->progressLoop(); });
  COLL_INFO("INIT", "rank %d of %d ready", impl->rank_, impl->size_);
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

// The topology (probed over the connections just made, or loaded) and the selector over it;
// under COLL_TUNE, the tuned choices too. Init thread, before the progress thread exists.
Status CommunicatorImpl::initSelector(std::vector<topology::AlgoRule> rules) {
  topology::TopologyOptions options{config_.probe && size_ > 1, config_.topo_file, config_.topo_dump_file};
  topology::ProbeContext ctx{rank_, store_.get(), key_prefix_, transport::Clock::now() + config_.timeout,
                             [this](const algo::Schedule& s, ExecContext& c) { return runContext(s, c); }};
  topology::Topology topo;
  COLL_RETURN_IF_ERROR(topology::buildJobTopology(options, ctx, hosts_, &topo));
  const std::string hash = topo.layoutHash();
  selector_ = std::make_unique<topology::Selector>(std::move(rules), std::move(topo), config_.slice_bytes);
  selector_->setDeterministic(config_.deterministic);
  selector_->setGrowingSlices(config_.slice_bytes_auto && hosts_.ranks_of_host.size() > 1);
  if (!config_.tune || size_ == 1) return Status::ok();
  topology::TuningTable table;
  COLL_RETURN_IF_ERROR(topology::autotune(ctx, topology::defaultTuningPath(config_.tune_file, hash), hash,
                                          [this](const algo::AlgorithmInfo& a, size_t bytes, double* s) {
                                            return timedAllreduce(a, bytes, s);
                                          }, &table));
  selector_->setTuning(std::move(table));
  return Status::ok();
}

// One f32 sum all-reduce with a given algorithm, for autotuning (init thread). Its messages
// carry a wire kind of their own so they can never be taken for an op's.
constexpr uint8_t kTuneWireKind = 0xB1;

Status CommunicatorImpl::timedAllreduce(const algo::AlgorithmInfo& algorithm, size_t bytes, double* seconds) {
  algo::BuildParams p;
  p.rank = rank_;
  p.nranks = size_;
  p.count = bytes / sizeof(float);
  p.elem_size = sizeof(float);
  p.slice_bytes = config_.slice_bytes;
  p.pipeline_depth = config_.pipeline_depth;
  p.hosts = &hosts_.ranks_of_host;
  if (workspace_.size() < bytes) workspace_.resize(bytes);
  ExecContext ctx;
  ctx.ops.push_back({workspace_.data(), workspace_.data(), wireTag(tune_sequence_++, kTuneWireKind)});
  ctx.type = DataType::f32;
  auto t0 = transport::Clock::now();
  Status st = runContext(algorithm.build(p), ctx);
  *seconds = std::chrono::duration<double>(transport::Clock::now() - t0).count();
  if (!st) return Status(st.code(), format("autotune allreduce (%s, %s) on rank %d: %s", algorithm.name,
                                           formatBytes(bytes).c_str(), rank_, st.message().c_str()), st.peer());
  return st;
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
  if (trace_) {
    if (Status st = trace_->write(); !st) COLL_WARN("INIT", "%s", st.message().c_str());
    else COLL_INFO("INIT", "op trace written to %s", trace_->path().c_str());
  }
  ledger_.setPointToPoint(nullptr);  // the responder may still read the ledger
  p2p_.reset();
  responder_.reset();  // before the store server (rank 0's) goes
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
  op.work = newWorkState(op);
  op.work->sequence = next_sequence_++;
  op.work->op_name = toString(op.kind);
  if (op.work->link != link_) op.work->link = link_;  // a reused state (newWorkState) has it: no refcount traffic
  op.work->watched = !takesP2pEngine(op);  // the engine bounds its own ops
  // queued_ns is set by push() from the clock read it makes anyway: an op the board finishes
  // inline is never queued, and the watchdog never looks at it.
  // Collectives are numbered per communicator; point-to-point per peer and direction, since
  // only the two ranks involved count it (pipeline stages issue different numbers of them) and
  // my n-th send to p meets p's n-th receive from me, whatever else either of us exchanged.
  op.wire_sequence = isPointToPoint(op.kind) ? p2p_sequence_[2 * op.root + (op.kind == OpKind::send ? 1 : 0)]++
                                             : collective_sequence_++;
  if (!isPointToPoint(op.kind)) ledger_.issued(collective_sequence_);
  if (takesP2pEngine(op) && group_depth_ == 0) {
    Work work(op.work);
    std::vector<OpRequest> one;
    one.push_back(std::move(op));
    postP2p(std::move(one));
    return work;
  }
  if (group_depth_ > 0) {  // held back until groupEnd releases the whole group at once
    Work work(op.work);
    op.work->queued_ns = detail::DriverLink::nowNs();
    group_.push_back(std::move(op));
    return work;
  }
  if (op.device >= 0 && op.stream) return enqueueOnStream(std::move(op));
  Work work;
  if (!runNowOnBoard(op, &work)) {
    work = Work(op.work);
    push(std::move(op));
  }
  return work;
}

// An op on device buffers with a stream: the stream waits for it (stream_gate.h).
Work CommunicatorImpl::enqueueOnStream(OpRequest&& op) {
  Work work(op.work);
  // cuda_ipc ops on a stream complete before the call returns (cuda/device_ops.h says why).
  const bool finish_now = cuda::takesIpcPath(op, size_, hosts_.num_hosts == 1, config_);
  OpRequest held;  // what holdStreams() needs, after op has moved into the queue
  held.device = op.device;
  held.stream = op.stream;
  held.work = op.work;
  push(std::move(op));
  if (finish_now) {
    work.wait();
    return work;
  }
  Status st = holdStreams(held, stream_gate_);
  if (!st) throw st.toError(format("%s (rank %d)", held.work->op_name, rank_));
  return work;
}

void CommunicatorImpl::setAlgorithms(const std::string& text) {
  refuseInForkedChild("setAlgorithms");
  std::vector<topology::AlgoRule> rules;
  Status st = topology::parseAlgoOverride(text, &rules);
  if (!st) throw Error(ErrorCode::InvalidArgument, format("setAlgorithms(\"%s\"): %s", text.c_str(), st.message().c_str()));
  std::lock_guard<std::mutex> engine(engine_mu_);  // a running op finishes under the rules it began with
  size_t queued = queued_.load();
  if (queued > 0)
    throw Error(ErrorCode::InvalidArgument,
                format("setAlgorithms(\"%s\"): %zu op(s) of this communicator still queued; wait on them first, so "
                       "that every rank switches between the same two ops", text.c_str(), queued));
  selector_->setRules(std::move(rules));
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
    if (takesP2pEngine(*it)) {
      host.push_back(std::move(*it));
      it = group_.erase(it);
    } else {
      ++it;
    }
  }
  if (!host.empty()) postP2p(std::move(host));
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
  st = holdStreams(held, stream_gate_);
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
  entry.sequence = op.work->sequence;
  return Error(error.code(), std::string(error.what()) + "; " + describeStall(entry, rank_, answers, hosts_.host_of_rank));
}

void CommunicatorImpl::closeConnectionsNow(const std::string& reason) {
  transports_.abort(reason);
  std::vector<transport::Completion> ignored;
  for (auto& t : transports_.owned) (void)t->progress(&ignored, transport::Clock::now());
}

// Maps the op onto a schedule's two buffers (workspace where the user's buffer is not the
// place to reduce in), builds the schedule the selector picks, and runs it. Device buffers
// go to the device path (src/cuda/device_ops.h), which comes back through runHost().
Status CommunicatorImpl::execute(const OpRequest& issued, std::string* algorithm, bool* refused) {
  if (issued.device >= 0) return executeOnDevice(issued, algorithm, refused);
  if (onBoard(issued)) return runOnBoard(issued, algorithm, refused);
  OpRequest op = issued;
  if (op.kind == OpKind::barrier) {  // a 1-byte all-reduce: nobody leaves before all arrived
    op.kind = OpKind::allreduce;
    op.input = op.output = barrier_byte_;
    op.count = 1;
    op.type = DataType::u8;
    op.op = ReduceOp::max;
  }
  if (op.kind == OpKind::group) {
    ledger_.started({issued.work->sequence, kNotCollective, OpFingerprint::of(issued, "")});
    return executeGroup(op, buildParams(op), algorithm);
  }
  OpPlan plan;
  const CachedSchedule* cached = scheduleFor(op, &plan);
  *algorithm = cached->schedule.algorithm;
  COLL_RETURN_IF_ERROR(beginOp(issued, cached->schedule.algorithm, refused));
  return runScheduled(*cached, op, messageTag(issued, cached->schedule.algorithm), plan);
}

Status CommunicatorImpl::executeOnDevice(const OpRequest& issued, std::string* algorithm, bool* refused) {
  if (!device_ops_) {
    cuda::DeviceEnv env;
    env.rank = rank_;
    env.size = size_;
    env.one_host = hosts_.num_hosts == 1;
    env.config = config_;
    env.run_host = [this](const OpRequest& host_op, uint64_t tag, std::string* alg) { return runHost(host_op, tag, alg); };
    device_ops_ = std::make_unique<cuda::DeviceOps>(std::move(env));
  }
  *algorithm = device_ops_->pathFor(issued);
  const uint64_t tag = messageTag(issued, *algorithm);
  if (issued.kind == OpKind::group) ledger_.started({issued.work->sequence, kNotCollective, OpFingerprint::of(issued, "")});
  else COLL_RETURN_IF_ERROR(beginOp(issued, *algorithm, refused));
  return device_ops_->execute(issued, tag, algorithm);
}

// An op on host buffers, for the device path: no ledger entry or call check of its own (the
// device op it serves had them).
Status CommunicatorImpl::runHost(const OpRequest& op, uint64_t tag, std::string* algorithm) {
  if (op.kind == OpKind::group) return executeGroup(op, buildParams(op), algorithm);
  OpPlan plan;
  const CachedSchedule* cached = scheduleFor(op, &plan);
  *algorithm = cached->schedule.algorithm;
  return runScheduled(*cached, op, tag, plan);
}

algo::BuildParams CommunicatorImpl::buildParams(const OpRequest& op) const {
  algo::BuildParams p;
  p.rank = rank_;
  p.nranks = size_;
  p.elem_size = sizeOf(op.type);
  p.average = op.op == ReduceOp::avg;
  p.root = op.root;
  p.slice_bytes = config_.slice_bytes;
  p.pipeline_depth = config_.pipeline_depth;
  p.hosts = &hosts_.ranks_of_host;
  return p;
}

const CachedSchedule* CommunicatorImpl::scheduleFor(const OpRequest& op, OpPlan* plan) {
  algo::BuildParams p = buildParams(op);
  if (isPointToPoint(op.kind)) {
    plan->input = op.input;
    plan->output = op.output;
    p.count = op.count;
    ScheduleKey key{nullptr, op.kind, op.count, p.elem_size, op.root, false, false};
    return &schedules_.get(key, [&] { return op.kind == OpKind::send ? algo::buildSend(p) : algo::buildRecv(p); });
  }
  *plan = planOp(op, rank_, size_);
  if (!plan->output) {
    if (workspace_.size() < plan->workspace_bytes) workspace_.resize(plan->workspace_bytes);
    plan->output = workspace_.data();
  }
  p.count = plan->total_count;
  p.in_place = plan->in_place;
  p.slice_bytes = selector_->sliceBytes(op.bytes());
  const algo::AlgorithmInfo* chosen = selector_->choose(plan->collective, op.bytes(), p.elem_size).algorithm;
  ScheduleKey key{chosen, op.kind, p.count, p.elem_size, p.root, p.in_place, p.average};
  return &schedules_.get(key, [&] { return chosen->build(p); });
}

Status CommunicatorImpl::runScheduled(const CachedSchedule& cached, const OpRequest& op, uint64_t tag,
                                      const OpPlan& plan) {
  COLL_RETURN_IF_ERROR(run(cached, op, tag, plan.input, plan.output));
  // A count-0 op leaves the workspace unallocated (data() may be null), and memcpy from a null
  // pointer is undefined even for 0 bytes (UBSan: reduceScatter with count 0).
  if (plan.result_destination && plan.result_bytes > 0)
    std::memcpy(plan.result_destination, workspace_.data() + plan.result_offset, plan.result_bytes);
  return Status::ok();
}

// Records the op in the ledger and, under COLL_CHECK, compares the call with every rank's
// before any of its data moves (a disagreement sets *refused: nothing was sent).
Status CommunicatorImpl::beginOp(const OpRequest& issued, const std::string& algorithm, bool* refused) {
  const bool collective = !isPointToPoint(issued.kind);
  OpFingerprint fingerprint = OpFingerprint::of(issued, algorithm);
  ledger_.started({issued.work->sequence, collective ? issued.wire_sequence : kNotCollective, fingerprint});
  if (!config_.check || !collective || size_ == 1) return Status::ok();
  algo::BuildParams p = buildParams(issued);
  return checkCall(fingerprint, issued.wire_sequence, p, *selector_,
                   [this](const algo::Schedule& s, ExecContext& ctx) { return runContext(s, ctx); }, refused);
}

// Every member's schedule side by side in one, so a rank's grouped sends and receives make
// progress together (a ring of ranks that all send before they receive cannot deadlock).
Status CommunicatorImpl::executeGroup(const OpRequest& group, algo::BuildParams p, std::string* algorithm) {
  std::vector<algo::Schedule> parts;
  ExecContext ctx;
  for (const OpRequest& m : *group.members) {
    p.root = m.root;
    p.count = m.count;
    p.elem_size = sizeOf(m.type);
    parts.push_back(m.kind == OpKind::send ? algo::buildSend(p) : algo::buildRecv(p));
    ctx.ops.push_back({m.input, m.output, messageTag(m, "")});
  }
  algo::Schedule fused = algo::fuseSchedules(std::move(parts));
  *algorithm = fused.algorithm;
  return runContext(fused, ctx);
}

Status CommunicatorImpl::run(const CachedSchedule& cached, const OpRequest& op, uint64_t tag, const void* input,
                             void* output) {
  ExecContext& ctx = op_ctx_;
  ctx.ops.clear();
  ctx.ops.push_back({input, output, tag});
  ctx.type = op.type;
  ctx.op = op.op;
  prepareContext(ctx);
  ctx.stream_receives = op.bytes() >= config_.stream_bytes;
  if (op.bytes() >= kBandwidthBoundBytes) ctx.spin = {};
  return coll::execute(cached.schedule, cached.plan, ctx, &exec_state_);
}

Status CommunicatorImpl::runContext(const algo::Schedule& schedule, ExecContext& ctx) {
  prepareContext(ctx);
  return coll::execute(schedule, ctx);
}

void CommunicatorImpl::prepareContext(ExecContext& ctx) {
  ctx.nranks = size_;
  ctx.deadline = transport::Clock::now() + config_.timeout;
  ctx.scratch = &scratch_;
  ctx.spin = std::chrono::microseconds(config_.socket_spin_us);
  ctx.connect = [this, &ctx](int peer, transport::Connection** conn, transport::Transport** via) {
    return transports_.connect(peer, ctx.deadline, conn, via);
  };
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_error_) first_error_ = error;
    failed_.store(true, std::memory_order_release);
    pending.swap(queue_);
    queued_.store(0, std::memory_order_relaxed);
  }
  transports_.abort(format("rank %d aborted after: %s", rank_, error.what()));
  if (p2p_) p2p_->abort(format("rank %d aborted after: %s", rank_, error.what()));
  {
    // After abort(): the progress() this wakes must see the transport aborted.
    std::lock_guard<std::mutex> lock(mu_);
    close_pending_ = true;
  }
  queue_cv_.notify_all();
  for (OpRequest& op : pending)
    complete(op, Error(error.code(), opLabel(op, "") + ": communicator already failed: " + error.what()));
}

void CommunicatorImpl::abort(const std::string& reason) {
  if (inForkedChild()) {  // aborting would close the parent's connections under it: nothing to do here
    COLL_WARN("INIT", "abort() in a forked child (pid %d) ignored: the communicator belongs to pid %d",
              static_cast<int>(::getpid()), static_cast<int>(created_.pid));
    return;
  }
  fail(Error(ErrorCode::PeerLost, format("rank %d: %s", rank_, reason.c_str())));
}

std::optional<Error> CommunicatorImpl::asyncError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

std::string CommunicatorImpl::describe() const {
  return format("rank %d of %d (local rank %d of %d, %d host(s)): %s", rank_, size_, local_rank_, hosts_.local_size,
                hosts_.num_hosts, transports_.summary(rank_).c_str());
}

}  // namespace coll
