// Shrink after a failure: rank 2 of 4 is killed mid all-reduce; the three survivors see the
// failure, build a communicator without it (Communicator::shrink), and carry on: all-reduce,
// broadcast and all-gather on 3 ranks with checked results, then a clean teardown.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kRanks = 4;
constexpr int kVictim = 2;
constexpr int kFlagCarriedOn = 1;

const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "10", 1);
  return true;
}();


// The collectives the survivors run on the shrunk communicator, each checked.
void carryOn(Communicator& comm, int old_rank) {
  const int n = comm.size(), r = comm.rank();
  RANK_CHECK(n == kRanks - 1, "shrunk size %d", n);
  RANK_CHECK(r == (old_rank < kVictim ? old_rank : old_rank - 1), "old rank %d became %d", old_rank, r);
  std::vector<int32_t> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (r + 1) * int32_t(i);
  comm.allreduce(v.data(), v.data(), v.size(), DataType::i32, ReduceOp::sum).wait();
  for (size_t i = 0; i < v.size(); ++i) RANK_CHECK(v[i] == n * (n + 1) / 2 * int32_t(i), "allreduce[%zu] = %d", i, v[i]);
  std::vector<int32_t> b(77, r == n - 1 ? 42 : -1);
  comm.broadcast(b.data(), b.data(), b.size(), DataType::i32, n - 1).wait();
  for (int32_t x : b) RANK_CHECK(x == 42, "broadcast gave %d", x);
  int32_t mine = 100 + old_rank;
  std::vector<int32_t> all(n);
  comm.allgather(&mine, all.data(), 1, DataType::i32).wait();
  for (int q = 0; q < n; ++q) RANK_CHECK(all[q] == 100 + (q < kVictim ? q : q + 1), "allgather[%d] = %d", q, all[q]);
}

TEST(Shrink, SurvivorsOfAKilledRankCarryOnWithoutIt) {
  int64_t kill_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!awaitProgress(slots, kRanks, 3, std::chrono::seconds(30))) return;
    kill_ns = nowNs();
    ::kill(pids[kVictim], SIGKILL);
  };
  auto outcomes = runRanks(kRanks, [](Communicator& comm, Rank& self) {
    allreduceUntilFailure(comm, 256 << 10, ReduceOp::max);
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Communicator> survivors = comm.shrink({kVictim});
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d: shrank to rank %d of %d in %.3f s\n", self.rank, survivors->rank(), survivors->size(), seconds);
    carryOn(*survivors, self.rank);
    self.slot->flags |= kFlagCarriedOn;
  }, options);
  ASSERT_NE(kill_ns, 0) << "the ranks never completed 3 all-reduces";
  EXPECT_EQ(outcomes[kVictim].signal, SIGKILL);
  for (const RankOutcome& o : outcomes) {
    if (o.rank == kVictim) continue;
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    EXPECT_TRUE(o.flags & kFlagCarriedOn);
    EXPECT_NE(o.message.find("peer"), std::string::npos) << "the failure named a peer";
  }
}

// Survivors that disagree on whom to exclude fail at once, naming each one's list (the
// agreement step), instead of rendezvousing under different names until their deadline.
TEST(Shrink, SurvivorsThatDisagreeFailNamingTheirLists) {
  RunOptions options;
  options.deadline = std::chrono::seconds(40);
  auto outcomes = runRanks(kRanks, [](Communicator& comm, Rank& self) {
    if (self.rank == 3) {  // excluded by all, alive: waits for the others to finish
      for (int r = 0; r < 3; ++r)
        while (self.slots[r].phase.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return;
    }
    std::vector<int> excluded = self.rank == 2 ? std::vector<int>{1, 3} : std::vector<int>{3};
    auto start = std::chrono::steady_clock::now();
    try {
      comm.shrink(excluded);
      RANK_CHECK(false, "shrink succeeded although the survivors disagree");
    } catch (const Error& e) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RANK_CHECK(e.code() == ErrorCode::Mismatch, "%s: %s", codeName(e.code()), e.what());
      RANK_CHECK(std::strstr(e.what(), "{1,3}") && std::strstr(e.what(), "{3}"), "lists not named: %s", e.what());
      RANK_CHECK(seconds < 5, "took %.1f s", seconds);
    }
    self.slot->phase = 1;
  }, options);
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
