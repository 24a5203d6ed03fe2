#include "sim_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <deque>
#include <queue>
#include <unordered_map>
#include <utility>

#include "base/log.h"
#include "schedule_feed.h"
#include "sim_network.h"
#include "symmetry.h"

namespace coll::sim {
namespace {

using algo::StepKind;
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

constexpr uint8_t kJoin = 0xff;  // the end of one run of a rank's schedule (not a StepKind)
// What one step costs at the peak, beside its dependency edges (4 B each): its record (48 B),
// its end in the pairing (16 B, until paired) and its completion event (16 B, while queued).
constexpr double kBytesPerStep = 80;

// kCopies: a send that also writes the output (Step::copy_to_output). kAwaitsReader: a send
// inside a host that did not fit the ring, done only as its receiver reads (Fabric::shm_ring_bytes).
// kSenderCopies: a send inside a host whose sender copies it once (into the ring, or its own
// copy to the output beside a peer's CMA read), on top of the receiver's pass.
enum Flag : uint8_t {
  kReady = 1, kArrived = 2, kPosted = 4, kChannelOpen = 8, kDone = 16, kCopies = 32, kAwaitsReader = 64,
  kSenderCopies = 128
};

// coll's shared memory reads a message by CMA, the sender not copying it, only where the sender
// is busy (algo::copiesBothWays: ShmConnection::sendsByCma) and the message is at least
// COLL_SHM_CMA_THRESHOLD's default. Everything else goes through the ring's slots: the sender
// copies in, the receiver copies (or reduces) out.
constexpr uint32_t kCmaMinBytes = 256 << 10;

// What timing needs of one step, in one cache line's worth: an event touches one record
// rather than a dozen arrays (a simulation of 16,384 ranks holds tens of millions of them).
struct Rec {
  uint32_t bytes = 0;
  int32_t peer = -1;
  int32_t rank = 0;
  uint32_t pending = 0;        // deps not done yet
  uint32_t succ_first = 0;     // who waits for it: succ[succ_first, next record's succ_first)
  uint32_t partner = kNone;    // the matching send or receive
  uint32_t channel_next = kNone;  // the next send to the same peer
  uint8_t kind = 0;
  uint8_t flags = 0;
  double ready_at = 0, arrives_at = 0;
};

// Every rank's steps, flattened: step g of the job is step g - first[rank] of that rank.
// One record past the last closes the last step's successor list.
struct Steps {
  std::vector<uint32_t> first;   // per rank, and one past the last
  std::vector<uint32_t> run_length;  // per rank: steps in one run of its schedule (its join follows)
  std::vector<Rec> rec;
  std::vector<uint32_t> succ;

  size_t size() const { return rec.empty() ? 0 : rec.size() - closed_; }
  void reserve(size_t steps, size_t edges) {
    rec.reserve(steps + 1);
    succ.reserve(edges);
  }
  void close() {
    rec.push_back(Rec{});
    rec.back().succ_first = static_cast<uint32_t>(succ.size());
    closed_ = 1;
  }
  size_t memory() const { return first.capacity() * 4 + rec.capacity() * sizeof(Rec) + succ.capacity() * 4; }
  int rankOf(uint32_t g) const { return rec[g].rank; }

 private:
  size_t closed_ = 0;
};

// One end of a message, for pairing: (sender, receiver, sequence on that channel) -> step.
struct End {
  uint64_t key;
  uint32_t step;
  bool operator<(const End& o) const { return key < o.key; }
};
// Keyed by the sender's simulated rank and the offset to its peer, which a periodic simulation
// shares between a message and its images (symmetry.h).
uint64_t endKey(int sender, int offset, uint32_t seq) {
  return (static_cast<uint64_t>(sender) << 44) | (static_cast<uint64_t>(offset) << 24) | seq;
}

class Loader {
 public:
  Loader(const ClusterModel& m, Steps* s, int period) : m_(m), s_(*s), n_(m.topo.nranks), period_(period) {
    last_send_.assign(static_cast<size_t>(n_), kNone);
    sends_to_.assign(static_cast<size_t>(n_), 0);
    recvs_from_.assign(static_cast<size_t>(n_), 0);
  }

  // Appends `copies` back-to-back runs of a rank's schedule, each followed by a join step that
  // waits for all of it (the runner counts the run's steps down rather than giving every step
  // an edge to it) and that the next run's first steps wait for: the ops of a
  // communicator run one after another on each rank, as a benchmark loop issues them.
  void reserveMessages(size_t n) {
    sends_.reserve(n);
    recvs_.reserve(n);
  }

  Status add(int rank, const algo::Schedule& sched, int copies) {
    const size_t L = sched.steps.size();
    if (s_.size() + (L + 1) * static_cast<size_t>(copies) >= kNone)
      return invalidArgument("more than 4 billion steps: too large to simulate");
    s_.first.push_back(static_cast<uint32_t>(s_.size()));
    s_.run_length.push_back(static_cast<uint32_t>(L));
    busy_ = algo::copiesBothWays(sched);
    std::vector<uint32_t> succ_count(L, 0), roots;
    for (size_t i = 0; i < L; ++i) {
      for (uint32_t d : sched.steps[i].deps) ++succ_count[d];
      if (sched.steps[i].deps.empty()) roots.push_back(static_cast<uint32_t>(i));
    }
    std::vector<uint32_t> fill(L);
    for (int k = 0; k < copies; ++k) {
      const uint32_t base = static_cast<uint32_t>(s_.size());
      const uint32_t join = base + static_cast<uint32_t>(L);
      uint32_t at = static_cast<uint32_t>(s_.succ.size());
      for (size_t i = 0; i < L; ++i) {
        fill[i] = at;
        at += succ_count[i];
      }
      s_.succ.resize(at);
      for (size_t i = 0; i < L; ++i) {
        const algo::Step& st = sched.steps[i];
        for (uint32_t d : st.deps) s_.succ[fill[d]++] = base + static_cast<uint32_t>(i);
        const uint32_t succ_first = fill[i];  // its successors come later: none filled yet
        COLL_RETURN_IF_ERROR(addStep(rank, base + static_cast<uint32_t>(i), st, succ_first));
        if (k > 0 && st.deps.empty()) ++s_.rec.back().pending;  // the previous run's join
      }
      addJoin(rank, L == 0 ? 0 : 1, k + 1 < copies ? roots : std::vector<uint32_t>{}, join + 1);
    }
    for (int p : touched_) last_send_[static_cast<size_t>(p)] = kNone, sends_to_[static_cast<size_t>(p)] = 0,
                           recvs_from_[static_cast<size_t>(p)] = 0;
    touched_.clear();
    return Status::ok();
  }

  // Pairs sends with receives; Internal naming the first channel that does not match.
  Status pair() {
    s_.first.push_back(static_cast<uint32_t>(s_.size()));
    s_.close();
    if (sends_.size() != recvs_.size())
      return internalError(format("the schedules post %zu sends but %zu receives", sends_.size(), recvs_.size()));
    std::sort(sends_.begin(), sends_.end());
    std::sort(recvs_.begin(), recvs_.end());
    for (size_t i = 0; i < sends_.size(); ++i) {
      const End& a = sends_[i];
      const End& b = recvs_[i];
      if (a.key != b.key || s_.rec[a.step].bytes != s_.rec[b.step].bytes) {
        const End& e = a.key <= b.key ? a : b;
        const int from = static_cast<int>(e.key >> 44);
        return internalError(format("rank %d's messages to rank %d do not match the receives posted for them "
                                    "(message #%u: %u bytes sent, %u expected)",
                                    from, (from + static_cast<int>((e.key >> 24) & 0xfffff)) % n_,
                                    static_cast<unsigned>(e.key & 0xffffff), s_.rec[a.step].bytes, s_.rec[b.step].bytes));
      }
      s_.rec[a.step].partner = b.step;
      s_.rec[b.step].partner = a.step;
    }
    std::vector<End>().swap(sends_);
    std::vector<End>().swap(recvs_);
    return Status::ok();
  }

 private:
  void addJoin(int rank, uint32_t waits_for, const std::vector<uint32_t>& next_roots, uint32_t next_base) {
    Rec r;
    r.succ_first = static_cast<uint32_t>(s_.succ.size());
    for (uint32_t root : next_roots) s_.succ.push_back(next_base + root);
    r.kind = kJoin;
    r.rank = rank;
    r.pending = waits_for;
    s_.rec.push_back(r);
  }

  Status addStep(int rank, uint32_t g, const algo::Step& st, uint32_t succ_first) {
    if (st.bytes >= (uint64_t{1} << 32)) return invalidArgument("a message of 4 GiB or more: too large to simulate");
    Rec r;
    r.kind = static_cast<uint8_t>(st.kind);
    r.peer = st.peer;
    r.rank = rank;
    r.bytes = static_cast<uint32_t>(st.bytes);
    r.pending = static_cast<uint32_t>(st.deps.size());
    r.succ_first = succ_first;
    if (st.copy_to_output) r.flags |= kCopies;
    const bool send = st.kind == StepKind::send;
    if (send && senderCopies(rank, st)) r.flags |= kSenderCopies;
    s_.rec.push_back(r);
    if (!send && st.kind != StepKind::recv && st.kind != StepKind::recvReduce) return Status::ok();
    const size_t p = static_cast<size_t>(st.peer);
    if (st.peer < 0 || st.peer >= n_ || st.peer == rank)
      return internalError(format("rank %d: step %u names peer %d", rank, g - s_.first.back(), st.peer));
    if (!sends_to_[p] && !recvs_from_[p] && last_send_[p] == kNone) touched_.push_back(st.peer);
    if (send) {
      if (last_send_[p] == kNone) s_.rec.back().flags |= kChannelOpen;
      else s_.rec[last_send_[p]].channel_next = g;
      last_send_[p] = g;
      sends_.push_back({endKey(rank, (st.peer - rank + n_) % n_, sends_to_[p]++), g});
    } else {
      recvs_.push_back({endKey(st.peer % period_, (rank - st.peer + n_) % n_, recvs_from_[p]++), g});
    }
    if (sends_to_[p] > 0xffffff || recvs_from_[p] > 0xffffff)
      return invalidArgument("more than 16 million messages on one channel: too large to simulate");
    return Status::ok();
  }

  // Inside a host, with a ring modelled (without one, the transport buffers everything): through
  // the slots, or a CMA read whose sender still writes its own copy of the chunk.
  bool senderCopies(int rank, const algo::Step& st) const {
    if (m_.fabric.shm_ring_bytes <= 0 || st.peer < 0 || st.peer >= n_) return false;
    if (m_.host_of[static_cast<size_t>(rank)] != m_.host_of[static_cast<size_t>(st.peer)]) return false;
    return !(busy_ && st.bytes >= kCmaMinBytes) || st.copy_to_output;
  }

  const ClusterModel& m_;
  Steps& s_;
  int n_, period_;
  bool busy_ = false;  // the schedule being added: algo::copiesBothWays()
  std::vector<uint32_t> last_send_, sends_to_, recvs_from_;
  std::vector<int> touched_;
  std::vector<End> sends_, recvs_;
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
        timed_from_(finish_), joins_(finish_.size(), 0), left_(s.run_length), join_(finish_.size()) {
    for (size_t r = 0; r < join_.size(); ++r) join_[r] = s.first[r] + s.run_length[r];
  }

  Status run(SimResult* out) {
    for (uint32_t g = 0; g < s_.size(); ++g)
      if (s_.rec[g].pending == 0) ready(g, 0);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      // The records are spread over gigabytes at scale: start fetching the next one now.
      if (!events_.empty()) __builtin_prefetch(&s_.rec[events_.top().step]);
      if (e.kind == EventKind::work) {
        const Rec& x = s_.rec[e.step];
        const double end = net_.receiveWork(x.rank, x.peer, e.t, x.bytes, x.kind == uint8_t(StepKind::recvReduce));
        if (net_.sameHost(x.rank, x.peer)) readFromRing(ringKey(x.partner, e.step), e.t, end, x.bytes);
        if (trace_)
          std::fprintf(stderr, "recv %9.2f us  rank %d  step %u  done %9.2f us\n", e.t * 1e6, s_.rankOf(e.step),
                       e.step - s_.first[static_cast<size_t>(s_.rankOf(e.step))], end * 1e6);
        push(e.step, end);
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

 private:
  void complete(uint32_t g, double t) {
    s_.rec[g].flags |= kDone;
    ++done_;
    const size_t r = static_cast<size_t>(s_.rankOf(g));
    if (s_.rec[g].kind == kJoin) {
      finish_[r] = t;
      if (++joins_[r] == warmup_) timed_from_[r] = t;
      join_[r] += s_.run_length[r] + 1;
      left_[r] = s_.run_length[r];
    } else if (--left_[r] == 0) {
      endRun(r, t);
    }
    for (uint32_t i = s_.rec[g].succ_first; i < s_.rec[g + 1].succ_first; ++i)
      if (--s_.rec[s_.succ[i]].pending == 0) ready(s_.succ[i], t);
  }

  // A rank's last step of a run is done at t: its join, once the op's own software time
  // (Fabric::per_op_s) has run on the rank's thread, ends the op and lets the next one start.
  void endRun(size_t r, double t) {
    if (m_.fabric.per_op_s <= 0) return complete(join_[r], t);
    push(join_[r], net_.compute(static_cast<int>(r), t, m_.fabric.per_op_s));
  }

  void ready(uint32_t g, double t) {
    s_.rec[g].flags |= kReady;
    s_.rec[g].ready_at = t;
    const int r = s_.rankOf(g);
    if (s_.rec[g].kind == kJoin) return push(g, t);
    switch (static_cast<StepKind>(s_.rec[g].kind)) {
      case StepKind::send:
        if (s_.rec[g].flags & kChannelOpen) post(g, r, t);
        break;
      case StepKind::recv: case StepKind::recvReduce:
        if (s_.rec[g].flags & kArrived) receive(g);
        break;
      case StepKind::copy:
        push(g, net_.compute(r, t, s_.rec[g].bytes / m_.topo.intra.beta_Bps));
        break;
      case StepKind::divide: case StepKind::combine:
        push(g, net_.compute(r, t, s_.rec[g].bytes / m_.topo.gamma_Bps));
        break;
      case StepKind::stash:
        push(g, net_.compute(r, t, s_.rec[g].bytes / m_.topo.intra.beta_Bps));
        break;
    }
  }

  // A send at the head of its channel, ready at t: the sender's software cost, the path, α.
  // A send at the head of its channel, ready at t: the sender's software cost first, then the
  // next send to the same peer may be posted.
  // A send that also fills the output (Step::copy_to_output) costs that copy first where the
  // executor makes it (between hosts); shared memory writes it from its slot, in the send. A
  // sender inside a host copies into the ring first (kSenderCopies).
  void post(uint32_t g, int r, double t) {
    s_.rec[g].flags |= kPosted;
    const bool across = !net_.sameHost(r, s_.rec[g].peer);
    double cost = m_.perMessageSeconds(across);
    if ((s_.rec[g].flags & kCopies) && across) cost += s_.rec[g].bytes / m_.topo.intra.beta_Bps;
    double at = net_.compute(r, t, cost);
    if (s_.rec[g].flags & kSenderCopies) at = net_.copyInHost(r, at, s_.rec[g].bytes);
    events_.push({at, g, EventKind::transfer});
    const uint32_t next = s_.rec[g].channel_next;
    if (next != kNone) {
      s_.rec[next].flags |= kChannelOpen;
      if (s_.rec[next].flags & kReady) post(next, r, std::max(t, s_.rec[next].ready_at));
    }
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
    if (s_.rec[p].flags & kReady) receive(p);
  }

  void receive(uint32_t g) {
    const double t = std::max(s_.rec[g].ready_at, s_.rec[g].arrives_at);
    events_.push({t, g, EventKind::work});  // every receive costs its rank something (receiveWork)
  }

  void push(uint32_t g, double t) { events_.push({t, g, EventKind::complete}); }

  // The shared-memory ring from one rank to another on its host (Fabric::shm_ring_bytes): a send
  // is done once every byte posted on it up to its own last one, less what the receiver has read,
  // fits in the ring. Byte counts since the start of the run.
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
    ring.posted += s_.rec[g].bytes;
    const double frees_at = ring.posted - m_.fabric.shm_ring_bytes;
    if (frees_at <= ring.read && ring.waiting.empty()) return false;
    s_.rec[g].flags |= kAwaitsReader;
    ring.waiting.emplace_back(g, frees_at);
    return true;
  }

  // The receiver reads `bytes` from src's ring from `start` until `end`, at an even pace: the
  // sends waiting for room are done when the reads reach what frees each.
  void readFromRing(uint64_t key, double start, double end, double bytes) {
    if (m_.fabric.shm_ring_bytes <= 0 || bytes <= 0) return;
    Ring& ring = rings_[key];
    const double before = ring.read;
    ring.read += bytes;
    while (!ring.waiting.empty() && ring.waiting.front().second <= ring.read) {
      const auto [send, frees_at] = ring.waiting.front();
      ring.waiting.pop_front();
      s_.rec[send].flags &= static_cast<uint8_t>(~kAwaitsReader);
      const double share = std::clamp((frees_at - before) / bytes, 0.0, 1.0);
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
  std::vector<uint32_t> left_, join_;  // per rank: steps of its current run not done; that run's join
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
  size_t sends = 0;
  {
    // A few ranks' schedules stand for the others' size: refuse before allocating what cannot
    // fit, and reserve the rest at once (a doubling vector would need half as much again).
    size_t most_steps = 0, deps = 0;
    for (int r : {0, 1, period / 2, period - 1}) {
      if (r >= period) continue;
      const algo::Schedule one = q.algorithm->build(buildParamsFor(m, q, r));
      size_t d = 0, sent = 0;
      for (const algo::Step& st : one.steps) {
        d += st.deps.size();
        sent += st.kind == algo::StepKind::send;
      }
      most_steps = std::max(most_steps, one.steps.size());
      deps = std::max(deps, d);
      sends = std::max(sends, sent);
    }
    const double total = static_cast<double>(most_steps + 1) * runs * period;
    const double need = total * kBytesPerStep + static_cast<double>(deps) * runs * period * 4;
    if (need > static_cast<double>(q.max_memory_bytes))
      return unsupportedError(format("%s %s of %zu B on %d ranks: %.0f million steps to simulate (%s), about %.1f GiB, "
                                    "beyond the memory limit of %.1f GiB (--max-memory)",
                                    algo::toString(q.collective), q.algorithm->name, q.bytes, m.topo.nranks,
                                    total / 1e6, how.c_str(), need / (1 << 30),
                                    static_cast<double>(q.max_memory_bytes) / (1 << 30)));
    steps.reserve(static_cast<size_t>(total * 1.02) + 64, static_cast<size_t>(deps * 1.02 * runs * period) + 64);
  }
  const auto t0 = std::chrono::steady_clock::now();
  Loader loader(m, &steps, period);
  loader.reserveMessages(static_cast<size_t>(sends * 1.02 * runs * period) + 64);
  COLL_RETURN_IF_ERROR(
      buildInOrder(m, q, period, [&](int r, const algo::Schedule& sched) { return loader.add(r, sched, runs); }));
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
