// The tag every collective message carries (base/wire_tag.h): two ranks making the same call
// produce the same tag, any field that differs changes it, and the mismatch error names
// both calls and what differs.
#include <gtest/gtest.h>

#include <string>

#include "base/wire_tag.h"
#include "coll/types.h"

namespace coll {
namespace {

WireCall allreduce(DataType type, ReduceOp op, uint64_t count, const char* algorithm = "ring") {
  WireCall c;
  c.kind = OpKind::allreduce;
  c.type = static_cast<int>(type);
  c.op = static_cast<int>(op);
  c.count = count;
  c.algorithm = algorithm;
  return c;
}

WireCall broadcast(uint64_t count, int root) {
  WireCall c;
  c.kind = OpKind::broadcast;
  c.type = static_cast<int>(DataType::f32);
  c.count = count;
  c.root = root;
  c.algorithm = "chain";
  return c;
}

TEST(WireTag, SameCallSameTag) {
  EXPECT_EQ(wireTag(7, allreduce(DataType::f32, ReduceOp::sum, 1000)),
            wireTag(7, allreduce(DataType::f32, ReduceOp::sum, 1000)));
}

TEST(WireTag, EveryFieldChangesTheTag) {
  const uint64_t base = wireTag(7, allreduce(DataType::f32, ReduceOp::sum, 1000));
  EXPECT_NE(base, wireTag(8, allreduce(DataType::f32, ReduceOp::sum, 1000)));
  EXPECT_NE(base, wireTag(7, allreduce(DataType::i32, ReduceOp::sum, 1000)));
  EXPECT_NE(base, wireTag(7, allreduce(DataType::f32, ReduceOp::max, 1000)));
  EXPECT_NE(base, wireTag(7, allreduce(DataType::f32, ReduceOp::sum, 1001)));
  EXPECT_NE(base, wireTag(7, allreduce(DataType::f32, ReduceOp::sum, 1000, "tree")));
  EXPECT_NE(wireTag(3, broadcast(100, 0)), wireTag(3, broadcast(100, 1)));
}

// A 16-bit check cannot tell every pair of counts apart; it must tell apart the neighbours a
// bug or an off-by-one produces.
TEST(WireTag, NeighbouringCountsAndRootsDiffer) {
  for (uint64_t n = 1; n < 5000; ++n)
    ASSERT_NE(wireTag(0, allreduce(DataType::f32, ReduceOp::sum, n)), wireTag(0, allreduce(DataType::f32, ReduceOp::sum, n + 1)))
        << n;
  for (int r = 0; r < 4096; ++r) ASSERT_NE(wireTag(0, broadcast(64, r)), wireTag(0, broadcast(64, r + 1))) << r;
}

TEST(WireTag, EveryTypeAndOpIsTold) {
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int o = 0; o < kNumReduceOps; ++o) {
      const std::string text = describeWireTag(wireTag(1, allreduce(static_cast<DataType>(t), static_cast<ReduceOp>(o), 4)));
      EXPECT_EQ(text, std::string("allreduce(") + toString(static_cast<DataType>(t)) + ", " +
                          toString(static_cast<ReduceOp>(o)) + ") call 1");
    }
}

TEST(WireTag, PointToPointAndInternalTagsCarryNoCall) {
  EXPECT_EQ(wireTag(5, static_cast<uint8_t>(OpKind::send)), (uint64_t{5} << 32) | static_cast<uint64_t>(OpKind::send));
  EXPECT_FALSE(carriesCall(wireTag(5, static_cast<uint8_t>(OpKind::send))));
  EXPECT_FALSE(carriesCall(wireTag(5, static_cast<uint8_t>(OpKind::group))));
  EXPECT_FALSE(carriesCall(wireTag(5, uint8_t{0xC0})));
  EXPECT_TRUE(carriesCall(wireTag(5, allreduce(DataType::f32, ReduceOp::sum, 4))));
  EXPECT_EQ(describeWireTag(wireTag(9, uint8_t{0xC0})), "internal message kind 0xc0 call 9");
}

TEST(WireTag, CallDistanceWraps) {
  const uint64_t late = wireTag(0x1'0000'0002ull, static_cast<uint8_t>(OpKind::barrier));  // 2 after wrapping
  const uint64_t early = wireTag(0xFFFF'FFFEull, static_cast<uint8_t>(OpKind::barrier));
  EXPECT_EQ(callDistance(late, early), 4);
  EXPECT_EQ(callDistance(early, late), -4);
}

TEST(WireTag, MismatchNamesBothCallsAndTheDifference) {
  const uint64_t mine = wireTag(4, allreduce(DataType::f32, ReduceOp::sum, 1 << 20));
  Status st = messageMismatch(1, wireTag(4, allreduce(DataType::i32, ReduceOp::sum, 1 << 20)), 4096, mine, 4096);
  EXPECT_EQ(st.code(), ErrorCode::Mismatch);
  EXPECT_EQ(st.peer(), 1);
  EXPECT_EQ(st.message(), "peer 1 sent a message of allreduce(i32, sum) call 4, 4096 bytes, where this rank's "
                          "allreduce(f32, sum) call 4 expected 4096 bytes: the data types differ");
  st = messageMismatch(2, wireTag(4, allreduce(DataType::f32, ReduceOp::max, 1 << 20)), 4096, mine, 4096);
  EXPECT_NE(st.message().find("the reduction ops differ"), std::string::npos) << st.message();
  st = messageMismatch(2, wireTag(4, allreduce(DataType::f32, ReduceOp::sum, 999)), 4096, mine, 4096);
  EXPECT_NE(st.message().find("the counts, roots or algorithms differ"), std::string::npos) << st.message();
  st = messageMismatch(2, wireTag(4, broadcast(1 << 20, 0)), 4096, mine, 4096);
  EXPECT_NE(st.message().find("the collectives differ"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("data types"), std::string::npos) << "follows from the collective: " << st.message();
  st = messageMismatch(2, wireTag(3, allreduce(DataType::f32, ReduceOp::sum, 1 << 20)), 4096, mine, 4096);
  EXPECT_NE(st.message().find("of an earlier call"), std::string::npos) << st.message();
  st = messageMismatch(2, mine, 8192, mine, 4096);
  EXPECT_NE(st.message().find("the lengths differ"), std::string::npos) << st.message();
  st = unexpectedMessage(3, wireTag(4, broadcast(100, 3)), 400, wireTag(4, broadcast(100, 0)));
  EXPECT_NE(st.message().find("has no receive for: the counts, roots or algorithms differ"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace coll
