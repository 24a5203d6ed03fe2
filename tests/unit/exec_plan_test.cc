// ExecPlan::of (exec/executor.h): what the executor derives from a schedule before running it,
// here the hint that lets a transport have receivers read a busy sender's memory
// (Connection::setBusySender).
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

TEST(ExecPlan, AllGatherCopiesBothWays) {
  for (int n : {2, 3, 5})
    for (int r = 0; r < n; ++r) EXPECT_TRUE(ExecPlan::of(algo::buildRingAllgather(params(r, n))).copies_both_ways);
}

TEST(ExecPlan, ReducingOpsDoNot) {
  for (int n : {2, 3})
    for (int r = 0; r < n; ++r) {
      EXPECT_FALSE(ExecPlan::of(algo::buildRingAllreduce(params(r, n))).copies_both_ways) << "all-reduce rank " << r;
      EXPECT_FALSE(ExecPlan::of(algo::buildRingReduceScatter(params(r, n))).copies_both_ways) << "rank " << r;
    }
}

TEST(ExecPlan, OnlyTheMiddleOfABroadcastChainCopiesBothWays) {
  const int n = 4;
  for (int r = 0; r < n; ++r) {
    algo::BuildParams p = params(r, n);
    p.in_place = true;
    const bool middle = r != 0 && r != n - 1;  // the chain runs from the root, rank 0, upwards
    EXPECT_EQ(ExecPlan::of(algo::buildChainBroadcast(p)).copies_both_ways, middle) << "rank " << r;
  }
}

}  // namespace
}  // namespace coll
