// Reclaiming segments that dead ranks left (src/transport/shm/stale_segments.h), in a
// directory of the test's own standing in for /dev/shm: a dead owner's segment goes; a live
// owner's, one whose PID now belongs to a process started at another time, one without the
// magic yet, and other files are judged as they should be.
#include "transport/shm/stale_segments.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "transport/shm/layout.h"

namespace coll::transport::shm {
namespace {

namespace fs = std::filesystem;

void writeSegment(const fs::path& path, uint64_t magic, pid_t pid, uint64_t started) {
  SegmentHeader h;
  h.magic = magic;
  h.version = kLayoutVersion;
  h.owner_rank = 3;
  h.owner_pid = pid;
  h.owner_started = started;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  out << std::string(8192, 'x');
}

pid_t deadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

TEST(StaleSegments, ProcessStartTimeIsReadForLiveProcessesOnly) {
  EXPECT_GT(processStartTicks(::getpid()), 0u);
  EXPECT_EQ(processStartTicks(deadPid()), 0u);
}

TEST(StaleSegments, OnlyDeadOwnersSegmentsAreRemoved) {
  fs::path dir = fs::temp_directory_path() / ("coll-stale-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const uint64_t me = processStartTicks(::getpid());
  writeSegment(dir / "coll-dead", kSegmentMagic, deadPid(), 12345);
  writeSegment(dir / "coll-reused", kSegmentMagic, ::getpid(), me + 1);  // this PID, another start
  writeSegment(dir / "coll-live", kSegmentMagic, ::getpid(), me);
  writeSegment(dir / "coll-unwritten", 0, deadPid(), 0);                 // its owner was still writing
  writeSegment(dir / "other-dead", kSegmentMagic, deadPid(), 12345);     // not a coll name
  Reclaimed r = reclaimStaleSegments(dir.string());
  EXPECT_EQ(r.segments, 2);
  EXPECT_GT(r.bytes, 8192u);
  EXPECT_FALSE(fs::exists(dir / "coll-dead"));
  EXPECT_FALSE(fs::exists(dir / "coll-reused"));
  EXPECT_TRUE(fs::exists(dir / "coll-live"));
  EXPECT_TRUE(fs::exists(dir / "coll-unwritten"));
  EXPECT_TRUE(fs::exists(dir / "other-dead"));
  EXPECT_EQ(reclaimStaleSegments(dir.string()).segments, 0) << "nothing left to remove";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coll::transport::shm
