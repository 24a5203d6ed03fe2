// SlotCopyPolicy (transport/shm/slot_copy_policy.h) without processes: which way a sender copies
// large payloads into its slots, from the times it measured.
#include "transport/shm/slot_copy_policy.h"

#include <gtest/gtest.h>

namespace coll::transport::shm {
namespace {

using std::chrono::nanoseconds;
constexpr size_t kMessage = 512 << 10;

// Sends one timeable message: whether it streamed; a timed one took ns_per_byte of its method.
bool send(SlotCopyPolicy& p, double cached_ns_per_byte, double streamed_ns_per_byte) {
  bool timed = false;
  const bool streamed = p.streams(kMessage, true, &timed);
  const double per_byte = streamed ? streamed_ns_per_byte : cached_ns_per_byte;
  if (timed) p.record(streamed, kMessage, nanoseconds(static_cast<int64_t>(per_byte * kMessage)));
  return streamed;
}

// How many of the next n messages streamed.
int streamedOf(SlotCopyPolicy& p, int n, double cached, double streamed) {
  int count = 0;
  for (int i = 0; i < n; ++i) count += send(p, cached, streamed) ? 1 : 0;
  return count;
}

TEST(SlotCopyPolicy, SmallMessagesAndForwardsAreNeverTimed) {
  SlotCopyPolicy p;
  bool timed = true;
  EXPECT_FALSE(p.streams(SlotCopyPolicy::kMinBytes - 1, true, &timed));
  EXPECT_FALSE(timed);
  EXPECT_FALSE(p.streams(kMessage, false, &timed));  // a forward: its time is its receive's
  EXPECT_FALSE(timed);
}

TEST(SlotCopyPolicy, StreamsWhereTheCoresShareNoCache) {
  SlotCopyPolicy p;
  streamedOf(p, 20, 0.2, 0.1);  // learns both
  EXPECT_EQ(streamedOf(p, 100, 0.2, 0.1), 100);
}

TEST(SlotCopyPolicy, KeepsTheCacheWhereItIsFasterOrTheMethodsTie) {
  SlotCopyPolicy fast;
  streamedOf(fast, 20, 0.05, 0.07);
  EXPECT_EQ(streamedOf(fast, 100, 0.05, 0.07), 0);
  SlotCopyPolicy tie;  // streaming 5% faster is within the margin
  streamedOf(tie, 20, 0.10, 0.095);
  EXPECT_EQ(streamedOf(tie, 100, 0.10, 0.095), 0);
}

TEST(SlotCopyPolicy, ExploresTheOtherWayAndFollowsAMove) {
  SlotCopyPolicy p;
  streamedOf(p, 20, 0.05, 0.07);
  // Every kExploreEvery messages a run of kExploreRun streams, which finds the cores moved apart.
  const int window = static_cast<int>(SlotCopyPolicy::kExploreEvery) + SlotCopyPolicy::kExploreRun;
  EXPECT_EQ(streamedOf(p, window, 0.05, 0.07), SlotCopyPolicy::kExploreRun);
  streamedOf(p, window, 0.20, 0.10);  // moved: the next exploration measures streaming faster
  EXPECT_EQ(streamedOf(p, 50, 0.20, 0.10), 50);
}

TEST(SlotCopyPolicy, OneSlowMessageDoesNotFlipTheChoice) {
  SlotCopyPolicy p;
  streamedOf(p, 20, 0.05, 0.07);
  bool timed = false;
  ASSERT_FALSE(p.streams(kMessage, true, &timed));
  if (timed) p.record(false, kMessage, nanoseconds(static_cast<int64_t>(1.5 * kMessage)));  // held between ops
  EXPECT_EQ(streamedOf(p, 50, 0.05, 0.07), 0);
}

}  // namespace
}  // namespace coll::transport::shm
