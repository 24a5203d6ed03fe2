// TimedChoice and TimedChoices (transport/shm/timed_choice.h) without processes, under the
// rules a shm sender uses to choose between CMA and its slots: each way measured 3 times first,
// the faster one kept, the other tried 3 times every 64 uses.
#include "transport/shm/timed_choice.h"

#include <gtest/gtest.h>

namespace coll::transport::shm {
namespace {

using std::chrono::nanoseconds;
constexpr size_t kMessage = 32 << 20;
constexpr TimedChoice::Rules kRules{1.0, 64, 3, 0, 3};

// One use: whether it took the second way; a timed one took ns_per_byte of its way.
bool use(TimedChoice& c, double first_ns_per_byte, double second_ns_per_byte) {
  bool timed = false;
  const bool second = c.pick(true, &timed);
  const double per_byte = second ? second_ns_per_byte : first_ns_per_byte;
  if (timed) c.record(second, kMessage, nanoseconds(static_cast<int64_t>(per_byte * kMessage)));
  return second;
}

int secondOf(TimedChoice& c, int n, double first, double second) {
  int count = 0;
  for (int i = 0; i < n; ++i) count += use(c, first, second) ? 1 : 0;
  return count;
}

TEST(TimedChoice, MeasuresEachWayItsFirstSamplesThenKeepsTheFaster) {
  TimedChoice c(kRules);
  EXPECT_EQ(secondOf(c, 3, 0.10, 0.05), 0);  // the first way, 3 times
  EXPECT_EQ(secondOf(c, 3, 0.10, 0.05), 3);  // the second, 3 times
  EXPECT_EQ(secondOf(c, 50, 0.10, 0.05), 50);
  TimedChoice slow(kRules);
  secondOf(slow, 6, 0.05, 0.10);
  EXPECT_EQ(secondOf(slow, 50, 0.05, 0.10), 0);
}

TEST(TimedChoice, AnUntimeableUseKeepsTheWayAndIsNotTimed) {
  TimedChoice c(kRules);
  secondOf(c, 6, 0.10, 0.05);
  bool timed = true;
  EXPECT_TRUE(c.pick(false, &timed));
  EXPECT_FALSE(timed);
}

TEST(TimedChoice, ExploresEveryRunAndFollowsAMove) {
  TimedChoice c(kRules);
  secondOf(c, 6, 0.10, 0.05);
  const int window = static_cast<int>(kRules.explore_every) + kRules.explore_run;
  EXPECT_EQ(secondOf(c, window, 0.10, 0.05), window - kRules.explore_run);
  // The processes moved: the first way is now faster, and the next exploration finds it.
  secondOf(c, window, 0.04, 0.08);
  EXPECT_EQ(secondOf(c, 40, 0.04, 0.08), 0);
}

TEST(TimedChoice, OneSlowUseDoesNotFlipTheChoice) {
  TimedChoice c(kRules);
  secondOf(c, 6, 0.10, 0.05);
  bool timed = false;
  ASSERT_TRUE(c.pick(true, &timed));
  ASSERT_TRUE(timed);
  c.record(true, kMessage, nanoseconds(static_cast<int64_t>(3.0 * kMessage)));  // held between ops
  EXPECT_EQ(secondOf(c, 40, 0.10, 0.05), 40);
}

TEST(TimedChoice, SettlingLeavesTheUsesAfterASwitchUntimed) {
  TimedChoice c(TimedChoice::Rules{1.0, 64, 4, 2, 1});
  bool timed = true;
  EXPECT_FALSE(c.pick(true, &timed));  // the first way, settling
  EXPECT_FALSE(timed);
  EXPECT_FALSE(c.pick(true, &timed));
  EXPECT_FALSE(timed);
  EXPECT_FALSE(c.pick(true, &timed));
  EXPECT_TRUE(timed);
  c.record(false, kMessage, nanoseconds(kMessage));
  EXPECT_TRUE(c.pick(true, &timed));  // switched: settling again
  EXPECT_FALSE(timed);
}

TEST(TimedChoice, ZeroBytesAreNotASample) {
  TimedChoice c(kRules);
  c.record(false, 0, nanoseconds(1000));
  bool timed = false;
  EXPECT_FALSE(c.pick(true, &timed));  // still measuring the first way
}

// The motivating case (netcluster 2 x 2, a 256 MiB broadcast's root): its out-of-place ops,
// which also copy, ran by CMA at 0.63 ns a byte and through the slots at 0.85; then its
// in-place ops, 0.45 and 0.60. One choice for both kept the in-place ops in the slots, whose
// fresh samples beat CMA's stale ones; a choice per kind measures the in-place ops' own ways.
TEST(TimedChoices, EachKindOfOpChoosesByItsOwnTimes) {
  TimedChoices ways(kRules);
  constexpr uint64_t kOutOfPlace = 11, kInPlace = 12;
  secondOf(ways.of(kOutOfPlace), 6, 0.85, 0.63);
  EXPECT_EQ(secondOf(ways.of(kOutOfPlace), 20, 0.85, 0.63), 20);
  EXPECT_EQ(secondOf(ways.of(kInPlace), 3, 0.60, 0.45), 0);  // its own first samples, from the start
  EXPECT_EQ(secondOf(ways.of(kInPlace), 3, 0.60, 0.45), 3);
  EXPECT_EQ(secondOf(ways.of(kInPlace), 40, 0.60, 0.45), 40);
}

TEST(TimedChoices, KindsInterleavedKeepTheirOwnWays) {
  TimedChoices ways(kRules);
  int a_second = 0, b_second = 0;
  for (int i = 0; i < 60; ++i) {
    a_second += use(ways.of(1), 0.05, 0.10) ? 1 : 0;  // the first way faster
    b_second += use(ways.of(2), 0.10, 0.05) ? 1 : 0;  // the second faster
  }
  EXPECT_EQ(a_second, 3);   // only its first samples of the second way
  EXPECT_EQ(b_second, 57);  // all but its first samples of the first way
}

TEST(TimedChoices, TheLeastRecentlyUsedKindMakesRoomAndStartsOverWhenSeenAgain) {
  TimedChoices ways(kRules);
  for (uint64_t kind = 0; kind < TimedChoices::kKinds; ++kind) secondOf(ways.of(kind), 10, 0.10, 0.05);
  EXPECT_EQ(secondOf(ways.of(0), 5, 0.10, 0.05), 5);  // kind 0 kept, and now the most recent
  secondOf(ways.of(100), 10, 0.10, 0.05);              // a ninth kind drops kind 1
  EXPECT_EQ(secondOf(ways.of(0), 5, 0.10, 0.05), 5);
  EXPECT_EQ(secondOf(ways.of(1), 3, 0.10, 0.05), 0);  // measured again from the start
}

}  // namespace
}  // namespace coll::transport::shm
