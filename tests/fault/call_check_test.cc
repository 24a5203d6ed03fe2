// COLL_CHECK=1 on forked ranks: calls that disagree (collective, count, type, root) fail on
// every rank with a Mismatch that names each rank's call, before any data moves, and the
// communicator stays usable; calls that agree run as usual.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

// Forced before main (and before anything reads Config).
const bool kEnvSet = [] {
  ::setenv("COLL_CHECK", "1", 1);
  ::setenv("COLL_TIMEOUT", "5", 1);
  return true;
}();

using Issue = std::function<Work(Communicator&, Rank&, std::vector<float>&)>;

// Every rank issues its own call; all must fail with Mismatch at once, naming `expected`
// texts; then an all-reduce that agrees must succeed with the right sum.
void expectRefusedEverywhere(int n, const Issue& issue, const std::vector<std::string>& expected) {
  int64_t start_ns = nowNs();
  auto outcomes = runRanks(n, [&](Communicator& comm, Rank& self) {
    std::vector<float> buf(4096, 1.0f);
    try {
      issue(comm, self, buf).wait();
      RANK_CHECK(false, "the mismatched call succeeded");
    } catch (const Error& e) {
      recordError(e);
      RANK_CHECK(e.code() == ErrorCode::Mismatch, "failed with %s: %s", codeName(e.code()), e.what());
    }
    std::vector<float> ok(100, 1.0f);
    comm.allreduce(ok.data(), ok.data(), ok.size(), DataType::f32, ReduceOp::sum).wait();
    RANK_CHECK(ok[99] == static_cast<float>(self.size), "the next all-reduce gave %f", ok[99]);
  });
  for (const RankOutcome& o : outcomes) {
    SCOPED_TRACE(o.describe());
    EXPECT_TRUE(o.exited && o.exit_code == 0);
    std::cout << "rank " << o.rank << ": " << o.message << "\n";
    for (const std::string& text : expected) EXPECT_NE(o.message.find(text), std::string::npos) << text;
    EXPECT_LT((o.error_time_ns - start_ns) / 1e9, 2.5) << "the mismatch should be caught before any timeout";
  }
}

TEST(CallCheck, BroadcastAgainstAllreduce) {
  expectRefusedEverywhere(2, [](Communicator& c, Rank& self, std::vector<float>& buf) {
    if (self.rank == 0) return c.broadcast(buf.data(), buf.data(), 1000, DataType::f32, 0);
    return c.allreduce(buf.data(), buf.data(), 1000, DataType::f32, ReduceOp::sum);
  }, {"rank 0 called broadcast(f32 x 1000, root 0", "rank 1 called allreduce(f32 x 1000, sum"});
}

TEST(CallCheck, DifferentCounts) {
  expectRefusedEverywhere(3, [](Communicator& c, Rank& self, std::vector<float>& buf) {
    return c.allreduce(buf.data(), buf.data(), self.rank == 2 ? 999 : 1000, DataType::f32, ReduceOp::sum);
  }, {"ranks 0 and 1 called allreduce(f32 x 1000", "rank 2 called allreduce(f32 x 999"});
}

TEST(CallCheck, DifferentTypes) {
  expectRefusedEverywhere(2, [](Communicator& c, Rank& self, std::vector<float>& buf) {
    return c.allreduce(buf.data(), buf.data(), 100, self.rank == 0 ? DataType::f32 : DataType::i32, ReduceOp::sum);
  }, {"rank 0 called allreduce(f32 x 100", "rank 1 called allreduce(i32 x 100"});
}

TEST(CallCheck, DifferentRoots) {
  expectRefusedEverywhere(3, [](Communicator& c, Rank& self, std::vector<float>& buf) {
    return c.broadcast(buf.data(), buf.data(), 100, DataType::f32, self.rank == 1 ? 1 : 0);
  }, {"ranks 0 and 2 called broadcast(f32 x 100, root 0", "rank 1 called broadcast(f32 x 100, root 1"});
}

TEST(CallCheck, DifferentReductions) {
  expectRefusedEverywhere(2, [](Communicator& c, Rank& self, std::vector<float>& buf) {
    return c.allreduce(buf.data(), buf.data(), 100, DataType::f32, self.rank == 0 ? ReduceOp::sum : ReduceOp::max);
  }, {"rank 0 called allreduce(f32 x 100, sum", "rank 1 called allreduce(f32 x 100, max"});
}

// Agreeing calls of every kind still produce the right results with the check on.
TEST(CallCheck, AgreeingCallsRunAsUsual) {
  auto outcomes = runRanks(3, [](Communicator& comm, Rank& self) {
    const int n = self.size;
    std::vector<float> a(64, static_cast<float>(self.rank + 1)), all(64 * n, 0.0f);
    comm.allreduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::sum).wait();
    RANK_CHECK(a[0] == 6.0f, "allreduce gave %f", a[0]);
    std::vector<float> b(8, static_cast<float>(self.rank));
    comm.broadcast(b.data(), b.data(), b.size(), DataType::f32, 2).wait();
    RANK_CHECK(b[7] == 2.0f, "broadcast gave %f", b[7]);
    comm.allgather(b.data(), all.data(), b.size(), DataType::f32).wait();
    comm.reduceScatter(all.data(), b.data(), b.size(), DataType::f32, ReduceOp::sum).wait();
    comm.alltoall(all.data(), all.data() + 32, 8, DataType::f32).wait();  // 3 x 8 in, 3 x 8 out
    comm.gather(b.data(), all.data(), b.size(), DataType::f32, 0).wait();
    comm.scatter(all.data(), b.data(), b.size(), DataType::f32, 0).wait();
    comm.reduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::max, 1).wait();
    comm.barrier().wait();
    if (self.rank < 2) {  // point-to-point is not checked, but must still work beside it
      comm.groupStart();
      Work w = self.rank == 0 ? comm.send(b.data(), 8, DataType::f32, 1) : comm.recv(b.data(), 8, DataType::f32, 0);
      comm.groupEnd();
      w.wait();
    }
    comm.barrier().wait();
  });
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
