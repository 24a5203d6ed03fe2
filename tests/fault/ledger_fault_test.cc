// The collective ledger on forked ranks: when an op times out, its error says which ranks
// never arrived and where each one is (still in an earlier op, not called yet, stopped), and
// the question to the peers stays bounded (a stopped rank costs the window, not a hang).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr double kTimeoutSeconds = 2;

// Forced, not defaulted: the bounds below are written against it. Runs before main.
const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "2", 1);
  return true;
}();

constexpr int kPhaseFailed = 2;

void waitForOthers(Rank& self, int phase, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    int done = 0;
    for (int r = 0; r < self.size; ++r) done += self.slots[r].phase.load() >= phase;
    if (done >= 2) return;  // ranks 0 and 1 are the ones that time out
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Ranks 0 and 1 call allreduce #1. Rank 2 meanwhile waits in a recv from rank 3, and rank 3
// never calls the all-reduce: both are named, with where they are.
TEST(Ledger, NamesRanksThatNeverArrivedAndWhereTheyAre) {
  auto outcomes = runRanks(4, [](Communicator& comm, Rank& self) {
    std::vector<float> buf(1024, 1.0f);
    comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum).wait();
    if (self.rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others start first
      Work w = comm.recv(buf.data(), 4, DataType::f32, 3);          // rank 3 never sends
      waitForOthers(self, kPhaseFailed, std::chrono::seconds(10));
      return;
    }
    if (self.rank == 3) return waitForOthers(self, kPhaseFailed, std::chrono::seconds(10));
    try {
      comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(false, "allreduce #1 succeeded without ranks 2 and 3");
    } catch (const Error& e) {
      recordError(e);
    }
    self.slot->phase = kPhaseFailed;
  });
  for (int r = 0; r < 2; ++r) {
    const RankOutcome& o = outcomes[r];
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    std::cout << "rank " << r << ": " << o.message << "\n";
    EXPECT_NE(o.message.find("allreduce #1"), std::string::npos);
    EXPECT_NE(o.message.find("ranks 2 and 3 have not started it"), std::string::npos);
    // Rank 2's receive runs beside the collectives (point-to-point progresses on its own).
    EXPECT_NE(o.message.find("rank 2 has not called it (last ran allreduce #0; waits in recv #1 of 16 bytes from peer 3"),
              std::string::npos);
    EXPECT_NE(o.message.find("rank 3 has not called it (last ran allreduce #0)"), std::string::npos);
  }
}

// A stopped rank cannot answer: the survivors' errors say so, within the timeout plus the
// answer window (1 s at most).
TEST(Ledger, StoppedRankIsNamedAsNotAnswering) {
  const int n = 3, victim = 1;
  int64_t stop_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(40);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (slots[0].progress.load() < 3 && std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    stop_ns = nowNs();
    ::kill(pids[victim], SIGSTOP);
    limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((slots[0].phase.load() < kPhaseFailed || slots[2].phase.load() < kPhaseFailed) &&
           std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(pids[victim], SIGKILL);
  };
  auto outcomes = runRanks(n, [](Communicator& comm, Rank& self) {
    std::vector<float> buf(1 << 16, 1.0f);
    try {
      for (;;) {
        comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum).wait();
        self.slot->progress++;
      }
    } catch (const Error& e) {
      recordError(e);
    }
    self.slot->phase = kPhaseFailed;
  }, options);
  for (int r : {0, 2}) {
    const RankOutcome& o = outcomes[r];
    SCOPED_TRACE(o.describe());
    double seconds = (o.error_time_ns - stop_ns) / 1e9;
    std::cout << "rank " << r << " failed " << seconds << " s after SIGSTOP: " << o.message << "\n";
    // Its own deadline, or the other survivor's abort after that one's deadline: where rank 1
    // stopped between the two survivors' halves of one op (a direct all-reduce), one of them
    // is already in the next op when the other times out, and learns of it by the abort.
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_TRUE(code == ErrorCode::Timeout || code == ErrorCode::PeerLost) << codeName(code);
    EXPECT_NE(o.message.find("rank 1 did not answer (stopped or dead)"), std::string::npos);
    EXPECT_LT(seconds, kTimeoutSeconds + 1.5);
  }
}

}  // namespace
}  // namespace coll::test
