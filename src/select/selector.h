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
  // The reference stays valid until the next call (the memo is bounded).
  const Choice& choose(algo::Collective collective, size_t bytes, size_t elem_size = 4);
  // The cost model's choice alone (no rule, no tuning): what --explain and autotune compare.
  Choice modelChoice(algo::Collective collective, size_t bytes, size_t elem_size = 4) const;
  // A COLL_ALGO rule decides this (collective, size): no shortcut may bypass the selector.
  bool forced(algo::Collective collective, size_t bytes) const { return matchRule(rules_, collective, bytes) != nullptr; }
  const topology::Topology& topology() const { return topology_; }
  void setTuning(TuningTable tuning) { tuning_ = std::move(tuning); cache_.clear(); }
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
  Choice decide(algo::Collective collective, size_t bytes, size_t elem_size) const;
  void logOnce(algo::Collective collective, size_t bytes, const Choice& c);

  std::vector<AlgoRule> rules_;
  topology::Topology topology_;
  size_t slice_bytes_;
  TuningTable tuning_;
  bool deterministic_ = false;
  bool grow_slices_ = false;
  std::set<std::string> logged_;
  std::map<std::tuple<algo::Collective, size_t, size_t>, Choice> cache_;  // sizes recur (buckets, benchmarks)
};

// "12.3 us", "4.56 ms": predicted times for logs and tables.
std::string formatSeconds(double s);
// "direct 120 us; hierarchical 365 us; ring: needs ..." for logs.
std::string describeRejected(const std::vector<Rejected>& rejected);

}  // namespace coll::select
