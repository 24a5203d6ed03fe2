// The small-op board's data plane (src/transport/shm/board.h) on cells in this process: who
// has posted, the alternation of the two cells, the rank-order combination, fingerprints.
#include "transport/shm/board.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace coll::transport::shm {
namespace {

// n ranks' cells, and each rank's view of all of them.
struct Boards {
  explicit Boards(int n) {
    for (int r = 0; r < n; ++r) owned.push_back(std::make_unique<BoardCell[]>(2));
    std::vector<BoardCell*> cells;
    for (auto& c : owned) cells.push_back(c.get());
    for (int r = 0; r < n; ++r) views.emplace_back(r, cells);
  }
  void post(int rank, uint64_t op, float value) {
    views[rank].post(op, Board::fingerprint(1, DataType::f32, ReduceOp::sum, -1), &value, sizeof value, sizeof value);
  }
  std::vector<std::unique_ptr<BoardCell[]>> owned;
  std::vector<Board> views;
};

TEST(Board, AllPostedOnlyOnceEveryRankPosted) {
  Boards b(3);
  b.post(0, 1, 1.0f);
  b.post(2, 1, 1.0f);
  EXPECT_FALSE(b.views[0].allPosted(1));
  EXPECT_EQ(b.views[0].missing(1), std::vector<int>{1});
  b.post(1, 1, 1.0f);
  EXPECT_TRUE(b.views[0].allPosted(1));
  EXPECT_TRUE(b.views[2].allPosted(1));
}

// 1e8 + 1 and -1e8 + 1 round back to +-1e8 in float: only the left fold in rank order,
// (1e8 - 1e8) + 1, gives 1 here; every other order gives 0.
TEST(Board, CombinesInRankOrder) {
  Boards b(3);
  const float values[] = {1e8f, -1e8f, 1.0f};
  for (int r = 0; r < 3; ++r) b.post(r, 1, values[r]);
  for (int r = 0; r < 3; ++r) {
    float out = -1;
    ASSERT_TRUE(b.views[r].allPosted(1));
    b.views[r].combine(1, &out, 1, DataType::f32, ReduceOp::sum);
    EXPECT_EQ(out, 1.0f) << "rank " << r;
  }
}

// A fast rank's next post goes to the other cell: a slow rank still reads the last op intact.
TEST(Board, NextOpLeavesTheLastOnesCellsAlone) {
  Boards b(2);
  b.post(0, 1, 2.0f);
  b.post(1, 1, 3.0f);
  b.post(0, 2, 100.0f);
  EXPECT_FALSE(b.views[1].allPosted(2));
  float out = 0;
  ASSERT_TRUE(b.views[1].allPosted(1));
  b.views[1].combine(1, &out, 1, DataType::f32, ReduceOp::sum);
  EXPECT_EQ(out, 5.0f);
  b.post(1, 2, 1.0f);
  ASSERT_TRUE(b.views[1].allPosted(2));
  b.views[1].combine(2, &out, 1, DataType::f32, ReduceOp::sum);
  EXPECT_EQ(out, 101.0f);
}

TEST(Board, FingerprintsTellCallsApart) {
  const uint64_t sum4 = Board::fingerprint(4, DataType::f32, ReduceOp::sum, -1);
  EXPECT_NE(sum4, Board::fingerprint(5, DataType::f32, ReduceOp::sum, -1));
  EXPECT_NE(sum4, Board::fingerprint(4, DataType::f64, ReduceOp::sum, -1));
  EXPECT_NE(sum4, Board::fingerprint(4, DataType::f32, ReduceOp::max, -1));
  EXPECT_NE(sum4, Board::fingerprint(4, DataType::f32, ReduceOp::sum, 0));
  EXPECT_NE(Board::fingerprint(4, DataType::f32, ReduceOp::sum, 0), Board::fingerprint(4, DataType::f32, ReduceOp::sum, 1));
  // A broadcast's op is not part of the call.
  EXPECT_EQ(Board::fingerprint(4, DataType::f32, ReduceOp::sum, 2), Board::fingerprint(4, DataType::f32, ReduceOp::max, 2));
  EXPECT_EQ(Board::describe(sum4), "an all-reduce of 4 x f32 sum");
  EXPECT_EQ(Board::describe(Board::fingerprint(4, DataType::f32, ReduceOp::sum, 2)), "a broadcast of 4 x f32 from root 2");
}

TEST(Board, DisagreeingNamesTheLowestOtherRank) {
  Boards b(4);
  const uint64_t mine = Board::fingerprint(1, DataType::f32, ReduceOp::sum, -1);
  float v = 1;
  for (int r = 0; r < 4; ++r)
    b.views[r].post(1, r == 2 || r == 3 ? Board::fingerprint(2, DataType::f32, ReduceOp::sum, -1) : mine, &v, sizeof v,
                     sizeof v);
  EXPECT_EQ(b.views[0].disagreeing(1, mine), 2);
  EXPECT_EQ(b.views[0].disagreeing(1, b.views[0].fingerprintOf(3, 1)), 0);
}

TEST(Board, BroadcastCopiesTheRootsCell) {
  Boards b(3);
  const uint64_t fp = Board::fingerprint(3, DataType::i32, ReduceOp::sum, 1);
  const int32_t data[3] = {7, -8, 9};
  for (int r = 0; r < 3; ++r) b.views[r].post(1, fp, r == 1 ? data : nullptr, r == 1 ? sizeof data : 0, sizeof data);
  int32_t out[3] = {};
  ASSERT_TRUE(b.views[2].allPosted(1));
  b.views[2].copyFrom(1, 1, out, sizeof out);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], -8);
  EXPECT_EQ(out[2], 9);
}

// Operands over several cache lines (allPosted prefetches a missing peer's up to 8 lines, and
// none past that): every element of every line is combined, whoever posts last.
TEST(Board, OperandsSpanningLinesCombineWhole) {
  for (size_t count : {11u, 12u, 27u, 28u, 29u, 200u}) {
    Boards b(3);
    const uint64_t fp = Board::fingerprint(count, DataType::f32, ReduceOp::max, -1);
    std::vector<std::vector<float>> in(3, std::vector<float>(count));
    for (int r = 0; r < 3; ++r)
      for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i * 7 + r * 3) % 11);
    const size_t bytes = count * sizeof(float);
    b.views[0].post(1, fp, in[0].data(), bytes, bytes);
    b.views[2].post(1, fp, in[2].data(), bytes, bytes);
    EXPECT_FALSE(b.views[0].allPosted(1)) << count;  // prefetches rank 1's stale lines
    b.views[1].post(1, fp, in[1].data(), bytes, bytes);
    ASSERT_TRUE(b.views[0].allPosted(1)) << count;
    std::vector<float> out(count, -1);
    b.views[0].combine(1, out.data(), count, DataType::f32, ReduceOp::max);
    for (size_t i = 0; i < count; ++i)
      EXPECT_EQ(out[i], std::max({in[0][i], in[1][i], in[2][i]})) << count << " elements, element " << i;
  }
}

}  // namespace
}  // namespace coll::transport::shm
