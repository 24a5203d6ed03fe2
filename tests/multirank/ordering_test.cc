// Asynchrony and issue order: ops issued back to back without waiting run in issue order on
// every rank (a chain of in-place ops on one buffer only gives the right answer in that
// order), waiting on the newest Work implies the older ones are done, and sequence numbers
// count 0, 1, 2, ... per communicator; whichever thread runs the ops (the progress thread or
// waiters running them inline).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "multirank/rank_runner.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// buf = (rank+1)·f(i); broadcast from the last rank; sum; max; sum again; broadcast from 0.
// In order that is n·n·n·f(i); any other order of the first three gives something else for
// n > 1 (e.g. sum first: n(n+1)/2 ...).
void chainOnOneBuffer(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  const size_t count = 5003;
  std::vector<int64_t> buf(count);
  auto f = [](size_t i) { return static_cast<int64_t>(i % 11) + 1; };
  for (size_t i = 0; i < count; ++i) buf[i] = (rank + 1) * f(i);
  void* p = buf.data();
  std::vector<Work> works;
  works.push_back(comm.broadcast(p, p, count, DataType::i64, n - 1));
  works.push_back(comm.allreduce(p, p, count, DataType::i64, ReduceOp::sum));
  works.push_back(comm.allreduce(p, p, count, DataType::i64, ReduceOp::max));
  works.push_back(comm.allreduce(p, p, count, DataType::i64, ReduceOp::sum));
  works.push_back(comm.broadcast(p, p, count, DataType::i64, 0));
  works.back().wait();
  for (const Work& w : works) RANK_CHECK(w.test() && !w.error(), "an earlier op is not done after the last one");
  const int64_t nn = static_cast<int64_t>(n) * n * n;
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(buf[i] == nn * f(i), "element %zu is %lld, expected %lld (ops ran out of order?)", i,
               static_cast<long long>(buf[i]), static_cast<long long>(nn * f(i)));
}

// Many independent ops of mixed kinds, sizes and types, waited only at the end.
void manyIndependentOps(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  // One rank issues late, so the others' ops queue up behind a peer that is not there yet.
  if (rank == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int kOps = 40;
  std::vector<std::vector<int32_t>> bufs(kOps);
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) {
    size_t count = k % 5 == 0 ? 0 : static_cast<size_t>(k * 977 % 9001);
    bufs[k].assign(count, rank + k);
    if (k % 3 == 2) works.push_back(comm.broadcast(bufs[k].data(), bufs[k].data(), count, DataType::i32, k % n));
    else works.push_back(comm.allreduce(bufs[k].data(), bufs[k].data(), count, DataType::i32, ReduceOp::sum));
  }
  uint64_t first = works.front().sequence();
  for (int k = 0; k < kOps; ++k)
    RANK_CHECK(works[k].sequence() == first + static_cast<uint64_t>(k), "op %d has sequence %llu, expected %llu", k,
               static_cast<unsigned long long>(works[k].sequence()), static_cast<unsigned long long>(first + k));
  RANK_CHECK(works.back().wait(std::chrono::milliseconds(25'000)), "the last op did not finish within 25 s");
  for (int k = 0; k < kOps; ++k) {
    RANK_CHECK(works[k].test(), "op %d is not done although the last op is", k);
    RANK_CHECK(!works[k].error(), "op %d failed: %s", k, works[k].error()->what());
    int32_t want = k % 3 == 2 ? (k % n) + k : static_cast<int32_t>(n * (n - 1) / 2 + n * k);
    for (size_t i = 0; i < bufs[k].size(); ++i)
      RANK_CHECK(bufs[k][i] == want, "op %d element %zu is %d, expected %d", k, i, bufs[k][i], want);
    self.slot->progress++;
  }
  RANK_CHECK(!comm.asyncError(), "asyncError set after a clean run: %s", comm.asyncError()->what());
}

// Small all-reduces (the one-host board: transport/small_op_board.h) mixed with ops on the
// message path and barriers, issued without waiting, ranks taking turns to be late so that
// some board ops are posted and finished at once, some posted and left pending, some queued.
void boardAndMessageOpsInterleaved(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  const int kOps = 300;
  std::vector<std::vector<int64_t>> bufs(kOps);
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) {
    if (k % 50 == 0 && k / 50 % n == rank) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    size_t count = k % 5 == 4 ? 3001 : static_cast<size_t>(1 + k % 7);  // 3001 x 8 B: the message path
    bufs[k].assign(count, rank + k);
    if (k % 11 == 10) works.push_back(comm.barrier());
    else works.push_back(comm.allreduce(bufs[k].data(), bufs[k].data(), count, DataType::i64, ReduceOp::sum));
    if (k % 37 == 0) works.back().wait();
  }
  RANK_CHECK(works.back().wait(std::chrono::milliseconds(25'000)), "the last op did not finish within 25 s");
  for (int k = 0; k < kOps; ++k) {
    RANK_CHECK(works[k].test() && !works[k].error(), "op %d not done or failed", k);
    if (k % 11 == 10) continue;
    const int64_t want = static_cast<int64_t>(n) * (n - 1) / 2 + static_cast<int64_t>(n) * k;
    for (size_t i = 0; i < bufs[k].size(); ++i)
      RANK_CHECK(bufs[k][i] == want, "op %d element %zu is %lld, expected %lld", k, i,
                 static_cast<long long>(bufs[k][i]), static_cast<long long>(want));
  }
}

// Communicator::setAlgorithms between ops: every rule (a forced algorithm, a rule per size
// range, none) gives the right sums over the board's sizes and the message path's; a malformed
// rule throws InvalidArgument naming it and changes nothing.
void algorithmsSwitchedBetweenOps(Communicator& comm, Rank&) {
  const int n = comm.size();
  const char* kRules[] = {"allreduce:ring", "allreduce:tree", "allreduce:rd", "allreduce:rhd", "allreduce:direct",
                          "allreduce:0-4K:rd;allreduce:4K-inf:ring", ""};
  for (const char* rules : kRules) {
    comm.setAlgorithms(rules);
    for (size_t count : {size_t{1}, size_t{1025}, size_t{100003}}) {
      std::vector<float> buf(count, static_cast<float>(comm.rank() + 1));
      RANK_CHECK(comm.allreduce(buf.data(), buf.data(), count, DataType::f32, ReduceOp::sum).wait(std::chrono::seconds(20)),
                 "\"%s\", count %zu: not done within 20 s", rules, count);
      const float want = static_cast<float>(n * (n + 1) / 2);
      for (size_t i = 0; i < count; ++i)
        RANK_CHECK(buf[i] == want, "\"%s\", count %zu, element %zu: %g, expected %g", rules, count, i, buf[i], want);
    }
  }
  bool refused = false;
  try {
    comm.setAlgorithms("allreduce:nosuch");
  } catch (const Error& e) {
    refused = e.code() == ErrorCode::InvalidArgument && std::strstr(e.what(), "nosuch") != nullptr;
  }
  RANK_CHECK(refused, "setAlgorithms(\"allreduce:nosuch\") was not refused with InvalidArgument naming it");
  std::vector<int32_t> one(3, 1);
  comm.allreduce(one.data(), one.data(), one.size(), DataType::i32, ReduceOp::sum).wait();
  RANK_CHECK(one[0] == n, "after the refused rule: %d, expected %d", one[0], n);
}

// Work::wait(timeout) returns false while the op cannot finish (a peer has not issued it yet),
// then true once it has, without throwing.
void boundedWaitReturnsFalseWhileRunning(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  std::vector<float> buf(1000, 1.0f);
  if (rank == 0) {
    // Rank 0 issues only after every other rank saw its own wait time out once.
    while (true) {
      bool all = true;
      for (int r = 1; r < n; ++r) all = all && self.slots[r].phase.load() == 1;
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  Work w = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::f32, ReduceOp::sum);
  if (rank != 0) {
    RANK_CHECK(!w.wait(std::chrono::milliseconds(50)), "wait(50 ms) returned true before rank 0 issued the op");
    RANK_CHECK(!w.test() && !w.error(), "the op looks finished before rank 0 issued it");
    self.slot->phase = 1;
  }
  RANK_CHECK(w.wait(std::chrono::milliseconds(20'000)), "the op did not finish within 20 s");
  for (float x : buf) RANK_CHECK(x == static_cast<float>(n), "got %g, expected %d", x, n);
}

// Ops nobody waits on (overlap with compute, polled with test()) still run: the progress
// thread takes an op that no waiter ran inline (src/comm/progress.cc).
void opsNobodyWaitsOnStillFinish(Communicator& comm, Rank&) {
  const int n = comm.size();
  std::vector<float> a(4099, 1.0f), b(17, 2.0f);
  Work wa = comm.allreduce(a.data(), a.data(), a.size(), DataType::f32, ReduceOp::sum);
  Work wb = comm.allreduce(b.data(), b.data(), b.size(), DataType::f32, ReduceOp::sum);
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(wa.test() && wb.test()) && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  RANK_CHECK(wa.test() && wb.test(), "ops polled with test() did not finish within 20 s");
  RANK_CHECK(!wa.error() && !wb.error(), "an op failed");
  RANK_CHECK(a[4098] == n && b[16] == 2.0f * n, "wrong sums: %g %g", a[4098], b[16]);
}

// Several threads wait on one communicator's ops in different orders, so whichever runs them
// inline runs someone else's too: they must still run in issue order, each exactly once.
void threadsWaitOnEachOthersOps(Communicator& comm, Rank&) {
  const int n = comm.size();
  const size_t count = 1001;
  std::vector<int64_t> chain(count, comm.rank() + 1);
  std::vector<Work> works;
  for (int k = 0; k < 12; ++k) works.push_back(comm.allreduce(chain.data(), chain.data(), count, DataType::i64,
                                                              k % 2 ? ReduceOp::max : ReduceOp::sum));
  std::thread backwards([&] { for (int k = 11; k >= 0; k -= 2) works[k].wait(); });
  std::thread evens([&] { for (int k = 0; k < 12; k += 2) works[k].wait(); });
  works[5].wait();
  backwards.join();
  evens.join();
  // sum of (rank+1) = n(n+1)/2, then max leaves it, then sum multiplies by n: 6 sums in all.
  int64_t want = static_cast<int64_t>(n) * (n + 1) / 2;
  for (int k = 1; k < 6; ++k) want *= n;
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(chain[i] == want, "element %zu is %lld, expected %lld", i, static_cast<long long>(chain[i]),
               static_cast<long long>(want));
}

class Ordering : public ::testing::TestWithParam<int> {};
class OrderingWithPeers : public ::testing::TestWithParam<int> {};

TEST_P(Ordering, ChainOfInPlaceOpsRunsInIssueOrder) { expectAllSucceeded(runRanks(GetParam(), chainOnOneBuffer)); }
TEST_P(Ordering, ManyOpsBackToBackWaitOnlyTheLast) { expectAllSucceeded(runRanks(GetParam(), manyIndependentOps)); }
TEST_P(Ordering, OpsNobodyWaitsOnStillFinish) { expectAllSucceeded(runRanks(GetParam(), opsNobodyWaitsOnStillFinish)); }
TEST_P(Ordering, AlgorithmsSwitchedBetweenOps) { expectAllSucceeded(runRanks(GetParam(), algorithmsSwitchedBetweenOps)); }
TEST_P(Ordering, BoardAndMessageOpsInterleaved) { expectAllSucceeded(runRanks(GetParam(), boardAndMessageOpsInterleaved)); }
TEST_P(Ordering, ThreadsWaitOnEachOthersOps) { expectAllSucceeded(runRanks(GetParam(), threadsWaitOnEachOthersOps)); }
TEST_P(OrderingWithPeers, BoundedWaitReturnsFalseWhileAPeerLags) {
  expectAllSucceeded(runRanks(GetParam(), boundedWaitReturnsFalseWhileRunning));
}

std::string sizeName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); }
INSTANTIATE_TEST_SUITE_P(WorldSize, Ordering, ::testing::Values(1, 2, 3, 4, 7), sizeName);
INSTANTIATE_TEST_SUITE_P(WorldSize, OrderingWithPeers, ::testing::Values(2, 3, 4, 7), sizeName);

}  // namespace
}  // namespace coll::test
