// The op trace (COLL_TRACE_FILE): the file's name, a valid Chrome trace with every recorded op,
// its queue wait and its run on the right rows, and a clear error where it cannot be written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "comm/op_trace.h"
#include "base/json.h"

namespace coll {
namespace {

using std::chrono::microseconds;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string tempPrefix(const char* name) {
  return ::testing::TempDir() + "coll-op-trace-" + name + "-" + std::to_string(::getpid());
}

TEST(OpTrace, DisabledWithoutAPathAndWritesNothing) {
  OpTrace trace("", "world", 0, 2);
  EXPECT_FALSE(trace.enabled());
  trace.record({"allreduce", "ring", 1, 8, {}, {}, {}, true});
  EXPECT_TRUE(trace.write().isOk());
}

TEST(OpTrace, FileNameTakesRankAndPidOrGetsThemAppended) {
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(OpTrace("/tmp/t-%r-%p.json", "world", 3, 4).path(), "/tmp/t-3-" + pid + ".json");
  const std::string a = OpTrace("/tmp/t", "world", 1, 4).path(), b = OpTrace("/tmp/t", "torch", 1, 4).path();
  const std::string c = OpTrace("/tmp/t-%r-%c.json", "world", 1, 4).path();
  EXPECT_EQ(c.rfind("/tmp/t-1-", 0), 0u) << c;
  EXPECT_NE(c, OpTrace("/tmp/t-%r-%c.json", "world", 1, 4).path()) << "%c tells communicators apart";
  EXPECT_EQ(a.rfind("/tmp/t." + pid + ".c", 0), 0u) << a;
  EXPECT_NE(a, b) << "two communicators of one process, same rank, must not share a file";
  EXPECT_EQ(a.substr(a.size() - 8), ".r1.json");
}

TEST(OpTrace, WritesEveryOpWithItsQueueWaitAndRun) {
  OpTrace trace(tempPrefix("ops") + "-%r.json", "torch", 2, 3);
  const std::string path = trace.path();
  const auto t0 = OpTrace::Clock::now();
  trace.record({"allreduce", "hierarchical", 7, 16 << 20, t0, t0 + microseconds(250), t0 + microseconds(1250), true});
  trace.record({"broadcast", "", 8, 3, t0 + microseconds(2000), t0 + microseconds(2000), t0 + microseconds(2010),
                false});
  ASSERT_TRUE(trace.write().isOk());
  Json j;
  ASSERT_TRUE(Json::parse(slurp(path), &j).isOk()) << slurp(path);
  EXPECT_EQ(j["otherData"]["rank"].number(), 2);
  EXPECT_EQ(j["otherData"]["communicator"].string(), "torch");
  EXPECT_EQ(j["otherData"]["pid"].number(), ::getpid());
  int runs = 0, waits = 0;
  for (const Json& e : j["traceEvents"].items()) {
    if (e["ph"].string() != "X") continue;
    EXPECT_EQ(e["pid"].number(), 2);
    if (e["tid"].number() == 2) {
      ++waits;
      EXPECT_NEAR(e["dur"].number(), 250, 1);
      continue;
    }
    ++runs;
    const Json& a = e["args"];
    if (a["sequence"].number() == 7) {
      EXPECT_EQ(e["name"].string(), "allreduce (hierarchical) 16 MiB");
      EXPECT_NEAR(e["dur"].number(), 1000, 1);
      EXPECT_NEAR(a["queued_us"].number(), 250, 1);
      EXPECT_EQ(a["bytes"].number(), 16 << 20);
      EXPECT_TRUE(a["ok"].boolean());
    } else {
      EXPECT_EQ(a["op"].string(), "broadcast");
      EXPECT_FALSE(a["ok"].boolean(true));
    }
  }
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(waits, 1) << "an op that never waited has no queue bar";
  std::remove(path.c_str());
}

TEST(OpTrace, AnUnwritablePathIsNamed) {
  OpTrace trace("/nonexistent-dir/t.json", "world", 0, 1);
  Status st = trace.write();
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("COLL_TRACE_FILE: cannot write /nonexistent-dir/t.json"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace coll
