// Hostile peers: a rank that completed the authenticated handshake, took part in a few
// all-reduces, and then, while the others wait in the next one, writes a malformed message
// header into its data streams, announces a 2^62-byte message, or shuts its streams down
// mid-collective. Socket transport (the one that reads headers off the network).
// The invariant: every other rank fails within 2 x COLL_TIMEOUT with an error that names the
// op and the culprit (peer 1) and says what it did; nothing crashes, nothing is allocated from
// the announced length, and each survivor's descriptors and threads return to their count
// before the communicator once it is destroyed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "fault/hostile_wire.h"
#include "fault/process_counts.h"
#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr int kTimeoutSeconds = 5;
constexpr int kRanks = 4;
constexpr int kHostile = 1;
constexpr int64_t kOpsBeforeFault = 3;
constexpr int kPhaseFailed = 2;
constexpr size_t kCount = 16 << 10;  // 64 KiB of f32 per all-reduce

// Forced before main, so before anything reads Config.
const bool kEnvSet = [] {
  ::setenv("COLL_TIMEOUT", "5", 1);
  ::setenv("COLL_TRANSPORT", "socket", 1);
  return true;
}();

enum class Attack { malformedHeader, oversizedLength, hangUp };

int storePort(const std::string& address) { return std::atoi(address.substr(address.rfind(':') + 1).c_str()); }

std::unique_ptr<Communicator> join(Rank& self, const std::string& address, const std::string& secret) {
  CommOptions o;
  o.rank = self.rank;
  o.size = self.size;
  o.store_address = address;
  o.secret = secret;
  return Communicator::create(o);
}

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// All-reduces until one fails; records that error and its time.
void survive(Communicator& comm, Rank& self) {
  allreduceUntilFailure(comm, kCount, ReduceOp::sum);
  self.slot->phase = kPhaseFailed;
}

// Takes part honestly, then attacks while the others wait in the next all-reduce; records the
// attack's time in its slot (error_time_ns) and stays until the others have failed.
void attack(Communicator& comm, Rank& self, int store_port, Attack how) {
  std::vector<float> buf(kCount, 1.0f);
  for (int64_t i = 0; i < kOpsBeforeFault; ++i) {
    comm.allreduce(buf.data(), buf.data(), kCount, DataType::f32, ReduceOp::sum).wait();
    self.slot->progress++;
  }
  auto others = [&](auto pred) {
    for (int r = 0; r < self.size; ++r)
      if (r != self.rank && !pred(self.slots[r])) return false;
    return true;
  };
  RANK_CHECK(waitUntil([&] { return others([](RankSlot& s) { return s.progress.load() >= kOpsBeforeFault; }); },
                       std::chrono::seconds(30)), "the others did not finish the first all-reduces");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // they are in the next one now
  std::vector<int> fds = dataSockets(store_port);
  RANK_CHECK(fds.size() >= size_t(self.size - 1), "found %zu data sockets", fds.size());
  self.slot->error_time_ns = nowNs();
  if (how == Attack::malformedHeader) writeToAll(fds, garbageHeader());
  if (how == Attack::oversizedLength) writeToAll(fds, oversizedHeader());
  if (how == Attack::hangUp) shutDownAll(fds);
  waitUntil([&] { return others([](RankSlot& s) { return s.phase.load() >= kPhaseFailed; }); },
            std::chrono::seconds(2 * kTimeoutSeconds));
}

// Every rank: counts descriptors and threads before its communicator and after destroying it.
std::vector<RankOutcome> runAttack(Attack how) {
  RunOptions options;
  options.deadline = std::chrono::seconds(60);
  return runProcesses(kRanks, [how](Rank& self, const std::string& address, const std::string& secret) {
    int fds_before = countOpenFds(), threads_before = countThreads();
    {
      auto comm = join(self, address, secret);
      if (self.rank == kHostile) attack(*comm, self, storePort(address), how);
      else survive(*comm, self);
    }
    RANK_CHECK(countOpenFds() == fds_before, "descriptors: %d before the communicator, %d after", fds_before, countOpenFds());
    int threads_after = settledThreadCount(threads_before);
    RANK_CHECK(threads_after == threads_before, "threads: %d before, %d after", threads_before, threads_after);
  }, options);
}

// Each survivor failed in time with one of `codes`, naming the op, peer 1 and `what`.
void expectCulpritNamed(const std::vector<RankOutcome>& outcomes, std::initializer_list<ErrorCode> codes,
                        const std::string& what) {
  ASSERT_TRUE(outcomes[kHostile].exited && outcomes[kHostile].exit_code == 0) << outcomes[kHostile].describe();
  int64_t fault_ns = outcomes[kHostile].error_time_ns;
  for (const RankOutcome& o : outcomes) {
    if (o.rank == kHostile) continue;
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0) << "no leak, no crash";
    auto code = static_cast<ErrorCode>(o.error_code);
    EXPECT_NE(std::find(codes.begin(), codes.end(), code), codes.end()) << codeName(code);
    double seconds = (o.error_time_ns - fault_ns) / 1e9;
    EXPECT_GT(seconds, 0) << "failed before the attack";
    EXPECT_LT(seconds, 2.0 * kTimeoutSeconds);
    EXPECT_NE(o.message.find("allreduce #3"), std::string::npos) << "names the op";
    // Directly, or through the op's ledger: a survivor whose send was under way when the op
    // failed closes that connection (docs/FAULT_TOLERANCE.md), so its partner may hear of the
    // fault from it first ("peer 0 closed the connection"); the ledger then names rank 1 (seen
    // once in CI under load, rank 2 of the recursive doubling waiting on rank 0).
    const bool culprit = o.message.find("peer 1") != std::string::npos ||
                         o.message.find("rank 1 has not started it") != std::string::npos;
    EXPECT_TRUE(culprit) << "names the culprit";
    EXPECT_NE(o.message.find(what), std::string::npos) << "says what it did";
    std::cout << "rank " << o.rank << " failed " << seconds << " s after the attack (" << codeName(code)
              << "): " << o.message << "\n";
  }
}

TEST(HostilePeer, MalformedHeaderIsRefusedNamingThePeer) {
  auto outcomes = runAttack(Attack::malformedHeader);
  expectCulpritNamed(outcomes, {ErrorCode::Transport, ErrorCode::PeerLost}, "malformed message header");
}

TEST(HostilePeer, OversizedLengthIsRefusedWithoutAllocating) {
  auto outcomes = runAttack(Attack::oversizedLength);
  expectCulpritNamed(outcomes, {ErrorCode::Mismatch, ErrorCode::PeerLost}, "4611686018427387904 bytes");
}

TEST(HostilePeer, ConnectionClosedMidCollective) {
  auto outcomes = runAttack(Attack::hangUp);
  expectCulpritNamed(outcomes, {ErrorCode::PeerLost}, "closed the connection");
}

}  // namespace
}  // namespace coll::test
