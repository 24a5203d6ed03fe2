// Slices a rank receives by socket and passes on by socket unchanged (Connection::postRecvRelay:
// a chain broadcast's middle, a ring all-gather, the all-gather half of a ring all-reduce), with
// slices large enough for the socket transport to splice them on (256 KiB and more; the other
// multirank tests use 4 KiB slices, which it never relays). Each result is checked against an
// independent reference: the root's bytes, each rank's chunk, the sum of small integers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "multirank/rank_runner.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// Several slices of 300 KiB + 8 B, and tails of odd length.
constexpr size_t kBytes[] = {(300 << 10) + 8, (3 << 20) + 4, (7 << 20) + 1000};

// Sets an environment variable for this test's ranks (forked after it), and puts it back.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

unsigned char byteOf(uint64_t seed, size_t j) { return static_cast<unsigned char>(mix(seed, j, 7, 11) >> 23); }

void broadcasts(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (size_t bytes : kBytes)
    for (int root = 0; root < n; ++root)
      for (bool in_place : {true, false}) {
        std::vector<char> send(bytes + 1, 0x5A), recv(bytes + 1, static_cast<char>(0xCD));
        if (rank == root)
          for (size_t j = 0; j < bytes; ++j) (in_place ? recv : send)[j] = static_cast<char>(byteOf(root, j));
        comm.broadcast(in_place ? recv.data() : send.data(), recv.data(), bytes, DataType::u8, root).wait();
        for (size_t j = 0; j < bytes; ++j)
          RANK_CHECK(static_cast<unsigned char>(recv[j]) == byteOf(root, j),
                     "broadcast of %zu B from root %d (%s) on %d ranks: byte %zu is %#x, expected %#x", bytes, root,
                     in_place ? "in place" : "out of place", n, j, static_cast<unsigned char>(recv[j]), byteOf(root, j));
        RANK_CHECK(static_cast<unsigned char>(recv[bytes]) == 0xCD, "broadcast wrote past the receive buffer");
        self.slot->progress++;
      }
}

void allgathers(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (size_t bytes : kBytes) {
    std::vector<char> mine(bytes), all(bytes * n + 1, static_cast<char>(0xCD));
    for (size_t j = 0; j < bytes; ++j) mine[j] = static_cast<char>(byteOf(100 + rank, j));
    comm.allgather(mine.data(), all.data(), bytes, DataType::u8).wait();
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < bytes; ++j)
        RANK_CHECK(static_cast<unsigned char>(all[r * bytes + j]) == byteOf(100 + r, j),
                   "all-gather of %zu B a rank on %d ranks: rank %d's byte %zu is %#x, expected %#x", bytes, n, r, j,
                   static_cast<unsigned char>(all[r * bytes + j]), byteOf(100 + r, j));
    RANK_CHECK(static_cast<unsigned char>(all[bytes * n]) == 0xCD, "all-gather wrote past the receive buffer");
    self.slot->progress++;
  }
}

// Small integers in floats: every order of summing gives the exact sum.
void allreduces(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (size_t bytes : kBytes) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((i * 7 + rank * 13) % 1000);
    comm.allreduce(data.data(), data.data(), count, DataType::f32, ReduceOp::sum).wait();
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += static_cast<float>((i * 7 + r * 13) % 1000);
      RANK_CHECK(data[i] == want, "ring all-reduce of %zu floats on %d ranks: element %zu is %g, expected %g", count, n,
                 i, data[i], want);
    }
    self.slot->progress++;
  }
}

class Relay : public ::testing::TestWithParam<int> {};

TEST_P(Relay, ChainBroadcastsPassEverySliceOn) {
  ScopedEnvironment transport("COLL_TRANSPORT", "socket"), slice("COLL_SLICE_BYTES", "300K"),
      algo("COLL_ALGO", "broadcast:chain");
  expectAllSucceeded(runRanks(GetParam(), broadcasts));
}

TEST_P(Relay, RingAllGathersPassEveryChunkOn) {
  ScopedEnvironment transport("COLL_TRANSPORT", "socket"), slice("COLL_SLICE_BYTES", "300K"),
      algo("COLL_ALGO", "allgather:ring");
  expectAllSucceeded(runRanks(GetParam(), allgathers));
}

TEST_P(Relay, RingAllReducesPassTheirResultsOn) {
  ScopedEnvironment transport("COLL_TRANSPORT", "socket"), slice("COLL_SLICE_BYTES", "300K"),
      algo("COLL_ALGO", "allreduce:ring");
  expectAllSucceeded(runRanks(GetParam(), allreduces));
}

INSTANTIATE_TEST_SUITE_P(WorldSize, Relay, ::testing::Values(3, 4, 5),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
