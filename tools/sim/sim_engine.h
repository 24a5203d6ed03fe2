// The discrete-event core of coll-sim: it builds every rank's Schedule with the library's own
// builders (src/algorithms, the same BuildParams the communicator passes), keeps of each step
// only what timing needs, and walks them with the executor's own rules (exec/schedule_walker.h:
// readiness, lane order, and the pairing of the k-th send from a to b with b's k-th receive
// from a):
//  - a step starts when its deps are done and it heads its lane, as the executor posts it;
//    local steps (copy, divide) then run on the rank's progress thread;
//  - a posted send costs the sender its per-message software time, then crosses its path
//    (sim_network.h) and completes there; it arrives α later;
//  - a receive completes when it started and its message arrived; a recvReduce then reduces
//    its bytes at γ on the progress thread (after its reduce_after, where it has one).
// All ranks start together; with several runs (iters, warmup) each rank starts its next run
// when it finished the last, as a benchmark loop does. A rank's time per op is its timed runs'
// span over their number, and the op's time the mean over ranks, as all_reduce_perf reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "base/status.h"
#include "cluster_model.h"

namespace coll::sim {

struct SimRequest {
  algo::Collective collective = algo::Collective::allreduce;
  const algo::AlgorithmInfo* algorithm = nullptr;
  size_t bytes = 0;           // the user's buffer (all-gather, reduce-scatter: the full one)
  size_t elem_size = 4;
  size_t slice_bytes = 512 << 10;
  int pipeline_depth = 8;
  int root = 0;
  bool in_place = false;
  int warmup = 0;             // runs before the timed ones (a shaped link's bucket drains in them)
  int iters = 1;              // timed runs, back to back, as all_reduce_perf's -n
  bool exact = false;         // every rank, even where the job repeats in blocks (symmetry.h)
  size_t max_memory_bytes = size_t{4} << 30;  // refuse (with the estimate) what would need more
};

struct SimResult {
  double seconds = 0;         // per op, mean over ranks (all_reduce_perf's default -a 1)
  double slowest_rank_s = 0;  // per op, the slowest rank
  uint64_t steps = 0;        // of the ranks simulated
  uint64_t messages = 0;     // of the whole job
  uint64_t bytes_across_hosts = 0;
  size_t memory_bytes = 0;   // the compact schedules and queues at their largest
  int simulated_ranks = 0;   // fewer than the job's where it repeats (symmetry.h)
  std::string how;           // "exact ..." or "periodic ..."
  double load_s = 0, run_s = 0;  // wall time building and pairing the schedules; running them
};

// FailedPrecondition when the algorithm refuses the layout (hierarchical on unbalanced hosts),
// Internal when the schedules do not pair up or deadlock (a bug in a builder, named).
Status simulate(const ClusterModel& m, const SimRequest& req, SimResult* out);

}  // namespace coll::sim
