#include "unit/schedule_interpreter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "exec/schedule_walker.h"

namespace coll::algo::sim {
namespace {

// Element i of rank r's input, `width` bytes wide (little-endian, wraps).
uint64_t inputElement(int r, size_t i) {
  uint64_t x = (static_cast<uint64_t>(r) + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);
  return x ^ (x >> 29);
}

uint64_t widthMask(size_t es) { return es >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * es)) - 1; }

uint64_t getElem(const std::vector<uint8_t>& buf, size_t byte_offset, size_t es) {
  uint64_t v = 0;
  std::memcpy(&v, buf.data() + byte_offset, es);
  return v;
}
void putElem(std::vector<uint8_t>& buf, size_t byte_offset, size_t es, uint64_t v) {
  std::memcpy(buf.data() + byte_offset, &v, es);
}

class Simulation {
 public:
  explicit Simulation(const SimConfig& c, const Mutation& mutate = {})
      : c_(c), rng_(c.seed), ranks_(c.n) {
    const size_t bytes = c.count * c.elem_size;
    for (int r = 0; r < c.n; ++r) {
      RankState& st = ranks_[r];
      st.s = build(c, r);
      if (mutate) mutate(r, st.s);
      st.input.assign(bytes, 0xEE);
      st.output.assign(bytes, 0xDD);
      st.scratch.assign(st.s.scratch_bytes, 0xCC);
      auto [lo, hi] = c.inputRange(r);  // the user's send buffer; the rest stays garbage
      for (size_t b = lo; b < hi; b += c.elem_size) putElem(st.input, b, c.elem_size, inputElement(r, b / c.elem_size));
      if (c.inPlace(r)) st.output = st.input;  // in-place: one buffer, and it holds the input
    }
  }

  // Runs to completion; returns "" or what went wrong.
  std::string run() {
    for (int r = 0; r < c_.n; ++r) {
      std::string err = prepare(r);
      if (!err.empty()) return err;
    }
    pairUp();
    postEverywhere();
    while (error_.empty() && !events_.empty()) {
      std::uniform_int_distribution<size_t> pick(0, events_.size() - 1);
      size_t k = pick(rng_);
      Event e = events_[k];
      events_[k] = events_.back();
      events_.pop_back();
      apply(e);
      postEverywhere();
    }
    if (!error_.empty()) return error_;
    for (int r = 0; r < c_.n; ++r)
      if (!walker(r).allDone()) return "deadlock: " + pendingReport();
    if (std::optional<LaneMismatch> m = pairMessages(plans(), samePlan, stepBytes(), [](int, uint32_t, int, uint32_t) {});
        m && m->sent != m->received)
      return "rank " + std::to_string(m->from) + " sent " + std::to_string(m->sent) + " messages to rank " +
             std::to_string(m->to) + ", which received " + std::to_string(m->received) + ": some were never received";
    return checkResults();
  }

 private:
  struct RankState {
    Schedule s;
    std::vector<uint8_t> input, output, scratch;
    WalkPlan plan;
    WalkState walk;
    std::vector<int64_t> partner;  // per remote step: the step of the peer it pairs with (schedule_walker.h), or -1
    std::vector<uint8_t> captured;  // per send (eager): its data left
    std::vector<std::vector<uint8_t>> data;  // per send (eager): what left
  };
  // capture: a send's data leave (eager). arrive: a message lands in the receive's buffer.
  // complete: the receiver sees the completion (and reduces).
  enum class EventKind { capture, arrive, complete };
  struct Event {
    EventKind kind;
    int rank;       // capture: the sender; arrive, complete: the receiver
    uint32_t step;  // on that rank
  };
  // The walker's sink for one rank.
  struct Poster {
    Simulation* sim;
    int rank;
    Status post(uint32_t i, uint32_t) {
      sim->post(rank, i);
      return sim->error_.empty() ? Status::ok() : internalError(sim->error_);
    }
  };

  ScheduleWalker walker(int r) { return ScheduleWalker(ranks_[r].plan, ranks_[r].walk); }
  std::vector<const WalkPlan*> plans() const {
    std::vector<const WalkPlan*> out;
    for (const RankState& st : ranks_) out.push_back(&st.plan);
    return out;
  }
  static PeerEnd samePlan(int rank, int peer) { return {peer, rank}; }
  struct StepBytes {
    const Simulation* sim;
    size_t operator()(int r, uint32_t i) const { return sim->ranks_[r].s.steps[i].bytes; }
  };
  StepBytes stepBytes() const { return {this}; }

  // Which send meets which receive, the rule said once (pairMessages); sizes are checked as
  // the messages arrive, counts at the end.
  void pairUp() {
    pairMessages(plans(), samePlan, stepBytes(), [this](int a, uint32_t send, int b, uint32_t recv) {
      ranks_[a].partner[send] = recv;
      ranks_[b].partner[recv] = send;
    });
  }

  void postEverywhere() {
    for (int r = 0; r < c_.n && error_.empty(); ++r) {
      Poster sink{this, r};
      (void)walker(r).postReady(sink);
    }
  }

  std::vector<uint8_t>& buffer(int r, BufferId id) {
    if (id == BufferId::scratch) return ranks_[r].scratch;
    return (id == BufferId::output || c_.inPlace(r)) ? ranks_[r].output : ranks_[r].input;
  }

  // A step may touch the input only inside the user's send buffer and the output only inside
  // the receive buffer (or workspace): elsewhere the executor's pointers lead to foreign memory.
  std::string checkAccess(int r, uint32_t i) const {
    const Step& step = ranks_[r].s.steps[i];
    const bool reads_input = step.kind == StepKind::copy ||
                             ((step.kind == StepKind::send || step.kind == StepKind::recvReduce ||
                               step.kind == StepKind::combine) &&
                              step.source == BufferId::input);
    const bool touches_output = step.kind == StepKind::send
                                    ? step.source == BufferId::output || step.copy_to_output
                                    : !(step.kind == StepKind::recvReduce && step.partial());
    if (step.kind == StepKind::send && step.source == BufferId::scratch) return "";  // prepare() checks its range
    auto inside = [&](std::pair<size_t, size_t> range) {
      return step.offset >= range.first && step.offset + step.bytes <= range.second;
    };
    if (c_.inPlace(r)) return inside(c_.outputRange(r)) ? "" : where(r, i) + " runs outside the user's buffer";
    if (reads_input && !inside(c_.inputRange(r))) return where(r, i) + " reads input outside the user's send buffer";
    if (touches_output && !inside(c_.outputRange(r)))
      return where(r, i) + " touches output outside the user's receive buffer";
    return "";
  }

  std::string where(int r, uint32_t i) const {
    std::ostringstream o;
    const Step& st = ranks_[r].s.steps[i];
    o << "rank " << r << " step " << i << " (kind " << int(st.kind) << ", peer " << st.peer << ", offset " << st.offset
      << ", " << st.bytes << " B, phase " << st.phase << ")";
    return o.str();
  }

  std::string prepare(int r) {
    RankState& st = ranks_[r];
    if (WalkFault f = checkWalkable(st.s, r, c_.n); f.what) return where(r, static_cast<uint32_t>(f.step)) + " " + f.what;
    const size_t n_steps = st.s.steps.size(), total = c_.count * c_.elem_size;
    for (uint32_t i = 0; i < n_steps; ++i) {
      const Step& step = st.s.steps[i];
      if (step.bytes == 0) return where(r, i) + " moves no bytes";
      if (step.bytes % c_.elem_size || step.offset % c_.elem_size) return where(r, i) + " splits an element";
      const bool from_scratch = step.kind == StepKind::send && step.source == BufferId::scratch;
      if (!from_scratch && step.offset + step.bytes > total) return where(r, i) + " runs past the buffer";
      if (from_scratch && step.offset + step.bytes > st.s.scratch_bytes)
        return where(r, i) + " sends from past the scratch space";
      if (step.kind == StepKind::recvReduce && step.partial() && step.partial_at + step.bytes > st.s.scratch_bytes)
        return where(r, i) + " keeps its partial sum past the scratch space";
      const bool uses_scratch = step.kind == StepKind::recvReduce || step.kind == StepKind::stash ||
                                (step.kind == StepKind::combine && step.source == BufferId::output);
      if (uses_scratch && step.scratch_offset + step.bytes > st.s.scratch_bytes)
        return where(r, i) + " runs past the scratch space (" + std::to_string(st.s.scratch_bytes) + " B)";
      if ((step.kind == StepKind::recvReduce || step.kind == StepKind::combine) && !reduces(c_.collective))
        return where(r, i) + ": " + toString(c_.collective) + " reduces";
      if (std::string err = checkAccess(r, i); !err.empty()) return err;
      if (step.kind == StepKind::divide && !c_.average) return where(r, i) + ": divide without avg";
    }
    if (st.s.num_phases == 0 && n_steps > 0) return "rank " + std::to_string(r) + ": num_phases is 0";
    for (const Step& step : st.s.steps)
      if (step.phase >= st.s.num_phases)
        return "rank " + std::to_string(r) + ": phase " + std::to_string(step.phase) + " >= num_phases";
    st.plan = WalkPlan::of(st.s);
    walker(r).reset();
    st.partner.assign(n_steps, -1);
    st.captured.assign(n_steps, 0);
    st.data.assign(n_steps, {});
    return "";
  }

  void finish(int r, uint32_t i) {
    const bool first = walker(r).finish(i, [this, r](uint32_t held) {
      combine(r, ranks_[r].s.steps[held]);
      return true;
    });
    if (!first) error_ = where(r, i) + " finished twice";
  }

  // output = source op received (a sum: commutative, so received_first changes nothing here);
  // a partial sum goes to scratch at partial_at
  void combine(int d, const Step& recv) {
    const size_t es = c_.elem_size;
    auto& out = recv.partial() ? ranks_[d].scratch : ranks_[d].output;
    const size_t out_at = recv.partial() ? recv.partial_at : recv.offset;
    const auto& in = buffer(d, recv.source);
    const auto& scratch = ranks_[d].scratch;
    for (size_t b = 0; b < recv.bytes; b += es)
      putElem(out, out_at + b, es,
              (getElem(in, recv.offset + b, es) + getElem(scratch, recv.scratch_offset + b, es)) & widthMask(es));
  }

  void post(int r, uint32_t i) {
    const Step& step = ranks_[r].s.steps[i];
    const size_t es = c_.elem_size;
    switch (step.kind) {
      case StepKind::send: {
        if (step.copy_to_output && !c_.inPlace(r))  // the executor's postSendCopying, or its copy first
          std::memcpy(ranks_[r].output.data() + step.offset, ranks_[r].input.data() + step.offset, step.bytes);
        const int64_t q = ranks_[r].partner[i];
        if (c_.mode == Mode::eager) events_.push_back({EventKind::capture, r, i});
        else if (q >= 0 && walker(step.peer).posted(static_cast<uint32_t>(q)))
          events_.push_back({EventKind::arrive, step.peer, static_cast<uint32_t>(q)});
        break;
      }
      case StepKind::recv:
      case StepKind::recvReduce: {
        const int64_t s = ranks_[r].partner[i];
        if (s >= 0 && walker(step.peer).posted(static_cast<uint32_t>(s)) &&
            (c_.mode == Mode::rendezvous || ranks_[step.peer].captured[s]))
          events_.push_back({EventKind::arrive, r, i});
        break;
      }
      case StepKind::copy:
        if (!c_.inPlace(r))
          std::memcpy(ranks_[r].output.data() + step.offset, ranks_[r].input.data() + step.offset, step.bytes);
        finish(r, i);
        break;
      case StepKind::divide: {
        auto& out = ranks_[r].output;
        for (size_t b = step.offset; b < step.offset + step.bytes; b += es)
          putElem(out, b, es, getElem(out, b, es) / static_cast<uint64_t>(c_.n));
        finish(r, i);
        break;
      }
      case StepKind::stash:
        std::memcpy(ranks_[r].scratch.data() + step.scratch_offset, ranks_[r].output.data() + step.offset, step.bytes);
        finish(r, i);
        break;
      case StepKind::combine: {  // output op (input, or the stash in scratch)
        auto& out = ranks_[r].output;
        const auto& operand = step.source == BufferId::input ? buffer(r, BufferId::input) : ranks_[r].scratch;
        const size_t at = step.source == BufferId::input ? step.offset : step.scratch_offset;
        for (size_t b = 0; b < step.bytes; b += es)
          putElem(out, step.offset + b, es, (getElem(out, step.offset + b, es) + getElem(operand, at + b, es)) & widthMask(es));
        finish(r, i);
        break;
      }
    }
  }

  std::vector<uint8_t> readSend(int r, const Step& step) {
    const auto& buf = buffer(r, step.source);
    return std::vector<uint8_t>(buf.begin() + step.offset, buf.begin() + step.offset + step.bytes);
  }

  void apply(const Event& e) {
    switch (e.kind) {
      case EventKind::capture: {  // eager: the data leave the sender, the send completes
        const Step& send = ranks_[e.rank].s.steps[e.step];
        ranks_[e.rank].data[e.step] = readSend(e.rank, send);
        ranks_[e.rank].captured[e.step] = 1;
        finish(e.rank, e.step);
        const int64_t q = ranks_[e.rank].partner[e.step];
        if (q >= 0 && walker(send.peer).posted(static_cast<uint32_t>(q)))
          events_.push_back({EventKind::arrive, send.peer, static_cast<uint32_t>(q)});
        break;
      }
      case EventKind::arrive: {  // the message lands in the receive's buffer
        const Step& recv = ranks_[e.rank].s.steps[e.step];
        const int s = recv.peer;
        const auto si = static_cast<uint32_t>(ranks_[e.rank].partner[e.step]);
        const Step& send = ranks_[s].s.steps[si];
        if (send.bytes != recv.bytes) {
          error_ = "size mismatch: " + where(s, si) + " sends to " + where(e.rank, e.step);
          return;
        }
        std::vector<uint8_t> data = c_.mode == Mode::eager ? ranks_[s].data[si] : readSend(s, send);
        auto& target = recv.kind == StepKind::recvReduce ? ranks_[e.rank].scratch : ranks_[e.rank].output;
        size_t at = recv.kind == StepKind::recvReduce ? recv.scratch_offset : recv.offset;
        std::memcpy(target.data() + at, data.data(), data.size());
        if (c_.mode == Mode::rendezvous) finish(s, si);
        events_.push_back({EventKind::complete, e.rank, e.step});
        break;
      }
      case EventKind::complete: {  // the receiver sees the completion (and reduces)
        const Step& recv = ranks_[e.rank].s.steps[e.step];
        if (recv.kind == StepKind::recvReduce) {
          if (!walker(e.rank).mayCombine(e.step)) break;  // combined when reduce_after finishes
          combine(e.rank, recv);
        }
        finish(e.rank, e.step);
        break;
      }
    }
  }

  std::string pendingReport() {
    std::ostringstream o;
    for (int r = 0; r < c_.n; ++r) {
      const ScheduleWalker w = walker(r);
      o << "\n  rank " << r << ": " << w.finished() << "/" << ranks_[r].s.steps.size() << " done";
      const std::vector<WalkPlan::Lane>& lanes = ranks_[r].plan.lanes;
      for (uint32_t l = 0; l < lanes.size(); ++l) {
        const uint32_t next = w.laneNext(l);
        if (next < lanes[l].steps.size() || (next > 0 && !w.done(lanes[l].steps[next - 1])))
          o << "; " << (lanes[l].peer < 0 ? "local" : (lanes[l].sending ? "to " : "from ") + std::to_string(lanes[l].peer))
            << " next " << next << "/" << lanes[l].steps.size();
      }
    }
    return o.str();
  }

  // Element i reduced over every rank (sum, wrapping at the element width; avg divides).
  uint64_t reduced(size_t i) const {
    uint64_t sum = 0;
    for (int r = 0; r < c_.n; ++r) sum += inputElement(r, i);
    sum &= widthMask(c_.elem_size);
    return c_.average ? sum / static_cast<uint64_t>(c_.n) : sum;
  }

  // What rank r's output element i must hold; false if the collective leaves it undefined.
  bool expected(int r, size_t i, uint64_t* want) const {
    const int n = c_.n;
    const size_t per = n ? c_.count / static_cast<size_t>(n) : 0;  // chunked: equal chunks
    const int c = chunked(c_.collective) && per ? static_cast<int>(i / per) : 0;
    const uint64_t mask = widthMask(c_.elem_size);
    switch (c_.collective) {
      case Collective::allreduce: *want = reduced(i); return true;
      case Collective::broadcast: *want = inputElement(c_.root, i) & mask; return true;
      case Collective::reduce: *want = reduced(i); return r == c_.root;
      case Collective::allgather: *want = inputElement(c, i) & mask; return true;
      case Collective::reducescatter: *want = reduced(i); return c == r;
      case Collective::alltoall: *want = inputElement(c, r * per + i % per) & mask; return true;
      case Collective::gather: *want = inputElement(c, i) & mask; return r == c_.root;
      case Collective::scatter: *want = inputElement(c_.root, i) & mask; return c == r;
    }
    return false;
  }

  std::string checkResults() {
    const size_t es = c_.elem_size;
    for (size_t i = 0; i < c_.count; ++i) {
      for (int r = 0; r < c_.n; ++r) {
        uint64_t want = 0;
        if (!expected(r, i, &want)) continue;
        uint64_t got = getElem(ranks_[r].output, i * es, es);
        if (got != want) {
          std::ostringstream o;
          o << "rank " << r << " element " << i << " is " << std::hex << got << ", expected " << want;
          return o.str();
        }
      }
    }
    return "";
  }

  SimConfig c_;
  std::mt19937_64 rng_;
  std::vector<RankState> ranks_;
  std::vector<Event> events_;
  std::string error_;
};

}  // namespace

// Statically: the k-th send from r to p has the byte size of p's k-th receive from r, and
// their numbers agree (what the transport's FIFO matching and length check rely on), by the
// walker's pairing rule (pairMessages).
std::string checkPairing(const SimConfig& c) {
  std::vector<Schedule> s;
  std::vector<WalkPlan> plans;
  for (int r = 0; r < c.n; ++r) s.push_back(build(c, r));
  for (int r = 0; r < c.n; ++r) plans.push_back(WalkPlan::of(s[r]));
  std::vector<const WalkPlan*> view;
  for (const WalkPlan& p : plans) view.push_back(&p);
  std::optional<LaneMismatch> m = pairMessages(
      view, [](int rank, int peer) { return PeerEnd{peer, rank}; },
      [&](int r, uint32_t i) { return s[r].steps[i].bytes; }, [](int, uint32_t, int, uint32_t) {});
  if (!m) return "";
  return "rank " + std::to_string(m->from) + " sends " + std::to_string(m->sent) + " messages to rank " +
         std::to_string(m->to) + ", which receives " + std::to_string(m->received) + " (or their sizes differ)";
}

void simulate(const SimConfig& c) {
  std::string pairing = checkPairing(c);
  ASSERT_EQ(pairing, "") << c.describe();
  Simulation sim(c);
  std::string result = sim.run();
  ASSERT_EQ(result, "") << c.describe();
}

std::string runSimulation(const SimConfig& c, const Mutation& mutate) { return Simulation(c, mutate).run(); }

}  // namespace coll::algo::sim
