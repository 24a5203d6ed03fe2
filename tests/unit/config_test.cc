// Config::fromEnvironment: every malformed COLL_* value is named with its variable, its value and
// what is allowed, and keeps its default (creating a communicator then fails with the list).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/config.h"

namespace coll {
namespace {

struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

bool mentions(const Config& c, const std::string& text) {
  for (const std::string& p : c.problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

TEST(Config, GoodValuesLeaveNoProblems) {
  ScopedEnv a("COLL_SOCKET_NSTREAMS", "3"), b("COLL_SLICE_BYTES", "64K"), c("COLL_TIMEOUT", "2.5");
  Config config = Config::fromEnvironment();
  EXPECT_TRUE(config.problems.empty());
  EXPECT_EQ(config.socket_nstreams, 3);
  EXPECT_EQ(config.slice_bytes, 64u << 10);
  EXPECT_FALSE(config.slice_bytes_auto);  // set by hand: every op takes it as it is
  EXPECT_EQ(config.timeout.count(), 2500);
}

TEST(Config, SlicesGrowOnlyWhenLeftToTheDefault) {
  Config defaults = Config::fromEnvironment();
  EXPECT_TRUE(defaults.slice_bytes_auto);
  ScopedEnv a("COLL_SOCKET_WAKE_BYTES", "0");
  EXPECT_EQ(Config::fromEnvironment().socket_wake_bytes, 0u);
  ScopedEnv b("COLL_SOCKET_WAKE_BYTES", "3M");
  EXPECT_EQ(Config::fromEnvironment().socket_wake_bytes, 3u << 20);
}

TEST(Config, SocketRelaysAreOnUnlessTurnedOff) {
  EXPECT_TRUE(Config::fromEnvironment().socket_relay);
  ScopedEnv off("COLL_SOCKET_RELAY", "0");
  EXPECT_FALSE(Config::fromEnvironment().socket_relay);
  ScopedEnv bad("COLL_SOCKET_RELAY", "yes");
  Config config = Config::fromEnvironment();
  EXPECT_TRUE(config.socket_relay);
  EXPECT_TRUE(mentions(config, "COLL_SOCKET_RELAY=yes: expected an integer from 0 to 1"));
}

TEST(Config, EveryBadValueIsNamedWithWhatIsAllowed) {
  ScopedEnv a("COLL_SOCKET_NSTREAMS", "0"), b("COLL_SLICE_BYTES", "12"), c("COLL_TIMEOUT", "-1"),
      d("COLL_CHECK", "2"), e("COLL_SHM_SLOT_BYTES", "lots"), f("COLL_PIPELINE_DEPTH", "");
  Config config = Config::fromEnvironment();
  EXPECT_EQ(config.problems.size(), 5u);  // the empty one counts as unset
  EXPECT_TRUE(mentions(config, "COLL_SOCKET_NSTREAMS=0: expected an integer from 1 to 64"));
  EXPECT_TRUE(mentions(config, "COLL_SLICE_BYTES=12: expected a byte count"));
  EXPECT_TRUE(mentions(config, "COLL_TIMEOUT=-1: expected seconds > 0"));
  EXPECT_TRUE(mentions(config, "COLL_CHECK=2: expected an integer from 0 to 1"));
  EXPECT_TRUE(mentions(config, "COLL_SHM_SLOT_BYTES=lots"));
  EXPECT_EQ(config.socket_nstreams, Config{}.socket_nstreams);  // defaults kept
  EXPECT_EQ(config.check, false);
}

}  // namespace
}  // namespace coll
