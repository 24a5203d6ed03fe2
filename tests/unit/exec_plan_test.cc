// ExecPlan::of (exec/executor.h): what the executor derives from a schedule before running it,
// here the receives whose bytes a send passes on unchanged (Connection::postRecvRelay); and
// algo::copiesBothWays, the busy ranks whose large messages coll-sim has read by CMA.
#include <gtest/gtest.h>

#include "algorithms/chain_broadcast.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/ring_collectives.h"
#include "exec/executor.h"

namespace coll {
namespace {

algo::BuildParams params(int rank, int nranks) {
  algo::BuildParams p;
  p.rank = rank;
  p.nranks = nranks;
  p.count = 3 * 1000 + 1;  // several slices per chunk
  p.slice_bytes = 4096;
  p.in_place = false;
  return p;
}

TEST(CopiesBothWays, AnAllGathersRanks) {
  for (int n : {2, 3, 5})
    for (int r = 0; r < n; ++r) EXPECT_TRUE(algo::copiesBothWays(algo::buildRingAllgather(params(r, n))));
}

TEST(CopiesBothWays, NotAReducingOpsRanks) {
  for (int n : {2, 3})
    for (int r = 0; r < n; ++r) {
      EXPECT_FALSE(algo::copiesBothWays(algo::buildRingAllreduce(params(r, n)))) << "all-reduce rank " << r;
      EXPECT_FALSE(algo::copiesBothWays(algo::buildRingReduceScatter(params(r, n)))) << "rank " << r;
    }
}

TEST(CopiesBothWays, OnlyTheMiddleOfABroadcastChain) {
  const int n = 4;
  for (int r = 0; r < n; ++r) {
    algo::BuildParams p = params(r, n);
    p.in_place = true;
    const bool middle = r != 0 && r != n - 1;  // the chain runs from the root, rank 0, upwards
    EXPECT_EQ(algo::copiesBothWays(algo::buildChainBroadcast(p)), middle) << "rank " << r;
  }
}

// Every receive of a chain's middle is passed on, by the send of the same slice; the last rank
// passes nothing on and the root receives nothing.
TEST(ExecPlan, AChainsMiddleRelaysEverySlice) {
  const int n = 4;
  for (int r = 0; r < n; ++r) {
    algo::BuildParams p = params(r, n);
    p.in_place = true;
    const algo::Schedule s = algo::buildChainBroadcast(p);
    const ExecPlan plan = ExecPlan::of(s);
    size_t receives = 0, relayed = 0;
    for (size_t i = 0; i < s.steps.size(); ++i) {
      if (s.steps[i].kind != algo::StepKind::recv) continue;
      ++receives;
      const int32_t f = plan.relay_send[i];
      if (f < 0) continue;
      ++relayed;
      EXPECT_EQ(s.steps[f].kind, algo::StepKind::send);
      EXPECT_EQ(s.steps[f].offset, s.steps[i].offset);
      EXPECT_EQ(s.steps[f].bytes, s.steps[i].bytes);
    }
    EXPECT_EQ(receives, r == 0 ? 0u : s.steps.size() - (r == n - 1 ? 0 : s.steps.size() / 2)) << "rank " << r;
    EXPECT_EQ(relayed, r == 0 || r == n - 1 ? 0u : receives) << "rank " << r;
  }
}

// A ring all-gather passes on every chunk it receives but the last; a reduction's receives
// (recvReduce) are never relayed, since what goes on is the combined result.
TEST(ExecPlan, ARingAllGatherRelaysAllButItsLastChunk) {
  for (int n : {3, 5}) {
    const algo::Schedule s = algo::buildRingAllgather(params(1, n));
    const ExecPlan plan = ExecPlan::of(s);
    size_t receives = 0, relayed = 0;
    for (size_t i = 0; i < s.steps.size(); ++i) {
      if (s.steps[i].kind == algo::StepKind::recv) ++receives;
      if (plan.relay_send[i] >= 0) ++relayed;
    }
    EXPECT_EQ(relayed, receives * static_cast<size_t>(n - 2) / static_cast<size_t>(n - 1)) << n << " ranks";
    const algo::Schedule reduce = algo::buildRingReduceScatter(params(1, n));
    for (int32_t f : ExecPlan::of(reduce).relay_send) EXPECT_LT(f, 0);
  }
}

}  // namespace
}  // namespace coll
