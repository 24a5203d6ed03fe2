// Mismatched calls without COLL_CHECK, on forked ranks: every message carries its call's
// fingerprint (base/wire_tag.h), so ranks that disagree about the dtype, the reduction, the
// collective, the count or the root fail the op with Mismatch instead of combining the wrong
// bytes. Each case runs at a small size (the shared-memory board's, under the shm run) and a
// large one (the message path), and ctest runs this program over shm and over sockets.
//
// These are the hostile probe's cases of issue 25: 1M f32 against 1M i32 gave rank 0 about
// 1.0 and rank 1 1065353216; sum against max mixed 3.0 and 5.0; a broadcast whose every rank
// named itself root left each with its own data. None of them reported anything.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

// Forced before main (and before anything reads Config): no pre-check, and a timeout far
// above the bound below, so a pass proves the tag caught it, not a deadline.
const bool kEnvSet = [] {
  ::unsetenv("COLL_CHECK");
  ::setenv("COLL_TIMEOUT", "20", 1);
  return true;
}();

// The mismatch is found on the first message; anything near COLL_TIMEOUT means it was not.
constexpr double kCaughtWithinSeconds = 6.0;

constexpr auto kLinger = std::chrono::milliseconds(1500);

constexpr size_t kSmall = 100;        // 400 B of f32: the board's size on one host
constexpr size_t kLarge = 1u << 20;   // 4 MiB: pipelined messages

using Issue = std::function<Work(Communicator&, Rank&, std::vector<float>&, size_t count)>;

using Expectation = std::vector<std::string>;  // texts some rank's error must contain

// Every rank issues its own call (then, if `follow_up`, a barrier that must fail instead when
// the call itself could not see the disagreement). Ranks that received a message of the
// other call fail with Mismatch; the rest fail with PeerLost as those abort, and their error
// must still carry the cause (the aborting peer's reason, or the ledger's "mismatch: ...").
// All of it well before COLL_TIMEOUT. Each rank stays a moment after its error, as a program
// reporting it would, so the others' ledger questions are answered.
void expectMismatch(int n, size_t count, const Issue& issue, const Expectation& want, bool follow_up = false) {
  const int64_t start_ns = nowNs();
  auto outcomes = runRanks(n, [&](Communicator& comm, Rank& self) {
    std::vector<float> buf(count * static_cast<size_t>(self.size), 1.0f);
    try {
      issue(comm, self, buf, count).wait();
      RANK_CHECK(follow_up, "the mismatched call succeeded");
      comm.barrier().wait();
      RANK_CHECK(false, "the mismatched call and the barrier after it succeeded");
    } catch (const Error& e) {
      recordError(e);
      const std::string text = e.what();
      const bool told = e.code() == ErrorCode::Mismatch ||
                        (e.code() == ErrorCode::PeerLost &&
                         (text.find("mismatch") != std::string::npos || text.find(" differ") != std::string::npos));
      RANK_CHECK(told, "failed with %s: %s", codeName(e.code()), e.what());
      std::this_thread::sleep_for(kLinger);
    }
  });
  int mismatches = 0;
  for (const RankOutcome& o : outcomes) mismatches += o.error_code == static_cast<int>(ErrorCode::Mismatch);
  EXPECT_GE(mismatches, 1) << "no rank reported Mismatch itself";
  std::string all;
  for (const RankOutcome& o : outcomes) {
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    std::cout << "rank " << o.rank << ": " << o.message << "\n";
    EXPECT_LT((o.error_time_ns - start_ns) / 1e9, kCaughtWithinSeconds) << "caught by a deadline, not by the tag";
    all += o.message + "\n";
  }
  for (const std::string& text : want) EXPECT_NE(all.find(text), std::string::npos) << "no rank said: " << text;
}

Work typedAllreduce(Communicator& c, Rank& self, std::vector<float>& buf, size_t count) {
  const DataType type = self.rank == 0 ? DataType::f32 : DataType::i32;  // same bytes, other type
  return c.allreduce(buf.data(), buf.data(), count, type, ReduceOp::sum);
}

Work sumAgainstMax(Communicator& c, Rank& self, std::vector<float>& buf, size_t count) {
  return c.allreduce(buf.data(), buf.data(), count, DataType::f32, self.rank == 0 ? ReduceOp::sum : ReduceOp::max);
}

Work everyRankIsRoot(Communicator& c, Rank& self, std::vector<float>& buf, size_t count) {
  return c.broadcast(buf.data(), buf.data(), count, DataType::f32, self.rank);
}

Work broadcastAgainstAllreduce(Communicator& c, Rank& self, std::vector<float>& buf, size_t count) {
  if (self.rank == 1) return c.broadcast(buf.data(), buf.data(), count, DataType::f32, 1);
  return c.allreduce(buf.data(), buf.data(), count, DataType::f32, ReduceOp::sum);
}

Work offByOneCount(Communicator& c, Rank& self, std::vector<float>& buf, size_t count) {
  const size_t mine = self.rank == 2 ? count - 1 : count;
  return c.allgather(buf.data() + static_cast<size_t>(self.rank) * mine, buf.data(), mine, DataType::f32);  // in place
}

// Who disagrees about the type, the board's words or the tag's.
const Expectation kTypes{"i32"};
const Expectation kOps{"max"};
const Expectation kRoots{"broadcast"};
const Expectation kKinds{"broadcast", "allreduce"};
const Expectation kCounts{"allgather"};

TEST(CallMismatch, TypesSmall) { expectMismatch(2, kSmall, typedAllreduce, kTypes); }
TEST(CallMismatch, TypesLarge) { expectMismatch(2, kLarge, typedAllreduce, kTypes); }
TEST(CallMismatch, TypesLargeThreeRanks) { expectMismatch(3, kLarge, typedAllreduce, kTypes); }
TEST(CallMismatch, ReductionsSmall) { expectMismatch(2, kSmall, sumAgainstMax, kOps); }
TEST(CallMismatch, ReductionsLarge) { expectMismatch(2, kLarge, sumAgainstMax, kOps); }
TEST(CallMismatch, ReductionsLargeFiveRanks) { expectMismatch(5, kLarge, sumAgainstMax, kOps); }
// Nobody receives in a broadcast whose every rank is its root: the disagreement shows on the
// next message each rank receives, and that error names the broadcast.
TEST(CallMismatch, EveryRankIsRootSmall) { expectMismatch(2, kSmall, everyRankIsRoot, kRoots, true); }
TEST(CallMismatch, EveryRankIsRootLarge) { expectMismatch(3, kLarge, everyRankIsRoot, kRoots, true); }
TEST(CallMismatch, CollectivesSmall) { expectMismatch(3, kSmall, broadcastAgainstAllreduce, kKinds, true); }
TEST(CallMismatch, CollectivesLarge) { expectMismatch(3, kLarge, broadcastAgainstAllreduce, kKinds, true); }
TEST(CallMismatch, CountsLarge) { expectMismatch(3, kLarge, offByOneCount, kCounts); }

// The check costs nothing in meaning: agreeing calls of every kind still give right results.
TEST(CallMismatch, AgreeingCallsUnaffected) {
  auto outcomes = runRanks(3, [](Communicator& comm, Rank& self) {
    for (size_t count : {kSmall, kLarge}) {
      std::vector<float> a(count, static_cast<float>(self.rank + 1));
      comm.allreduce(a.data(), a.data(), count, DataType::f32, ReduceOp::sum).wait();
      RANK_CHECK(a[count - 1] == 6.0f, "allreduce of %zu gave %f", count, a[count - 1]);
      std::vector<float> b(count, static_cast<float>(self.rank));
      comm.broadcast(b.data(), b.data(), count, DataType::f32, 2).wait();
      RANK_CHECK(b[count - 1] == 2.0f, "broadcast of %zu gave %f", count, b[count - 1]);
    }
  });
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
