#include "algorithms/catalog.h"

#include "algorithms/binomial_broadcast.h"
#include "algorithms/chain_broadcast.h"
#include "algorithms/direct_allreduce.h"
#include "algorithms/direct_collectives.h"
#include "algorithms/hierarchical_allreduce.h"
#include "algorithms/ordered_reduce.h"
#include "algorithms/ring_collectives.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/rd_allreduce.h"
#include "algorithms/rhd_allreduce.h"
#include "algorithms/tree_allreduce.h"

namespace coll::algo {

const char* toString(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::allgather: return "allgather";
    case Collective::reducescatter: return "reducescatter";
    case Collective::alltoall: return "alltoall";
    case Collective::gather: return "gather";
    case Collective::scatter: return "scatter";
  }
  return "?";
}

bool parseCollective(const std::string& name, Collective* out) {
  for (Collective c : kAllCollectives)
    if (name == toString(c)) {
      *out = c;
      return true;
    }
  return false;
}

const std::vector<AlgorithmInfo>& catalog() {
  static const std::vector<AlgorithmInfo> algorithms = {
      {Collective::allreduce, "ring", buildRingAllreduce},
      {Collective::allreduce, "direct", buildDirectAllreduce},
      {Collective::allreduce, "hierarchical", buildHierarchicalAllreduce},
      {Collective::allreduce, "tree", buildTreeAllreduce},
      {Collective::allreduce, "rhd", buildRhdAllreduce},
      {Collective::allreduce, "rd", buildRdAllreduce},
      {Collective::allreduce, "ordered", buildOrderedAllreduce},
      {Collective::broadcast, "chain", buildChainBroadcast},
      {Collective::broadcast, "direct", buildDirectBroadcast},
      {Collective::broadcast, "binomial", buildBinomialBroadcast},
      {Collective::reduce, "ring", buildRingReduce},
      {Collective::reduce, "ordered", buildOrderedReduce},
      {Collective::allgather, "ring", buildRingAllgather},
      {Collective::reducescatter, "ring", buildRingReduceScatter},
      {Collective::reducescatter, "ordered", buildOrderedReduceScatter},
      {Collective::alltoall, "direct", buildDirectAlltoall},
      {Collective::gather, "direct", buildDirectGather},
      {Collective::scatter, "direct", buildDirectScatter},
  };
  return algorithms;
}

const AlgorithmInfo* findAlgorithm(Collective collective, const std::string& name) {
  for (const AlgorithmInfo& a : catalog())
    if (a.collective == collective && name == a.name) return &a;
  return nullptr;
}

const AlgorithmInfo* firstAlgorithm(Collective collective) {
  for (const AlgorithmInfo& a : catalog())
    if (a.collective == collective) return &a;
  return nullptr;
}

std::string algorithmNames(Collective collective) {
  std::string names;
  for (const AlgorithmInfo& a : catalog())
    if (a.collective == collective) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

}  // namespace coll::algo
