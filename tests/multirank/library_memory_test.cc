// Ranks on one host whose buffers come from collMemAlloc (transport/shm/shared_memory.h): large
// messages are read straight out of the sender's region, which the receiver maps. Each round
// allocates fresh regions (so fd numbers are reused under new ids) and carries fresh values;
// messages start inside a region, not at its start; 5 MiB and 20 bytes spans two of the
// receiver's 4 MiB copies and leaves a short last one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_runner.h"

namespace coll::test {
namespace {

constexpr size_t kPerRank = (5 << 20) / 4 + 5;  // f32
constexpr size_t kSmall = 1000;                 // under the mapped threshold: the slots
constexpr size_t kLead = 16;                    // floats before a message in its region
constexpr int kRounds = 3;

float value(int round, int rank, size_t i) { return static_cast<float>(round * 1000 + rank * 100 + static_cast<int>(i % 89)); }

int memfdMappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) n += line.find("/memfd:coll-mem-") != std::string::npos;
  return n;
}

// A region of `count` floats after kLead more, freed at scope exit.
struct Region {
  explicit Region(size_t count) : base(static_cast<float*>(memAlloc((count + kLead) * sizeof(float)))) {}
  ~Region() { memFree(base); }
  float* data() const { return base + kLead; }
  float* base;
};

void checkGathered(const float* got, size_t per_rank, int n, int round, const char* what) {
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < per_rank; ++i) {
      const float g = got[static_cast<size_t>(r) * per_rank + i];
      RANK_CHECK(g == value(round, r, i), "%s round %d: rank %d's element %zu is %g, expected %g", what, round, r, i, g,
                 value(round, r, i));
    }
}

void allgatherRound(Communicator& comm, int round, size_t per_rank, bool in_place) {
  const int n = comm.size(), rank = comm.rank();
  Region send(per_rank), recv(per_rank * n);
  float* mine = in_place ? recv.data() + static_cast<size_t>(rank) * per_rank : send.data();
  for (size_t i = 0; i < per_rank; ++i) mine[i] = value(round, rank, i);
  comm.allgather(mine, recv.data(), per_rank, DataType::f32).wait();
  checkGathered(recv.data(), per_rank, n, round, in_place ? "all-gather in place" : "all-gather");
}

void allreduceRound(Communicator& comm, int round, bool in_place) {
  const int n = comm.size(), rank = comm.rank();
  Region send(kPerRank), recv(kPerRank);
  for (size_t i = 0; i < kPerRank; ++i) send.data()[i] = value(round, rank, i);
  float* out = in_place ? send.data() : recv.data();
  comm.allreduce(send.data(), out, kPerRank, DataType::f32, ReduceOp::sum).wait();
  for (size_t i = 0; i < kPerRank; ++i) {
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += value(round, r, i);
    RANK_CHECK(out[i] == expected, "all-reduce%s round %d: element %zu is %g, expected %g", in_place ? " in place" : "",
               round, i, out[i], expected);
  }
}

void broadcastAndRingRound(Communicator& comm, int round) {
  const int n = comm.size(), rank = comm.rank(), root = n - 1;
  Region buf(kPerRank), got(kPerRank);
  for (size_t i = 0; i < kPerRank; ++i) buf.data()[i] = rank == root ? value(round, root, i) : -1.0f;
  comm.broadcast(buf.data(), buf.data(), kPerRank, DataType::f32, root).wait();
  for (size_t i = 0; i < kPerRank; ++i)
    RANK_CHECK(buf.data()[i] == value(round, root, i), "broadcast round %d: element %zu is %g", round, i, buf.data()[i]);
  for (size_t i = 0; i < kPerRank; ++i) buf.data()[i] = value(round, rank, i);
  Work s = comm.send(buf.data(), kPerRank, DataType::f32, (rank + 1) % n);
  Work r = comm.recv(got.data(), kPerRank, DataType::f32, (rank + n - 1) % n);
  s.wait();
  r.wait();
  const int from = (rank + n - 1) % n;
  for (size_t i = 0; i < kPerRank; ++i)
    RANK_CHECK(got.data()[i] == value(round, from, i), "recv round %d from rank %d: element %zu is %g", round, from, i,
               got.data()[i]);
}

class LibraryMemory : public ::testing::TestWithParam<int> {};

TEST_P(LibraryMemory, CollectivesAndPointToPointReadRegionsOfFreshAllocations) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) {
    for (int round = 0; round < kRounds; ++round) {
      allgatherRound(comm, round, kPerRank, false);
      allgatherRound(comm, round, kPerRank, true);
      allgatherRound(comm, round, kSmall, false);
      allreduceRound(comm, round, false);
      allreduceRound(comm, round, true);
      broadcastAndRingRound(comm, round);
    }
    // The peers' regions this rank read are mapped here beside its own (none left now).
    RANK_CHECK(!peersMayReadMemory() || memfdMappings() > 0, "no peer's collMemAlloc region was mapped: large messages "
               "from them did not take the mapped way");
  }));
}

// Every rank names itself the root: each one's descriptor, for a message inside its region,
// waits unread in its peers' rings. Its tag carries the root, so they must see the
// disagreement there and fail with Mismatch, well before the ops' deadline.
TEST_P(LibraryMemory, AMismatchedCallFromARegionIsCaughtByItsTag) {
  constexpr auto kTimeout = std::chrono::seconds(30);
  constexpr double kCaughtWithinSeconds = 10.0;
  RunOptions options;
  options.comm_timeout = kTimeout;
  const int64_t start_ns = nowNs();
  auto outcomes = runRanks(GetParam(), [](Communicator& comm, Rank&) {
    Region buf(kPerRank);
    try {
      comm.broadcast(buf.data(), buf.data(), kPerRank, DataType::f32, comm.rank()).wait();
      RANK_CHECK(false, "a broadcast whose every rank is its root succeeded");
    } catch (const Error& e) {
      recordError(e);
      RANK_CHECK(e.code() != ErrorCode::Timeout, "caught by the deadline, not by the tag: %s", e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the others may ask us why
    }
  }, options);
  expectAllSucceeded(outcomes);
  int mismatches = 0;
  for (const RankOutcome& o : outcomes) {
    mismatches += o.error_code == static_cast<int>(ErrorCode::Mismatch);
    EXPECT_LT((o.error_time_ns - start_ns) / 1e9, kCaughtWithinSeconds) << o.describe();
  }
  EXPECT_GE(mismatches, 1) << "no rank reported Mismatch itself";
}

INSTANTIATE_TEST_SUITE_P(WorldSize, LibraryMemory, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
