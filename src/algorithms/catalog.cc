#include "algorithms/catalog.h"

#include "algorithms/chain_broadcast.h"
#include "algorithms/direct_allreduce.h"
#include "algorithms/ring_allreduce.h"

namespace coll::algo {

const char* toString(Collective c) { return c == Collective::allreduce ? "allreduce" : "broadcast"; }

const std::vector<AlgorithmInfo>& catalog() {
  static const std::vector<AlgorithmInfo> algorithms = {
      {Collective::allreduce, "ring", buildRingAllreduce},
      {Collective::allreduce, "direct", buildDirectAllreduce},
      {Collective::broadcast, "chain", buildChainBroadcast},
      {Collective::broadcast, "direct", buildDirectBroadcast},
  };
  return algorithms;
}

const AlgorithmInfo* findAlgorithm(Collective collective, const std::string& name) {
  for (const AlgorithmInfo& a : catalog())
    if (a.collective == collective && name == a.name) return &a;
  return nullptr;
}

std::string algorithmNames(Collective collective) {
  std::string names;
  for (const AlgorithmInfo& a : catalog())
    if (a.collective == collective) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

}  // namespace coll::algo
