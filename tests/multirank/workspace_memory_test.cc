// A reduce-scatter reduces in a workspace as big as its input (exec/op.cc). Its ring writes
// only the partial sums it passes on: up to four ranks, n − 2 of the n chunks of the workspace,
// which must take memory for those pages only (base/lazy_buffer.h; zero-filled, all of it was
// resident for the communicator's life); past four, two chunks of scratch in turn
// (ring_phases.h), the workspace untouched. Its own chunk goes straight into the caller's
// buffer. Each rank reads its private resident memory (RssAnon) around one large
// reduce-scatter, after a small one has made the connections, and checks the result against
// the sum of every rank's values.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr size_t kPerRank = 3 << 20;  // f32 elements of each rank's result: 12 MiB, the input 48 MiB

float value(int rank, size_t i) { return static_cast<float>(rank * 7 + static_cast<int>(i % 1013)); }

// This process's private resident memory, bytes (/proc/self/status, RssAnon), or -1.
long long residentAnonymous() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "RssAnon: %lld kB", &kib) == 1) return kib * 1024;
  }
  return -1;
}

void reduceScatterChecked(Communicator& comm, size_t per_rank) {
  const int n = comm.size(), rank = comm.rank();
  std::vector<float> in(per_rank * static_cast<size_t>(n)), out(per_rank, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = value(rank, i);
  comm.reduceScatter(in.data(), out.data(), per_rank, DataType::f32, ReduceOp::sum).wait();
  const size_t first = per_rank * static_cast<size_t>(rank);
  for (size_t i = 0; i < per_rank; ++i) {
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += value(r, first + i);
    RANK_CHECK(out[i] == expected, "reduce-scatter of %zu floats a rank: element %zu is %g, expected %g", per_rank, i,
               out[i], expected);
  }
}

class WorkspaceMemory : public ::testing::TestWithParam<int> {};

TEST_P(WorkspaceMemory, ARingReduceScatterTakesMemoryOnlyForThePartialSumsItPassesOn) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) {
    comm.setAlgorithms("reducescatter:ring");
    reduceScatterChecked(comm, 1000);  // connections, scratch and the first small workspace
    const int n = comm.size();
    std::vector<float> in(kPerRank * static_cast<size_t>(n)), out(kPerRank, 0.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = value(comm.rank(), i);
    const long long before = residentAnonymous();
    RANK_CHECK(before > 0, "no RssAnon line in /proc/self/status");
    comm.reduceScatter(in.data(), out.data(), kPerRank, DataType::f32, ReduceOp::sum).wait();
    const long long grew = residentAnonymous() - before;
    const long long input = static_cast<long long>(in.size() * sizeof(float));
    const long long partial_sums = input * (n > 4 ? 2 : n - 2) / n;
    // The partial sums, and an eighth of the input for the receive slots (4 MiB) and the rest.
    RANK_CHECK(grew < partial_sums + input / 8,
               "a reduce-scatter of %lld MiB grew this rank's private memory by %lld MiB: more than its %lld MiB of "
               "partial sums, as if the whole workspace were resident", input >> 20, grew >> 20, partial_sums >> 20);
    const size_t first = kPerRank * static_cast<size_t>(comm.rank());
    for (size_t i = 0; i < kPerRank; ++i) {
      float expected = 0;
      for (int r = 0; r < n; ++r) expected += value(r, first + i);
      RANK_CHECK(out[i] == expected, "reduce-scatter: element %zu is %g, expected %g", i, out[i], expected);
    }
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, WorkspaceMemory, ::testing::Values(4, 6));

}  // namespace
}  // namespace coll::test
