// exec/result_window.h: where a reduce-scatter's own chunk may be reduced straight into the
// caller's buffer (OpBuffers::result), out of place and in place, for every reduce-scatter the
// catalog has.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/patterns/ring.h"
#include "exec/result_window.h"

namespace coll {
namespace {

using algo::BufferId;
using algo::StepKind;

// Hosts of `per_host` ranks each (the last may hold fewer), as the topology reports them.
std::vector<std::vector<int>> hostsOf(int n, int per_host) {
  std::vector<std::vector<int>> hosts;
  for (int r = 0; r < n; ++r) {
    if (r % per_host == 0) hosts.emplace_back();
    hosts.back().push_back(r);
  }
  return hosts;
}

struct Window {
  size_t at, bytes;
};

// Rank r's chunk of a reduce-scatter of 1001 elements a rank (odd: slices do not divide it).
Window ownChunk(algo::BuildParams* p, int r, int n) {
  p->count = size_t{1001} * static_cast<size_t>(n);
  const algo::ring::Chunk own = algo::ring::chunk(p->count, n, r);
  return {own.first * p->elem_size, own.count * p->elem_size};
}

algo::BuildParams params(int rank, int nranks, const std::vector<std::vector<int>>* hosts, bool average) {
  algo::BuildParams p;
  p.rank = rank;
  p.nranks = nranks;
  p.elem_size = 4;
  p.slice_bytes = 1024;  // several slices a chunk
  p.in_place = false;
  p.average = average;
  p.hosts = hosts;
  return p;
}

// Every reduce-scatter but the ordered one writes its own chunk as it reads it from the input,
// so in place it may go straight to the caller's buffer; the ordered one receives rank 0's
// part into the chunk before it combines its own, so on every rank but 0 it may not.
TEST(ResultWindow, EveryReduceScatterButTheOrderedOneMayOverwriteItsOwnInput) {
  for (int n : {2, 3, 4, 5, 6, 8})
    for (int per_host : {1, 2, 3}) {
      const auto hosts = hostsOf(n, per_host);
      for (const algo::AlgorithmInfo& a : algo::catalog()) {
        if (a.collective != algo::Collective::reducescatter || !a.isSchedule()) continue;
        for (bool average : {false, true})
          for (int r = 0; r < n; ++r) {
            algo::BuildParams p = params(r, n, &hosts, average);
            const Window w = ownChunk(&p, r, n);
            const algo::Schedule s = a.build(p);
            const std::string what = std::string(a.name) + ", rank " + std::to_string(r) + " of " +
                                     std::to_string(n) + ", " + std::to_string(per_host) + " a host";
            EXPECT_TRUE(windowFits(s, w.at, w.bytes)) << what;
            const bool ordered = std::string(a.name) == "ordered";
            const bool may = windowMayOverwriteInput(s, w.at, w.bytes);
            if (!ordered || r != 0) {
              EXPECT_EQ(may, !ordered) << what;
            }
          }
      }
    }
}

TEST(ResultWindow, AStepAcrossAWindowsEdgeRefusesIt) {
  algo::Schedule s;
  s.steps.push_back({StepKind::divide, BufferId::output, -1, 100, 50});
  EXPECT_TRUE(windowFits(s, 100, 50));   // the step is the window
  EXPECT_TRUE(windowFits(s, 0, 100));    // ends where the step begins
  EXPECT_TRUE(windowFits(s, 150, 10));   // begins where the step ends
  EXPECT_TRUE(windowFits(s, 90, 70));    // holds the step
  EXPECT_FALSE(windowFits(s, 120, 100)); // the step begins before it
  EXPECT_FALSE(windowFits(s, 90, 40));   // the step ends after it
}

algo::Step step(StepKind kind, BufferId source, size_t offset, size_t bytes) {
  algo::Step s{kind, source, 1, offset, bytes};
  return s;
}

TEST(ResultWindow, InPlaceOnlyWhereTheFirstWriterIsTheOneReadOfTheInput) {
  const size_t at = 100, bytes = 50;
  auto mayOverwrite = [&](std::vector<algo::Step> steps) {
    algo::Schedule s;
    s.steps = std::move(steps);
    return windowMayOverwriteInput(s, at, bytes);
  };
  // Read from the input and written at once, then reduced on from the output: allowed.
  EXPECT_TRUE(mayOverwrite({step(StepKind::recvReduce, BufferId::input, 100, 50),
                            step(StepKind::recvReduce, BufferId::output, 100, 50)}));
  // Outside the window the input is the caller's own: anything goes.
  EXPECT_TRUE(mayOverwrite({step(StepKind::send, BufferId::input, 0, 100), step(StepKind::recv, BufferId::output, 0, 100)}));
  // The input's bytes sent: a peer would get the result, or half of it.
  EXPECT_FALSE(mayOverwrite({step(StepKind::send, BufferId::input, 100, 50)}));
  // Received into first, combined with the input after (the ordered reduce-scatter).
  EXPECT_FALSE(mayOverwrite({step(StepKind::recv, BufferId::output, 100, 50),
                             step(StepKind::combine, BufferId::input, 100, 50)}));
  // Read from the input twice.
  EXPECT_FALSE(mayOverwrite({step(StepKind::copy, BufferId::input, 100, 50),
                             step(StepKind::recvReduce, BufferId::input, 120, 10)}));
  // A partial sum from the input to scratch writes no output: the input is read for nothing.
  algo::Step partial = step(StepKind::recvReduce, BufferId::input, 100, 50);
  partial.partial_at = 0;
  EXPECT_FALSE(mayOverwrite({partial}));
  // Another slice of the window written first does not matter.
  EXPECT_TRUE(mayOverwrite({step(StepKind::recvReduce, BufferId::input, 125, 25),
                            step(StepKind::recvReduce, BufferId::input, 100, 25)}));
}

}  // namespace
}  // namespace coll
