// ensureDescriptors: a soft open-file limit below what the job needs is raised (to twice the
// need where the hard limit allows), one above is left alone, and a hard limit below the need
// is reported with the knob to turn. The test lowers its own soft limit and restores it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "base/descriptor_limit.h"

namespace coll {
namespace {

class DescriptorLimit : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0); }
  void TearDown() override { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  void setSoft(rlim_t soft) {
    rlimit l = saved_;
    l.rlim_cur = soft;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &l), 0);
  }
  rlim_t soft() const {
    rlimit l{};
    ::getrlimit(RLIMIT_NOFILE, &l);
    return l.rlim_cur;
  }
  rlimit saved_{};
};

TEST_F(DescriptorLimit, ASoftLimitBelowTheNeedIsRaisedAndSaid) {
  if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < 400) GTEST_SKIP() << "hard limit " << saved_.rlim_max;
  setSoft(128);
  DescriptorBudget b = ensureDescriptors(200);
  EXPECT_TRUE(b.raised);
  EXPECT_FALSE(b.short_of_it);
  EXPECT_EQ(b.soft_before, 128u);
  EXPECT_EQ(b.soft_after, 400u);
  EXPECT_EQ(soft(), 400u);
  const std::string said = describeDescriptors(b, 3, 5000);
  EXPECT_NE(said.find("raised from 128 to 400"), std::string::npos) << said;
}

TEST_F(DescriptorLimit, EnoughIsLeftAlone) {
  setSoft(256);
  DescriptorBudget b = ensureDescriptors(100);
  EXPECT_FALSE(b.raised);
  EXPECT_FALSE(b.short_of_it);
  EXPECT_EQ(soft(), 256u);
  EXPECT_EQ(describeDescriptors(b, 0, 8), "");
}

TEST_F(DescriptorLimit, AHardLimitBelowTheNeedIsNamedWithItsKnob) {
  if (saved_.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "no hard limit";
  DescriptorBudget b = ensureDescriptors(static_cast<uint64_t>(saved_.rlim_max) + 1000);
  EXPECT_TRUE(b.short_of_it);
  EXPECT_EQ(soft(), saved_.rlim_max);  // raised as far as it goes
  const std::string said = describeDescriptors(b, 7, 20000);
  EXPECT_NE(said.find("rank 7"), std::string::npos) << said;
  EXPECT_NE(said.find("ulimit -Hn"), std::string::npos) << said;
  EXPECT_NE(said.find("EMFILE"), std::string::npos) << said;
}

}  // namespace
}  // namespace coll
