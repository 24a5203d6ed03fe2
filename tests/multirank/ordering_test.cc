// Asynchrony and issue order: ops issued back to back without waiting run in issue order on
// every rank (a chain of in-place ops on one buffer only gives the right answer in that
// order), waiting on the newest Work implies the older ones are done, and sequence numbers
// count 0, 1, 2, ... per communicator; whichever thread runs the ops (the progress thread or
// waiters running them inline).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "multirank/rank_runner.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// --- chains of in-place ops on one buffer, and a reference that runs them on all ranks ----
//
// Each op of a chain reads what the previous one left, and the chains are built so that the
// order shows: reduce leaves every rank but the root as it was, so the ranks' buffers stay
// different, and a broadcast from one root or another then picks different values. The
// reference below runs a chain on every rank's buffer at once; chainIsOrderSensitive checks,
// for the world size at hand, that swapping any two neighbouring ops or dropping any one
// changes some rank's result, so the test would see a reordering, not just trust one.

struct ChainOp {
  enum Kind { kAllreduce, kReduce, kBroadcast } kind;
  ReduceOp op;  // kAllreduce, kReduce
  int root;     // kReduce, kBroadcast
};

using Buffers = std::vector<std::vector<int64_t>>;  // one per rank

int64_t combine(ReduceOp op, int64_t a, int64_t b) { return op == ReduceOp::max ? std::max(a, b) : a + b; }

std::vector<int64_t> reduceAll(const Buffers& bufs, ReduceOp op) {
  std::vector<int64_t> out = bufs[0];
  for (size_t r = 1; r < bufs.size(); ++r)
    for (size_t i = 0; i < out.size(); ++i) out[i] = combine(op, out[i], bufs[r][i]);
  return out;
}

void applyReference(const ChainOp& c, Buffers* bufs) {
  const int n = static_cast<int>(bufs->size());
  if (c.kind == ChainOp::kBroadcast) {
    std::vector<int64_t> from = (*bufs)[c.root % n];
    for (auto& b : *bufs) b = from;
  } else if (c.kind == ChainOp::kReduce) {
    (*bufs)[c.root % n] = reduceAll(*bufs, c.op);
  } else {
    std::vector<int64_t> all = reduceAll(*bufs, c.op);
    for (auto& b : *bufs) b = all;
  }
}

Buffers runReference(const std::vector<ChainOp>& chain, Buffers bufs) {
  for (const ChainOp& c : chain) applyReference(c, &bufs);
  return bufs;
}

Work issue(Communicator& comm, const ChainOp& c, int64_t* p, size_t count) {
  const int root = c.root % comm.size();
  switch (c.kind) {
    case ChainOp::kBroadcast: return comm.broadcast(p, p, count, DataType::i64, root);
    case ChainOp::kReduce: return comm.reduce(p, p, count, DataType::i64, c.op, root);
    case ChainOp::kAllreduce: break;
  }
  return comm.allreduce(p, p, count, DataType::i64, c.op);
}

// Rank r's starting buffer: depends on rank and index, so no two ranks start alike.
std::vector<int64_t> startOf(int r, size_t count) {
  std::vector<int64_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = (r + 1) * static_cast<int64_t>(i % 11 + 1) + 3 * ((r * 5 + static_cast<int>(i)) % 7);
  return v;
}

Buffers startsOf(int n, size_t count) {
  Buffers bufs;
  for (int r = 0; r < n; ++r) bufs.push_back(startOf(r, count));
  return bufs;
}

// True when, on n ranks, every swap of neighbouring ops and every dropped op changes the result.
bool chainIsOrderSensitive(const std::vector<ChainOp>& chain, int n, std::string* why) {
  const Buffers start = startsOf(n, 23), in_order = runReference(chain, start);
  for (size_t k = 0; k + 1 < chain.size(); ++k) {
    std::vector<ChainOp> swapped = chain;
    std::swap(swapped[k], swapped[k + 1]);
    if (runReference(swapped, start) == in_order) *why += strprintf(" swapping ops %zu and %zu;", k, k + 1);
  }
  for (size_t k = 0; k < chain.size(); ++k) {
    std::vector<ChainOp> dropped = chain;
    dropped.erase(dropped.begin() + static_cast<long>(k));
    if (runReference(dropped, start) == in_order) *why += strprintf(" dropping op %zu;", k);
  }
  return why->empty();
}

// Each rank's buffer after the chain must equal the reference's for that rank.
void expectReference(const std::vector<ChainOp>& chain, const std::vector<int64_t>& got, int n, int rank) {
  const std::vector<int64_t> want = runReference(chain, startsOf(n, got.size()))[rank];
  for (size_t i = 0; i < got.size(); ++i)
    RANK_CHECK(got[i] == want[i], "element %zu is %lld, expected %lld (ops ran out of order?)", i,
               static_cast<long long>(got[i]), static_cast<long long>(want[i]));
}

// The power check is the same on every rank: rank 0 reports it (one rank has nothing to order).
void expectOrderSensitive(const std::vector<ChainOp>& chain, int n, int rank) {
  std::string why;
  if (n > 1 && rank == 0) RANK_CHECK(chainIsOrderSensitive(chain, n, &why), "the chain cannot see:%s", why.c_str());
}

// `first`, then `ops - 1` more: a reduce (sum) to a root and a broadcast from that root, in
// turn, the root going round 2, 3, 1 (mod n). Each pair multiplies by about n only in this
// order (a broadcast before its reduce spreads the old value and leaves the root alone).
std::vector<ChainOp> reduceBroadcastPairsAfter(ChainOp first, int ops) {
  const int kRoots[] = {2, 3, 1};
  std::vector<ChainOp> chain = {first};
  for (int k = 1; k < ops; ++k) {
    const int root = kRoots[(k - 1) / 2 % 3];
    if (k % 2 == 1) chain.push_back({ChainOp::kReduce, ReduceOp::sum, root});
    else chain.push_back({ChainOp::kBroadcast, ReduceOp::sum, root});
  }
  return chain;
}

// A max to rank 0 first (the others keep their own data), then three reduce/broadcast pairs.
const std::vector<ChainOp> kChain = reduceBroadcastPairsAfter({ChainOp::kReduce, ReduceOp::max, 0}, 7);

void chainOnOneBuffer(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  expectOrderSensitive(kChain, n, rank);
  std::vector<int64_t> buf = startOf(rank, 5003);
  std::vector<Work> works;
  for (const ChainOp& c : kChain) works.push_back(issue(comm, c, buf.data(), buf.size()));
  works.back().wait();
  for (const Work& w : works) RANK_CHECK(w.test() && !w.error(), "an earlier op is not done after the last one");
  expectReference(kChain, buf, n, rank);
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
// Ops finished at issue share one state (BoardPath::finished_ok_): each Work still has its own
// sequence, and a callback added to it runs once.
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
  int callbacks = 0;
  for (int k = 0; k < kOps; ++k) {
    RANK_CHECK(works[k].test() && !works[k].error(), "op %d not done or failed", k);
    RANK_CHECK(works[k].sequence() == works[0].sequence() + static_cast<uint64_t>(k), "op %d has sequence %llu", k,
               static_cast<unsigned long long>(works[k].sequence()));
    works[k].onComplete([&callbacks] { ++callbacks; });  // done: runs here, once
    RANK_CHECK(callbacks == k + 1, "op %d: %d callbacks ran, expected %d", k, callbacks, k + 1);
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

// Twelve ops on one buffer that must run in issue order, each once: an all-reduce (max), then
// reduce/broadcast pairs as above, the last a reduce alone.
std::vector<ChainOp> twelveOps() { return reduceBroadcastPairsAfter({ChainOp::kAllreduce, ReduceOp::max, 0}, 12); }

// Several threads wait on one communicator's ops in different orders, so whichever runs them
// inline runs someone else's too: they must still run in issue order, each exactly once.
void threadsWaitOnEachOthersOps(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  const std::vector<ChainOp> chain = twelveOps();
  expectOrderSensitive(chain, n, rank);
  std::vector<int64_t> buf = startOf(rank, 1001);
  std::vector<Work> works;
  for (const ChainOp& c : chain) works.push_back(issue(comm, c, buf.data(), buf.size()));
  std::thread backwards([&] { for (int k = 11; k >= 0; k -= 2) works[k].wait(); });
  std::thread evens([&] { for (int k = 0; k < 12; k += 2) works[k].wait(); });
  works[5].wait();
  backwards.join();
  evens.join();
  expectReference(chain, buf, n, rank);
}

// Rank 0 issues two small all-reduces (the shared-memory board's) before its peers have, then
// waits on neither for 3 s: the first is posted and pending, the second queued behind it. The
// peers wait for both; rank 0's progress thread must start the second without anyone on rank 0
// waiting (CommunicatorImpl's queue_behind wake-up), or the peers' waits run out.
void anOpBehindAPendingBoardOpStarts(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  float a = 1.0f, b = 2.0f;
  if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Work first = comm.allreduce(&a, &a, 1, DataType::f32, ReduceOp::sum);
  Work second = comm.allreduce(&b, &b, 1, DataType::f32, ReduceOp::sum);
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
  } else {
    RANK_CHECK(first.wait(std::chrono::milliseconds(2000)), "the first op did not finish within 2 s");
    RANK_CHECK(second.wait(std::chrono::milliseconds(2000)),
               "the second op did not finish within 2 s: rank 0 did not start it while nobody there waited");
  }
  first.wait();
  second.wait();
  RANK_CHECK(a == static_cast<float>(n) && b == 2.0f * n, "wrong sums: %g %g", a, b);
}

// Rank 0 issues 40 small all-reduces (the board's) without waiting, then sends rank 1 what rank
// 1 waits for before it issues its own: while rank 1 is held there, each of rank 0's issues
// finds the op before it still pending and waits for it a while (catchUpOnBoard), bounded, so
// the send is reached and everything finishes, with the right sums.
void boardOpsIssuedBeforeASendThePeerNeeds(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  constexpr int kOps = 40;
  std::vector<float> values(kOps);
  for (int k = 0; k < kOps; ++k) values[k] = static_cast<float>(k + 1);
  int32_t token = rank == 0 ? 77 : 0;
  if (rank == 1) comm.recv(&token, 1, DataType::i32, 0).wait();
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) works.push_back(comm.allreduce(&values[k], &values[k], 1, DataType::f32, ReduceOp::sum));
  if (rank == 0) comm.send(&token, 1, DataType::i32, 1).wait();
  for (const Work& w : works) w.wait();
  for (int k = 0; k < kOps; ++k)
    RANK_CHECK(values[k] == static_cast<float>((k + 1) * n), "op %d: sum %g, expected %d", k, values[k], (k + 1) * n);
  if (rank <= 1) RANK_CHECK(token == 77, "rank %d holds token %d, expected rank 0's 77", rank, token);
}

// Ops finished by callbacks alone, as TensorFlow's kernels finish theirs (Work::onComplete: nobody
// will wait to run them, so coll's thread starts each at once): an order-sensitive chain on one
// buffer, none waited on, still runs in issue order, each once, its callbacks in that order; a
// callback added to a finished op runs at once, an empty Work's add throws.
void opsFinishedByCallbacks(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  const std::vector<ChainOp> chain = twelveOps();
  expectOrderSensitive(chain, n, rank);
  std::vector<int64_t> buf = startOf(rank, 1001);
  std::mutex mu;
  std::vector<int> order;
  std::vector<Work> works;
  for (size_t k = 0; k < chain.size(); ++k) {
    works.push_back(issue(comm, chain[k], buf.data(), buf.size()));
    works.back().onComplete([&mu, &order, k] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(static_cast<int>(k));
    });
  }
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto finished = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return order.size() == chain.size();
  };
  while (!finished() && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RANK_CHECK(finished(), "ops finished by callbacks, nobody waiting, did not all finish within 20 s");
  for (size_t k = 0; k < chain.size(); ++k)
    RANK_CHECK(order[k] == static_cast<int>(k), "callback %zu was op %d's: not in issue order", k, order[k]);
  for (const Work& w : works) RANK_CHECK(!w.error(), "an op finished by callback failed: %s", w.error()->what());
  expectReference(chain, buf, n, rank);
  bool ran = false;
  works.front().onComplete([&ran] { ran = true; });  // finished: runs here, now
  RANK_CHECK(ran, "a callback added to a finished op did not run at once");
  bool threw = false;
  try {
    Work().onComplete([] {});
  } catch (const Error& e) {
    threw = e.code() == ErrorCode::InvalidArgument;
  }
  RANK_CHECK(threw, "onComplete on an empty Work did not throw InvalidArgument");
}

class Ordering : public ::testing::TestWithParam<int> {};
class OrderingWithPeers : public ::testing::TestWithParam<int> {};

TEST_P(Ordering, ChainOfInPlaceOpsRunsInIssueOrder) { expectAllSucceeded(runRanks(GetParam(), chainOnOneBuffer)); }
TEST_P(Ordering, ManyOpsBackToBackWaitOnlyTheLast) { expectAllSucceeded(runRanks(GetParam(), manyIndependentOps)); }
TEST_P(Ordering, OpsNobodyWaitsOnStillFinish) { expectAllSucceeded(runRanks(GetParam(), opsNobodyWaitsOnStillFinish)); }
TEST_P(Ordering, AlgorithmsSwitchedBetweenOps) { expectAllSucceeded(runRanks(GetParam(), algorithmsSwitchedBetweenOps)); }
TEST_P(Ordering, BoardAndMessageOpsInterleaved) { expectAllSucceeded(runRanks(GetParam(), boardAndMessageOpsInterleaved)); }
TEST_P(Ordering, OpsFinishedByCallbacks) { expectAllSucceeded(runRanks(GetParam(), opsFinishedByCallbacks)); }
TEST_P(Ordering, ThreadsWaitOnEachOthersOps) { expectAllSucceeded(runRanks(GetParam(), threadsWaitOnEachOthersOps)); }
TEST_P(OrderingWithPeers, AnOpBehindAPendingBoardOpStartsWithoutAWaiter) {
  expectAllSucceeded(runRanks(GetParam(), anOpBehindAPendingBoardOpStarts));
}
TEST_P(OrderingWithPeers, BoardOpsIssuedBeforeASendThePeerNeedsStillFinish) {
  expectAllSucceeded(runRanks(GetParam(), boardOpsIssuedBeforeASendThePeerNeeds));
}
TEST_P(OrderingWithPeers, BoundedWaitReturnsFalseWhileAPeerLags) {
  expectAllSucceeded(runRanks(GetParam(), boundedWaitReturnsFalseWhileRunning));
}

std::string sizeName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); }
INSTANTIATE_TEST_SUITE_P(WorldSize, Ordering, ::testing::Values(1, 2, 3, 4, 7), sizeName);
INSTANTIATE_TEST_SUITE_P(WorldSize, OrderingWithPeers, ::testing::Values(2, 3, 4, 7), sizeName);

}  // namespace
}  // namespace coll::test
