// A reduce-scatter reduces in a workspace as big as its input (exec/op.cc). Its ring writes
// only the partial sums it passes on: up to four ranks, n − 2 of the n chunks of the workspace,
// which must take memory for those pages only (base/lazy_buffer.h; zero-filled, all of it was
// resident for the communicator's life); past four, two chunks of scratch in turn
// (ring_phases.h), the workspace untouched. Its own chunk goes straight into the caller's
// buffer, in place too (over its own chunk of the input: exec/result_window.h). Each rank reads its private resident memory (RssAnon) around one large
// reduce-scatter, after a small one has made the connections, and checks the result against
// the sum of every rank's values.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
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

// One rank's buffers for a reduce-scatter of `per_rank` floats a rank, its input filled; in
// place the result lands on the rank's own chunk of the input.
struct ReduceScatterBuffers {
  ReduceScatterBuffers(const Communicator& comm, size_t per_rank, bool in_place)
      : per_rank(per_rank), in(per_rank * static_cast<size_t>(comm.size())), out(in_place ? 0 : per_rank, -1.0f) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = value(comm.rank(), i);
    result = in_place ? in.data() + per_rank * static_cast<size_t>(comm.rank()) : out.data();
  }
  void run(Communicator& comm) {
    comm.reduceScatter(in.data(), result, per_rank, DataType::f32, ReduceOp::sum).wait();
  }
  // Each element of the result against the sum of every rank's values.
  void check(const Communicator& comm) const {
    const size_t first = per_rank * static_cast<size_t>(comm.rank());
    for (size_t i = 0; i < per_rank; ++i) {
      float expected = 0;
      for (int r = 0; r < comm.size(); ++r) expected += value(r, first + i);
      RANK_CHECK(result[i] == expected, "reduce-scatter of %zu floats a rank: element %zu is %g, expected %g",
                 per_rank, i, result[i], expected);
    }
  }
  size_t per_rank;
  std::vector<float> in, out;
  float* result;
};

// (ranks, in place)
class WorkspaceMemory : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(WorkspaceMemory, ARingReduceScatterTakesMemoryOnlyForThePartialSumsItPassesOn) {
  const bool in_place = std::get<1>(GetParam());
  expectAllSucceeded(runRanks(std::get<0>(GetParam()), [in_place](Communicator& comm, Rank&) {
    comm.setAlgorithms("reducescatter:ring");
    ReduceScatterBuffers small(comm, 1000, in_place);  // connections, scratch and the first small workspace
    small.run(comm);
    small.check(comm);
    ReduceScatterBuffers large(comm, kPerRank, in_place);
    const long long before = residentAnonymous();
    RANK_CHECK(before > 0, "no RssAnon line in /proc/self/status");
    large.run(comm);
    const long long grew = residentAnonymous() - before;
    const int n = comm.size();
    const long long input = static_cast<long long>(large.in.size() * sizeof(float));
    const long long partial_sums = input * (n > 4 ? 2 : n - 2) / n;
    // The partial sums, and an eighth of the input for the receive slots (4 MiB) and the rest.
    RANK_CHECK(grew < partial_sums + input / 8,
               "a reduce-scatter of %lld MiB%s grew this rank's private memory by %lld MiB: more than its %lld MiB of "
               "partial sums, as if the workspace held the result or all of it were resident", input >> 20,
               in_place ? " in place" : "", grew >> 20, partial_sums >> 20);
    large.check(comm);
  }));
}

INSTANTIATE_TEST_SUITE_P(RanksInPlace, WorkspaceMemory,
                         ::testing::Combine(::testing::Values(4, 6), ::testing::Bool()));

}  // namespace
}  // namespace coll::test
