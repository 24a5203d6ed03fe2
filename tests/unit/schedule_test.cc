// Schedules as data, checked without any transport: ring arithmetic, static rules the
// executor relies on (schedule.h), and an in-memory interpreter that runs every rank's
// schedule against the others and compares the results with a closed formula.
//
// Every collective in the catalogue has its reference semantics here, with the buffer
// conventions the communicator maps user buffers onto (src/core/op.cc, planOp): which part of
// each rank's input holds data, which part of its output it may touch at all (e.g. a non-root's
// gather output is an empty workspace), which ranks are in place, and what each rank's output
// must hold afterwards.
//
// The interpreter is deliberately more adversarial than the socket transport: it posts steps
// exactly as the executor does (queue heads per peer and direction, once their deps are done;
// local steps at once), then picks at random among everything that could happen next: a send
// capturing its data (eager mode: sends complete before the peer receives; rendezvous mode:
// only when the peer's receive takes the data), a message landing in its receive buffer, a
// receive completing (and a recvReduce combining its source, output or input, with its
// scratch slot into the output). A missing dependency then
// shows up as wrong data (a send that reads a region too late, a scratch slot reused while
// still in use), and a schedule that can only finish with buffering shows up as a deadlock in
// rendezvous mode.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/chain_broadcast.h"
#include "algorithms/direct_collectives.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/schedule.h"

namespace coll::algo {
namespace {

// ---------------------------------------------------------------------------------------
// Ring arithmetic

TEST(RingArithmetic, NeighboursAndMod) {
  EXPECT_EQ(ring::mod(-1, 5), 4);
  EXPECT_EQ(ring::mod(-6, 5), 4);
  EXPECT_EQ(ring::mod(7, 5), 2);
  for (int n = 1; n <= 9; ++n)
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ring::left(ring::right(r, n), n), r);
      EXPECT_EQ(ring::right(r, n), (r + 1) % n);
      EXPECT_EQ(ring::left(r, n), (r + n - 1) % n);
    }
}

TEST(RingArithmetic, ChunksPartitionTheBufferExactly) {
  for (int n = 1; n <= 17; ++n) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{7}, size_t{8}, size_t{16},
                         size_t{100}, size_t{1009}, size_t{65536}, size_t{1000003}}) {
      size_t next = 0, smallest = SIZE_MAX, largest = 0;
      for (int c = 0; c < n; ++c) {
        ring::Chunk ch = ring::chunk(count, n, c);
        EXPECT_EQ(ch.first, next) << "n " << n << " count " << count << " chunk " << c << " leaves a gap or overlaps";
        next = ch.first + ch.count;
        smallest = std::min(smallest, ch.count);
        largest = std::max(largest, ch.count);
      }
      EXPECT_EQ(next, count) << "n " << n << " count " << count << ": chunks do not cover [0, count)";
      EXPECT_LE(largest - smallest, 1u) << "n " << n << " count " << count;
      if (count < static_cast<size_t>(n)) {
        EXPECT_EQ(ring::chunk(count, n, n - 1).count, 0u);
      }
    }
  }
}

TEST(RingArithmetic, NumSlices) {
  EXPECT_EQ(ring::numSlices(0, 4), 0u);
  EXPECT_EQ(ring::numSlices(1, 4), 1u);
  EXPECT_EQ(ring::numSlices(4, 4), 1u);
  EXPECT_EQ(ring::numSlices(5, 4), 2u);
  EXPECT_EQ(ring::numSlices(1000003, 1), 1000003u);
}

TEST(RingArithmetic, ReduceScatterAndAllGatherChunksLineUp) {
  for (int n = 2; n <= 9; ++n) {
    for (int r = 0; r < n; ++r) {
      const int left = ring::left(r, n);
      std::vector<int> gathered(n, 0);
      for (int s = 0; s < n - 1; ++s) {
        // What I receive at step s is what my left neighbour sends at step s.
        EXPECT_EQ(ring::reduceScatterRecvChunk(r, n, s), ring::reduceScatterSendChunk(left, n, s));
        EXPECT_EQ(ring::allGatherRecvChunk(r, n, s), ring::allGatherSendChunk(left, n, s));
        // I forward at step s+1 what I reduced at step s.
        if (s + 1 < n - 1) {
          EXPECT_EQ(ring::reduceScatterSendChunk(r, n, s + 1), ring::reduceScatterRecvChunk(r, n, s));
        }
        if (s + 1 < n - 1) {
          EXPECT_EQ(ring::allGatherSendChunk(r, n, s + 1), ring::allGatherRecvChunk(r, n, s));
        }
        gathered[ring::allGatherRecvChunk(r, n, s)]++;
      }
      // After n-1 reduce-scatter steps I own the chunk I received last; I send it first in the
      // all-gather, and receive every other chunk exactly once.
      EXPECT_EQ(ring::ownedChunk(r, n), ring::reduceScatterRecvChunk(r, n, n - 2));
      EXPECT_EQ(ring::allGatherSendChunk(r, n, 0), ring::ownedChunk(r, n));
      for (int c = 0; c < n; ++c) EXPECT_EQ(gathered[c], c == ring::ownedChunk(r, n) ? 0 : 1) << "n " << n << " r " << r;
    }
  }
}

// ---------------------------------------------------------------------------------------
// The interpreter

enum class Mode { eager, rendezvous };

bool reduces(Collective c) {
  return c == Collective::allreduce || c == Collective::reduce || c == Collective::reducescatter;
}
// Collectives whose schedule buffer is n chunks of the user's count, chunk c being rank c's.
bool chunked(Collective c) {
  return c == Collective::allgather || c == Collective::reducescatter || c == Collective::alltoall ||
         c == Collective::gather || c == Collective::scatter;
}

struct SimConfig {
  Collective collective = Collective::allreduce;
  int n = 1;
  size_t count = 0;
  size_t elem_size = 4;
  bool in_place = true;
  bool average = false;
  int root = 0;
  size_t slice_bytes = 512 << 10;
  int depth = 8;
  Mode mode = Mode::eager;
  uint64_t seed = 1;
  std::string algorithm;  // empty: ring for all-reduce, chain for broadcast, else the first listed

  // As planOp decides: rooted collectives are in place on the root only, reduce-scatter
  // reduces in a workspace, and all-to-all has no in-place form.
  bool inPlace(int rank) const {
    switch (collective) {
      case Collective::reduce: case Collective::gather: case Collective::scatter: return in_place && rank == root;
      case Collective::reducescatter: case Collective::alltoall: return false;
      default: return in_place;
    }
  }

  // Byte ranges [first, second) of the schedule's buffers that hold the user's memory.
  std::pair<size_t, size_t> chunkBytes(int rank) const {
    ring::Chunk ch = ring::chunk(count, n, rank);
    return {ch.first * elem_size, (ch.first + ch.count) * elem_size};
  }
  std::pair<size_t, size_t> inputRange(int rank) const {
    const std::pair<size_t, size_t> all{0, count * elem_size}, none{0, 0};
    switch (collective) {
      case Collective::broadcast: case Collective::scatter: return rank == root ? all : none;
      case Collective::allgather: case Collective::gather: return chunkBytes(rank);
      default: return all;
    }
  }
  std::pair<size_t, size_t> outputRange(int rank) const {
    const std::pair<size_t, size_t> all{0, count * elem_size}, none{0, 0};
    switch (collective) {
      case Collective::gather: return rank == root ? all : none;
      case Collective::scatter: return inPlace(rank) ? all : chunkBytes(rank);
      default: return all;
    }
  }

  std::string describe() const {
    std::ostringstream o;
    o << toString(collective) << (algorithm.empty() ? "" : ":" + algorithm) << " n=" << n << " count=" << count
      << " elem=" << elem_size << (in_place ? " in-place" : " out-of-place") << (average ? " avg" : "")
      << " root=" << root << " slice=" << slice_bytes << " depth=" << depth
      << (mode == Mode::eager ? " eager" : " rendezvous") << " seed=" << seed;
    return o.str();
  }

  BuildParams params(int rank) const {
    BuildParams p;
    p.rank = rank;
    p.nranks = n;
    p.count = count;
    p.elem_size = elem_size;
    p.in_place = in_place;
    p.average = average;
    p.root = root;
    p.slice_bytes = slice_bytes;
    p.pipeline_depth = depth;
    return p;
  }
};

Schedule build(const SimConfig& c, int rank) {
  BuildParams p = c.params(rank);
  p.in_place = c.inPlace(rank);
  if (!c.algorithm.empty()) return findAlgorithm(c.collective, c.algorithm)->build(p);
  if (c.collective == Collective::allreduce) return buildRingAllreduce(p);
  if (c.collective == Collective::broadcast) return buildChainBroadcast(p);
  return firstAlgorithm(c.collective)->build(p);
}

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

// Lets a test break a built schedule on purpose, to prove the interpreter notices.
using Mutation = std::function<void(int rank, Schedule& s)>;

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
                             ((step.kind == StepKind::send || step.kind == StepKind::recvReduce) &&
                              step.source == BufferId::input);
    const bool touches_output = step.kind != StepKind::send || step.source == BufferId::output;
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
    for (uint32_t i = 0; i < n_steps; ++i) {
      const Step& step = st.s.steps[i];
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
      if (step.kind == StepKind::recvReduce && step.scratch_offset + step.bytes > st.s.scratch_bytes)
        return where(r, i) + " runs past the scratch space (" + std::to_string(st.s.scratch_bytes) + " B)";
      if (step.kind == StepKind::recvReduce && !reduces(c_.collective))
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
        if (recv.kind == StepKind::recvReduce) {  // output = source op received
          const size_t es = c_.elem_size;
          auto& out = ranks_[d].output;
          const auto& in = buffer(d, recv.source);
          const auto& scratch = ranks_[d].scratch;
          for (size_t b = 0; b < recv.bytes; b += es)
            putElem(out, recv.offset + b, es,
                    (getElem(in, recv.offset + b, es) + getElem(scratch, recv.scratch_offset + b, es)) &
                        widthMask(es));
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

// The interpreter has teeth: schedules broken in the ways a builder could get wrong fail.
std::string runMutated(SimConfig c, const Mutation& mutate, int seeds) {
  for (int k = 0; k < seeds; ++k) {
    c.seed = 100 + k;
    std::string r = Simulation(c, mutate).run();
    if (!r.empty()) return r;
  }
  return "";
}

void dropDeps(Schedule& s, StepKind kind, BufferId source = BufferId::output, bool any_source = true) {
  for (Step& st : s.steps)
    if (st.kind == kind && (any_source || st.source == source)) st.deps.clear();
}

TEST(Interpreter, NoticesBrokenSchedules) {
  SimConfig c;
  c.n = 4, c.count = 997, c.elem_size = 4, c.slice_bytes = 64, c.depth = 2, c.in_place = true;
  ASSERT_EQ(runMutated(c, {}, 5), "") << "the unbroken schedule must pass";

  // Scratch slots reused while still in use.
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::recvReduce); }, 20), "");
  // Forwarding a slice before its reduction finished.
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  // Dividing (avg) before the reduction is complete.
  SimConfig avg = c;
  avg.average = true;
  EXPECT_NE(runMutated(avg, [](int, Schedule& s) { dropDeps(s, StepKind::divide); }, 20), "");
  // One rank sends a slice of the wrong size.
  std::string r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 1)
      for (Step& st : s.steps)
        if (st.kind == StepKind::send) { st.bytes -= 4; break; }
  }, 1);
  EXPECT_NE(r.find("size mismatch"), std::string::npos) << r;
  // One rank skips a receive: a message is left over (eager) or its sender waits forever.
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank != 2) return;
    for (size_t i = s.steps.size(); i-- > 0;)
      if (s.steps[i].kind == StepKind::recv) {
        s.steps.erase(s.steps.begin() + static_cast<long>(i));
        break;
      }
  }, 1);
  EXPECT_NE(r.find("never received"), std::string::npos) << r;
  c.mode = Mode::rendezvous;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 2) s.steps.pop_back();
  }, 1);
  EXPECT_NE(r.find("deadlock"), std::string::npos) << r;
  // A dependency on a later step.
  r = runMutated(c, [](int, Schedule& s) { s.steps[0].deps.push_back(1); }, 1);
  EXPECT_NE(r.find("later step"), std::string::npos) << r;
}

// The reference semantics of the other collectives have teeth too.
TEST(Interpreter, NoticesBrokenSchedulesOfOtherCollectives) {
  SimConfig c;
  c.n = 4, c.count = 4 * 131, c.elem_size = 4, c.slice_bytes = 64, c.depth = 1, c.in_place = false;
  for (Collective collective : {Collective::reduce, Collective::allgather, Collective::reducescatter,
                                Collective::alltoall, Collective::gather, Collective::scatter}) {
    c.collective = collective;
    ASSERT_EQ(runMutated(c, {}, 3), "") << toString(collective) << ": the unbroken schedule must pass";
  }
  // Forwarding a partial reduction before it is complete.
  c.collective = Collective::reducescatter;
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  // Sending the root a chunk before its average is taken.
  c.collective = Collective::reduce, c.average = true, c.root = 2;
  EXPECT_NE(runMutated(c, [](int, Schedule& s) { dropDeps(s, StepKind::send); }, 20), "");
  c.average = false;
  // All-gather forwarding other ranks' chunks from the input, where only its own chunk lies.
  c.collective = Collective::allgather;
  std::string r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 1)
      for (Step& st : s.steps)
        if (st.kind == StepKind::send) st.source = BufferId::input;
  }, 1);
  EXPECT_NE(r.find("reads input outside the user's send buffer"), std::string::npos) << r;
  // A gather non-root reading its (empty) output.
  c.collective = Collective::gather, c.root = 0;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 2) s.steps[0].source = BufferId::output;
  }, 1);
  EXPECT_NE(r.find("touches output outside the user's receive buffer"), std::string::npos) << r;
  // The scatter root forgetting its own chunk.
  c.collective = Collective::scatter, c.root = 3;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank == 3) std::erase_if(s.steps, [](const Step& st) { return st.kind == StepKind::copy; });
  }, 1);
  EXPECT_NE(r.find("rank 3 element"), std::string::npos) << r;
  // All-to-all delivering chunks to the wrong place.
  c.collective = Collective::alltoall;
  r = runMutated(c, [](int rank, Schedule& s) {
    if (rank != 1) return;
    for (Step& st : s.steps)
      if (st.kind == StepKind::send) st.offset = (st.offset + 131 * 4) % (4 * 131 * 4);
  }, 1);
  EXPECT_NE(r, "");
}

constexpr int kWorldSizes[] = {1, 2, 3, 4, 5, 6, 7, 8};

class Schedules : public ::testing::TestWithParam<int> {};

// Counts: 0, 1, fewer than ranks, a prime, and one that spans many slices of every size used.
// Chunked collectives (all-gather, reduce-scatter, all-to-all, gather, scatter): n times
// per-rank counts 0, 1, a prime and one that spans many slices.
std::vector<size_t> countsFor(int n, Collective collective = Collective::allreduce) {
  if (chunked(collective)) {
    std::vector<size_t> counts;
    for (size_t per : {0, 1, 131, 523}) counts.push_back(per * static_cast<size_t>(n));
    return counts;
  }
  std::vector<size_t> counts = {0, 1, 1009, 4099};
  if (n > 2) counts.push_back(static_cast<size_t>(n - 1));
  return counts;
}

TEST_P(Schedules, RingAllreduceComputesTheSum) {
  const int n = GetParam();
  uint64_t seed = 1;
  for (size_t count : countsFor(n))
    for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{1024}, size_t{512} << 10})
        for (int depth : {1, 2, 8})
          for (bool in_place : {false, true})
            for (bool average : {false, true}) {
              // Keep the cross product cheap: the small slices only with small elements or counts.
              if (slice == 64 && count > 1009 && es > 2) continue;
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c;
                c.collective = Collective::allreduce;
                c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.depth = depth;
                c.in_place = in_place, c.average = average, c.mode = mode, c.seed = seed++;
                simulate(c);
                if (HasFatalFailure()) return;
              }
            }
}

TEST_P(Schedules, ChainBroadcastCopiesTheRootsData) {
  const int n = GetParam();
  uint64_t seed = 1000;
  for (size_t count : countsFor(n))
    for (size_t es : {size_t{1}, size_t{4}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{1024}, size_t{512} << 10})
        for (int root = 0; root < n; ++root)
          for (bool in_place : {false, true})
            for (Mode mode : {Mode::eager, Mode::rendezvous}) {
              SimConfig c;
              c.collective = Collective::broadcast;
              c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.root = root;
              c.in_place = in_place, c.mode = mode, c.seed = seed++;
              simulate(c);
              if (HasFatalFailure()) return;
            }
}

// Many seeds on one mid-sized case: different interleavings, same answer.
TEST_P(Schedules, RingAllreduceUnderManyInterleavings) {
  const int n = GetParam();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SimConfig c;
    c.n = n, c.count = 997, c.elem_size = 4, c.slice_bytes = 64, c.depth = 2;
    c.in_place = seed % 2, c.average = seed % 3 == 0, c.seed = seed;
    c.mode = seed % 4 < 2 ? Mode::eager : Mode::rendezvous;
    simulate(c);
    if (HasFatalFailure()) return;
  }
}

TEST_P(Schedules, StaticShape) {
  const int n = GetParam();
  for (size_t count : {size_t{0}, size_t{1}, size_t{1009}})
    for (int r = 0; r < n; ++r) {
      SimConfig c;
      c.n = n, c.count = count, c.slice_bytes = 1024, c.in_place = false;
      Schedule s = buildRingAllreduce(c.params(r));
      EXPECT_EQ(s.algorithm, "ring");
      if (count == 0) {
        EXPECT_TRUE(s.steps.empty()) << "count 0 moves nothing";
      }
      if (n == 1 && count > 0) {
        ASSERT_EQ(s.steps.size(), 1u) << "one rank out-of-place: just the copy";
        EXPECT_EQ(s.steps[0].kind, StepKind::copy);
      }
      if (n > 1) {
        EXPECT_EQ(s.num_phases, static_cast<uint32_t>(2 * (n - 1)));
      }
      // Every element is sent 2(n-1)/n times on average: total bytes sent = 2(n-1) chunks.
      size_t sent = 0;
      for (const Step& st : s.steps)
        if (st.kind == StepKind::send) sent += st.bytes;
      size_t expect = 0;
      for (int k = 0; k < n - 1; ++k) {
        expect += ring::chunk(count, n, ring::reduceScatterSendChunk(r, n, k)).count * c.elem_size;
        expect += ring::chunk(count, n, ring::allGatherSendChunk(r, n, k)).count * c.elem_size;
      }
      EXPECT_EQ(sent, expect) << "n " << n << " rank " << r << " count " << count;
      c.collective = Collective::broadcast;
      Schedule b = buildChainBroadcast(c.params(r));
      EXPECT_EQ(b.algorithm, "chain");
      size_t recv_bytes = 0;
      for (const Step& st : b.steps)
        if (st.kind == StepKind::recv) recv_bytes += st.bytes;
      EXPECT_EQ(recv_bytes, r == c.root ? 0 : count * c.elem_size) << "each non-root receives the buffer once";
    }
}

// Every algorithm in the catalogue, under both completion modes and several shapes.
TEST_P(Schedules, EveryCatalogAlgorithm) {
  const int n = GetParam();
  uint64_t seed = 5000;
  for (const AlgorithmInfo& a : catalog())
    for (size_t count : countsFor(n, a.collective))
      for (size_t slice : {size_t{64}, size_t{512} << 10})
        for (bool in_place : {false, true})
          for (int root : {0, n - 1})
            for (Mode mode : {Mode::eager, Mode::rendezvous}) {
              SimConfig c;
              c.collective = a.collective;
              c.algorithm = a.name;
              c.n = n, c.count = count, c.elem_size = 4, c.slice_bytes = slice, c.depth = 2;
              c.in_place = in_place, c.average = seed % 3 == 0, c.root = root, c.mode = mode, c.seed = seed++;
              SCOPED_TRACE(std::string(toString(a.collective)) + ":" + a.name);
              simulate(c);
              if (HasFatalFailure()) return;
            }
}

// The collectives beyond all-reduce and broadcast, every root, under shapes that stress
// slicing (64-byte slices: dozens per chunk), scratch reuse (one or two slots) and ordering.
TEST_P(Schedules, OtherCollectivesUnderManyShapes) {
  const int n = GetParam();
  uint64_t seed = 9000;
  for (Collective collective : {Collective::reduce, Collective::allgather, Collective::reducescatter,
                                Collective::alltoall, Collective::gather, Collective::scatter}) {
    const bool rooted = collective == Collective::reduce || collective == Collective::gather ||
                        collective == Collective::scatter;
    for (int root = 0; root < (rooted ? n : 1); ++root)
      for (size_t count : countsFor(n, collective))
        for (size_t es : {size_t{1}, size_t{8}})
          for (size_t slice : {size_t{64}, size_t{1024}})
            for (bool in_place : {false, true})
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c;
                c.collective = collective;
                c.n = n, c.count = count, c.elem_size = es, c.slice_bytes = slice, c.depth = slice == 64 ? 1 : 2;
                c.in_place = in_place, c.root = root, c.mode = mode, c.seed = seed++;
                c.average = reduces(collective) && seed % 2 == 0;
                simulate(c);
                if (HasFatalFailure()) return;
              }
  }
}

// Point-to-point: the sender's slices and the receiver's pair up one to one, tile the
// message exactly, and an empty message moves nothing (both sides still count the op).
TEST(PointToPoint, SendAndRecvSlicesPairUp) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1009}, size_t{4096}})
    for (size_t es : {size_t{1}, size_t{2}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{4096}, size_t{512} << 10}) {
        BuildParams p;
        p.nranks = 3, p.count = count, p.elem_size = es, p.slice_bytes = slice;
        p.rank = 0, p.root = 2;
        Schedule send = buildSend(p);
        p.rank = 2, p.root = 0;
        Schedule recv = buildRecv(p);
        SCOPED_TRACE("count " + std::to_string(count) + " elem " + std::to_string(es) + " slice " +
                     std::to_string(slice));
        ASSERT_EQ(send.steps.size(), recv.steps.size());
        size_t next = 0;
        for (size_t k = 0; k < send.steps.size(); ++k) {
          const Step &a = send.steps[k], &b = recv.steps[k];
          EXPECT_EQ(a.kind, StepKind::send);
          EXPECT_EQ(a.source, BufferId::input);
          EXPECT_EQ(a.peer, 2);
          EXPECT_EQ(b.kind, StepKind::recv);
          EXPECT_EQ(b.peer, 0);
          EXPECT_EQ(a.offset, next);
          EXPECT_EQ(b.offset, next);
          EXPECT_EQ(a.bytes, b.bytes);
          EXPECT_GT(a.bytes, 0u);
          EXPECT_LE(a.bytes, std::max(slice, es));
          EXPECT_EQ(a.bytes % es, 0u);
          EXPECT_LT(a.phase, send.num_phases);
          next += a.bytes;
        }
        EXPECT_EQ(next, count * es);
      }
}

INSTANTIATE_TEST_SUITE_P(WorldSize, Schedules, ::testing::ValuesIn(kWorldSizes),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::algo
