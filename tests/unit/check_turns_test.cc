// CheckTurns (transport/shm/check_turns.h): a sweep grants at most its budget of costly checks,
// every selected item gets one within ceil(selected / budget) sweeps, and an item that is not
// selected is neither visited nor granted.

#include <gtest/gtest.h>

#include <vector>

#include "transport/shm/check_turns.h"

namespace coll::transport::shm {
namespace {

// Runs one sweep over n items; returns the granted ones in visiting order.
std::vector<size_t> sweepOnce(CheckTurns& turns, size_t n, bool checking, const std::vector<bool>& selected,
                              std::vector<size_t>* visited = nullptr) {
  std::vector<size_t> granted;
  Status st = turns.sweep(n, checking, [&](size_t i) { return selected[i]; }, [&](size_t i, bool grant) {
    if (visited) visited->push_back(i);
    if (grant) granted.push_back(i);
    return Status::ok();
  });
  EXPECT_TRUE(st.isOk());
  return granted;
}

TEST(CheckTurns, EachSweepGrantsItsBudgetWhereTheLastOneStopped) {
  CheckTurns turns(16);
  const std::vector<bool> all(40, true);
  std::vector<size_t> visited;
  std::vector<size_t> first = sweepOnce(turns, 40, true, all, &visited);
  EXPECT_EQ(visited.size(), 40u);  // every selected item is visited: its flags are loads
  ASSERT_EQ(first.size(), 16u);
  EXPECT_EQ(first.front(), 0u);
  EXPECT_EQ(first.back(), 15u);
  std::vector<size_t> second = sweepOnce(turns, 40, true, all);
  ASSERT_EQ(second.size(), 16u);
  EXPECT_EQ(second.front(), 16u);
  std::vector<size_t> third = sweepOnce(turns, 40, true, all);
  ASSERT_EQ(third.size(), 16u);
  EXPECT_EQ(third.front(), 32u);
  EXPECT_EQ(third.back(), 7u);  // wrapped round
}

TEST(CheckTurns, EverySelectedItemIsCheckedWithinItsShareOfSweeps) {
  for (size_t n : {1u, 5u, 17u, 255u}) {
    CheckTurns turns(4);
    std::vector<bool> selected(n);
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) count += (selected[i] = i % 3 != 1);
    std::vector<int> checks(n, 0);
    const size_t sweeps = (count + 3) / 4;
    for (size_t s = 0; s < sweeps; ++s)
      for (size_t i : sweepOnce(turns, n, true, selected)) ++checks[i];
    for (size_t i = 0; i < n; ++i) {
      if (selected[i]) EXPECT_GE(checks[i], 1) << "item " << i << " of " << n;
      else EXPECT_EQ(checks[i], 0) << "item " << i << " of " << n;
    }
  }
}

TEST(CheckTurns, ASweepThatIsNotCheckingGrantsNothingAndKeepsTheTurn) {
  CheckTurns turns(2);
  const std::vector<bool> all(6, true);
  EXPECT_EQ(sweepOnce(turns, 6, true, all), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(sweepOnce(turns, 6, false, all).empty());
  EXPECT_EQ(sweepOnce(turns, 6, true, all), (std::vector<size_t>{2, 3}));
}

TEST(CheckTurns, TheFirstErrorEndsTheSweep) {
  CheckTurns turns(8);
  int visits = 0;
  Status st = turns.sweep(10, true, [](size_t) { return true; }, [&](size_t i, bool) {
    ++visits;
    return i == 3 ? Status(ErrorCode::PeerLost, "peer 3 died") : Status::ok();
  });
  EXPECT_FALSE(st.isOk());
  EXPECT_EQ(visits, 4);
}

}  // namespace
}  // namespace coll::transport::shm
