// Fault tests on forked ranks: a rank killed (SIGKILL) or frozen (SIGSTOP) in the middle of a
// stream of all-reduces, a rank that aborts its communicator (mid-op and while idle), ranks
// that disagree about the call (count, type, collective), and a rank holding the wrong job
// secret. The invariant under test (DESIGN.md): no hang; every survivor fails with PeerLost,
// Timeout (or Mismatch) within 2 x COLL_TIMEOUT, with a message that names the op and a peer,
// and the error sticks (later ops fail at once). A killed rank is more than that: its death is
// detected, so the KillRank cases require PeerLost naming it within kDetectSeconds, under a
// deadline four times as long that could not have produced the error in time.
#include <gtest/gtest.h>
#include <signal.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kTimeoutSeconds = 10;

// Forced, not defaulted: the bounds below are written against this timeout. Runs before main
// and so before anything reads Config.
const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "10", 1);
  return true;
}();

// The KillRank cases: each rank's op deadline (CommOptions::timeout), and the bound within
// which the survivors must have reported the death. The library reports in 0.05-0.30 s
// (docs/RELIABILITY.md); 5 s leaves room for a loaded 2-core machine, and a Timeout cannot
// come before 20 s, so passing proves the death was detected, not waited out.
constexpr std::chrono::seconds kKillTimeout{20};
constexpr double kDetectSeconds = 5.0;

constexpr int kFlagStickyChecked = 1;
constexpr int kPhaseFailed = 2;

// Every rank: all-reduce `floats` in a loop until an op fails; record that error, check that
// the next op fails at once with the same cause, and that asyncError() reports it.
void loopUntilFailureOf(Communicator& comm, Rank& self, size_t floats) {
  allreduceUntilFailure(comm, floats, ReduceOp::max);
  std::vector<float> buf(floats, 1.0f);
  try {
    comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max).wait();
    RANK_CHECK(false, "an all-reduce after the failure succeeded");
  } catch (const Error& e) {
    RANK_CHECK(std::strstr(e.what(), "already failed") != nullptr, "the next op failed differently: %s", e.what());
  }
  RANK_CHECK(comm.asyncError().has_value(), "asyncError() is empty after a failure");
  self.slot->flags |= kFlagStickyChecked;
  self.slot->phase = kPhaseFailed;
}

void loopUntilFailure(Communicator& comm, Rank& self) { loopUntilFailureOf(comm, self, 1 << 20); }  // 4 MiB

// The same, but the communicator stays alive (as in an application that catches the error and
// goes on) until all but one rank have failed, or 1.5 x the timeout: only the library's own
// reaction to the failure, not this process's exit, can then tell the peers.
void loopUntilFailureThenLinger(Communicator& comm, Rank& self) {
  loopUntilFailure(comm, self);
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500 * kTimeoutSeconds);
  while (std::chrono::steady_clock::now() < end) {
    int failed = 0;
    for (int r = 0; r < self.size; ++r) failed += self.slots[r].phase.load() >= kPhaseFailed;
    if (failed >= self.size - 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Waits (bounded) until every rank finished `ops` all-reduces.
bool waitForProgress(RankSlot* slots, int n, int64_t ops) {
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < limit) {
    bool all = true;
    for (int r = 0; r < n; ++r) all = all && slots[r].progress.load() >= ops;
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void waitForPhase(RankSlot* slots, int n, int skip, int phase, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    bool all = true;
    for (int r = 0; r < n; ++r) all = all && (r == skip || slots[r].phase.load() >= phase);
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// What every survivor of any fault must show: a clean exit, a failure after the fault that
// names the op and a peer, and an error that stuck. Returns seconds from fault to failure.
double expectCleanFailure(const RankOutcome& o, int64_t fault_ns) {
  EXPECT_TRUE(o.exited && o.exit_code == 0);
  double seconds = (o.error_time_ns - fault_ns) / 1e9;
  EXPECT_GT(o.error_time_ns, fault_ns) << "failed before the fault";
  EXPECT_NE(o.message.find("allreduce #"), std::string::npos) << "the message does not name the op";
  EXPECT_NE(o.message.find("peer "), std::string::npos) << "the message does not name a peer";
  EXPECT_TRUE(o.flags & kFlagStickyChecked);
  return seconds;
}

// The survivors' verdict for a silent or aborting rank: each failed with PeerLost or Timeout
// within 2 x COLL_TIMEOUT of the fault, naming the op and a peer.
void expectSurvivorsFailedCleanly(const std::vector<RankOutcome>& outcomes, int victim, int64_t fault_ns) {
  for (const RankOutcome& o : outcomes) {
    if (o.rank == victim) continue;
    SCOPED_TRACE(o.describe());
    double seconds = expectCleanFailure(o, fault_ns);
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_TRUE(code == ErrorCode::PeerLost || code == ErrorCode::Timeout)
        << "error code " << o.error_code << " (" << (o.error_code ? codeName(code) : "none") << ")";
    EXPECT_LT(seconds, 2.0 * kTimeoutSeconds) << "took " << seconds << " s after the fault";
    std::cout << "rank " << o.rank << " failed " << seconds << " s after the fault: " << o.message << "\n";
  }
}

// Whether `message` names rank r as a peer or a rank ("peer 2 (pid ...", "rank 2 did not
// answer"), as a whole number: "peer 2" must not match "peer 23".
bool namesRank(const std::string& message, int r) {
  for (const char* word : {"peer ", "rank "}) {
    const std::string key = word + std::to_string(r);
    for (size_t at = message.find(key); at != std::string::npos; at = message.find(key, at + 1)) {
      size_t end = at + key.size();
      if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
    }
  }
  return false;
}

// The survivors' verdict for a killed rank: each detected the death, failing with PeerLost
// (never Timeout) that names the dead rank, within kDetectSeconds of the SIGKILL.
void expectSurvivorsDetectedDeath(const std::vector<RankOutcome>& outcomes, int victim, int64_t kill_ns) {
  for (const RankOutcome& o : outcomes) {
    if (o.rank == victim) continue;
    SCOPED_TRACE(o.describe());
    double seconds = expectCleanFailure(o, kill_ns);
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_EQ(code, ErrorCode::PeerLost) << "error code " << o.error_code << " ("
                                         << (o.error_code ? codeName(code) : "none") << ")";
    EXPECT_LT(seconds, kDetectSeconds) << "the death was reported " << seconds << " s after the SIGKILL";
    EXPECT_TRUE(namesRank(o.message, victim)) << "the message does not name the dead rank " << victim;
    std::cout << "rank " << o.rank << " failed " << seconds << " s after the SIGKILL: " << o.message << "\n";
  }
}

TEST(KillRank, SurvivorsReportTheDeadRankPromptly) {
  const int n = 4, victim = 2;
  int64_t kill_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.comm_timeout = kKillTimeout;
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!waitForProgress(slots, n, 3)) return;  // the runner's deadline and the checks below report it
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill_ns = nowNs();
    ::kill(pids[victim], SIGKILL);
  };
  auto outcomes = runRanks(n, loopUntilFailure, options);
  ASSERT_NE(kill_ns, 0) << "the ranks never completed 3 all-reduces";
  EXPECT_EQ(outcomes[victim].signal, SIGKILL) << outcomes[victim].describe();
  expectSurvivorsDetectedDeath(outcomes, victim, kill_ns);
}

// Ranks waiting on the board for a rank that died notice it (its process, checked every 50 ms).
TEST(KillRank, SurvivorsOnTheBoardReportTheDeadRankPromptly) {
  const int n = 3, victim = 1;
  int64_t kill_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.comm_timeout = kKillTimeout;
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!waitForProgress(slots, n, 100)) return;
    kill_ns = nowNs();
    ::kill(pids[victim], SIGKILL);
  };
  // 16 floats: on one host, all-reduces that small go by the board.
  auto outcomes = runRanks(n, [](Communicator& c, Rank& self) { loopUntilFailureOf(c, self, 16); }, options);
  ASSERT_NE(kill_ns, 0) << "the ranks never completed 100 all-reduces";
  EXPECT_EQ(outcomes[victim].signal, SIGKILL) << outcomes[victim].describe();
  expectSurvivorsDetectedDeath(outcomes, victim, kill_ns);
}

// A waiter on the board with more late peers than a liveness sweep checks the processes of (16,
// src/transport/shm/check_turns.h): rank 0 waits for 18 ranks that are merely late and one that
// died, and still names the dead one within the bound, since the sweeps take the peers in
// turn. The late ranks post only after that bound, and fail then.
TEST(KillRank, AWaiterOnTheBoardFindsTheDeadRankAmongManyLateOnes) {
  const int n = 20, victim = 19;
  constexpr int kGo = 1;
  int64_t kill_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.comm_timeout = kKillTimeout;
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!waitForProgress(slots, n, 1)) return;  // every rank did one all-reduce: all set up
    kill_ns = nowNs();
    ::kill(pids[victim], SIGKILL);
    slots[0].phase = kGo;
  };
  auto outcomes = runRanks(n, [](Communicator& c, Rank& self) {
    std::vector<float> buf(16, 1.0f);  // the board's size
    c.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max).wait();
    self.slot->progress++;
    if (self.rank == victim) std::this_thread::sleep_for(std::chrono::seconds(60));  // killed meanwhile
    if (self.rank == 0) {
      auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (self.slot->phase.load() < kGo && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(static_cast<int>(kDetectSeconds) + 2));
    }
    loopUntilFailureOf(c, self, 16);
  }, options);
  ASSERT_NE(kill_ns, 0) << "the ranks never completed an all-reduce";
  EXPECT_EQ(outcomes[victim].signal, SIGKILL) << outcomes[victim].describe();
  {
    SCOPED_TRACE(outcomes[0].describe());
    const double seconds = expectCleanFailure(outcomes[0], kill_ns);
    EXPECT_EQ(static_cast<ErrorCode>(outcomes[0].error_code), ErrorCode::PeerLost);
    EXPECT_LT(seconds, kDetectSeconds) << "the death was reported " << seconds << " s after the SIGKILL";
    EXPECT_TRUE(namesRank(outcomes[0].message, victim)) << "the message does not name the dead rank " << victim;
    std::cout << "rank 0 failed " << seconds << " s after the SIGKILL: " << outcomes[0].message << "\n";
  }
  for (int r = 1; r < victim; ++r) {
    SCOPED_TRACE(outcomes[r].describe());
    expectCleanFailure(outcomes[r], kill_ns);
  }
}

// A rank that notices the loss fails its communicator and closes its connections, so ranks
// that are not neighbours of the dead one fail fast too, not at their own deadline (20 s
// here, against the 5 s the verdict allows).
TEST(KillRank, FailureSpreadsWithoutWaitingForTheTimeout) {
  const int n = 4, victim = 2;
  int64_t kill_ns = 0;
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.comm_timeout = kKillTimeout;
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!waitForProgress(slots, n, 3)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill_ns = nowNs();
    ::kill(pids[victim], SIGKILL);
  };
  auto outcomes = runRanks(n, loopUntilFailureThenLinger, options);
  ASSERT_NE(kill_ns, 0) << "the ranks never completed 3 all-reduces";
  expectSurvivorsDetectedDeath(outcomes, victim, kill_ns);
}

// The state letter of /proc/<pid>/stat ('T': stopped; '?': unreadable).
char processState(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

TEST(StopRank, SurvivorsFailWithinTwiceTheTimeout) {
  const int n = 4, victim = 2;
  int64_t stop_ns = 0;
  char victim_state = '?';
  int64_t ops_at_stop = 0, ops_at_kill = 0;  // rank 0's, to tell whether the ops stopped with the victim
  RunOptions options;
  options.deadline = std::chrono::seconds(75);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!waitForProgress(slots, n, 3)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop_ns = nowNs();
    ::kill(pids[victim], SIGSTOP);  // alive, connections open, silent
    ops_at_stop = slots[0].progress.load();
    waitForPhase(slots, n, victim, kPhaseFailed, std::chrono::seconds(3 * kTimeoutSeconds));
    victim_state = processState(pids[victim]);
    ops_at_kill = slots[0].progress.load();
    ::kill(pids[victim], SIGKILL);
  };
  auto outcomes = runRanks(n, loopUntilFailure, options);
  ASSERT_NE(stop_ns, 0) << "the ranks never completed 3 all-reduces";
  // The premise: the victim stayed stopped. It once did not (the kernel's SIGCONT to an orphaned
  // process group, rank_runner.cc), and the survivors then "failed late", all-reducing with it.
  std::cout << "victim state before SIGKILL: " << victim_state << "; rank 0's ops: " << ops_at_stop
            << " at SIGSTOP, " << ops_at_kill << " at SIGKILL\n";
  EXPECT_EQ(victim_state, 'T') << "the victim did not stay stopped: something sent it SIGCONT";
  expectSurvivorsFailedCleanly(outcomes, victim, stop_ns);
}

// A rank that aborts its communicator mid-op: abort() returns promptly, its own op fails, and
// the peers fail fast (closed connections), long before their timeout.
TEST(AbortRank, PeersFailFast) {
  const int n = 3, aborter = 1;
  auto outcomes = runRanks(n, [](Communicator& comm, Rank& self) {
    if (self.rank != aborter) return loopUntilFailure(comm, self);
    std::vector<float> buf(1 << 20, 1.0f);
    for (int i = 0; i < 3; ++i) comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max).wait();
    Work w = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max);
    self.slot->error_time_ns = nowNs();  // the fault time, for the parent
    auto t0 = std::chrono::steady_clock::now();
    comm.abort();
    RANK_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2), "abort() took more than 2 s");
    comm.abort();  // idempotent
    try {
      w.wait();
      RANK_CHECK(false, "the op in flight during abort() succeeded");
    } catch (const Error& e) {
      RANK_CHECK(e.code() == ErrorCode::PeerLost && std::strstr(e.what(), "aborted by the application"),
                 "the op in flight failed with %s: %s", codeName(e.code()), e.what());
    }
    self.slot->phase = kPhaseFailed;
  });
  int64_t abort_ns = outcomes[aborter].error_time_ns;
  ASSERT_TRUE(outcomes[aborter].exited && outcomes[aborter].exit_code == 0) << outcomes[aborter].describe();
  expectSurvivorsFailedCleanly(outcomes, aborter, abort_ns);
  for (const RankOutcome& o : outcomes)
    if (o.rank != aborter) {
      EXPECT_LT((o.error_time_ns - abort_ns) / 1e9, kTimeoutSeconds / 2.0) << "peers should fail fast, not time out";
    }
}

// abort() on an idle communicator (no op running) must still close its connections, so peers
// waiting in an op on it fail fast; the aborting rank keeps its communicator object (and the
// process) alive meanwhile, so only abort() itself can have told them.
TEST(AbortRank, WhileIdlePeersFailFast) {
  const int n = 3, aborter = 1;
  auto outcomes = runRanks(n, [](Communicator& comm, Rank& self) {
    if (self.rank != aborter) return loopUntilFailure(comm, self);
    std::vector<float> buf(1 << 20, 1.0f);
    for (int i = 0; i < 3; ++i) comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max).wait();
    self.slot->error_time_ns = nowNs();
    comm.abort();
    // Stay alive (communicator intact) until the peers noticed, or 1.5 x their timeout.
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500 * kTimeoutSeconds);
    while (std::chrono::steady_clock::now() < end) {
      bool all = true;
      for (int r = 0; r < self.size; ++r) all = all && (r == aborter || self.slots[r].phase.load() >= kPhaseFailed);
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  int64_t abort_ns = outcomes[aborter].error_time_ns;
  ASSERT_TRUE(outcomes[aborter].exited && outcomes[aborter].exit_code == 0) << outcomes[aborter].describe();
  expectSurvivorsFailedCleanly(outcomes, aborter, abort_ns);
  for (const RankOutcome& o : outcomes)
    if (o.rank != aborter) {
      EXPECT_LT((o.error_time_ns - abort_ns) / 1e9, kTimeoutSeconds / 2.0)
          << "peers should fail fast after abort(), not at their timeout";
    }
}

// When abort() returns, every op it failed has finished: the caller may free the buffers at
// once. The aborter has a receive that no peer will match outstanding on the point-to-point
// engine and, with `running`, a 64 MiB all-reduce under way (it waits a moment so the op runs,
// not queued; the peers join it). Without one, the receive alone: abort() must wait for the
// engine's thread, not only for the op under the communicator's engine.
void expectOpsFinishedWhenAbortReturns(bool running) {
  const int n = 3, aborter = 1;
  constexpr size_t kFloats = 16u << 20;
  auto outcomes = runRanks(n, [running](Communicator& comm, Rank& self) {
    if (self.rank != aborter) return loopUntilFailureOf(comm, self, kFloats);
    std::vector<float> buf(kFloats, 1.0f);
    std::vector<int32_t> never(1000, -1);
    std::vector<Work> outstanding{comm.recv(never.data(), never.size(), DataType::i32, 2, 99)};
    if (running) {
      comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max).wait();
      outstanding.push_back(comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::max));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    self.slot->error_time_ns = nowNs();
    comm.abort();
    for (const Work& w : outstanding) {
      RANK_CHECK(w.test(), "abort() returned while op #%llu it failed was still outstanding",
                 static_cast<unsigned long long>(w.sequence()));
      try {
        w.wait();
        RANK_CHECK(false, "an op outstanding during abort() succeeded");
      } catch (const Error& e) {
        RANK_CHECK(e.code() == ErrorCode::PeerLost, "an aborted op failed with %s: %s", codeName(e.code()), e.what());
      }
    }
    self.slot->phase = kPhaseFailed;
  });
  ASSERT_TRUE(outcomes[aborter].exited && outcomes[aborter].exit_code == 0) << outcomes[aborter].describe();
  expectSurvivorsFailedCleanly(outcomes, aborter, outcomes[aborter].error_time_ns);
}

TEST(AbortRank, RunningOpsHaveFinishedWhenItReturns) { expectOpsFinishedWhenAbortReturns(true); }
TEST(AbortRank, OutstandingReceiveHasFinishedWhenItReturns) { expectOpsFinishedWhenAbortReturns(false); }

// Ranks that disagree about the call fail (Mismatch where a message header reveals it; the
// others PeerLost or Timeout) instead of hanging or corrupting data.
void expectMismatchCaught(const std::vector<RankOutcome>& outcomes, int64_t start_ns, const char* op) {
  bool mismatch_seen = false;
  for (const RankOutcome& o : outcomes) {
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_TRUE(code == ErrorCode::Mismatch || code == ErrorCode::PeerLost || code == ErrorCode::Timeout)
        << "error code " << o.error_code;
    mismatch_seen = mismatch_seen || code == ErrorCode::Mismatch;
    EXPECT_LT((o.error_time_ns - start_ns) / 1e9, 2.0 * kTimeoutSeconds);
    EXPECT_NE(o.message.find(op), std::string::npos) << "the message does not name the op";
    std::cout << "rank " << o.rank << ": " << o.message << "\n";
  }
  EXPECT_TRUE(mismatch_seen) << "no rank reported Mismatch";
}

using MismatchedCall = std::function<Work(Communicator&, int rank, std::vector<char>& buf)>;

// n ranks each run `issue` once (each rank its own call) and record how it failed; then
// expectMismatchCaught, naming `op`. A rank may finish the mismatched op before anyone can
// tell (a broadcast root only sends); then the peer that noticed has broken the communicator,
// and this rank's next op must fail.
void expectMismatch(int n, const char* op, const MismatchedCall& issue) {
  int64_t start_ns = nowNs();
  auto outcomes = runRanks(n, [&](Communicator& comm, Rank& self) {
    std::vector<char> buf(1 << 20, 1);
    try {
      issue(comm, self.rank, buf).wait();
    } catch (const Error& e) {
      recordError(e);
      return;
    }
    try {
      comm.allreduce(buf.data(), buf.data(), 1, DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(false, "the mismatched call and the next one both succeeded");
    } catch (const Error& e) {
      recordError(e);
    }
  });
  expectMismatchCaught(outcomes, start_ns, op);
}

TEST(Mismatch, DifferentCounts) {
  expectMismatch(3, "allreduce #0", [](Communicator& c, int rank, std::vector<char>& buf) {
    size_t count = 50000 + static_cast<size_t>(rank) * 1000;  // each rank a different count
    return c.allreduce(buf.data(), buf.data(), count, DataType::f32, ReduceOp::sum);
  });
}

// Both counts small enough for the board: the posted fingerprints disagree.
TEST(Mismatch, DifferentCountsOnTheBoard) {
  expectMismatch(3, "allreduce #0", [](Communicator& c, int rank, std::vector<char>& buf) {
    size_t count = 100 + static_cast<size_t>(rank);
    return c.allreduce(buf.data(), buf.data(), count, DataType::f32, ReduceOp::sum);
  });
}

// A small broadcast goes by the board too: the ranks name different roots.
TEST(Mismatch, DifferentRootsOnTheBoard) {
  expectMismatch(2, "broadcast #0", [](Communicator& c, int rank, std::vector<char>& buf) {
    return c.broadcast(buf.data(), buf.data(), 100, DataType::f32, rank);
  });
}

TEST(Mismatch, DifferentTypes) {
  expectMismatch(2, "allreduce #0", [](Communicator& c, int rank, std::vector<char>& buf) {
    return c.allreduce(buf.data(), buf.data(), 1000, rank == 0 ? DataType::f32 : DataType::f64, ReduceOp::sum);
  });
}

TEST(Mismatch, BroadcastAgainstAllreduce) {
  expectMismatch(2, " #", [](Communicator& c, int rank, std::vector<char>& buf) {
    if (rank == 0) return c.broadcast(buf.data(), buf.data(), 1000, DataType::f32, 0);
    return c.allreduce(buf.data(), buf.data(), 1000, DataType::f32, ReduceOp::sum);
  });
}

// A rank with the wrong job secret is refused by the store at once and cannot join; the
// others give up on it within the timeout, naming it.
TEST(WrongSecret, RankCannotJoin) {
  const int n = 3, intruder = 2;
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  std::string wrong = "0123456789abcdef0123456789abcdef";
  options.secret_for = [&](int r) { return r == intruder ? wrong : std::string(); };
  int64_t start_ns = nowNs();
  auto outcomes = runRanks(n, [](Communicator&, Rank&) { RANK_CHECK(false, "init succeeded"); }, options);
  for (const RankOutcome& o : outcomes) {
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.init_failed);
    double seconds = (o.error_time_ns - start_ns) / 1e9;
    EXPECT_LT(seconds, 2.0 * kTimeoutSeconds);
    if (o.rank == intruder) {
      EXPECT_LT(seconds, 5.0) << "the intruder should be refused at once";
      EXPECT_NE(o.message.find("secret"), std::string::npos) << "the refusal should mention the secret";
    } else {
      EXPECT_EQ(static_cast<ErrorCode>(o.error_code), ErrorCode::Timeout);
      EXPECT_NE(o.message.find("rank 2 never joined"), std::string::npos) << "should name the missing rank";
    }
    std::cout << "rank " << o.rank << " init failed after " << seconds << " s: " << o.message << "\n";
  }
}

}  // namespace
}  // namespace coll::test
