// The hierarchical all-reduce, reduce-scatter and all-gather under host layouts (the catalogue
// test runs them on one host, where they build the ring): every rank's schedule run by the
// interpreter against the collective's reference, on hosts of 2 and 3 ranks, 2 to 4 hosts,
// ranks grouped in order and interleaved, odd counts, slices and scratch slots that wrap.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/hierarchical_collectives.h"
#include "unit/schedule_interpreter.h"

namespace coll::algo {
namespace {

using namespace sim;
using Hosts = std::vector<std::vector<int>>;

const Hosts kLayouts[] = {
    {{0, 1}, {2, 3}},                  // 2 x 2, as launchers place ranks
    {{0, 2}, {1, 3}},                  // 2 x 2, interleaved (round-robin placement)
    {{0, 1, 2}, {3, 4, 5}},            // 2 x 3
    {{0, 1}, {2, 3}, {4, 5}},          // 3 x 2: a ring of 3 hosts per lane
    {{5, 0}, {3, 4}, {1, 2}},          // 3 x 2, shuffled
    {{0, 1}, {2, 3}, {4, 5}, {6, 7}},  // 4 x 2
};

int ranksIn(const Hosts& hosts) { return static_cast<int>(hosts.size() * hosts.front().size()); }

TEST(HierarchicalSchedules, EveryCollectiveUnderHostLayouts) {
  uint64_t seed = 7000;
  for (const Hosts& hosts : kLayouts)
    for (Collective collective : {Collective::allreduce, Collective::reducescatter, Collective::allgather}) {
      const int n = ranksIn(hosts);
      const bool per_rank = collective != Collective::allreduce;
      for (size_t per : {size_t{0}, size_t{1}, size_t{131}, size_t{523}})
        for (size_t slice : {size_t{64}, size_t{512} << 10})
          for (int depth : {1, 2})
            for (bool in_place : {false, true})
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c;
                c.collective = collective;
                c.algorithm = "hierarchical";
                c.hosts = hosts;
                c.n = n, c.count = per_rank ? per * static_cast<size_t>(n) : per, c.elem_size = 4;
                c.slice_bytes = slice, c.depth = depth, c.in_place = in_place, c.mode = mode, c.seed = seed++;
                c.average = collective != Collective::allgather && seed % 3 == 0;
                simulate(c);
                if (HasFatalFailure()) return;
              }
    }
}

// Each host's link carries (H-1)/H of the buffer each way: on 2 x 2, every rank sends one
// chunk across hosts (the flat ring sends three from the two ranks at a host's edge).
TEST(HierarchicalSchedules, EachRankSendsItsLanesShareAcrossHosts) {
  const Hosts hosts = {{0, 1}, {2, 3}};
  const size_t per = 1000, elem = 4;
  for (Collective collective : {Collective::reducescatter, Collective::allgather}) {
    for (int r = 0; r < 4; ++r) {
      BuildParams p;
      p.rank = r, p.nranks = 4, p.count = per * 4, p.elem_size = elem, p.slice_bytes = 1024, p.pipeline_depth = 2;
      p.hosts = &hosts;
      const Schedule s = findAlgorithm(collective, "hierarchical")->build(p);
      EXPECT_EQ(s.algorithm, "hierarchical");
      size_t across = 0, inside = 0;
      for (const Step& st : s.steps)
        if (st.kind == StepKind::send) (st.peer / 2 == r / 2 ? inside : across) += st.bytes;
      EXPECT_EQ(across, per * elem) << toString(collective) << " rank " << r;
      EXPECT_EQ(inside, 2 * per * elem) << toString(collective) << " rank " << r;
    }
  }
}

// Hosts of different sizes: the flat ring, named so.
TEST(HierarchicalSchedules, UnequalHostsBuildTheRing) {
  const Hosts hosts = {{0, 1}, {2}};
  BuildParams p;
  p.rank = 0, p.nranks = 3, p.count = 30, p.elem_size = 4, p.slice_bytes = 64, p.pipeline_depth = 2;
  p.hosts = &hosts;
  EXPECT_EQ(buildHierarchicalReduceScatter(p).algorithm, "ring");
  EXPECT_EQ(buildHierarchicalAllgather(p).algorithm, "ring");
}

}  // namespace
}  // namespace coll::algo
