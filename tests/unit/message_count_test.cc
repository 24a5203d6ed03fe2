// The cost model's message counts (algorithms/cost/message_count.h) against the schedules the
// builders actually emit: every rank's send steps, summed over the job. Small counts (fewer
// elements than ranks: empty chunks send nothing) and small slices (a chunk as many messages)
// are where a formula and a builder would drift apart.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/cost/message_count.h"

namespace coll::algo::cost {
namespace {

using algo::Collective;

// Sends of the whole job: one message each.
double sentBy(const char* algorithm, int n, size_t count, size_t slice_bytes,
              const std::vector<std::vector<int>>& hosts) {
  const algo::AlgorithmInfo* a = algo::findAlgorithm(Collective::allreduce, algorithm);
  double sends = 0;
  for (int r = 0; r < n; ++r) {
    algo::BuildParams p;
    p.rank = r;
    p.nranks = n;
    p.count = count;
    p.elem_size = 4;
    p.slice_bytes = slice_bytes;
    p.hosts = &hosts;
    for (const algo::Step& s : a->build(p).steps) sends += s.kind == algo::StepKind::send;
  }
  return sends;
}

double predicted(const char* algorithm, const messages::Shape& s) {
  if (!std::strcmp(algorithm, "ring")) return messages::ringAllreduce(s);
  if (!std::strcmp(algorithm, "direct")) return messages::directAllreduce(s);
  if (!std::strcmp(algorithm, "hierarchical")) return messages::hierarchicalAllreduce(s);
  if (!std::strcmp(algorithm, "tree")) return messages::treeAllreduce(s);
  if (!std::strcmp(algorithm, "rhd")) return messages::rhdAllreduce(s);
  return messages::rdAllreduce(s);
}

TEST(MessageCount, MatchesTheBuildersSends) {
  struct Layout { int hosts, per_host; };
  for (Layout l : {Layout{1, 2}, Layout{1, 3}, Layout{1, 4}, Layout{2, 2}, Layout{4, 2}, Layout{2, 3}, Layout{3, 2},
                   Layout{1, 7}})
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{8}, size_t{100}, size_t{1000}})
      for (size_t slice : {size_t{64}, size_t{512} << 10}) {
        const int n = l.hosts * l.per_host;
        std::vector<std::vector<int>> hosts(static_cast<size_t>(l.hosts));
        for (int r = 0; r < n; ++r) hosts[static_cast<size_t>(r / l.per_host)].push_back(r);
        const messages::Shape shape{count, slice / 4, n, l.hosts, l.per_host};
        for (const char* a : {"ring", "direct", "hierarchical", "tree", "rhd", "rd"}) {
          if (!std::strcmp(a, "hierarchical") && (l.hosts < 2 || l.per_host < 2)) continue;  // it runs the ring
          EXPECT_EQ(predicted(a, shape), sentBy(a, n, count, slice, hosts))
              << a << " on " << l.hosts << "x" << l.per_host << ", " << count << " elements, slices of " << slice;
        }
      }
}

// The case the model was fitted on: 2 float32 elements on 8 ranks.
TEST(MessageCount, TwoElementsOnEightRanks) {
  const messages::Shape s{2, 128 << 10, 8, 4, 2};
  EXPECT_EQ(messages::rhdAllreduce(s), 16) << "halving 4 + 2 + 2, doubling mirrors";
  EXPECT_EQ(messages::rdAllreduce(s), 24);
  EXPECT_EQ(messages::directAllreduce(s), 28) << "7 to each of the 2 owners and back";
  EXPECT_EQ(messages::ringAllreduce(s), 28) << "2 non-empty chunks x 14 steps";
}

}  // namespace
}  // namespace coll::algo::cost
