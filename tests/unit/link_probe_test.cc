// The start-up probe's loaded step (topology/link_probe.h): the chained ring-shift schedule it
// runs as one op, and how one rank's timed runs become its figure. The measurement itself
// needs ranks and a transport (coll-topo under collrun shows it).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include "algorithms/patterns/ring.h"
#include "topology/link_probe.h"

namespace coll::topology {
namespace {

using algo::StepKind;

TEST(LoadedStepSchedule, OneSendAndOneRecvReducePerRoundChainedThroughTheReceive) {
  for (int n : {2, 3, 4, 8}) {
    for (int rank = 0; rank < n; ++rank) {
      algo::Schedule s = loadedStepSchedule(rank, n, kLoadedStepRounds);
      ASSERT_EQ(s.steps.size(), 2u * kLoadedStepRounds) << "n " << n << " rank " << rank;
      EXPECT_EQ(s.num_phases, static_cast<uint32_t>(kLoadedStepRounds));
      EXPECT_EQ(s.scratch_bytes, kLoadedStepRounds * 8u);
      for (int k = 0; k < kLoadedStepRounds; ++k) {
        const algo::Step& send = s.steps[2 * k];
        const algo::Step& recv = s.steps[2 * k + 1];
        EXPECT_EQ(send.kind, StepKind::send);
        EXPECT_EQ(send.peer, algo::ring::right(rank, n));
        EXPECT_EQ(send.source, algo::BufferId::output);
        EXPECT_EQ(send.offset, 8u * k);
        EXPECT_EQ(send.bytes, 8u);
        EXPECT_EQ(recv.kind, StepKind::recvReduce);
        EXPECT_EQ(recv.peer, algo::ring::left(rank, n));
        EXPECT_EQ(recv.offset, 8u * (k + 1));
        EXPECT_EQ(recv.bytes, 8u);
        EXPECT_EQ(recv.scratch_offset, 8u * k);
        EXPECT_EQ(send.phase, static_cast<uint32_t>(k));
        EXPECT_EQ(recv.phase, static_cast<uint32_t>(k));
        // The chain: round k's send waits for round k - 1's receive (and its reduction), and
        // for nothing else; the receives wait for nothing, so all are posted at once.
        if (k == 0) EXPECT_TRUE(send.deps.empty());
        else EXPECT_EQ(send.deps, std::vector<uint32_t>{static_cast<uint32_t>(2 * k - 1)});
        EXPECT_TRUE(recv.deps.empty()) << "round " << k;
        EXPECT_LT(recv.reduce_after, 0);
      }
    }
  }
}

TEST(LoadedStepSchedule, EmptyOnOneRank) {
  EXPECT_TRUE(loadedStepSchedule(0, 1, kLoadedStepRounds).steps.empty());
  EXPECT_TRUE(loadedStepSchedule(0, 4, 0).steps.empty());
}

// Runs every rank's schedule in memory (eager sends, FIFO per ordered pair of ranks, lane
// heads posted once their deps are done, as the executor does) on f32 buffers in place. Rank
// r starts with r + 1 in its first 8 B and zeros after: if every round passes on what the
// previous one received, region k of rank r ends up holding rank r - k's value.
TEST(LoadedStepSchedule, EachRoundPassesOnWhatThePreviousReceived) {
  for (int n : {2, 3, 5}) {
    const int rounds = kLoadedStepRounds;
    std::vector<algo::Schedule> s(n);
    std::vector<std::vector<float>> buf(n, std::vector<float>(2 * (rounds + 1), 0.0f));
    std::vector<std::vector<uint8_t>> done(n);
    std::vector<size_t> next_send(n, 0), next_recv(n, 0);
    std::map<std::pair<int, int>, std::deque<std::vector<float>>> wire;
    for (int r = 0; r < n; ++r) {
      s[r] = loadedStepSchedule(r, n, rounds);
      done[r].assign(s[r].steps.size(), 0);
      buf[r][0] = buf[r][1] = static_cast<float>(r + 1);
    }
    auto ready = [&](int r, size_t i) {
      return std::all_of(s[r].steps[i].deps.begin(), s[r].steps[i].deps.end(), [&](uint32_t d) { return done[r][d]; });
    };
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int r = 0; r < n; ++r) {
        // Lanes: the sends in order, the receives in order (one peer each way).
        while (2 * next_send[r] < s[r].steps.size() && ready(r, 2 * next_send[r])) {
          const algo::Step& st = s[r].steps[2 * next_send[r]];
          const float* from = &buf[r][st.offset / 4];
          wire[{r, st.peer}].push_back({from[0], from[1]});
          done[r][2 * next_send[r]++] = 1;
          progressed = true;
        }
        while (2 * next_recv[r] + 1 < s[r].steps.size() && ready(r, 2 * next_recv[r] + 1)) {
          const algo::Step& st = s[r].steps[2 * next_recv[r] + 1];
          auto& q = wire[{st.peer, r}];
          if (q.empty()) break;
          buf[r][st.offset / 4] += q.front()[0];
          buf[r][st.offset / 4 + 1] += q.front()[1];
          q.pop_front();
          done[r][2 * next_recv[r]++ + 1] = 1;
          progressed = true;
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(std::all_of(done[r].begin(), done[r].end(), [](uint8_t d) { return d != 0; }))
          << "n " << n << ": rank " << r << " stuck";
      for (int k = 0; k <= rounds; ++k) {
        const float want = static_cast<float>(algo::ring::mod(r - k, n) + 1);
        EXPECT_EQ(buf[r][2 * k], want) << "n " << n << " rank " << r << " region " << k;
        EXPECT_EQ(buf[r][2 * k + 1], want);
      }
    }
  }
}

TEST(LoadedStepFromRuns, MedianRunPerRound) {
  EXPECT_DOUBLE_EQ(loadedStepFromRuns({320e-6, 160e-6, 480e-6}, 16), 20e-6);
  EXPECT_DOUBLE_EQ(loadedStepFromRuns({160e-6}, 16), 10e-6);
  EXPECT_DOUBLE_EQ(loadedStepFromRuns({100e-6, 300e-6}, 10), 30e-6);  // even count: the upper middle
  EXPECT_EQ(loadedStepFromRuns({}, 16), 0);
  EXPECT_EQ(loadedStepFromRuns({1e-3}, 0), 0);
}

}  // namespace
}  // namespace coll::topology
