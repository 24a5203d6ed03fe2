// Ranks on one host with the default CMA policy (transport/shm/huge_pages.h): the send buffers
// of repeated all-gathers and broadcasts become huge-page backed in the background, after which
// senders' messages may be read straight from their memory. Every op carries fresh values, so
// a read of a stale buffer or of the wrong pages shows; odd counts leave a short last slice and
// messages that straddle 2 MiB pages.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "multirank/rank_runner.h"
#include "transport/shm/huge_pages.h"

namespace coll::test {
namespace {

constexpr size_t kPerRank = (5 << 20) / 4 + 5;  // f32: 5 MiB and 20 bytes
// Each round sends each 2 MiB page of a buffer once: after kCollapseRound rounds the pages
// are queued for collapsing, and the rounds after may read them as huge pages. A sender
// times its first 3 such ops through the slots and the next 3 by CMA (ShmConnection's
// kWayRules), then takes the faster: 8 rounds after the collapse go both ways.
constexpr int kCollapseRound =
    static_cast<int>(transport::shm::HugePages::kSentBeforeCollapse / transport::shm::HugePages::kPageBytes);
constexpr int kRounds = kCollapseRound + 8;
constexpr auto kDrainLimit = std::chrono::seconds(20);

float value(int round, int rank, size_t i) { return static_cast<float>(round * 1000 + rank * 100 + static_cast<int>(i % 89)); }

// Whether this kernel collapses pages on request (Linux 6.1 and later).
bool kernelCollapses() {
  static const bool yes = [] {
    void* probe = std::aligned_alloc(2 << 20, 2 << 20);
    std::memset(probe, 1, 2 << 20);
    const bool ok = ::madvise(probe, 2 << 20, 25 /* MADV_COLLAPSE */) == 0;
    std::free(probe);
    return ok;
  }();
  return yes;
}

// The cores this rank may run on (the ranks are not bound: each may use all of them).
int cores() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

// This process's anonymous memory in huge pages.
long anonHugeKiB() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  long kib = 0;
  while (in >> key) {
    if (key == "AnonHugePages:" && in >> kib) return kib;
  }
  return 0;
}

// Between the rounds that make the pages huge and the rounds that read them so.
void collapseNow(int round) {
  if (round == kCollapseRound) RANK_CHECK(transport::shm::HugePages::process().drain(kDrainLimit), "the collapser did not finish");
}

void allgatherRounds(Communicator& comm, int n, int rank, bool in_place) {
  std::vector<float> send(kPerRank), recv(kPerRank * n);
  for (int round = 0; round < kRounds; ++round) {
    collapseNow(round);
    float* mine = in_place ? recv.data() + static_cast<size_t>(rank) * kPerRank : send.data();
    for (size_t i = 0; i < kPerRank; ++i) mine[i] = value(round, rank, i);
    for (int r = 0; r < n; ++r)
      if (r != rank || !in_place) std::fill_n(recv.data() + static_cast<size_t>(r) * kPerRank, kPerRank, -1.0f);
    comm.allgather(mine, recv.data(), kPerRank, DataType::f32).wait();
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < kPerRank; ++i) {
        const float got = recv[static_cast<size_t>(r) * kPerRank + i];
        RANK_CHECK(got == value(round, r, i), "all-gather%s round %d: rank %d's element %zu is %g, expected %g",
                   in_place ? " in place" : "", round, r, i, got, value(round, r, i));
      }
  }
  // The last rounds' send buffers are huge pages, where this kernel makes them and the ranks
  // have a core each (huge_pages.h, ShmTransport::decideOversubscribed).
  RANK_CHECK(!kernelCollapses() || !peersMayReadMemory() || n > cores() || anonHugeKiB() > 0,
             "no send buffer was collapsed into huge pages (slices under the 256 KiB CMA threshold never are: run "
             "with --env=COLL_SLICE_BYTES= as ctest does, not the test runner's 4 KiB)");
}

// A chain: the ranks between the root and the last both receive and send, so they are busy
// senders whose output the next rank reads. That needs 3 ranks with a core each: on 2 cores
// the ranks keep the slots, and this checks the rounds' data only.
void broadcastRounds(Communicator& comm, int n, int rank) {
  const size_t count = kPerRank * 2;
  std::vector<float> buf(count);
  const int root = n - 1;
  for (int round = 0; round < kRounds; ++round) {
    collapseNow(round);
    for (size_t i = 0; i < count; ++i) buf[i] = rank == root ? value(round, root, i) : -1.0f;
    comm.broadcast(buf.data(), buf.data(), count, DataType::f32, root).wait();
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(buf[i] == value(round, root, i), "broadcast round %d: element %zu is %g, expected %g", round, i,
                 buf[i], value(round, root, i));
  }
}

class HugePageReads : public ::testing::TestWithParam<int> {};

TEST_P(HugePageReads, AllGatherOutOfPlaceAndInPlace) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank& self) {
    allgatherRounds(comm, comm.size(), self.rank, false);
    allgatherRounds(comm, comm.size(), self.rank, true);
  }));
}

TEST_P(HugePageReads, BroadcastChain) {
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank& self) {
    broadcastRounds(comm, comm.size(), self.rank);
  }));
}

INSTANTIATE_TEST_SUITE_P(WorldSize, HugePageReads, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
