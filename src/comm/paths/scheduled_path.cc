#include "comm/paths/scheduled_path.h"

#include <algorithm>
#include <cstring>

#include "algorithms/direct_collectives.h"
#include "base/log.h"
#include "base/wire_tag.h"
#include "comm/call_check.h"
#include "exec/result_window.h"
#include "select/autotune.h"
#include "topology/topology_exchange.h"

namespace coll {
namespace {

// Ops this big wait on sockets without polling first (Config::socket_spin_us): a wake-up is
// small beside their transfer, and a rank polling for the next chunk of a long transfer takes
// the core from ranks still computing. Measured on netcluster 4 x 1 at 1 Gbit/s, 4 ranks on 2
// cores (bench/scripts/cluster_jobs.py trainer, CPU-bound backward, 9 MiB buckets): polling
// during every op made the overlapped step 0.896-0.939 of the single all-reduce's against
// 0.888-0.892 without, and the backward 129-138 ms against 111-114.
constexpr size_t kBandwidthBoundBytes = 256 << 10;

// Autotune's messages carry a wire kind of their own so they can never be taken for an op's.
constexpr uint8_t kTuneWireKind = 0xB1;

}  // namespace

ScheduledPath::ScheduledPath(int rank, int size, const Config& config, const bootstrap::HostGrouping& hosts,
                             transport::TransportSet& transports, Ledger& ledger)
    : rank_(rank), size_(size), config_(config), hosts_(hosts), transports_(transports), ledger_(ledger) {}

ScheduledPath::~ScheduledPath() = default;

Status ScheduledPath::init(bootstrap::StoreClient& store, const std::string& key_prefix,
                           std::vector<select::AlgoRule> rules) {
  topology::TopologyOptions options{config_.probe && size_ > 1, config_.topo_file, config_.topo_dump_file};
  topology::ProbeContext ctx{rank_, &store, key_prefix, transport::Clock::now() + config_.timeout,
                             [this](const algo::Schedule& s, ExecContext& c) { return runSchedule(s, c); },
                             [this](int peer) { releaseBuffers(peer); }};
  topology::Topology topo;
  COLL_RETURN_IF_ERROR(topology::buildJobTopology(options, ctx, hosts_, &topo));
  // A measured rate only (the probe's or a file's), not the default COLL_PROBE=0 leaves.
  if (topo.numHosts() > 1 && topo.inter.source.rfind("default", 0) != 0) transports_.adviseLinkRate(topo.inter.beta_Bps);
  const std::string hash = topo.layoutHash();
  selector_ = std::make_unique<select::Selector>(std::move(rules), std::move(topo), config_.slice_bytes);
  selector_->setDeterministic(config_.deterministic);
  selector_->setGrowingSlices(config_.slice_bytes_auto && hosts_.ranks_of_host.size() > 1);
  if (!config_.tune || size_ == 1) return Status::ok();
  select::TuningTable table;
  COLL_RETURN_IF_ERROR(select::autotune(ctx, select::defaultTuningPath(config_.tune_file, hash), hash,
                                        [this](const algo::AlgorithmInfo& a, size_t bytes, double* s) {
                                          return timedAllreduce(a, bytes, s);
                                        }, &table));
  selector_->setTuning(std::move(table));
  return Status::ok();
}

// One f32 sum all-reduce with a given algorithm, for autotuning (init thread).
Status ScheduledPath::timedAllreduce(const algo::AlgorithmInfo& algorithm, size_t bytes, double* seconds) {
  algo::BuildParams p = buildParams(OpRequest{});  // f32 sum, in place
  p.root = 0;
  p.count = bytes / sizeof(float);
  workspace_.grow(bytes);
  // Zeros, not whatever was there before: no NaN or denormal in the timing.
  if (bytes > 0) std::memset(workspace_.data(), 0, bytes);
  ExecContext ctx;
  ctx.ops.push_back({workspace_.data(), workspace_.data(), wireTag(tune_sequence_++, kTuneWireKind)});
  ctx.type = DataType::f32;
  auto t0 = transport::Clock::now();
  Status st = runSchedule(algorithm.build(p), ctx);
  *seconds = std::chrono::duration<double>(transport::Clock::now() - t0).count();
  if (!st) return Status(st.code(), format("autotune allreduce (%s, %s) on rank %d: %s", algorithm.name,
                                           formatBytes(bytes).c_str(), rank_, st.message().c_str()), st.peer());
  return st;
}

// Maps the op onto a schedule's two buffers (workspace where the user's buffer is not the
// place to reduce in), builds the schedule the selector picks, and runs it.
Status ScheduledPath::run(const OpRequest& issued, RunReport* report) {
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
    return runGroup(op, &report->algorithm);
  }
  OpPlan plan;
  const CachedSchedule* cached = scheduleFor(op, &plan);
  report->algorithm = cached->schedule.algorithm;
  COLL_RETURN_IF_ERROR(begin(issued, cached->schedule.algorithm, &report->refused));
  return runScheduled(*cached, op, messageTag(issued, cached->schedule.algorithm), plan);
}

Status ScheduledPath::runHost(const OpRequest& op, uint64_t tag, std::string* algorithm) {
  if (op.kind == OpKind::group) return runGroup(op, algorithm);
  OpPlan plan;
  const CachedSchedule* cached = scheduleFor(op, &plan);
  *algorithm = cached->schedule.algorithm;
  return runScheduled(*cached, op, tag, plan);
}

Status ScheduledPath::begin(const OpRequest& issued, const std::string& algorithm, bool* refused) {
  const bool collective = !isPointToPoint(issued.kind);
  OpFingerprint fingerprint = OpFingerprint::of(issued, algorithm);
  ledger_.started({issued.work->sequence, collective ? issued.wire_sequence : kNotCollective, fingerprint});
  if (!config_.check || !collective || size_ == 1) return Status::ok();
  return checkCall(fingerprint, issued.wire_sequence, buildParams(issued), *selector_,
                   [this](const algo::Schedule& s, ExecContext& ctx) { return runSchedule(s, ctx); }, refused);
}

algo::BuildParams ScheduledPath::buildParams(const OpRequest& op) const {
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

const CachedSchedule* ScheduledPath::scheduleFor(const OpRequest& op, OpPlan* plan) {
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
    workspace_.grow(plan->workspace_bytes);
    plan->output = workspace_.data();
  }
  p.count = plan->total_count;
  p.in_place = plan->in_place;
  // No larger than the op: a schedule's receive slots are a slice each (depth x slice of scratch),
  // and an op smaller than a slice runs as one slice either way. Unclamped, the 32 KiB
  // all-reduce all_reduce_perf gathers its rank lines with took 3.5 MiB of scratch at 128 ranks.
  p.slice_bytes = std::min(selector_->sliceBytes(op.bytes()), std::max(p.count, size_t{1}) * p.elem_size);
  const algo::AlgorithmInfo* chosen = selector_->choose(plan->collective, op.bytes(), p.elem_size, true).algorithm;
  ScheduleKey key{chosen, op.kind, p.count, p.elem_size, p.root, p.in_place, p.average};
  return &schedules_.get(key, [&] { return chosen->build(p); });
}

Status ScheduledPath::runScheduled(const CachedSchedule& cached, const OpRequest& op, uint64_t tag,
                                   const OpPlan& plan) {
  ExecContext& ctx = op_ctx_;
  ctx.ops.clear();
  ctx.ops.push_back({plan.input, plan.output, tag});
  const bool direct = resultGoesDirect(cached, op, plan);
  if (direct) {
    ctx.ops[0].result = static_cast<char*>(plan.result_destination);
    ctx.ops[0].result_at = plan.result_offset;
    ctx.ops[0].result_bytes = plan.result_bytes;
  }
  ctx.type = op.type;
  ctx.op = op.op;
  prepare(ctx);
  ctx.stream_receives = op.bytes() >= config_.stream_bytes;
  if (op.bytes() >= kBandwidthBoundBytes) ctx.spin = {};
  COLL_RETURN_IF_ERROR(coll::execute(cached.schedule, cached.plan, ctx, &exec_state_));
  // A count-0 op leaves the workspace unallocated (data() may be null), and memcpy from a null
  // pointer is undefined even for 0 bytes (UBSan: reduceScatter with count 0).
  if (!direct && plan.result_destination && plan.result_bytes > 0)
    std::memcpy(plan.result_destination, workspace_.data() + plan.result_offset, plan.result_bytes);
  return Status::ok();
}

// A reduce-scatter reduces in a workspace and keeps one chunk of it. Where no step straddles
// that chunk's edges, the chunk is reduced straight into the caller's buffer instead, which
// saves copying it out after the op (at 256 MiB on 4 x 1 hosts, 5 % of the CPU the op took)
// and the workspace's pages for it. In place (the chunk is the caller's own chunk of the
// input) only where the schedule reads each input byte there just once, as it writes the
// result over it (exec/result_window.h); any other overlap of input and output goes through
// the workspace.
bool ScheduledPath::resultGoesDirect(const CachedSchedule& cached, const OpRequest& op, const OpPlan& plan) const {
  if (!plan.result_destination || plan.result_bytes == 0) return false;
  const auto out = reinterpret_cast<uintptr_t>(plan.result_destination);
  const auto in = reinterpret_cast<uintptr_t>(op.input);
  const size_t in_bytes = plan.result_bytes * static_cast<size_t>(size_);
  if (cached.result_window_fits < 0)
    cached.result_window_fits = windowFits(cached.schedule, plan.result_offset, plan.result_bytes) ? 1 : 0;
  if (cached.result_window_fits != 1) return false;
  if (!in || out >= in + in_bytes || in >= out + plan.result_bytes) return true;  // no overlap
  if (out != in + plan.result_offset) return false;
  if (cached.result_over_input < 0)
    cached.result_over_input = windowMayOverwriteInput(cached.schedule, plan.result_offset, plan.result_bytes) ? 1 : 0;
  return cached.result_over_input == 1;
}

// Every member's schedule side by side in one, so a rank's grouped sends and receives make
// progress together (a ring of ranks that all send before they receive cannot deadlock).
Status ScheduledPath::runGroup(const OpRequest& group, std::string* algorithm) {
  algo::BuildParams p = buildParams(group);
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
  return runSchedule(fused, ctx);
}

Status ScheduledPath::runSchedule(const algo::Schedule& schedule, ExecContext& ctx) {
  prepare(ctx);
  return coll::execute(schedule, ctx);
}

// What the start-up probe's large transfers took from buffers shared with `peer` (init thread).
void ScheduledPath::releaseBuffers(int peer) {
  transport::Connection* conn = nullptr;
  transport::Transport* via = nullptr;
  if (transports_.connect(peer, transport::Clock::now() + config_.timeout, &conn, &via)) conn->releaseIdleBuffers();
}

void ScheduledPath::prepare(ExecContext& ctx) {
  ctx.nranks = size_;
  ctx.deadline = transport::Clock::now() + config_.timeout;
  ctx.scratch = &scratch_;
  ctx.spin = std::chrono::microseconds(config_.socket_spin_us);
  ctx.connect = [this, &ctx](int peer, transport::Connection** conn, transport::Transport** via) {
    return transports_.connect(peer, ctx.deadline, conn, via);
  };
}

}  // namespace coll
