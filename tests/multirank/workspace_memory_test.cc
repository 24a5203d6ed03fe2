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

// One rank's buffers for a reduce-scatter of `per_rank` floats a rank, its input filled.
struct ReduceScatterBuffers {
  ReduceScatterBuffers(const Communicator& comm, size_t per_rank)
      : in(per_rank * static_cast<size_t>(comm.size())), out(per_rank, -1.0f) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = value(comm.rank(), i);
  }
  void run(Communicator& comm) {
    comm.reduceScatter(in.data(), out.data(), out.size(), DataType::f32, ReduceOp::sum).wait();
  }
  // Each element of the result against the sum of every rank's values.
  void check(const Communicator& comm) const {
    const size_t first = out.size() * static_cast<size_t>(comm.rank());
    for (size_t i = 0; i < out.size(); ++i) {
      float expected = 0;
      for (int r = 0; r < comm.size(); ++r) expected += value(r, first + i);
      RANK_CHECK(out[i] == expected, "reduce-scatter of %zu floats a rank: element %zu is %g, expected %g", out.size(),
                 i, out[i], expected);
    }
  }
  std::vector<float> in, out;
};

class WorkspaceMemory : public ::testing::TestWithParam<int> {};

TEST_P(WorkspaceMemory, ARingReduceScatterTakesMemoryOnlyForThePartialSumsItPassesOn) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) {
    comm.setAlgorithms("reducescatter:ring");
    ReduceScatterBuffers small(comm, 1000);  // connections, scratch and the first small workspace
    small.run(comm);
    small.check(comm);
    ReduceScatterBuffers large(comm, kPerRank);
    const long long before = residentAnonymous();
    RANK_CHECK(before > 0, "no RssAnon line in /proc/self/status");
    large.run(comm);
    const long long grew = residentAnonymous() - before;
    const int n = comm.size();
    const long long input = static_cast<long long>(large.in.size() * sizeof(float));
    const long long partial_sums = input * (n > 4 ? 2 : n - 2) / n;
    // The partial sums, and an eighth of the input for the receive slots (4 MiB) and the rest.
    RANK_CHECK(grew < partial_sums + input / 8,
               "a reduce-scatter of %lld MiB grew this rank's private memory by %lld MiB: more than its %lld MiB of "
               "partial sums, as if the whole workspace were resident", input >> 20, grew >> 20, partial_sums >> 20);
    large.check(comm);
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, WorkspaceMemory, ::testing::Values(4, 6));

}  // namespace
}  // namespace coll::test
