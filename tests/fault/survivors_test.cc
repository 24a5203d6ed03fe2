// Going on after a failure without being told who failed (ULFM's way): failedRanks, agree,
// revoke and shrink() with no list, on forked ranks over the parent's store (which outlives
// them, as collrun's does). A killed rank is found through the store at once; a stopped one
// through the revoke's probe; a stopped rank that resumes after the others went on is told so
// and makes nothing of its own; a revoke fails every rank's pending and later ops at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kRanks = 4;
constexpr int kFlagCarriedOn = 1;
constexpr int kFlagToldExcluded = 2;

const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "10", 1);
  return true;
}();

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A checked all-reduce and all-gather on the survivors' communicator; `old_ranks[r]`: the old
// rank of new rank r.
void carryOn(Communicator& comm, const std::vector<int>& old_ranks, int old_rank) {
  const int n = comm.size(), r = comm.rank();
  RANK_CHECK(n == static_cast<int>(old_ranks.size()), "shrunk size %d", n);
  RANK_CHECK(old_ranks[static_cast<size_t>(r)] == old_rank, "old rank %d became %d", old_rank, r);
  std::vector<int64_t> v(1001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (old_rank + 1) * int64_t(i);
  comm.allreduce(v.data(), v.data(), v.size(), DataType::i64, ReduceOp::sum).wait();
  int64_t factor = 0;
  for (int old : old_ranks) factor += old + 1;
  for (size_t i = 0; i < v.size(); ++i) RANK_CHECK(v[i] == factor * int64_t(i), "allreduce[%zu] = %lld", i, (long long)v[i]);
  int32_t mine = 100 + old_rank;
  std::vector<int32_t> all(static_cast<size_t>(n));
  comm.allgather(&mine, all.data(), 1, DataType::i32).wait();
  for (int q = 0; q < n; ++q) RANK_CHECK(all[q] == 100 + old_ranks[q], "allgather[%d] = %d", q, all[q]);
}

std::vector<int> allBut(int victim) {
  std::vector<int> ranks;
  for (int r = 0; r < kRanks; ++r)
    if (r != victim) ranks.push_back(r);
  return ranks;
}

// SIGKILL rank 2 mid all-reduce: the survivors learn it from failedRanks, agree on it, and
// shrink() without naming it.
TEST(Survivors, KilledRankIsFoundAgreedOnAndLeftBehind) {
  constexpr int kVictim = 2;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (awaitProgress(slots, kRanks, 3, std::chrono::seconds(30))) ::kill(pids[kVictim], SIGKILL);
  };
  auto outcomes = runRanks(kRanks, [](Communicator& comm, Rank& self) {
    allreduceUntilFailure(comm, 64 << 10, ReduceOp::sum);
    auto start = std::chrono::steady_clock::now();
    std::vector<int> failed;
    while ((failed = comm.failedRanks()).empty() && secondsSince(start) < 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    RANK_CHECK(failed == std::vector<int>{kVictim}, "failedRanks has %zu ranks, first %d", failed.size(),
               failed.empty() ? -1 : failed[0]);
    AgreeResult agreed = comm.agree(0xF0F0u | (1u << self.rank));
    RANK_CHECK(agreed.failed_ranks == std::vector<int>{kVictim}, "agree failed %zu ranks", agreed.failed_ranks.size());
    RANK_CHECK(agreed.value == 0xF0F0u, "agree value %llx", (unsigned long long)agreed.value);
    std::unique_ptr<Communicator> survivors = comm.shrink();
    std::printf("rank %d: found, agreed and shrank to rank %d of %d in %.3f s\n", self.rank, survivors->rank(),
                survivors->size(), secondsSince(start));
    RANK_CHECK(secondsSince(start) < 5, "took %.1f s", secondsSince(start));
    carryOn(*survivors, allBut(kVictim), self.rank);
    self.slot->flags |= kFlagCarriedOn;
  }, options);
  EXPECT_EQ(outcomes[kVictim].signal, SIGKILL);
  for (const RankOutcome& o : outcomes) {
    if (o.rank == kVictim) continue;
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    EXPECT_TRUE(o.flags & kFlagCarriedOn);
  }
}

// SIGSTOP rank 1: the others' ops time out, they shrink() without it (its responder does not
// answer the revoke's probe), carry on, and only then is rank 1 resumed: its own shrink()
// tells it the survivors went on without it.
TEST(Survivors, StoppedRankIsLeftBehindAndToldWhenItResumes) {
  constexpr int kVictim = 1;
  RunOptions options;
  options.deadline = std::chrono::seconds(80);
  options.comm_timeout = std::chrono::seconds(3);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!awaitProgress(slots, kRanks, 3, std::chrono::seconds(30))) return;
    ::kill(pids[kVictim], SIGSTOP);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(40);
    auto carried_on = [&] {
      for (int r : allBut(kVictim))
        if (!(slots[r].flags & kFlagCarriedOn)) return false;
      return true;
    };
    while (!carried_on() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(pids[kVictim], SIGCONT);
  };
  auto outcomes = runRanks(kRanks, [](Communicator& comm, Rank& self) {
    allreduceUntilFailure(comm, 64 << 10, ReduceOp::sum);
    auto start = std::chrono::steady_clock::now();
    if (self.rank == kVictim) {
      try {
        comm.shrink();
        RANK_CHECK(false, "the resumed rank made a communicator of its own");
      } catch (const Error& e) {
        RANK_CHECK(e.code() == ErrorCode::PeerLost && std::strstr(e.what(), "went on without rank 1"),
                   "%s: %s", codeName(e.code()), e.what());
        std::printf("rank %d (resumed): %s\n", self.rank, e.what());
        self.slot->flags |= kFlagToldExcluded;
      }
      return;
    }
    std::unique_ptr<Communicator> survivors = comm.shrink();
    std::printf("rank %d: shrank without the stopped rank in %.3f s\n", self.rank, secondsSince(start));
    carryOn(*survivors, allBut(kVictim), self.rank);
    self.slot->flags |= kFlagCarriedOn;
  }, options);
  for (const RankOutcome& o : outcomes) {
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    EXPECT_TRUE(o.flags & (o.rank == kVictim ? kFlagToldExcluded : kFlagCarriedOn));
  }
}

// Rank 0 revokes while the others wait in a receive it will never send: they fail at once
// (not at COLL_TIMEOUT), a later op fails at once too, and shrink() keeps all four ranks.
TEST(Survivors, RevokeFailsEveryRankAtOnceAndShrinkKeepsTheLiving) {
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  options.comm_timeout = std::chrono::seconds(20);
  auto outcomes = runRanks(kRanks, [](Communicator& comm, Rank& self) {
    std::vector<float> buf(1000, 1.0f);
    comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum).wait();
    auto start = std::chrono::steady_clock::now();
    if (self.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      start = std::chrono::steady_clock::now();
      comm.revoke();
    } else {
      try {
        comm.recv(buf.data(), buf.size(), DataType::f32, 0).wait();
        RANK_CHECK(false, "the receive completed");
      } catch (const Error& e) {
        RANK_CHECK(std::strstr(e.what(), "revoked by rank 0"), "%s", e.what());
      }
      RANK_CHECK(secondsSince(start) < 5, "the revoke took %.1f s to arrive", secondsSince(start));
    }
    try {
      comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(false, "an op after the revoke ran");
    } catch (const Error& e) {
      RANK_CHECK(std::strstr(e.what(), "revoked"), "%s", e.what());
    }
    std::unique_ptr<Communicator> all = comm.shrink();
    RANK_CHECK(all->size() == kRanks && all->rank() == self.rank, "rank %d of %d", all->rank(), all->size());
    carryOn(*all, {0, 1, 2, 3}, self.rank);
  }, options);
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
