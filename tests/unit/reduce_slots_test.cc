// ReduceSlots (algorithms/reduce_slots.h): the scratch slots of reducing receives rotate, and
// each reuse waits for the slot's previous user, whatever other steps lie between them.

#include <gtest/gtest.h>

#include <algorithm>

#include "algorithms/reduce_slots.h"

namespace coll::algo {
namespace {

Step recvReduceOf(size_t offset) { return {StepKind::recvReduce, BufferId::output, 1, offset, 100, 0, 0}; }

TEST(ReduceSlots, SlotsRotateAndAReuseWaitsForThePreviousUser) {
  ScheduleBuilder b("test", 8);
  ReduceSlots slots(3, 100);
  std::vector<uint32_t> added;
  for (size_t i = 0; i < 5; ++i) {
    b.add({StepKind::send, BufferId::output, 1, 1000 + i, 1, 0, 0}, {7}, {});  // steps between them
    added.push_back(slots.add(b, recvReduceOf(i * 100), i));
  }
  Schedule s = b.finish();
  const size_t expected_offsets[] = {0, 100, 200, 0, 100};
  for (size_t i = 0; i < 5; ++i) {
    const Step& step = s.steps[added[i]];
    EXPECT_EQ(step.scratch_offset, expected_offsets[i]) << "receive " << i;
    const bool waits = std::find(step.deps.begin(), step.deps.end(), i >= 3 ? added[i - 3] : ~0u) != step.deps.end();
    EXPECT_EQ(waits, i >= 3) << "receive " << i << " and the slot's previous user";
  }
  EXPECT_EQ(slots.bytes(), 300u);
  EXPECT_EQ(slots.reserved(), 300u);
}

TEST(ReduceSlots, ScratchIsWhatTheSlotsInUseTake) {
  ScheduleBuilder b("test", 2);
  ReduceSlots slots(8, 64);
  EXPECT_EQ(slots.bytes(), 0u);
  slots.add(b, recvReduceOf(0), 0);
  slots.add(b, recvReduceOf(100), 1);
  EXPECT_EQ(slots.bytes(), 128u);
  EXPECT_EQ(slots.reserved(), 512u);
}

TEST(ReduceSlots, StepsTheCallerAddsItselfTakeTheSameTurns) {
  ScheduleBuilder b("test", 0);
  ReduceSlots slots(1, 10);
  Step first = slots.next(recvReduceOf(0));
  slots.used(b.add(std::move(first), std::initializer_list<size_t>{}, std::initializer_list<size_t>{}));
  Step second = slots.next(recvReduceOf(0));
  EXPECT_EQ(second.scratch_offset, 0u);
  ASSERT_EQ(second.deps.size(), 1u);
  EXPECT_EQ(second.deps[0], 0u);
}

TEST(ReduceSlots, LargeSlicesTakeTwoSlotsWhateverTheDepth) {
  EXPECT_EQ(reduceSlotCount(8, 512 << 10), 8u);   // the configured slice: the depth
  EXPECT_EQ(reduceSlotCount(8, kLargeSlotBytes), 8u);
  EXPECT_EQ(reduceSlotCount(8, kLargeSlotBytes + 1), 2u);
  EXPECT_EQ(reduceSlotCount(8, 4 << 20), 2u);     // the largest network slice
  EXPECT_EQ(reduceSlotCount(1, 4 << 20), 1u);     // a smaller depth stays
  EXPECT_EQ(reduceSlotCount(0, 64), 1u);          // always one
  ReduceSlots slots(8, 4 << 20);
  EXPECT_EQ(slots.reserved(), size_t{8} << 20);
}

}  // namespace
}  // namespace coll::algo
