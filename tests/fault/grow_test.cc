// Growing back after a failure: of 4 ranks one is killed, the survivors shrink() to 3, a new
// process joins through the job's store (Communicator::join) and the members grow() to 4 again;
// the grown communicator runs checked collectives. And the refusals: grow on a failed
// communicator, a join with the wrong secret, a join nobody admits (and that no later grow
// admits).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kMembers = 4;        // processes 0-3 start the job
constexpr int kJoiner = kMembers;  // process 4 joins it later
constexpr int kVictim = 2;
constexpr int kPhaseShrunk = 1;    // a member's slot: it runs on the shrunk communicator
constexpr int kFlagDone = 1;

const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "10", 1);
  return true;
}();

CommOptions optionsFor(int rank, int size, const std::string& address, const std::string& secret) {
  CommOptions o;
  o.rank = rank;
  o.size = size;
  o.store_address = address;
  o.secret = secret;
  return o;
}

// Checked collectives on the grown communicator; `tag` names each rank's process.
void check(Communicator& comm, int tag) {
  const int n = comm.size();
  std::vector<int64_t> v(777, tag);
  comm.allreduce(v.data(), v.data(), v.size(), DataType::i64, ReduceOp::sum).wait();
  int32_t mine = tag;
  std::vector<int32_t> tags(static_cast<size_t>(n));
  comm.allgather(&mine, tags.data(), 1, DataType::i32).wait();
  int64_t sum = 0;
  for (int32_t t : tags) sum += t;
  for (int64_t x : v) RANK_CHECK(x == sum, "allreduce gave %lld, the tags sum to %lld", (long long)x, (long long)sum);
  RANK_CHECK(tags == (std::vector<int32_t>{0, 1, 3, kJoiner}), "the grown communicator's processes, by rank: %d %d %d %d",
             tags[0], tags[1], tags[2], tags[3]);
}

TEST(Grow, AJoinerReplacesAKilledRank) {
  RunOptions options;
  options.deadline = std::chrono::seconds(80);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (awaitProgress(slots, kMembers, 3, std::chrono::seconds(30))) ::kill(pids[kVictim], SIGKILL);
  };
  auto outcomes = runProcesses(kMembers + 1, [](Rank& self, const std::string& address, const std::string& secret) {
    if (self.rank == kJoiner) {
      while (self.slots[0].phase.load() != kPhaseShrunk) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      auto start = std::chrono::steady_clock::now();
      CommOptions o = optionsFor(-1, -1, address, secret);
      std::unique_ptr<Communicator> comm = Communicator::join(o);
      std::printf("joiner: rank %d of %d after %.3f s\n", comm->rank(), comm->size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      RANK_CHECK(comm->rank() == 3 && comm->size() == 4, "joined as rank %d of %d", comm->rank(), comm->size());
      check(*comm, self.rank);
      self.slot->flags |= kFlagDone;
      return;
    }
    std::unique_ptr<Communicator> comm = Communicator::create(optionsFor(self.rank, kMembers, address, secret));
    allreduceUntilFailure(*comm, 64 << 10, ReduceOp::sum);
    std::unique_ptr<Communicator> survivors = comm->shrink();
    self.slot->phase = kPhaseShrunk;
    // Grow until the joiner is in: a grow admits whoever waits at that moment.
    std::unique_ptr<Communicator> grown;
    for (int round = 0; round < 200 && (!grown || grown->size() < kMembers); ++round) {
      grown = (grown ? grown : survivors)->grow();
      if (grown->size() < kMembers) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    RANK_CHECK(grown->size() == kMembers, "grown to %d ranks", grown->size());
    const int expected_rank = self.rank < kVictim ? self.rank : self.rank - 1;
    RANK_CHECK(grown->rank() == expected_rank, "rank %d became %d", self.rank, grown->rank());
    check(*grown, self.rank);
    self.slot->flags |= kFlagDone;
  }, options);
  EXPECT_EQ(outcomes[kVictim].signal, SIGKILL);
  for (const RankOutcome& o : outcomes) {
    if (o.rank == kVictim) continue;
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    EXPECT_TRUE(o.flags & kFlagDone);
  }
}

TEST(Grow, RefusalsSayWhy) {
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  auto outcomes = runProcesses(3, [](Rank& self, const std::string& address, const std::string& secret) {
    if (self.rank == 2) {  // not a member: joins wrongly, then where nobody grows
      CommOptions bad = optionsFor(-1, -1, address, secret + "x");
      bad.timeout = std::chrono::seconds(2);
      try {
        Communicator::join(bad);
        RANK_CHECK(false, "a join with the wrong secret went through");
      } catch (const Error& e) {
        RANK_CHECK(std::strstr(e.what(), "secret"), "%s", e.what());
      }
      CommOptions unheard = optionsFor(-1, -1, address, secret);
      unheard.name = "nobody";
      unheard.timeout = std::chrono::seconds(1);
      try {
        Communicator::join(unheard);
        RANK_CHECK(false, "a join nobody admitted went through");
      } catch (const Error& e) {
        RANK_CHECK(e.code() == ErrorCode::Timeout && std::strstr(e.what(), "must call grow()"), "%s: %s",
                   codeName(e.code()), e.what());
      }
      return;
    }
    std::unique_ptr<Communicator> comm = Communicator::create(optionsFor(self.rank, 2, address, secret));
    comm->abort();
    try {
      comm->grow();
      RANK_CHECK(false, "grow on an aborted communicator went through");
    } catch (const Error& e) {
      RANK_CHECK(e.code() == ErrorCode::InvalidArgument && std::strstr(e.what(), "shrink() to the survivors first"),
                 "%s: %s", codeName(e.code()), e.what());
    }
  }, options);
  expectAllSucceeded(outcomes);
}

// A joiner whose join timed out is not admitted by a later grow: the members' grow returns the
// two of them at once instead of waiting for a process that left.
TEST(Grow, AJoinerThatGaveUpIsNotAdmittedLater) {
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  auto outcomes = runProcesses(3, [](Rank& self, const std::string& address, const std::string& secret) {
    if (self.rank == 2) {
      CommOptions o = optionsFor(-1, -1, address, secret);
      o.timeout = std::chrono::seconds(1);
      try {
        Communicator::join(o);
        RANK_CHECK(false, "a join nobody admitted went through");
      } catch (const Error& e) {
        RANK_CHECK(e.code() == ErrorCode::Timeout, "%s: %s", codeName(e.code()), e.what());
      }
      self.slot->phase = 1;
      return;
    }
    std::unique_ptr<Communicator> comm = Communicator::create(optionsFor(self.rank, 2, address, secret));
    while (self.slots[2].phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Communicator> grown = comm->grow();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RANK_CHECK(grown->size() == 2, "the grow admitted a joiner that had left: %d ranks", grown->size());
    RANK_CHECK(seconds < 5, "the grow took %.1f s", seconds);
    int64_t one = 1;
    grown->allreduce(&one, &one, 1, DataType::i64, ReduceOp::sum).wait();
    RANK_CHECK(one == 2, "allreduce gave %lld", (long long)one);
  }, options);
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
