// Chooses the algorithm for each (collective, size): a COLL_ALGO rule when one matches, else a
// tuned choice (COLL_TUNE's measurements) when one covers the size, else the algorithm of the
// catalogue with the smallest predicted time under the α-β-γ cost model (cost_model.h) on the
// job's topology::Topology. Every distinct choice is logged once at INFO (subsystem TUNE) with its
// predicted time and every rejected candidate's time or reason, so no selection is silent.
//
// Threading: one thread (the progress thread) calls choose(); the rest is set up before.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/slice_size.h"
#include "select/algo_override.h"
#include "bootstrap/host_grouping.h"
#include "topology/topology.h"
#include "select/tuning.h"

namespace coll::select {

struct Rejected {
  std::string algorithm;
  double predicted_s = -1;  // < 0: not runnable here, see reason
  std::string reason;
};

struct Choice {
  const algo::AlgorithmInfo* algorithm = nullptr;
  std::string reason;
  double predicted_s = -1;  // < 0 when the cost model could not price it
  std::vector<Rejected> rejected;
};

class Selector {
 public:
  // slice_bytes: the pipelining unit (COLL_SLICE_BYTES), which the model's chain needs.
  Selector(std::vector<AlgoRule> rules, topology::Topology topology, size_t slice_bytes = 512 << 10, TuningTable tuning = {});
  // A layout without measurements: the documented default link figures.
  Selector(std::vector<AlgoRule> rules, const bootstrap::HostGrouping& hosts, size_t slice_bytes = 512 << 10)
      : Selector(std::move(rules), topology::topologyFromGrouping(hosts), slice_bytes) {}

  // elem_size: bytes per element (the model counts the empty chunks of small buffers); 4 where
  // a caller has no data type (float32, what the benches and tables reduce).
  // The reference stays valid until the next call (the memo is bounded). schedules_only: for
  // the scheduled path, which runs what the board path declined (a device op staged on the host).
  const Choice& choose(algo::Collective collective, size_t bytes, size_t elem_size = 4, bool schedules_only = false);
  // The cost model's choice alone (no rule, no tuning): what --explain and autotune compare.
  // schedules_only: leave out the entries without a schedule (the board), for the scheduled path.
  Choice modelChoice(algo::Collective collective, size_t bytes, size_t elem_size = 4, bool schedules_only = false) const;
  // The shared-memory board (algorithms/board.h), where the job has one: its cells' capacity
  // for all-reduce and broadcast. The size up to which the model picks it is found here, once,
  // so that the board path may ask picksBoard() on the issuing thread while choose() runs on
  // the progress thread.
  void setBoard(size_t allreduce_bytes, size_t broadcast_bytes);
  // Whether choose() picks the board for this (collective, size): a COLL_ALGO rule that names
  // it (where it fits), else, with no rule for the size, the cost model.
  bool picksBoard(algo::Collective collective, size_t bytes) const;
  // The largest size at which the model picks the board (0: never), for the log.
  size_t boardUpTo(algo::Collective collective) const {
    return collective == algo::Collective::allreduce ? board_allreduce_up_to_ : board_broadcast_up_to_;
  }
  const topology::Topology& topology() const { return topology_; }
  void setTuning(TuningTable tuning) { tuning_ = std::move(tuning); cache_.clear(); }
  // Rules change only between ops (CommunicatorImpl::setAlgorithms), never while picksBoard runs.
  void setRules(std::vector<AlgoRule> rules) { rules_ = std::move(rules); cache_.clear(); }
  // COLL_DETERMINISTIC=1: reductions always run "ordered" (algorithms/ordered_reduce.h), over
  // any rule or tuning: a result that depended on the choice would not be deterministic.
  void setDeterministic(bool on) { deterministic_ = on; cache_.clear(); }
  // Whether large ops take larger slices (algorithms/slice_size.h): between hosts, where
  // COLL_SLICE_BYTES was left to its default. The model prices each size with that slice.
  void setGrowingSlices(bool on) { grow_slices_ = on; cache_.clear(); }
  // The slice an op of `bytes` runs with: the one rule the schedules, the model and the log share.
  size_t sliceBytes(size_t bytes) const {
    return algo::sliceBytesFor(bytes, slice_bytes_, grow_slices_ ? topology_.inter.beta_Bps : 0);
  }

 private:
  Choice decide(algo::Collective collective, size_t bytes, size_t elem_size, bool schedules_only) const;
  Choice boardChoice(algo::Collective collective, size_t bytes, size_t elem_size) const;
  size_t boardCapacity(algo::Collective collective) const;
  void logOnce(algo::Collective collective, size_t bytes, const Choice& c);

  std::vector<AlgoRule> rules_;
  topology::Topology topology_;
  size_t slice_bytes_;
  TuningTable tuning_;
  bool deterministic_ = false;
  bool grow_slices_ = false;
  std::set<std::string> logged_;
  std::map<std::tuple<algo::Collective, size_t, size_t, bool>, Choice> cache_;  // sizes recur (buckets, benchmarks)
  size_t board_allreduce_up_to_ = 0, board_broadcast_up_to_ = 0;  // the model picks the board up to these
};

// "12.3 us", "4.56 ms": predicted times for logs and tables.
std::string formatSeconds(double s);
// "direct 120 us; hierarchical 365 us; ring: needs ..." for logs.
std::string describeRejected(const std::vector<Rejected>& rejected);

}  // namespace coll::select
