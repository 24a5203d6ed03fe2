#include "unit/schedule_interpreter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

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
      : c_(c), rng_(c.seed), ranks_(c.n), channels_(c.n * c.n) {
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
    for (int r = 0; r < c_.n; ++r) postReady(r);
    while (error_.empty() && !events_.empty()) {
      std::uniform_int_distribution<size_t> pick(0, events_.size() - 1);
      size_t k = pick(rng_);
      Event e = events_[k];
      events_[k] = events_.back();
      events_.pop_back();
      apply(e);
      for (int r = 0; r < c_.n && error_.empty(); ++r) postReady(r);
    }
    if (!error_.empty()) return error_;
    for (int r = 0; r < c_.n; ++r)
      if (ranks_[r].finished != ranks_[r].s.steps.size()) return "deadlock: " + pendingReport();
    for (int ch = 0; ch < c_.n * c_.n; ++ch)
      if (channels_[ch].sends.size() != channels_[ch].recvs.size())
        return "rank " + std::to_string(src(ch)) + " sent " + std::to_string(channels_[ch].sends.size()) +
               " messages to rank " + std::to_string(dst(ch)) + ", which received " +
               std::to_string(channels_[ch].recvs.size()) + ": some were never received";
    return checkResults();
  }

 private:
  struct Queue {
    std::vector<uint32_t> steps;
    size_t next = 0;
  };
  struct RankState {
    Schedule s;
    std::vector<uint8_t> input, output, scratch;
    std::vector<uint32_t> waiting;
    std::vector<std::vector<uint32_t>> dependents;
    std::vector<bool> done;
    std::vector<int32_t> reduce_waiter;  // per step: the recvReduce whose combining waits for it
    std::vector<bool> held;              // recvReduce steps received, waiting for reduce_after
    std::map<int, Queue> queues;
    size_t finished = 0;
  };
  struct SendEntry {
    int step = -1;
    bool captured = false;
    std::vector<uint8_t> data;
  };
  struct RecvEntry {
    int step = -1;
    bool arrived = false;
  };
  struct Channel {  // src -> dst, matched in FIFO order: the k-th send meets the k-th receive
    std::vector<SendEntry> sends;
    std::vector<RecvEntry> recvs;
  };
  enum class EventKind { capture, arrive, complete };
  struct Event {
    EventKind kind;
    int channel;
    size_t seq;
  };

  int src(int ch) const { return ch / c_.n; }
  int dst(int ch) const { return ch % c_.n; }

  std::vector<uint8_t>& buffer(int r, BufferId id) {
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
    const bool touches_output = step.kind != StepKind::send || step.source == BufferId::output || step.copy_to_output;
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
    const size_t n_steps = st.s.steps.size(), total = c_.count * c_.elem_size;
    st.waiting.assign(n_steps, 0);
    st.dependents.assign(n_steps, {});
    st.done.assign(n_steps, false);
    st.reduce_waiter.assign(n_steps, -1);
    st.held.assign(n_steps, false);
    for (uint32_t i = 0; i < n_steps; ++i) {
      const Step& step = st.s.steps[i];
      if (step.reduce_after >= 0) {
        if (step.kind != StepKind::recvReduce || static_cast<uint32_t>(step.reduce_after) >= n_steps ||
            st.reduce_waiter[step.reduce_after] >= 0)
          return where(r, i) + " has a bad reduce_after";
        st.reduce_waiter[step.reduce_after] = static_cast<int32_t>(i);
      }
      for (uint32_t d : step.deps)
        if (d >= i) return where(r, i) + " depends on a later step " + std::to_string(d);
      st.waiting[i] = static_cast<uint32_t>(step.deps.size());
      for (uint32_t d : step.deps) st.dependents[d].push_back(i);
      bool remote = step.kind == StepKind::send || step.kind == StepKind::recv || step.kind == StepKind::recvReduce;
      if (remote && (step.peer < 0 || step.peer >= c_.n || step.peer == r)) return where(r, i) + " has a bad peer";
      if (!remote && step.peer >= 0) return where(r, i) + ": a local step names a peer";
      if (step.bytes == 0) return where(r, i) + " moves no bytes";
      if (step.bytes % c_.elem_size || step.offset % c_.elem_size) return where(r, i) + " splits an element";
      if (step.offset + step.bytes > total) return where(r, i) + " runs past the buffer";
      const bool uses_scratch = step.kind == StepKind::recvReduce || step.kind == StepKind::stash ||
                                (step.kind == StepKind::combine && step.source == BufferId::output);
      if (uses_scratch && step.scratch_offset + step.bytes > st.s.scratch_bytes)
        return where(r, i) + " runs past the scratch space (" + std::to_string(st.s.scratch_bytes) + " B)";
      if ((step.kind == StepKind::recvReduce || step.kind == StepKind::combine) && !reduces(c_.collective))
        return where(r, i) + ": " + toString(c_.collective) + " reduces";
      if (std::string err = checkAccess(r, i); !err.empty()) return err;
      if (step.kind == StepKind::divide && !c_.average) return where(r, i) + ": divide without avg";
      bool sending = step.kind == StepKind::send;
      int key = step.peer < 0 ? -1 : step.peer * 2 + (sending ? 1 : 0);
      st.queues[key].steps.push_back(i);
    }
    if (st.s.num_phases == 0 && n_steps > 0) return "rank " + std::to_string(r) + ": num_phases is 0";
    for (const Step& step : st.s.steps)
      if (step.phase >= st.s.num_phases)
        return "rank " + std::to_string(r) + ": phase " + std::to_string(step.phase) + " >= num_phases";
    return "";
  }

  void finish(int r, uint32_t i) {
    RankState& st = ranks_[r];
    if (st.done[i]) {
      error_ = where(r, i) + " finished twice";
      return;
    }
    st.done[i] = true;
    ++st.finished;
    for (uint32_t d : st.dependents[i]) --st.waiting[d];
    const int32_t waiter = st.reduce_waiter[i];
    if (waiter >= 0 && st.held[waiter]) {
      st.held[waiter] = false;
      combine(r, ranks_[r].s.steps[waiter]);
      finish(r, static_cast<uint32_t>(waiter));
    }
  }

  // output = source op received (a sum: commutative, so received_first changes nothing here)
  void combine(int d, const Step& recv) {
    const size_t es = c_.elem_size;
    auto& out = ranks_[d].output;
    const auto& in = buffer(d, recv.source);
    const auto& scratch = ranks_[d].scratch;
    for (size_t b = 0; b < recv.bytes; b += es)
      putElem(out, recv.offset + b, es,
              (getElem(in, recv.offset + b, es) + getElem(scratch, recv.scratch_offset + b, es)) & widthMask(es));
  }

  void postReady(int r) {
    RankState& st = ranks_[r];
    bool progressed = true;
    while (progressed && error_.empty()) {
      progressed = false;
      for (auto& [key, q] : st.queues) {
        while (q.next < q.steps.size() && st.waiting[q.steps[q.next]] == 0 && error_.empty()) {
          post(r, q.steps[q.next]);
          ++q.next;
          progressed = true;
        }
      }
    }
  }

  void post(int r, uint32_t i) {
    const Step& step = ranks_[r].s.steps[i];
    const size_t es = c_.elem_size;
    switch (step.kind) {
      case StepKind::send: {
        if (step.copy_to_output && !c_.inPlace(r))  // the executor's postSendCopying, or its copy first
          std::memcpy(ranks_[r].output.data() + step.offset, ranks_[r].input.data() + step.offset, step.bytes);
        int ch = r * c_.n + step.peer;
        Channel& c = channels_[ch];
        c.sends.push_back(SendEntry{static_cast<int>(i), false, {}});
        size_t k = c.sends.size() - 1;
        if (c_.mode == Mode::eager) events_.push_back({EventKind::capture, ch, k});
        else if (k < c.recvs.size()) events_.push_back({EventKind::arrive, ch, k});
        break;
      }
      case StepKind::recv:
      case StepKind::recvReduce: {
        int ch = step.peer * c_.n + r;
        Channel& c = channels_[ch];
        c.recvs.push_back(RecvEntry{static_cast<int>(i), false});
        size_t k = c.recvs.size() - 1;
        if (k < c.sends.size() && (c_.mode == Mode::rendezvous || c.sends[k].captured))
          events_.push_back({EventKind::arrive, ch, k});
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
    Channel& c = channels_[e.channel];
    const int s = src(e.channel), d = dst(e.channel);
    switch (e.kind) {
      case EventKind::capture: {  // eager: the data leave the sender, the send completes
        SendEntry& se = c.sends[e.seq];
        se.data = readSend(s, ranks_[s].s.steps[se.step]);
        se.captured = true;
        finish(s, se.step);
        if (e.seq < c.recvs.size()) events_.push_back({EventKind::arrive, e.channel, e.seq});
        break;
      }
      case EventKind::arrive: {  // the message lands in the receive's buffer
        SendEntry& se = c.sends[e.seq];
        RecvEntry& re = c.recvs[e.seq];
        const Step& send = ranks_[s].s.steps[se.step];
        const Step& recv = ranks_[d].s.steps[re.step];
        if (send.bytes != recv.bytes) {
          error_ = "size mismatch: " + where(s, se.step) + " sends to " + where(d, re.step);
          return;
        }
        std::vector<uint8_t> data = c_.mode == Mode::eager ? se.data : readSend(s, send);
        auto& target = recv.kind == StepKind::recvReduce ? ranks_[d].scratch : ranks_[d].output;
        size_t at = recv.kind == StepKind::recvReduce ? recv.scratch_offset : recv.offset;
        std::memcpy(target.data() + at, data.data(), data.size());
        re.arrived = true;
        if (c_.mode == Mode::rendezvous) finish(s, se.step);
        events_.push_back({EventKind::complete, e.channel, e.seq});
        break;
      }
      case EventKind::complete: {  // the receiver sees the completion (and reduces)
        RecvEntry& re = c.recvs[e.seq];
        const Step& recv = ranks_[d].s.steps[re.step];
        if (recv.kind == StepKind::recvReduce) {
          if (recv.reduce_after >= 0 && !ranks_[d].done[recv.reduce_after]) {
            ranks_[d].held[re.step] = true;  // combined when reduce_after finishes
            break;
          }
          combine(d, recv);
        }
        finish(d, re.step);
        break;
      }
    }
  }

  std::string pendingReport() const {
    std::ostringstream o;
    for (int r = 0; r < c_.n; ++r) {
      const RankState& st = ranks_[r];
      o << "\n  rank " << r << ": " << st.finished << "/" << st.s.steps.size() << " done";
      for (const auto& [key, q] : st.queues)
        if (q.next < q.steps.size() || (q.next > 0 && !st.done[q.steps[q.next - 1]]))
          o << "; queue " << key << " next " << q.next << "/" << q.steps.size();
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
  std::vector<Channel> channels_;
  std::vector<Event> events_;
  std::string error_;
};

}  // namespace

// Statically: the k-th send from r to p has the byte size of p's k-th receive from r, and
// their numbers agree (what the transport's FIFO matching and length check rely on).
std::string checkPairing(const SimConfig& c) {
  std::vector<Schedule> s;
  for (int r = 0; r < c.n; ++r) s.push_back(build(c, r));
  for (int a = 0; a < c.n; ++a)
    for (int b = 0; b < c.n; ++b) {
      if (a == b) continue;
      std::vector<size_t> sent, received;
      for (const Step& st : s[a].steps)
        if (st.kind == StepKind::send && st.peer == b) sent.push_back(st.bytes);
      for (const Step& st : s[b].steps)
        if ((st.kind == StepKind::recv || st.kind == StepKind::recvReduce) && st.peer == a) received.push_back(st.bytes);
      if (sent != received)
        return "rank " + std::to_string(a) + " sends " + std::to_string(sent.size()) + " messages to rank " +
               std::to_string(b) + ", which receives " + std::to_string(received.size()) +
               " (or their sizes differ)";
    }
  return "";
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
