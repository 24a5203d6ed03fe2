// collMemAlloc's memory (transport/shm/shared_memory.h) and a peer's view of it
// (transport/shm/peer_regions.h): finding a message's region, and mapping it through
// /proc/<pid>/fd, here of this process and of a forked child that allocates after the fork.
#include "transport/shm/shared_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "coll/coll.h"
#include "coll/communicator.h"
#include "coll/error.h"
#include "transport/shm/peer_regions.h"

namespace coll::transport::shm {
namespace {

SharedMemory& memory() { return SharedMemory::process(); }

TEST(SharedMemory, FindsMessagesInsideARegionOnly) {
  void* p = nullptr;
  ASSERT_TRUE(memory().allocate(10000, &p).isOk());
  auto* bytes = static_cast<uint8_t*>(p);
  for (int i = 0; i < 10000; ++i) EXPECT_EQ(bytes[i], 0) << "byte " << i << " not zeroed";
  SharedMemory::Location at;
  ASSERT_TRUE(memory().find(bytes + 100, 5000, &at));
  EXPECT_EQ(at.offset, 100u);
  EXPECT_GE(at.fd, 0);
  EXPECT_GT(at.id, 0u);
  EXPECT_TRUE(memory().find(bytes, 12288, &at)) << "the region is whole pages";
  EXPECT_FALSE(memory().find(bytes + 100, 12288, &at)) << "runs past the region's end";
  EXPECT_FALSE(memory().find(bytes - 1, 2, &at)) << "starts before the region";
  int on_stack = 0;
  EXPECT_FALSE(memory().find(&on_stack, sizeof on_stack, &at));
  ASSERT_TRUE(memory().release(p).isOk());
  EXPECT_FALSE(memory().find(bytes + 100, 10, &at)) << "a freed region is no more";
}

TEST(SharedMemory, RefusesWhatItDidNotAllocate) {
  void* p = nullptr;
  ASSERT_TRUE(memory().allocate(0, &p).isOk()) << "0 bytes gives a page, as malloc(0) gives a pointer";
  Status st = memory().release(static_cast<uint8_t*>(p) + 8);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("collMemFree"), std::string::npos) << st.message();
  EXPECT_TRUE(memory().release(p).isOk());
  EXPECT_EQ(memory().release(p).code(), ErrorCode::InvalidArgument) << "freed twice";
  EXPECT_TRUE(memory().release(nullptr).isOk());
  EXPECT_EQ(memory().allocate(16, nullptr).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(memory().allocate(SIZE_MAX, &p).code(), ErrorCode::InvalidArgument);
}

TEST(SharedMemory, CAndCppEntryPoints) {
  void* p = nullptr;
  ASSERT_EQ(collMemAlloc(&p, 4096), collSuccess);
  EXPECT_EQ(collMemFree(static_cast<char*>(p) + 1), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError()).find("collMemFree"), std::string::npos) << collGetLastError();
  EXPECT_EQ(collMemFree(p), collSuccess);
  void* q = memAlloc(100);
  EXPECT_THROW(memFree(static_cast<char*>(q) + 4096), Error);
  memFree(q);
}

TEST(PeerRegions, MapsARegionByIdAndChecksItsBounds) {
  void* p = nullptr;
  ASSERT_TRUE(memory().allocate(3 * 4096, &p).isOk());
  std::memcpy(static_cast<char*>(p) + 5000, "region", 7);
  SharedMemory::Location at;
  ASSERT_TRUE(memory().find(static_cast<char*>(p) + 5000, 7, &at));
  PeerRegions peer(::getpid(), 1);
  const uint8_t* seen = nullptr;
  ASSERT_TRUE(peer.find(at.fd, at.id, at.offset, 7, &seen).isOk());
  EXPECT_STREQ(reinterpret_cast<const char*>(seen), "region");
  Status past = peer.find(at.fd, at.id, 3 * 4096 - 2, 7, &seen);
  EXPECT_EQ(past.code(), ErrorCode::Transport);
  EXPECT_NE(past.message().find("peer 1"), std::string::npos) << past.message();
  Status wrong = peer.find(at.fd, at.id + 1000, 0, 7, &seen);
  EXPECT_EQ(wrong.code(), ErrorCode::Transport) << "another id at that fd is another region";
  EXPECT_NE(wrong.message().find("not its collMemAlloc region"), std::string::npos) << wrong.message();
  ASSERT_TRUE(memory().release(p).isOk());
}

// A region freed and another allocated at the same fd number: the peer maps the new one.
TEST(PeerRegions, ARegionAtAReusedFdIsMappedAfresh) {
  PeerRegions peer(::getpid(), 1);
  for (int round = 0; round < 3; ++round) {
    void* p = nullptr;
    ASSERT_TRUE(memory().allocate(4096, &p).isOk());
    static_cast<uint8_t*>(p)[0] = static_cast<uint8_t>(round + 1);
    SharedMemory::Location at;
    ASSERT_TRUE(memory().find(p, 1, &at));
    const uint8_t* seen = nullptr;
    ASSERT_TRUE(peer.find(at.fd, at.id, 0, 1, &seen).isOk());
    EXPECT_EQ(seen[0], round + 1) << "round " << round << ": a stale mapping";
    ASSERT_TRUE(memory().release(p).isOk());
  }
}

// The real case: another process's region, written after we mapped it.
TEST(PeerRegions, ReadsAnotherProcesssRegion) {
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  pid_t child = ::fork();
  if (child == 0) {
    void* p = nullptr;
    if (!memory().allocate(1 << 20, &p).isOk()) ::_exit(2);
    SharedMemory::Location at;
    if (!memory().find(p, 1 << 20, &at)) ::_exit(3);
    if (::write(to_parent[1], &at, sizeof at) != sizeof at) ::_exit(4);
    char go;
    if (::read(to_child[0], &go, 1) != 1) ::_exit(5);
    std::memset(p, 0x5a, 1 << 20);
    if (::write(to_parent[1], &go, 1) != 1) ::_exit(6);
    if (::read(to_child[0], &go, 1) != 1) ::_exit(7);  // until the parent has read
    ::_exit(0);
  }
  SharedMemory::Location at;
  ASSERT_EQ(::read(to_parent[0], &at, sizeof at), static_cast<ssize_t>(sizeof at));
  PeerRegions peer(child, 1);
  const uint8_t* seen = nullptr;
  Status st = peer.find(at.fd, at.id, 0, 1 << 20, &seen);
  char go = 1;
  ASSERT_EQ(::write(to_child[1], &go, 1), 1);
  ASSERT_EQ(::read(to_parent[0], &go, 1), 1);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(seen[0], 0x5a);
  EXPECT_EQ(seen[(1 << 20) - 1], 0x5a);
  ASSERT_EQ(::write(to_child[1], &go, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace
}  // namespace coll::transport::shm
