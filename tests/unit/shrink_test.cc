// planShrink: the survivors' new positions and namespace (src/comm/shrink.h).
#include <gtest/gtest.h>

#include "comm/shrink.h"

namespace coll {
namespace {

CommOptions parent() {
  CommOptions o;
  o.name = "world";
  o.store_address = "10.0.0.1:29500";
  o.host_store = true;
  o.secret = "s";
  o.local_rank = 3;
  return o;
}

TEST(Shrink, RenumbersSurvivorsDenselyInOldOrder) {
  const int expected[] = {0, 1, -1, 2, -1, 3};  // old ranks 2 and 4 excluded
  for (int rank : {0, 1, 3, 5}) {
    CommOptions plan;
    ASSERT_TRUE(planShrink(parent(), rank, 6, {4, 2}, 1, &plan));
    EXPECT_EQ(plan.rank, expected[rank]) << "old rank " << rank;
    EXPECT_EQ(plan.size, 4);
    EXPECT_EQ(plan.name, "world/shrink1-x2,4") << "the same on every survivor, whatever the list's order";
    EXPECT_FALSE(plan.host_store) << "the store keeps running where it runs";
    EXPECT_EQ(plan.local_rank, -1);
    EXPECT_EQ(plan.store_address, "10.0.0.1:29500");
    EXPECT_EQ(plan.secret, "s");
  }
}

TEST(Shrink, EachGenerationGetsItsOwnNamespace) {
  CommOptions first, second;
  ASSERT_TRUE(planShrink(parent(), 0, 4, {3}, 1, &first));
  ASSERT_TRUE(planShrink(parent(), 0, 4, {3}, 2, &second));
  EXPECT_NE(first.name, second.name);
}

TEST(Shrink, RefusesBadExclusions) {
  CommOptions plan;
  for (const std::vector<int>& bad : {std::vector<int>{4}, {-1}, {1, 1}, {0}, {3, 0}}) {
    Status st = planShrink(parent(), 0, 4, bad, 1, &plan);
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.message();
    EXPECT_NE(st.message().find("shrink"), std::string::npos);
  }
  EXPECT_TRUE(planShrink(parent(), 0, 4, {}, 1, &plan)) << "excluding nobody makes a copy";
  EXPECT_EQ(plan.size, 4);
  EXPECT_TRUE(planShrink(parent(), 0, 4, {1, 2, 3}, 1, &plan)) << "a survivor alone";
  EXPECT_EQ(plan.size, 1);
}

}  // namespace
}  // namespace coll
