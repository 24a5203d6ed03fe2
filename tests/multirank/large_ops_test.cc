// Ops large enough that, between hosts, their slices grow past the configured one
// (algorithms/slice_size.h): ctest runs this with pairs of ranks posing as hosts and
// COLL_SLICE_BYTES left to its default. All-reduce, broadcast, all-gather and reduce-scatter
// of an odd count of floats (a slice that is no power of two, a last slice shorter than the
// rest), in place and out of place, against values computed here: small integers, so every
// sum is exact in any order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr size_t kCount = ((5 << 20) / 4) + 7;  // 5 MiB and 28 bytes of f32: slices of ~655 KB

float input(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1)); }
float sumOverRanks(int n, size_t i) { return static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 7 + 1)); }

void expectAll(const char* what, const std::vector<float>& got, size_t count, float (*want)(int, int, size_t),
               int n, int rank) {
  for (size_t i = 0; i < count; ++i)
    RANK_CHECK(got[i] == want(n, rank, i), "%s: element %zu is %g, expected %g", what, i, got[i], want(n, rank, i));
}

void allreduce(Communicator& comm, int n, int rank) {
  for (bool in_place : {false, true}) {
    std::vector<float> send(kCount), recv(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i) send[i] = input(rank, i);
    std::vector<float>& out = in_place ? send : recv;
    comm.allreduce(send.data(), out.data(), kCount, DataType::f32, ReduceOp::sum).wait();
    expectAll(in_place ? "allreduce in place" : "allreduce", out, kCount,
              [](int n, int, size_t i) { return sumOverRanks(n, i); }, n, rank);
  }
}

void broadcast(Communicator& comm, int n, int rank) {
  const int root = n - 1;
  std::vector<float> buf(kCount, -1.0f);
  if (rank == root)
    for (size_t i = 0; i < kCount; ++i) buf[i] = input(root, i);
  comm.broadcast(buf.data(), buf.data(), kCount, DataType::f32, root).wait();
  expectAll("broadcast", buf, kCount, [](int n, int, size_t i) { return input(n - 1, i); }, n, rank);
}

void allgather(Communicator& comm, int n, int rank) {
  const size_t per = kCount;  // each rank's part alone is large enough for slices to grow
  std::vector<float> send(per), recv(per * n, -1.0f);
  for (size_t i = 0; i < per; ++i) send[i] = input(rank, i);
  comm.allgather(send.data(), recv.data(), per, DataType::f32).wait();
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < per; ++i)
      RANK_CHECK(recv[r * per + i] == input(r, i), "allgather: rank %d's element %zu is %g", r, i, recv[r * per + i]);
}

void reduceScatter(Communicator& comm, int n, int rank) {
  const size_t per = kCount;  // each rank's part alone is large enough for slices to grow
  std::vector<float> send(per * n), recv(per, -1.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, i);
  comm.reduceScatter(send.data(), recv.data(), per, DataType::f32, ReduceOp::sum).wait();
  for (size_t i = 0; i < per; ++i) {
    const size_t at = static_cast<size_t>(rank) * per + i;
    RANK_CHECK(recv[i] == sumOverRanks(n, at), "reduce-scatter: element %zu is %g, expected %g", i, recv[i],
               sumOverRanks(n, at));
  }
}

class LargeOps : public ::testing::TestWithParam<int> {};

TEST_P(LargeOps, EveryCollectiveIsExact) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank& self) {
    allreduce(comm, comm.size(), self.rank);
    broadcast(comm, comm.size(), self.rank);
    allgather(comm, comm.size(), self.rank);
    reduceScatter(comm, comm.size(), self.rank);
  }));
}

INSTANTIATE_TEST_SUITE_P(WorldSize, LargeOps, ::testing::Values(3, 4),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
