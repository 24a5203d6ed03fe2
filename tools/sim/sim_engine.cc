#include "sim_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <deque>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "base/log.h"
#include "exec/schedule_walker.h"
#include "schedule_feed.h"
#include "sim_network.h"
#include "symmetry.h"

namespace coll::sim {
namespace {

using algo::StepKind;
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

constexpr uint8_t kJoin = 0xff;  // the end of one run of a rank's schedule (not a StepKind)
// What one step costs at the peak per run: its record (40 B) and its completion event (16 B,
// while queued); and once per simulated rank, its walk plan (about 28 B, schedule_walker.h)
// and walk state (6 B), beside the plan's dependency edges (4 B each).
constexpr double kBytesPerRunStep = 56;
constexpr double kBytesPerPlanStep = 34;

// kCopies: a send that also writes the output (Step::copy_to_output). kAwaitsReader: a send
// inside a host that did not fit the ring, done only as its receiver reads (Fabric::shm_ring_bytes).
// kSenderCopies: a send inside a host whose sender copies it once (into the ring, or its own
// copy to the output beside a peer's CMA read), on top of the receiver's pass.
enum Flag : uint8_t {
  kArrived = 2, kPosted = 4, kDone = 16, kCopies = 32, kAwaitsReader = 64, kSenderCopies = 128
};

// coll's shared memory reads a message of COLL_SHM_CMA_THRESHOLD's default or more by CMA, the
// sender not copying it, where its timing finds that faster (ShmConnection::sendsByCma): for a
// busy sender (algo::copiesBothWays), and for every sender where ranks queue for cores
// (ClusterModel::contended), whose second copy then has no core to spare. Everything else goes
// through the ring's slots: the sender copies in, the receiver copies (or reduces) out.
constexpr uint32_t kCmaMinBytes = 256 << 10;

// What timing needs of one step in one run: an event touches one record rather than a dozen
// arrays (a simulation of 16,384 ranks holds tens of millions of them). Which step is ready,
// which is posted and which send meets which receive are the walker's (schedule_walker.h).
struct Rec {
  uint32_t bytes = 0;
  int32_t peer = -1;
  int32_t rank = 0;
  uint32_t partner = kNone;  // the matching send or receive
  uint8_t kind = 0;
  uint8_t flags = 0;
  double posted_at = 0, arrives_at = 0;
};

// Every rank's steps, flattened: the runs of a simulated rank follow each other, each its
// schedule's steps and a join; plan[r] is walked by every run of rank r.
struct Steps {
  std::vector<uint32_t> first;       // per rank, and one past the last
  std::vector<uint32_t> run_length;  // per rank: steps in one run of its schedule (its join follows)
  std::vector<Rec> rec;
  std::vector<WalkPlan> plan;        // per simulated rank

  size_t size() const { return rec.size(); }
  size_t memory() const {
    size_t bytes = first.capacity() * 4 + rec.capacity() * sizeof(Rec);
    for (const WalkPlan& p : plan)
      bytes += (p.dep_count.capacity() + p.dependent_begin.capacity() + p.dependents.capacity() +
                p.reduce_after.capacity() + p.reduce_waiter.capacity() + p.step_lane.capacity() +
                p.lane_pos.capacity()) * 4 + p.size() * (4 + 6);
    return bytes;
  }
  int rankOf(uint32_t g) const { return rec[g].rank; }
  // Step i of run k of rank r.
  uint32_t at(int r, int k, uint32_t i) const {
    return first[static_cast<size_t>(r)] + static_cast<uint32_t>(k) * (run_length[static_cast<size_t>(r)] + 1) + i;
  }
};

class Loader {
 public:
  Loader(const ClusterModel& m, Steps* s, int period, int runs) : m_(m), s_(*s), n_(m.topo.nranks), period_(period), runs_(runs) {}

  // Appends `runs` back-to-back runs of a rank's schedule, each followed by a join step that
  // ends the run (the runner's walker says when it is done) and starts the next: the ops of a
  // communicator run one after another on each rank, as a benchmark loop issues them.
  Status add(int rank, const algo::Schedule& sched) {
    const size_t L = sched.steps.size();
    if (s_.size() + (L + 1) * static_cast<size_t>(runs_) >= kNone)
      return invalidArgument("more than 4 billion steps: too large to simulate");
    if (WalkFault f = checkWalkable(sched, rank, n_); f.what)
      return internalError(format("rank %d: step %lld %s", rank, static_cast<long long>(f.step), f.what));
    s_.first.push_back(static_cast<uint32_t>(s_.size()));
    s_.run_length.push_back(static_cast<uint32_t>(L));
    s_.plan.push_back(WalkPlan::of(sched));
    busy_ = algo::copiesBothWays(sched);
    for (int k = 0; k < runs_; ++k) {
      for (const algo::Step& st : sched.steps) COLL_RETURN_IF_ERROR(addStep(rank, st));
      Rec join;
      join.kind = kJoin;
      join.rank = rank;
      s_.rec.push_back(join);
    }
    return Status::ok();
  }

  // Pairs sends with receives by the walker's rule; Internal naming the first pair of ranks
  // whose messages do not match.
  Status pair() {
    s_.first.push_back(static_cast<uint32_t>(s_.size()));
    size_t sends = 0, recvs = 0;
    for (const WalkPlan& p : s_.plan)
      for (const WalkPlan::Lane& lane : p.lanes)
        if (lane.peer >= 0) (lane.sending ? sends : recvs) += lane.steps.size() * static_cast<size_t>(runs_);
    if (sends != recvs) return internalError(format("the schedules post %zu sends but %zu receives", sends, recvs));
    std::vector<const WalkPlan*> plans;
    for (const WalkPlan& p : s_.plan) plans.push_back(&p);
    // A periodic simulation (symmetry.h): rank p stands for its image p mod period, which names
    // rank r as r shifted by as much as p is.
    auto resolve = [this](int r, int p) { return PeerEnd{p % period_, ((r + p % period_ - p) % n_ + n_) % n_}; };
    auto bytes = [this](int r, uint32_t i) { return s_.rec[s_.at(r, 0, i)].bytes; };
    std::optional<LaneMismatch> m = pairMessages(plans, resolve, bytes, [this](int a, uint32_t send, int b, uint32_t recv) {
      for (int k = 0; k < runs_; ++k) {
        s_.rec[s_.at(a, k, send)].partner = s_.at(b, k, recv);
        s_.rec[s_.at(b, k, recv)].partner = s_.at(a, k, send);
      }
    });
    if (!m) return Status::ok();
    if (m->sent != m->received)
      return internalError(format("rank %d sends %zu messages to rank %d, which receives %zu of them", m->from, m->sent,
                                  m->to, m->received));
    return internalError(format("rank %d's messages to rank %d do not match the receives posted for them "
                                "(message #%zu: %zu bytes sent, %zu expected)",
                                m->from, m->to, m->k, m->sent_bytes, m->expected_bytes));
  }

 private:
  Status addStep(int rank, const algo::Step& st) {
    if (st.bytes >= (uint64_t{1} << 32)) return invalidArgument("a message of 4 GiB or more: too large to simulate");
    Rec r;
    r.kind = static_cast<uint8_t>(st.kind);
    r.peer = st.peer;
    r.rank = rank;
    r.bytes = static_cast<uint32_t>(st.bytes);
    if (st.copy_to_output) r.flags |= kCopies;
    if (st.kind == StepKind::send && senderCopies(rank, st)) r.flags |= kSenderCopies;
    s_.rec.push_back(r);
    return Status::ok();
  }

  // Inside a host, with a ring modelled (without one, the transport buffers everything): through
  // the slots, or a CMA read whose sender still writes its own copy of the chunk.
  bool senderCopies(int rank, const algo::Step& st) const {
    if (m_.fabric.shm_ring_bytes <= 0 || st.peer < 0 || st.peer >= n_) return false;
    if (m_.host_of[static_cast<size_t>(rank)] != m_.host_of[static_cast<size_t>(st.peer)]) return false;
    const bool by_cma = (busy_ || m_.contended(false)) && st.bytes >= kCmaMinBytes;
    return !by_cma || st.copy_to_output;
  }

  const ClusterModel& m_;
  Steps& s_;
  int n_, period_, runs_;
  bool busy_ = false;  // the schedule being added: algo::copiesBothWays()
};

// A step completes at t; or (work) a receive's message is there and the step ready at t, so
// what it costs the receiver (a reduction, a copy out of shared memory) starts on the rank's
// progress thread as soon as that is free; or (transfer)
// a send's software cost is paid and its bytes enter the network. Threads and links are booked
// when the work can start, in simulated-time order: booking them ahead (when a send is posted,
// or a message posted) would queue other ranks' earlier work behind it.
enum class EventKind : uint8_t { complete, work, transfer };
struct Event {
  double t;
  uint32_t step;
  EventKind kind;
  bool operator>(const Event& o) const { return t > o.t || (t == o.t && step > o.step); }
};

class Runner {
 public:
  Runner(const ClusterModel& m, Steps& s, int warmup, int period)
      : m_(m), s_(s), net_(m, period), warmup_(warmup), finish_(static_cast<size_t>(period), 0),
        timed_from_(finish_), joins_(finish_.size(), 0), base_(s.first.begin(), s.first.end() - 1),
        walk_(finish_.size()) {}

  Status run(SimResult* out) {
    for (size_t r = 0; r < finish_.size(); ++r) startRun(r, 0);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      // The records are spread over gigabytes at scale: start fetching the next one now.
      if (!events_.empty()) __builtin_prefetch(&s_.rec[events_.top().step]);
      if (e.kind == EventKind::work) {
        work(e.step, e.t);
        continue;
      }
      if (e.kind == EventKind::transfer) {
        transfer(e.step, s_.rankOf(e.step), e.t);
        continue;
      }
      complete(e.step, e.t);
    }
    if (done_ != s_.size()) return stuck(done_);
    out->steps = s_.size();
    const double iters = std::max(1, joins_[0] - warmup_);
    double sum = 0, most = 0;
    for (size_t r = 0; r < finish_.size(); ++r) {
      const double per_op = (finish_[r] - timed_from_[r]) / iters;
      sum += per_op;
      most = std::max(most, per_op);
    }
    out->seconds = sum / static_cast<double>(finish_.size());
    out->slowest_rank_s = most;
    out->messages = messages_;
    out->bytes_across_hosts = across_;
    return Status::ok();
  }

  // The walker's sink: step i of rank r's current run heads its lane and is ready, at now_.
  struct Poster {
    Runner* run;
    size_t rank;
    Status post(uint32_t i, uint32_t) {
      run->start(run->base_[rank] + i, static_cast<int>(rank));
      return Status::ok();
    }
  };

 private:
  ScheduleWalker walker(size_t r) { return ScheduleWalker(s_.plan[r], walk_[r]); }

  // Rank r begins a run whose records start at base_[r]: its steps without deps are ready.
  void startRun(size_t r, double t) {
    now_ = t;
    ScheduleWalker w = walker(r);
    w.reset();
    if (s_.run_length[r] == 0) return endRun(r, t);
    Poster sink{this, r};
    (void)w.postReady(sink);
  }

  void complete(uint32_t g, double t) {
    s_.rec[g].flags |= kDone;
    ++done_;
    const size_t r = static_cast<size_t>(s_.rankOf(g));
    if (s_.rec[g].kind == kJoin) {
      finish_[r] = t;
      if (++joins_[r] == warmup_) timed_from_[r] = t;
      if (g + 1 < s_.first[r + 1]) {
        base_[r] = g + 1;
        startRun(r, t);
      }
      return;
    }
    ScheduleWalker w = walker(r);
    Poster sink{this, r};
    // A recvReduce held for this step reduces from now (its message is in); a dependent that
    // became ready posts what heads its lane.
    w.finish(g - base_[r], [&](uint32_t held) {
      events_.push({std::max(s_.rec[base_[r] + held].arrives_at, t), base_[r] + held, EventKind::work});
      return false;
    }, [&](uint32_t d) { (void)w.postLane(s_.plan[r].step_lane[d], sink); });
    if (w.allDone()) endRun(r, t);
  }

  // A rank's last step of a run is done at t: its join, once the op's own software time
  // (Fabric::per_op_s) has run on the rank's thread, ends the op and lets the next one start.
  void endRun(size_t r, double t) {
    const uint32_t join = base_[r] + s_.run_length[r];
    if (m_.fabric.per_op_s <= 0) return complete(join, t);
    push(join, net_.compute(static_cast<int>(r), t, m_.fabric.per_op_s));
  }

  // Step g heads its lane with its deps done, at now_: a send is posted, a receive waits for its
  // message, a local step runs on the rank's progress thread.
  void start(uint32_t g, int r) {
    const double t = now_;
    s_.rec[g].posted_at = t;
    switch (static_cast<StepKind>(s_.rec[g].kind)) {
      case StepKind::send: post(g, r, t); break;
      case StepKind::recv: case StepKind::recvReduce:
        s_.rec[g].flags |= kPosted;
        if (s_.rec[g].flags & kArrived) receive(g);
        break;
      case StepKind::copy: case StepKind::stash:
        push(g, net_.compute(r, t, s_.rec[g].bytes / m_.topo.intra.beta_Bps));
        break;
      case StepKind::divide: case StepKind::combine:
        push(g, net_.compute(r, t, s_.rec[g].bytes / m_.topo.gamma_Bps));
        break;
    }
  }

  // A posted send at t: the sender's software cost first (the next send to the same peer is
  // posted after it, in lane order). A send that also fills the output (Step::copy_to_output)
  // costs that copy first where the executor makes it (between hosts); shared memory writes it
  // from its slot, in the send. A sender inside a host copies into the ring first (kSenderCopies).
  void post(uint32_t g, int r, double t) {
    s_.rec[g].flags |= kPosted;
    const bool across = !net_.sameHost(r, s_.rec[g].peer);
    double cost = m_.perMessageSeconds(across);
    if ((s_.rec[g].flags & kCopies) && across) cost += s_.rec[g].bytes / m_.topo.intra.beta_Bps;
    double at = net_.compute(r, t, cost);
    if (s_.rec[g].flags & kSenderCopies) at = net_.copyInHost(r, at, s_.rec[g].bytes);
    events_.push({at, g, EventKind::transfer});
  }

  // The bytes cross the path from t; the receiver has them α after the last one left.
  void transfer(uint32_t g, int r, double t) {
    const int dst = s_.rec[g].peer;
    const Network::Sent out = net_.transfer(r, dst, t, s_.rec[g].bytes);
    const double sent = out.last_byte;
    ++messages_;
    if (trace_)
      std::fprintf(stderr, "send %9.2f us  rank %d -> %d  %u B  step %u  sent %9.2f us\n", t * 1e6, r, dst,
                   s_.rec[g].bytes, g - s_.first[static_cast<size_t>(r)], sent * 1e6);
    if (!net_.sameHost(r, dst)) across_ += s_.rec[g].bytes;
    if (!net_.sameHost(r, dst) || !intoRing(g)) push(g, out.sender_done);
    const uint32_t p = s_.rec[g].partner;
    s_.rec[p].flags |= kArrived;
    s_.rec[p].arrives_at = sent + net_.alpha(r, dst);
    if (s_.rec[p].flags & kPosted) receive(p);
  }

  void receive(uint32_t g) {
    const double t = std::max(s_.rec[g].posted_at, s_.rec[g].arrives_at);
    events_.push({t, g, EventKind::work});  // every receive costs its rank something (receiveWork)
  }

  // A received message's cost to its rank at t; a recvReduce whose reduce_after has not
  // finished waits for it (the walker hands it back to complete()).
  void work(uint32_t g, double t) {
    const Rec& x = s_.rec[g];
    const size_t r = static_cast<size_t>(x.rank);
    const bool reduces = x.kind == uint8_t(StepKind::recvReduce);
    if (reduces && !walker(r).mayCombine(g - base_[r])) return;
    const double end = net_.receiveWork(x.rank, x.peer, t, x.bytes, reduces);
    if (net_.sameHost(x.rank, x.peer)) readFromRing(ringKey(x.partner, g), t, end, x.bytes);
    if (trace_)
      std::fprintf(stderr, "recv %9.2f us  rank %d  step %u  done %9.2f us\n", t * 1e6, x.rank,
                   g - s_.first[r], end * 1e6);
    push(g, end);
  }

  void push(uint32_t g, double t) { events_.push({t, g, EventKind::complete}); }

  // The shared-memory ring from one rank to another on its host (Fabric::shm_ring_bytes): a send
  // is done once every byte posted on it up to its own last one, less what the receiver has read,
  // fits in the ring. Counts of the ring's bytes the messages took (whole slots: Fabric::
  // shmRingBytesOf) since the start of the run.
  struct Ring {
    double posted = 0, read = 0;
    std::deque<std::pair<uint32_t, double>> waiting;  // sends, and the read count that frees each
  };
  // Keyed by the simulated ranks of a send and of the receive it meets (with a periodic
  // simulation a message's peer may be named by its real rank, its image by the simulated one).
  uint64_t ringKey(uint32_t send, uint32_t recv) const {
    return (static_cast<uint64_t>(s_.rankOf(send)) << 32) | static_cast<uint32_t>(s_.rankOf(recv));
  }

  // False: the send fits, and is done as a send across hosts would be. True: it waits for reads.
  bool intoRing(uint32_t g) {
    if (m_.fabric.shm_ring_bytes <= 0) return false;
    Ring& ring = rings_[ringKey(g, s_.rec[g].partner)];
    ring.posted += m_.fabric.shmRingBytesOf(s_.rec[g].bytes);
    const double frees_at = ring.posted - m_.fabric.shm_ring_bytes;
    if (frees_at <= ring.read && ring.waiting.empty()) return false;
    s_.rec[g].flags |= kAwaitsReader;
    ring.waiting.emplace_back(g, frees_at);
    return true;
  }

  // The receiver reads a message of `bytes` from src's ring from `start` until `end`, at an even
  // pace, freeing the slots it held (Fabric::shmRingBytesOf): the sends waiting for room are
  // done when the reads reach what frees each.
  void readFromRing(uint64_t key, double start, double end, double bytes) {
    if (m_.fabric.shm_ring_bytes <= 0) return;
    Ring& ring = rings_[key];
    const double before = ring.read, held = m_.fabric.shmRingBytesOf(bytes);
    ring.read += held;
    while (!ring.waiting.empty() && ring.waiting.front().second <= ring.read) {
      const auto [send, frees_at] = ring.waiting.front();
      ring.waiting.pop_front();
      s_.rec[send].flags &= static_cast<uint8_t>(~kAwaitsReader);
      const double share = std::clamp((frees_at - before) / held, 0.0, 1.0);
      push(send, start + share * (end - start));
    }
  }

  Status stuck(uint64_t done) const {
    for (uint32_t g = 0; g < s_.size(); ++g) {
      if (s_.rec[g].flags & kDone) continue;
      const int r = s_.rankOf(g);
      return internalError(format("the schedules deadlock: %llu of %zu steps ran; rank %d waits in step %u "
                                  "(kind %d, peer %d)",
                                  static_cast<unsigned long long>(done), s_.size(), r, g - s_.first[static_cast<size_t>(r)],
                                  s_.rec[g].kind, s_.rec[g].peer));
    }
    return internalError("the schedules deadlock");
  }

  const ClusterModel& m_;
  Steps& s_;
  Network net_;
  const int warmup_;
  std::vector<double> finish_, timed_from_;  // per rank: its last join; the end of its warm-up runs
  std::vector<int> joins_;
  std::vector<uint32_t> base_;  // per rank: the first record of its current run
  std::vector<WalkState> walk_;  // per rank: its current run's walk
  double now_ = 0;  // the time of the event being handled
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::unordered_map<uint64_t, Ring> rings_;
  uint64_t messages_ = 0, across_ = 0, done_ = 0;
  const bool trace_ = std::getenv("COLL_SIM_TRACE") != nullptr;  // every message, for debugging a model
};

}  // namespace

Status simulate(const ClusterModel& m, const SimRequest& q, SimResult* out) {
  if (!q.algorithm) return invalidArgument("no algorithm to simulate");
  if (q.elem_size == 0 || q.bytes % q.elem_size != 0)
    return invalidArgument(format("%zu bytes is not a whole number of %zu-byte elements", q.bytes, q.elem_size));
  if (q.iters < 1 || q.warmup < 0) return invalidArgument("iterations must be >= 1 and warm-up runs >= 0");
  if (q.root < 0 || q.root >= m.topo.nranks) return invalidArgument(format("root %d outside 0..%d", q.root, m.topo.nranks - 1));
  std::string how;
  const int period = simulationPeriod(m, q, &how);
  const int runs = q.warmup + q.iters;
  Steps steps;
  {
    // A few ranks' schedules stand for the others' size: refuse before allocating what cannot
    // fit, and reserve the rest at once (a doubling vector would need half as much again).
    size_t most_steps = 0, deps = 0;
    for (int r : {0, 1, period / 2, period - 1}) {
      if (r >= period) continue;
      const algo::Schedule one = q.algorithm->build(buildParamsFor(m, q, r));
      size_t d = 0;
      for (const algo::Step& st : one.steps) d += st.deps.size();
      most_steps = std::max(most_steps, one.steps.size());
      deps = std::max(deps, d);
    }
    const double total = static_cast<double>(most_steps + 1) * runs * period;
    const double need = total * kBytesPerRunStep +
                        static_cast<double>(period) * (static_cast<double>(most_steps) * kBytesPerPlanStep + deps * 4.0);
    if (need > static_cast<double>(q.max_memory_bytes))
      return unsupportedError(format("%s %s of %zu B on %d ranks: %.0f million steps to simulate (%s), about %.1f GiB, "
                                    "beyond the memory limit of %.1f GiB (--max-memory)",
                                    algo::toString(q.collective), q.algorithm->name, q.bytes, m.topo.nranks,
                                    total / 1e6, how.c_str(), need / (1 << 30),
                                    static_cast<double>(q.max_memory_bytes) / (1 << 30)));
    steps.rec.reserve(static_cast<size_t>(total * 1.02) + 64);
    steps.plan.reserve(static_cast<size_t>(period));
  }
  const auto t0 = std::chrono::steady_clock::now();
  Loader loader(m, &steps, period, runs);
  COLL_RETURN_IF_ERROR(
      buildInOrder(m, q, period, [&](int r, const algo::Schedule& sched) { return loader.add(r, sched); }));
  COLL_RETURN_IF_ERROR(loader.pair());
  SimResult result;
  result.memory_bytes = steps.memory();
  result.simulated_ranks = period;
  result.how = how;
  const auto t1 = std::chrono::steady_clock::now();
  Runner runner(m, steps, q.warmup, period);
  COLL_RETURN_IF_ERROR(runner.run(&result));
  result.load_s = std::chrono::duration<double>(t1 - t0).count();
  result.run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const uint64_t images = static_cast<uint64_t>(m.topo.nranks / period);
  result.messages *= images;
  result.bytes_across_hosts *= images;
  *out = result;
  return Status::ok();
}

}  // namespace coll::sim
