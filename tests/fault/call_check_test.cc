// COLL_CHECK=1 on forked ranks: calls that disagree (collective, count, type, root) fail on
// every rank with a Mismatch that names each rank's call, before any data moves, and the
// communicator stays usable; calls that agree run as usual.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <thread>

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

// --- agreeing calls: every collective's result against a closed formula -----------------

constexpr size_t kChunk = 8;  // elements per rank in the data-movement collectives

// Element i of rank r's input: distinct for every (r, i) and not monotone in r, so a
// misplaced chunk, a wrong root or max taken as sum gives another value. Exact in f32.
float input(int r, size_t i) { return static_cast<float>((r * 37 + static_cast<int>(i) * 11) % 29 + 100 * r); }

std::vector<float> inputOf(int r, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = input(r, i);
  return v;
}

void expectElements(const char* what, const std::vector<float>& got, const std::function<float(size_t)>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    RANK_CHECK(got[i] == want(i), "%s: element %zu is %g, expected %g", what, i, got[i], want(i));
}

float sumOver(int n, size_t i) {
  float s = 0;
  for (int r = 0; r < n; ++r) s += input(r, i);
  return s;
}

float maxOver(int n, size_t i) {
  float m = input(0, i);
  for (int r = 1; r < n; ++r) m = std::max(m, input(r, i));
  return m;
}

void checkAllreduceAndReduce(Communicator& comm, int n, int rank) {
  std::vector<float> a = inputOf(rank, 64);
  comm.allreduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::sum).wait();
  expectElements("allreduce sum", a, [&](size_t i) { return sumOver(n, i); });
  const int root = 1;
  std::vector<float> in = inputOf(rank, 64), out(64, -1.0f);
  comm.reduce(in.data(), out.data(), in.size(), DataType::f32, ReduceOp::max, root).wait();
  if (rank == root) expectElements("reduce max", out, [&](size_t i) { return maxOver(n, i); });
  expectElements("reduce's input", in, [&](size_t i) { return input(rank, i); });
}

void checkBroadcastAndAllgather(Communicator& comm, int n, int rank) {
  const int root = 2;
  std::vector<float> b = inputOf(rank, kChunk);
  comm.broadcast(b.data(), b.data(), b.size(), DataType::f32, root).wait();
  expectElements("broadcast", b, [&](size_t i) { return input(root, i); });
  std::vector<float> mine = inputOf(rank, kChunk), all(kChunk * n, -1.0f);
  comm.allgather(mine.data(), all.data(), kChunk, DataType::f32).wait();
  expectElements("allgather", all, [&](size_t i) { return input(static_cast<int>(i / kChunk), i % kChunk); });
}

// reduceScatter: rank r's send is input(r, 0 .. n*kChunk); it keeps chunk r of the sum.
void checkReduceScatter(Communicator& comm, int n, int rank) {
  std::vector<float> send = inputOf(rank, kChunk * n), recv(kChunk, -1.0f);
  comm.reduceScatter(send.data(), recv.data(), kChunk, DataType::f32, ReduceOp::sum).wait();
  expectElements("reduceScatter", recv, [&](size_t i) { return sumOver(n, rank * kChunk + i); });
}

// alltoall: chunk p of rank r's send is tagged (r, p); chunk p of the receive must carry (p, r).
float tagged(int from, int to, size_t i) { return static_cast<float>(1000 * from + 10 * to + static_cast<int>(i)); }

void checkAlltoall(Communicator& comm, int n, int rank) {
  std::vector<float> send(kChunk * n), recv(kChunk * n, -1.0f);
  for (size_t j = 0; j < send.size(); ++j) send[j] = tagged(rank, static_cast<int>(j / kChunk), j % kChunk);
  comm.alltoall(send.data(), recv.data(), kChunk, DataType::f32).wait();
  expectElements("alltoall", recv, [&](size_t j) { return tagged(static_cast<int>(j / kChunk), rank, j % kChunk); });
}

// gather to root 0, then scatter from root 2 of chunks tagged (root, destination).
void checkGatherAndScatter(Communicator& comm, int n, int rank) {
  std::vector<float> mine = inputOf(rank, kChunk), gathered(kChunk * n, -1.0f);
  comm.gather(mine.data(), gathered.data(), kChunk, DataType::f32, 0).wait();
  if (rank == 0)
    expectElements("gather", gathered, [&](size_t j) { return input(static_cast<int>(j / kChunk), j % kChunk); });
  const int root = 2;
  std::vector<float> parts(kChunk * n, -2.0f), part(kChunk, -1.0f);
  if (rank == root)
    for (size_t j = 0; j < parts.size(); ++j) parts[j] = tagged(root, static_cast<int>(j / kChunk), j % kChunk);
  comm.scatter(parts.data(), part.data(), kChunk, DataType::f32, root).wait();
  expectElements("scatter", part, [&](size_t i) { return tagged(root, rank, i); });
}

// barrier: no rank leaves it before every rank has entered it (phase 1 in shared memory). The
// last rank enters late, so a barrier that did not wait would be caught.
void checkBarrier(Communicator& comm, Rank& self) {
  if (self.rank == self.size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  self.slot->phase = 1;
  comm.barrier().wait();
  for (int r = 0; r < self.size; ++r)
    RANK_CHECK(self.slots[r].phase.load() >= 1, "left the barrier before rank %d entered it", r);
}

// Point-to-point is not checked, but must still work beside the checked collectives.
void checkSendRecv(Communicator& comm, int rank) {
  if (rank >= 2) return;
  std::vector<float> buf = rank == 0 ? inputOf(0, kChunk) : std::vector<float>(kChunk, -1.0f);
  comm.groupStart();
  Work w = rank == 0 ? comm.send(buf.data(), kChunk, DataType::f32, 1)
                     : comm.recv(buf.data(), kChunk, DataType::f32, 0);
  comm.groupEnd();
  w.wait();
  expectElements("send/recv", buf, [](size_t i) { return input(0, i); });
}

// Agreeing calls of every kind (all nine collectives, and point-to-point beside them) still
// produce the right results with the check on.
TEST(CallCheck, AgreeingCallsRunAsUsual) {
  auto outcomes = runRanks(3, [](Communicator& comm, Rank& self) {
    const int n = self.size, rank = self.rank;
    checkAllreduceAndReduce(comm, n, rank);
    checkBroadcastAndAllgather(comm, n, rank);
    checkReduceScatter(comm, n, rank);
    checkAlltoall(comm, n, rank);
    checkGatherAndScatter(comm, n, rank);
    checkBarrier(comm, self);
    checkSendRecv(comm, rank);
    comm.barrier().wait();
  });
  expectAllSucceeded(outcomes);
}

}  // namespace
}  // namespace coll::test
