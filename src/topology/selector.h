// Chooses the algorithm for each (collective, size). Today: COLL_ALGO rules, else a fixed
// rule per host layout (the α-β cost model of issue 4 replaces it). Every distinct choice is
// logged once at INFO with its reason, so no selection is silent.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "topology/algo_override.h"
#include "topology/host_grouping.h"

namespace coll::topology {

struct Choice {
  const algo::AlgorithmInfo* algorithm = nullptr;
  std::string reason;
};

class Selector {
 public:
  // slice_bytes: the pipelining unit (COLL_SLICE_BYTES); below it nothing pipelines.
  Selector(std::vector<AlgoRule> rules, const HostGrouping& hosts, size_t slice_bytes = 512 << 10)
      : rules_(std::move(rules)), hosts_(hosts), slice_bytes_(slice_bytes) {}

  Choice choose(algo::Collective collective, size_t bytes);

 private:
  std::vector<AlgoRule> rules_;
  HostGrouping hosts_;
  size_t slice_bytes_;
  std::set<std::string> logged_;
};

}  // namespace coll::topology
