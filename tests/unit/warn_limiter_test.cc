// The per-site warning limit (base/warn_limiter.h): a burst, then one line per interval that
// counts what was left out; and COLL_WARN from one site in a loop prints only a handful of lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "base/log.h"
#include "base/warn_limiter.h"

namespace coll {
namespace {

using std::chrono::milliseconds;

TEST(WarnLimiter, BurstThenOneLinePerIntervalCountingTheRest) {
  WarnLimiter limiter;
  auto t = WarnLimiter::Clock::now();
  uint64_t left_out = 99;
  for (uint64_t i = 0; i < WarnLimiter::kBurst; ++i) {
    EXPECT_TRUE(limiter.admit(t, &left_out)) << i;
    EXPECT_EQ(left_out, 0u);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.admit(t + milliseconds(i), &left_out));
  EXPECT_FALSE(limiter.admit(t + WarnLimiter::kInterval - milliseconds(1), &left_out));
  EXPECT_TRUE(limiter.admit(t + WarnLimiter::kInterval, &left_out));
  EXPECT_EQ(left_out, 1001u);
  EXPECT_FALSE(limiter.admit(t + WarnLimiter::kInterval + milliseconds(1), &left_out));
  EXPECT_TRUE(limiter.admit(t + 3 * WarnLimiter::kInterval, &left_out));
  EXPECT_EQ(left_out, 1u);  // only the one dropped since the last printed line
}

TEST(WarnLimiter, TheSummaryNamesTheCount) {
  EXPECT_EQ(withLeftOut("refused", 0), "refused");
  std::string s = withLeftOut("refused", 1234);
  EXPECT_NE(s.find("refused (1234 more like this"), std::string::npos) << s;
}

TEST(WarnLimiter, OneWarnSiteInALoopPrintsABurst) {
  std::fflush(stderr);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 10000; ++i) COLL_WARN("NET", "refused connection attempt %d", i);
  std::string out = testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (char c : out) lines += c == '\n';
  EXPECT_EQ(lines, WarnLimiter::kBurst) << out;
  EXPECT_NE(out.find("attempt 4"), std::string::npos);
  EXPECT_EQ(out.find("attempt 5"), std::string::npos);
}

}  // namespace
}  // namespace coll
