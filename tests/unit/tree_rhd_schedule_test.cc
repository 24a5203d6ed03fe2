// The double binary tree, recursive halving-doubling and recursive doubling (rd) all-reduce
// schedules, run by the
// in-memory interpreter (schedule_interpreter.h) on world sizes 1..9 and 16: powers of two,
// odd sizes (the tree's shifted mirror) and non-powers of two (halving-doubling's fold).
// The interpreter reduces by element width (1, 2, 4, 8 bytes), which is all a schedule sees of
// a dtype; the multirank tree./rhd. variants run every dtype x op over real transports.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "algorithms/patterns/double_binary_tree.h"
#include "algorithms/patterns/halving_doubling.h"
#include "algorithms/rhd_allreduce.h"
#include "algorithms/tree_allreduce.h"
#include "unit/schedule_interpreter.h"

namespace coll::algo {
namespace {

using namespace sim;

using Param = std::tuple<const char*, int>;  // algorithm, world size

class TreeAndRhdSchedules : public ::testing::TestWithParam<Param> {
 protected:
  const char* algorithm() const { return std::get<0>(GetParam()); }
  int n() const { return std::get<1>(GetParam()); }
  SimConfig config() const {
    SimConfig c;
    c.collective = Collective::allreduce;
    c.algorithm = algorithm();
    c.n = n();
    return c;
  }
};

// Counts 0, 1, fewer than ranks, primes, and many slices; every element width; slices from
// 64 bytes (dozens per half or block) to the default; one, two or eight scratch slots.
TEST_P(TreeAndRhdSchedules, ComputeTheSumAndAverage) {
  uint64_t seed = 1;
  std::vector<size_t> counts = {0, 1, 2, 1009, 4099};
  if (n() > 2) counts.push_back(static_cast<size_t>(n() - 1));
  for (size_t count : counts)
    for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
      for (size_t slice : {size_t{64}, size_t{1024}, size_t{512} << 10})
        for (int depth : {1, 2, 8})
          for (bool in_place : {false, true})
            for (bool average : {false, true}) {
              if (slice == 64 && count > 1009 && es > 2) continue;  // keep the product cheap
              if (depth == 8 && slice != 64 && count < 1009) continue;
              if (depth == 8 && slice > 1024) continue;  // one slice: eight slots of 512 KiB add nothing but time
              for (Mode mode : {Mode::eager, Mode::rendezvous}) {
                SimConfig c = config();
                c.count = count, c.elem_size = es, c.slice_bytes = slice, c.depth = depth;
                c.in_place = in_place, c.average = average, c.mode = mode, c.seed = seed++;
                simulate(c);
                if (HasFatalFailure()) return;
              }
            }
}

// Many seeds on one multi-slice case: different interleavings, same answer.
TEST_P(TreeAndRhdSchedules, UnderManyInterleavings) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SimConfig c = config();
    c.count = 997, c.elem_size = 4, c.slice_bytes = 64, c.depth = 1 + seed % 3;
    c.in_place = seed % 2, c.average = seed % 3 == 0, c.seed = seed;
    c.mode = seed % 4 < 2 ? Mode::eager : Mode::rendezvous;
    simulate(c);
    if (HasFatalFailure()) return;
  }
}

// What each rank sends, in bytes: the tree sends each half up once (but from its root) and
// down once per child; halving-doubling sends half, a quarter, ... then the same back, plus
// the whole buffer across each folded pair.
size_t expectedSentBytes(const std::string& algorithm, int rank, int n, size_t count, size_t es) {
  if (n == 1 || count == 0) return 0;
  if (algorithm == "tree") {
    size_t sent = 0;
    for (int t = 0; t < 2; ++t) {
      const size_t half = ring::chunk(count, 2, t).count * es;
      const dbtree::Node node = dbtree::treeNode(t, rank, n);
      sent += (node.parent >= 0 ? half : 0) + static_cast<size_t>(node.numChildren()) * half;
    }
    return sent;
  }
  const int p2 = hd::powerOfTwoFloor(n), v = hd::virtualRank(rank, n);
  const hd::FoldRole role = hd::foldRole(rank, n);
  if (role == hd::FoldRole::donor) return count * es;
  if (algorithm == "rd")  // the whole buffer every step, and back to the donor
    return (static_cast<size_t>(hd::log2Floor(n)) + (role == hd::FoldRole::absorber ? 1 : 0)) * count * es;
  auto bytesOf = [&](hd::BlockRange b) {
    size_t elems = 0;
    for (int c = b.first; c < b.last; ++c) elems += ring::chunk(count, p2, c).count;
    return elems * es;
  };
  size_t sent = role == hd::FoldRole::absorber ? count * es : 0;
  for (int s = 0; s < hd::log2Floor(n); ++s)
    sent += bytesOf(hd::halvingStep(v, p2, s).send) + bytesOf(hd::doublingStep(v, p2, s).send);
  return sent;
}

TEST_P(TreeAndRhdSchedules, SendTheExpectedBytes) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{1009}})
    for (int r = 0; r < n(); ++r) {
      SimConfig c = config();
      c.count = count, c.slice_bytes = 1024, c.in_place = false;
      Schedule s = build(c, r);
      EXPECT_EQ(s.algorithm, algorithm());
      if (count == 0) {
        EXPECT_TRUE(s.steps.empty()) << "count 0 moves nothing";
      }
      size_t sent = 0;
      for (const Step& st : s.steps)
        if (st.kind == StepKind::send) sent += st.bytes;
      EXPECT_EQ(sent, expectedSentBytes(algorithm(), r, n(), count, c.elem_size)) << "rank " << r << " count " << count;
    }
}

// avg is divided once per element, by one rank, so every rank copies the same bits.
TEST_P(TreeAndRhdSchedules, AverageDividesEachElementOnce) {
  SimConfig c = config();
  c.count = 1009, c.elem_size = 4, c.slice_bytes = 64, c.average = true;
  std::vector<int> divided(c.count, 0);
  for (int r = 0; r < n(); ++r)
    for (const Step& st : build(c, r).steps)
      if (st.kind == StepKind::divide)
        for (size_t b = st.offset; b < st.offset + st.bytes; b += c.elem_size) ++divided[b / c.elem_size];
  // rd: every rank that takes part holds the whole sum and divides it itself (the same bits in,
  // the same bits out); donors get the quotient from their absorber.
  const int dividers = std::string(algorithm()) == "rd" ? hd::powerOfTwoFloor(n()) : 1;
  for (size_t i = 0; i < c.count; ++i) ASSERT_EQ(divided[i], n() > 1 ? dividers : 0) << "element " << i;
}

// The passing runs above mean something: the same schedules with a forgotten dependency fail.
TEST(TreeAndRhdSchedulesBroken, TheInterpreterNotices) {
  for (const char* algorithm : {"tree", "rhd", "rd"})
    for (StepKind kind : {StepKind::send, StepKind::recvReduce, StepKind::divide}) {
      SimConfig c;
      c.algorithm = algorithm;
      c.n = 6, c.count = 997, c.slice_bytes = 64, c.depth = 1, c.average = true;
      bool noticed = false;
      for (uint64_t seed = 1; seed <= 30 && !noticed; ++seed) {
        c.seed = seed;
        noticed = !runSimulation(c, [kind](int, Schedule& s) {
                     for (Step& st : s.steps)
                       if (st.kind == kind) st.deps.clear();
                   }).empty();
      }
      EXPECT_TRUE(noticed) << algorithm << ": dropping the deps of step kind " << int(kind);
    }
}

// rd in place: combining the partner's data before this rank's own send of the same bytes
// left corrupts what the partner receives when the transport reads late (rendezvous).
TEST(RdScheduleBroken, CombiningBeforeTheSendLeftIsNoticed) {
  bool noticed = false;
  for (uint64_t seed = 1; seed <= 30 && !noticed; ++seed) {
    SimConfig c;
    c.algorithm = "rd";
    c.n = 4, c.count = 997, c.slice_bytes = 64, c.in_place = true, c.mode = Mode::rendezvous, c.seed = seed;
    noticed = !runSimulation(c, [](int, Schedule& s) {
                 for (Step& st : s.steps) st.reduce_after = -1;
               }).empty();
  }
  EXPECT_TRUE(noticed);
}

INSTANTIATE_TEST_SUITE_P(WorldSize, TreeAndRhdSchedules,
                         ::testing::Combine(::testing::Values("tree", "rhd", "rd"),
                                            ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 16)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace coll::algo
