// An in-memory interpreter for Schedules: it runs every rank's schedule against the others and
// compares the results with each collective's reference semantics.
//
// Every collective in the catalogue has its reference semantics here, with the buffer
// conventions the communicator maps user buffers onto (src/exec/op.cc, planOp): which part of
// each rank's input holds data, which part of its output it may touch at all (e.g. a non-root's
// gather output is an empty workspace), which ranks are in place, and what each rank's output
// must hold afterwards.
//
// The interpreter is deliberately more adversarial than the socket transport: it walks each
// rank's schedule with the executor's own ScheduleWalker (exec/schedule_walker.h: lane heads
// once their deps are done, the local lane last; sends paired with receives by its rule), then
// picks at random among everything that could happen next: a send
// capturing its data (eager mode: sends complete before the peer receives; rendezvous mode:
// only when the peer's receive takes the data), a message landing in its receive buffer, a
// receive completing (and a recvReduce combining its source, output or input, with its
// scratch slot into the output). A missing dependency then
// shows up as wrong data (a send that reads a region too late, a scratch slot reused while
// still in use), and a schedule that can only finish with buffering shows up as a deadlock in
// rendezvous mode.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/chain_broadcast.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/schedule.h"

namespace coll::algo::sim {

// ---------------------------------------------------------------------------------------
// The interpreter

enum class Mode { eager, rendezvous };

inline bool reduces(Collective c) {
  return c == Collective::allreduce || c == Collective::reduce || c == Collective::reducescatter;
}
// Collectives whose schedule buffer is n chunks of the user's count, chunk c being rank c's.
inline bool chunked(Collective c) {
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
  // Ranks of each host, as the communicator groups them; empty: one host (the hierarchical
  // algorithms then build the flat ring).
  std::vector<std::vector<int>> hosts;

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
    if (!hosts.empty()) {
      o << " hosts=";
      for (const auto& h : hosts) {
        o << "{";
        for (size_t i = 0; i < h.size(); ++i) o << (i ? "," : "") << h[i];
        o << "}";
      }
    }
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
    p.hosts = hosts.empty() ? nullptr : &hosts;
    return p;
  }
};

inline Schedule build(const SimConfig& c, int rank) {
  BuildParams p = c.params(rank);
  p.in_place = c.inPlace(rank);
  if (!c.algorithm.empty()) return findAlgorithm(c.collective, c.algorithm)->build(p);
  if (c.collective == Collective::allreduce) return buildRingAllreduce(p);
  if (c.collective == Collective::broadcast) return buildChainBroadcast(p);
  return firstAlgorithm(c.collective)->build(p);
}

// Lets a test break a built schedule on purpose, to prove the interpreter notices.
using Mutation = std::function<void(int rank, Schedule& s)>;

// Runs all ranks' schedules (mutated if asked) to the end; "" or what went wrong.
std::string runSimulation(const SimConfig& c, const Mutation& mutate = {});

// "" when every rank's sends to each peer match that peer's receives in count and size.
std::string checkPairing(const SimConfig& c);

// Both checks, as gtest assertions naming the configuration.
void simulate(const SimConfig& c);

}  // namespace coll::algo::sim
