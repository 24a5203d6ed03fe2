#include "algorithms/catalog.h"

#include "algorithms/binomial_broadcast.h"
#include "algorithms/board.h"
#include "algorithms/chain_broadcast.h"
#include "algorithms/direct_allreduce.h"
#include "algorithms/direct_collectives.h"
#include "algorithms/hierarchical_allreduce.h"
#include "algorithms/hierarchical_collectives.h"
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
      {Collective::allreduce, "ring", "reduce-scatter then all-gather around the ring, sliced and pipelined",
       buildRingAllreduce, cost::ringAllreduce},
      {Collective::allreduce, "direct", "two-shot: every rank reduces one chunk from all and sends it to all",
       buildDirectAllreduce, cost::directAllreduce},
      {Collective::allreduce, "hierarchical", "reduce-scatter in each host, a ring per local rank across hosts, all-gather",
       buildHierarchicalAllreduce, cost::hierarchicalAllreduce},
      {Collective::allreduce, "tree", "double binary tree, each half reduced up one tree and broadcast down",
       buildTreeAllreduce, cost::treeAllreduce},
      {Collective::allreduce, "rhd", "recursive halving then doubling (Rabenseifner), non-powers of two folded in",
       buildRhdAllreduce, cost::rhdAllreduce},
      {Collective::allreduce, "rd", "recursive doubling: log2(n) exchanges of the whole buffer",
       buildRdAllreduce, cost::rdAllreduce},
      {Collective::allreduce, "ordered", "every element reduced in rank order: the same bits whatever the layout",
       buildOrderedAllreduce, nullptr},
      {Collective::allreduce, "board", "one host: every rank posts its operand in shared memory and combines all n",
       nullptr, cost::boardAllreduce},
      {Collective::broadcast, "chain", "root to root+1 to ... slice by slice, pipelined",
       buildChainBroadcast, cost::chainBroadcast},
      {Collective::broadcast, "direct", "the root sends the whole buffer to every rank in one step",
       buildDirectBroadcast, cost::directBroadcast},
      {Collective::broadcast, "binomial", "binomial tree, farthest partners first: ceil(log2 n) rounds",
       buildBinomialBroadcast, cost::binomialBroadcast},
      {Collective::broadcast, "board", "one host: the root posts the buffer in shared memory, every rank copies it",
       nullptr, cost::boardBroadcast},
      {Collective::reduce, "ring", "the ring's reduce-scatter, chunks gathered at the root",
       buildRingReduce, [](const cost::Fabric& x) { return cost::ringPhase(x, true); }},
      {Collective::reduce, "ordered", "every element reduced in rank order at the root",
       buildOrderedReduce, nullptr},
      {Collective::allgather, "ring", "n-1 steps around the ring, each passing on the chunk it received",
       buildRingAllgather, [](const cost::Fabric& x) { return cost::ringChunked(x, false); }},
      {Collective::allgather, "hierarchical", "a ring per local rank across hosts, then an all-gather in each host",
       buildHierarchicalAllgather, [](const cost::Fabric& x) { return cost::hierarchicalPhase(x, false); }},
      {Collective::reducescatter, "ring", "the ring all-reduce's first half: each rank ends with its reduced chunk",
       buildRingReduceScatter, [](const cost::Fabric& x) { return cost::ringChunked(x, true); }},
      {Collective::reducescatter, "hierarchical", "reduce-scatter in each host, then a ring per local rank across hosts",
       buildHierarchicalReduceScatter, [](const cost::Fabric& x) { return cost::hierarchicalPhase(x, true); }},
      {Collective::reducescatter, "direct", "every rank sends chunk c straight to rank c, which reduces what it gets",
       buildDirectReduceScatter, nullptr},
      {Collective::reducescatter, "ordered", "every chunk reduced in rank order by its owner",
       buildOrderedReduceScatter, nullptr},
      {Collective::alltoall, "direct", "every rank sends each peer its block in one step",
       buildDirectAlltoall, cost::directExchange},
      {Collective::gather, "direct", "every rank sends its block to the root in one step",
       buildDirectGather, cost::directExchange},
      {Collective::scatter, "direct", "the root sends each rank its block in one step",
       buildDirectScatter, cost::directExchange},
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
