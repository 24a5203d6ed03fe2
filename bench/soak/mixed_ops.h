// The soak run's workload: a deterministic stream of mixed collectives, each checked.
//
// Every rank draws the same stream from the same seed (kind, count, root), so the ranks agree
// about each call without talking. Inputs depend on rank, index and op number, and expected
// values come from closed formulas over small integers (exact in f32), so a misplaced chunk,
// a stale buffer or a wrong root fails the check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "coll/communicator.h"

namespace coll::soak {

// ring_shift: point-to-point, each rank sending to the next and receiving from the previous
// (eager and rendezvous sizes both, as counts go).
enum class OpKind { allreduce, broadcast, allgather, reduce_scatter, alltoall, ring_shift };
inline constexpr int kNumOpKinds = 6;
const char* toString(OpKind kind);

struct MixedOp {
  uint64_t index = 0;  // position in the stream (0, 1, ...)
  OpKind kind = OpKind::allreduce;
  size_t count = 0;    // elements per rank (per peer for alltoall, per chunk for the gathers)
  int root = 0;        // broadcast only
};

// Draws op after op; counts are log-uniform in [0, max_count] so small and large messages
// (and so every algorithm and transport path the selector picks) both appear.
class MixedOpStream {
 public:
  MixedOpStream(uint64_t seed, size_t max_count, int nranks);
  MixedOp next();

 private:
  std::mt19937_64 rng_;
  size_t max_count_;
  int nranks_;
  uint64_t index_ = 0;
};

// Buffers for the largest op, allocated once so the run's own allocations do not blur the
// library's memory figures.
class SoakBuffers {
 public:
  SoakBuffers(size_t max_count, int nranks);
  std::vector<float> send, recv;
};

// Runs one op on comm, waits for it and checks the result. Returns "" or what was wrong
// (op, first wrong index, expected and found values). Throws coll::Error from the library.
std::string runAndCheck(Communicator& comm, const MixedOp& op, SoakBuffers& buffers);

}  // namespace coll::soak
