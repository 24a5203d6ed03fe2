// The rank that serves the rendezvous store dies after start-up (rank 0, as under torchrun,
// mpirun or Slurm without collrun). The store carries no data, so the others' collectives are
// not affected until one involves the dead rank; then they must detect its death as for any
// dead peer: PeerLost naming it, well before their deadline, although the ledger exchange that
// explains failures cannot reach the store any more. Destroying their communicators must still return promptly
// (the ledger responder's parked GET lost its store) and give back every descriptor and thread.
// A shrink without the store host cannot rendezvous: it must time out, not hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "fault/process_counts.h"
#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kTimeoutSeconds = 5;
constexpr int kRanks = 4;
constexpr int kStoreHost = 0;
constexpr int kPhaseFailed = 2;
constexpr int kFlagDestroyedPromptly = 1;
// The killed-store-host case: each op's deadline, and the bound within which the survivors
// must report the death. The library reports in 0.05 s (docs/RELIABILITY.md); a Timeout
// cannot come before 20 s, so an error within 5 s proves the death was detected.
constexpr std::chrono::seconds kKillTimeout{20};
constexpr double kDetectSeconds = 5.0;

const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "5", 1);
  return true;
}();

// A loopback port free now (the store host binds it again right after; a race with another
// process taking it in between would fail the init visibly, not silently).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

void allreduceThenMarkFailed(Communicator& comm, Rank& self) {
  coll::test::allreduceUntilFailure(comm, 64 << 10, ReduceOp::sum);
  self.slot->phase = kPhaseFailed;
}

// "peer 0" as a whole number ("peer 0 (pid ...", not "peer 01").
bool namesPeer0(const std::string& message) {
  for (size_t at = message.find("peer 0"); at != std::string::npos; at = message.find("peer 0", at + 1)) {
    size_t end = at + 6;
    if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
  }
  return false;
}

struct KillRun {
  std::vector<RankOutcome> outcomes;
  int64_t kill_ns = 0;
};

// 4 ranks, rank 0 serving the store, all-reduce until rank 0 is SIGKILLed (after 3 ops); each
// survivor then runs after_failure on its failed communicator, destroys it and checks that it
// holds the descriptors and threads it had before. `timeout` is each communicator's
// (CommOptions::timeout; zero: COLL_TIMEOUT).
KillRun killStoreHost(const std::function<void(Communicator&, Rank&)>& after_failure,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  const std::string address = "127.0.0.1:" + std::to_string(freePort());
  KillRun run;
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  options.parent_action = [&](const std::vector<pid_t>& pids, RankSlot* slots) {
    if (!awaitProgress(slots, kRanks, 3, std::chrono::seconds(30))) return;
    run.kill_ns = nowNs();
    ::kill(pids[kStoreHost], SIGKILL);
  };
  run.outcomes = runProcesses(kRanks, [&](Rank& self, const std::string&, const std::string& secret) {
    int fds_before = countOpenFds(), threads_before = countThreads();
    {
      CommOptions o;
      o.rank = self.rank;
      o.size = self.size;
      o.store_address = address;
      o.host_store = self.rank == kStoreHost;
      o.secret = secret;
      o.timeout = timeout;
      auto comm = Communicator::create(o);
      allreduceThenMarkFailed(*comm, self);
      after_failure(*comm, self);
      int64_t destroy_start = nowNs();
      comm.reset();
      if (nowNs() - destroy_start < int64_t(kTimeoutSeconds) * 1'000'000'000) self.slot->flags |= kFlagDestroyedPromptly;
    }
    RANK_CHECK(countOpenFds() == fds_before, "descriptors: %d before the communicator, %d after", fds_before, countOpenFds());
    int threads_after = settledThreadCount(threads_before);
    RANK_CHECK(threads_after == threads_before, "threads: %d before, %d after", threads_before, threads_after);
  }, options);
  return run;
}

TEST(StoreHost, KilledAfterStartUpSurvivorsReportItPromptly) {
  KillRun run = killStoreHost([](Communicator&, Rank&) {}, kKillTimeout);
  ASSERT_NE(run.kill_ns, 0) << "the ranks never completed 3 all-reduces";
  EXPECT_EQ(run.outcomes[kStoreHost].signal, SIGKILL) << run.outcomes[kStoreHost].describe();
  for (const RankOutcome& o : run.outcomes) {
    if (o.rank == kStoreHost) continue;
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_EQ(code, ErrorCode::PeerLost) << (o.error_code ? codeName(code) : "no error");
    double seconds = (o.error_time_ns - run.kill_ns) / 1e9;
    EXPECT_GT(seconds, 0);
    EXPECT_LT(seconds, kDetectSeconds) << "the death was reported " << seconds << " s after the SIGKILL";
    EXPECT_NE(o.message.find("allreduce #"), std::string::npos);
    EXPECT_TRUE(namesPeer0(o.message)) << "does not name the dead store host as peer 0";
    EXPECT_TRUE(o.flags & kFlagDestroyedPromptly) << "destroying the communicator took longer than COLL_TIMEOUT";
    std::cout << "rank " << o.rank << " failed " << seconds << " s after the store host died: " << o.message << "\n";
  }
}

// Shrinking needs the rendezvous store: without its host the survivors cannot rendezvous, and
// shrink fails with Timeout within COLL_TIMEOUT (plus slack), naming the store, never hangs.
TEST(StoreHost, ShrinkWithoutTheStoreHostFailsNamingTheStore) {
  KillRun run = killStoreHost([](Communicator& comm, Rank& self) {
    auto start = std::chrono::steady_clock::now();
    try {
      comm.shrink({kStoreHost});
      RANK_CHECK(false, "shrink succeeded without a store");
    } catch (const Error& e) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RANK_CHECK(e.code() == ErrorCode::Timeout || e.code() == ErrorCode::PeerLost, "%s: %s", codeName(e.code()), e.what());
      RANK_CHECK(seconds < kTimeoutSeconds + 2, "shrink took %.1f s", seconds);
      RANK_CHECK(std::strstr(e.what(), "store") != nullptr, "does not name the store: %s", e.what());
      std::printf("rank %d: shrink failed after %.2f s (%s): %s\n", self.rank, seconds, codeName(e.code()), e.what());
    }
  });
  ASSERT_NE(run.kill_ns, 0);
  for (const RankOutcome& o : run.outcomes) {
    if (o.rank == kStoreHost) continue;
    EXPECT_TRUE(o.exited && o.exit_code == 0) << o.describe();
  }
}

}  // namespace
}  // namespace coll::test
