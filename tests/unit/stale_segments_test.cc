// Reclaiming segments that dead ranks left (src/transport/shm/stale_segments.h), in a
// directory of the test's own standing in for /dev/shm: a segment nobody holds the owner's lock
// on goes, one whose lock is held stays; an older layout's goes when no process has its
// owner's PID; one without the magic yet and other files stay.
#include "transport/shm/stale_segments.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/fd_io.h"
#include "transport/shm/layout.h"

namespace coll::transport::shm {
namespace {

namespace fs = std::filesystem;

void writeSegment(const fs::path& path, uint64_t magic, pid_t pid, uint32_t version = kLayoutVersion) {
  SegmentHeader h;
  h.magic = magic;
  h.version = version;
  h.owner_rank = 3;
  h.owner_pid = pid;
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

TEST(StaleSegments, OnlyDeadOwnersSegmentsAreRemoved) {
  fs::path dir = fs::temp_directory_path() / ("coll-stale-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  writeSegment(dir / "coll-dead", kSegmentMagic, ::getpid());  // the lock is free: its owner died
  writeSegment(dir / "coll-live", kSegmentMagic, deadPid());    // the lock is held (below): alive
  UniqueFd held(::open((dir / "coll-live").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::flock(held.get(), LOCK_SH), 0);
  writeSegment(dir / "coll-old-dead", kSegmentMagic, deadPid(), 4);  // an older layout: by PID
  writeSegment(dir / "coll-old-live", kSegmentMagic, ::getpid(), 4);
  writeSegment(dir / "coll-unwritten", 0, deadPid());           // its owner was still writing
  writeSegment(dir / "other-dead", kSegmentMagic, deadPid());   // not a coll name
  Reclaimed r = reclaimStaleSegments(dir.string());
  EXPECT_EQ(r.segments, 2);
  EXPECT_GT(r.bytes, 8192u);
  EXPECT_FALSE(fs::exists(dir / "coll-dead"));
  EXPECT_FALSE(fs::exists(dir / "coll-old-dead"));
  EXPECT_TRUE(fs::exists(dir / "coll-old-live"));
  EXPECT_TRUE(fs::exists(dir / "coll-live"));
  EXPECT_TRUE(fs::exists(dir / "coll-unwritten"));
  EXPECT_TRUE(fs::exists(dir / "other-dead"));
  EXPECT_EQ(reclaimStaleSegments(dir.string()).segments, 0) << "nothing left to remove";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coll::transport::shm
