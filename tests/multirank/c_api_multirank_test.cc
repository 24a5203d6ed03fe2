// The NCCL-shaped C API across forked ranks, the way a framework uses it: a helper process plays
// rank 0's part of collGetUniqueId (it serves the store) and hands the id to the test, which
// "ships" it to the ranks by fork; each rank calls collCommInitRank, runs collectives, and
// destroys or aborts. Not the test process itself: collGetUniqueId serves from a thread, and
// the ranks must be forked from a process without threads (store_process.h says why).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coll/coll.h"
#include "multirank/rank_runner.h"
#include "multirank/store_process.h"

namespace coll::test {
namespace {

#define C_CHECK(call)                                                                                  \
  do {                                                                                                 \
    collResult_t r_ = (call);                                                                          \
    RANK_CHECK(r_ == collSuccess, "%s returned %d (%s): %s", #call, static_cast<int>(r_), collGetErrorString(r_), \
               collGetLastError());                                                                    \
  } while (0)

class CApiRanks : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string id;
    Status st = StoreProcess::startWith(
        [] {
          collUniqueId made;
          if (collGetUniqueId(&made) == collSuccess) return std::string(made.internal, sizeof made.internal);
          std::fprintf(stderr, "collGetUniqueId failed: %s\n", collGetLastError());
          return std::string();
        },
        &id_server_, &id);
    ASSERT_TRUE(st) << st.message();
    ASSERT_EQ(id.size(), sizeof id_.internal);
    std::memcpy(id_.internal, id.data(), sizeof id_.internal);
  }
  StoreProcess id_server_;  // serves the id's store while the test runs
  collUniqueId id_;
};

TEST_P(CApiRanks, InitCollectivesAsyncAndDestroy) {
  const collUniqueId id = id_;
  auto outcomes = runProcesses(GetParam(), [id](Rank& self, const std::string&, const std::string&) {
    const int n = self.size, rank = self.rank;
    collComm_t comm = nullptr;
    C_CHECK(collCommInitRank(&comm, n, id, rank));
    int count = -1, me = -1;
    C_CHECK(collCommCount(comm, &count));
    C_CHECK(collCommUserRank(comm, &me));
    RANK_CHECK(count == n && me == rank, "count %d rank %d", count, me);

    const size_t len = 3001;
    std::vector<float> in(len), out(len, -1.0f);
    for (size_t i = 0; i < len; ++i) in[i] = static_cast<float>((rank + 1) * (i % 7));
    C_CHECK(collAllReduce(in.data(), out.data(), len, collFloat, collSum, comm, nullptr));
    for (size_t i = 0; i < len; ++i)
      RANK_CHECK(out[i] == static_cast<float>(n * (n + 1) / 2 * (i % 7)), "allreduce element %zu is %g", i, out[i]);

    std::vector<int32_t> b(len, rank == n - 1 ? 77 : -1);
    C_CHECK(collBroadcast(b.data(), b.data(), len, collInt32, n - 1, comm, nullptr));
    for (size_t i = 0; i < len; ++i) RANK_CHECK(b[i] == 77, "broadcast element %zu is %d", i, b[i]);

    // Three requests back to back; waiting on the last implies the others are done.
    std::vector<int64_t> x(len, rank), y(len, rank), z(len, rank);
    collRequest_t r1, r2, r3;
    C_CHECK(collAllReduceAsync(x.data(), x.data(), len, collInt64, collMax, comm, &r1));
    C_CHECK(collBroadcastAsync(y.data(), y.data(), len, collInt64, 0, comm, &r2));
    C_CHECK(collAllReduceAsync(z.data(), z.data(), len, collInt64, collMin, comm, &r3));
    C_CHECK(collRequestWait(r3, -1));
    C_CHECK(collRequestTest(r1));
    C_CHECK(collRequestTest(r2));
    for (size_t i = 0; i < len; ++i)
      RANK_CHECK(x[i] == n - 1 && y[i] == 0 && z[i] == 0, "async results %lld %lld %lld", static_cast<long long>(x[i]),
                 static_cast<long long>(y[i]), static_cast<long long>(z[i]));
    for (collRequest_t r : {r1, r2, r3}) C_CHECK(collRequestFree(r));

    collResult_t async = collInternalError;
    C_CHECK(collCommGetAsyncError(comm, &async));
    RANK_CHECK(async == collSuccess, "async error %d: %s", static_cast<int>(async), collGetLastError());
    C_CHECK(collCommDestroy(comm));
  });
  expectAllSucceeded(outcomes);
}

// One rank aborts after two all-reduces; the others' third all-reduce fails (PeerLost), with
// collGetLastError naming the op, and collCommGetAsyncError reports it afterwards.
TEST_P(CApiRanks, AbortMakesPeersFailWithPeerLost) {
  const collUniqueId id = id_;
  auto outcomes = runProcesses(GetParam(), [id](Rank& self, const std::string&, const std::string&) {
    const int n = self.size, rank = self.rank;
    const int aborter = n - 1;
    collComm_t comm = nullptr;
    C_CHECK(collCommInitRank(&comm, n, id, rank));
    std::vector<float> buf(100000, 1.0f);
    for (int k = 0; k < 2; ++k) C_CHECK(collAllReduce(buf.data(), buf.data(), buf.size(), collFloat, collMax, comm, nullptr));
    self.slot->phase = 1;
    if (rank == aborter) {
      // Not before the others finished all-reduce #1: the aborter can finish it first (its
      // last message sent, not yet read), and an abort may fail a peer's op still in flight
      // (once in CI: rank 2's all-reduce #1, 4 ranks).
      auto othersDone = [&] {
        for (int r = 0; r < n; ++r)
          if (self.slots[r].phase.load() != 1) return false;
        return true;
      };
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!othersDone() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      C_CHECK(collCommAbort(comm));
      return;
    }
    collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat, collMax, comm, nullptr);
    std::string why = collGetLastError();
    RANK_CHECK(r == collPeerLost || r == collTimeout, "third all-reduce returned %d: %s", static_cast<int>(r), why.c_str());
    RANK_CHECK(why.find("allreduce #2") != std::string::npos, "the error does not name the op: %s", why.c_str());
    collResult_t async = collSuccess;
    C_CHECK(collCommGetAsyncError(comm, &async));
    RANK_CHECK(async == r, "async error %d, the op returned %d", static_cast<int>(async), static_cast<int>(r));
    C_CHECK(collCommDestroy(comm));
  });
  expectAllSucceeded(outcomes);
}

// Every other collective through the C API, blocking, with NCCL's counts: values that name
// their source rank and index, so a misplaced chunk fails.
TEST_P(CApiRanks, EveryOtherCollectiveBlocking) {
  const collUniqueId id = id_;
  auto outcomes = runProcesses(GetParam(), [id](Rank& self, const std::string&, const std::string&) {
    const int n = self.size, rank = self.rank, root = n - 1;
    collComm_t comm = nullptr;
    C_CHECK(collCommInitRank(&comm, n, id, rank));
    const size_t per = 1001;
    auto v = [](int r, size_t i) { return static_cast<int32_t>(r * 100000 + static_cast<int>(i)); };

    std::vector<int32_t> mine(per), all(per * n, -1), chunks(per * n), got(per, -1);
    for (size_t i = 0; i < per; ++i) mine[i] = v(rank, i);
    for (size_t i = 0; i < per * n; ++i) chunks[i] = v(rank, i);

    C_CHECK(collReduce(mine.data(), rank == root ? got.data() : nullptr, per, collInt32, collMax, root, comm, nullptr));
    if (rank == root)
      for (size_t i = 0; i < per; ++i) RANK_CHECK(got[i] == v(n - 1, i), "reduce element %zu is %d", i, got[i]);

    C_CHECK(collAllGather(mine.data(), all.data(), per, collInt32, comm, nullptr));
    for (size_t i = 0; i < per * n; ++i)
      RANK_CHECK(all[i] == v(static_cast<int>(i / per), i % per), "allgather element %zu is %d", i, all[i]);

    C_CHECK(collReduceScatter(chunks.data(), got.data(), per, collInt32, collMin, comm, nullptr));
    for (size_t i = 0; i < per; ++i)
      RANK_CHECK(got[i] == v(0, rank * per + i), "reducescatter element %zu is %d", i, got[i]);

    std::vector<int32_t> a2a(per * n, -1);
    C_CHECK(collAlltoAll(chunks.data(), a2a.data(), per, collInt32, comm, nullptr));
    for (size_t i = 0; i < per * n; ++i)
      RANK_CHECK(a2a[i] == v(static_cast<int>(i / per), rank * per + i % per), "alltoall element %zu is %d", i, a2a[i]);

    std::fill(all.begin(), all.end(), -1);
    C_CHECK(collGather(mine.data(), rank == root ? all.data() : nullptr, per, collInt32, root, comm, nullptr));
    if (rank == root)
      for (size_t i = 0; i < per * n; ++i)
        RANK_CHECK(all[i] == v(static_cast<int>(i / per), i % per), "gather element %zu is %d", i, all[i]);

    C_CHECK(collScatter(rank == 0 ? chunks.data() : nullptr, got.data(), per, collInt32, 0, comm, nullptr));
    for (size_t i = 0; i < per; ++i) RANK_CHECK(got[i] == v(0, rank * per + i), "scatter element %zu is %d", i, got[i]);

    // A line 0 -> 1 -> ... -> n-1: blocking sends never wait on each other in a cycle.
    std::vector<int32_t> msg(per, -1);
    if (rank > 0) C_CHECK(collRecv(msg.data(), per, collInt32, rank - 1, comm, nullptr));
    if (rank < n - 1) C_CHECK(collSend(mine.data(), per, collInt32, rank + 1, comm, nullptr));
    if (rank > 0)
      for (size_t i = 0; i < per; ++i) RANK_CHECK(msg[i] == v(rank - 1, i), "recv element %zu is %d", i, msg[i]);
    C_CHECK(collBarrier(comm, nullptr));

    // A ring where every rank sends 1 MiB before it receives: only a group makes progress.
    std::vector<int32_t> big(256 << 10), big_in(256 << 10, -1);
    for (size_t i = 0; i < big.size(); ++i) big[i] = v(rank, i);
    C_CHECK(collGroupStart());
    C_CHECK(collSend(big.data(), big.size(), collInt32, (rank + 1) % n, comm, nullptr));
    C_CHECK(collRecv(big_in.data(), big_in.size(), collInt32, (rank + n - 1) % n, comm, nullptr));
    C_CHECK(collGroupEnd());
    for (size_t i = 0; i < big_in.size(); i += 4099)
      RANK_CHECK(big_in[i] == v((rank + n - 1) % n, i), "grouped recv element %zu is %d", i, big_in[i]);
    RANK_CHECK(collGroupEnd() == collInvalidArgument, "collGroupEnd without collGroupStart must be refused");

    // Tagged, nonblocking, receive first, from any source: rank 0 hears from everyone.
    std::vector<collRequest_t> requests;
    std::vector<int32_t> heard(n, -1);
    int32_t me = rank * 10;
    if (rank == 0)
      for (int k = 1; k < n; ++k) {
        collRequest_t q;
        C_CHECK(collIrecv(&heard[k], 1, collInt32, COLL_ANY_SOURCE, 4, comm, &q));
        requests.push_back(q);
      }
    else {
      collRequest_t q;
      C_CHECK(collIsend(&me, 1, collInt32, 0, 4, comm, &q));
      requests.push_back(q);
    }
    for (size_t k = 0; k < requests.size(); ++k) {
      C_CHECK(collRequestWait(requests[k], -1));
      int source = -1;
      C_CHECK(collRequestSource(requests[k], &source));
      if (rank == 0) RANK_CHECK(heard[k + 1] == source * 10, "any-source message %zu: %d from rank %d", k, heard[k + 1], source);
      C_CHECK(collRequestFree(requests[k]));
    }

    // Split into even and odd ranks (rank 1 takes no part when n == 2): the halves all-reduce alone.
    collComm_t half = nullptr;
    const int color = (n == 2 && rank == 1) ? COLL_SPLIT_NOCOLOR : rank % 2;
    C_CHECK(collCommSplit(comm, color, -rank, &half));
    if (color == COLL_SPLIT_NOCOLOR) {
      RANK_CHECK(half == nullptr, "no color, yet a communicator");
    } else {
      int hrank = -1, hsize = -1;
      C_CHECK(collCommUserRank(half, &hrank));
      C_CHECK(collCommCount(half, &hsize));
      const int members = n == 2 ? 1 : n / 2;
      RANK_CHECK(hsize == members && hrank == members - 1 - rank / 2, "split: rank %d of %d", hrank, hsize);
      int64_t x = rank, s = 0, want = 0;
      for (int r = color; r < n; r += 2) want += r;
      C_CHECK(collAllReduce(&x, &s, 1, collInt64, collSum, half, nullptr));
      RANK_CHECK(s == want, "split all-reduce gave %lld, expected %lld", static_cast<long long>(s),
                 static_cast<long long>(want));
      C_CHECK(collCommDestroy(half));
    }

    int stream = 0;
    RANK_CHECK(collBarrier(comm, &stream) == collUnsupported, "a stream must be refused");
    RANK_CHECK(collAlltoAll(a2a.data(), a2a.data(), per, collInt32, comm, nullptr) == collInvalidArgument,
               "in-place all-to-all must be refused");
    RANK_CHECK(collSend(mine.data(), per, collInt32, rank, comm, nullptr) == collInvalidArgument,
               "a send to oneself must be refused");
    RANK_CHECK(collRecv(msg.data(), per, collInt32, n, comm, nullptr) == collInvalidArgument,
               "a peer out of range must be refused");
    C_CHECK(collBarrier(comm, nullptr));
    C_CHECK(collCommDestroy(comm));
  });
  expectAllSucceeded(outcomes);
}

INSTANTIATE_TEST_SUITE_P(WorldSize, CApiRanks, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
