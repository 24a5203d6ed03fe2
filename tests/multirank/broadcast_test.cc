// Broadcast correctness on forked ranks over sockets: every root, in-place and out-of-place,
// counts {0, 1, prime, many slices}, a few dtypes. The root's data are random bytes (NaN
// payloads included: a broadcast copies bits, it must not touch values).
#include <gtest/gtest.h>

#include <cstring>

#include "multirank/rank_runner.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// On one host, broadcasts up to 2 KiB go by the board (512 x 4 B is its limit exactly).
constexpr size_t kCounts[] = {0, 1, 13, 512, 513, 1009, 20011};
constexpr DataType kTypes[] = {DataType::u8, DataType::bf16, DataType::i32, DataType::f64};

unsigned char rootByte(int root, DataType t, size_t count, size_t j) {
  return static_cast<unsigned char>(mix(static_cast<uint64_t>(root), j, static_cast<uint64_t>(t), count) >> 17);
}

struct Case {
  DataType type;
  size_t count;
  int root;
  bool in_place;
  bool null_send;  // non-roots out-of-place may pass no send buffer: it is read on the root only
  std::vector<char> send, recv;
  Work work;
};

void run(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (DataType t : kTypes) {
    const size_t es = sizeOf(t);
    std::vector<Case> cases;
    for (size_t count : kCounts)
      for (int root = 0; root < n; ++root)
        for (bool in_place : {false, true}) {
          Case c{t, count, root, in_place, !in_place && rank != root && root % 2 == 1, {}, {}, {}};
          c.send = buffer(t, count, 0x5A);  // non-roots' send data must not leak into the result
          c.recv = buffer(t, count, 0xCD);
          if (rank == root)
            for (size_t j = 0; j < count * es; ++j) (in_place ? c.recv : c.send)[j] = static_cast<char>(rootByte(root, t, count, j));
          cases.push_back(std::move(c));
        }
    for (Case& c : cases) {
      const void* send = c.in_place ? c.recv.data() : c.null_send ? nullptr : c.send.data();
      c.work = comm.broadcast(send, c.recv.data(), c.count, c.type, c.root);
    }
    for (Case& c : cases) {
      c.work.wait();
      for (size_t j = 0; j < c.count * es; ++j)
        RANK_CHECK(static_cast<unsigned char>(c.recv[j]) == rootByte(c.root, t, c.count, j),
                   "broadcast %s count %zu root %d %s on %d ranks: byte %zu (element %zu) is %#x, expected %#x",
                   toString(t), c.count, c.root, c.in_place ? "in-place" : "out-of-place", n, j, j / es,
                   static_cast<unsigned char>(c.recv[j]), rootByte(c.root, t, c.count, j));
      RANK_CHECK(static_cast<unsigned char>(c.recv[c.count * es]) == 0xCD, "broadcast wrote past the receive buffer");
      if (!c.in_place && rank == c.root)
        for (size_t j = 0; j < c.count * es; ++j)
          RANK_CHECK(static_cast<unsigned char>(c.send[j]) == rootByte(c.root, t, c.count, j),
                     "broadcast modified the root's send buffer at byte %zu", j);
      if (!c.in_place && rank != c.root)
        for (size_t j = 0; j < c.count * es; ++j)
          RANK_CHECK(c.send[j] == 0x5A, "broadcast wrote into a non-root's send buffer at byte %zu", j);
      self.slot->progress++;
    }
  }
}

class Broadcast : public ::testing::TestWithParam<int> {};

TEST_P(Broadcast, EveryRootCountAndPlacement) { expectAllSucceeded(runRanks(GetParam(), run)); }

INSTANTIATE_TEST_SUITE_P(WorldSize, Broadcast, ::testing::Values(1, 2, 3, 4, 5, 7),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
