// HugePages (transport/shm/huge_pages.h): which send buffers a peer may read with CMA, and the
// collapsing of reused ones into 2 MiB pages. Uses the process-wide instance, each test on its
// own buffers.
#include "transport/shm/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace coll::transport::shm {
namespace {

constexpr size_t kPage = HugePages::kPageBytes;
constexpr auto kDrainLimit = std::chrono::seconds(10);
constexpr int kPassesBeforeCollapse = static_cast<int>(HugePages::kSentBeforeCollapse / kPage);

// 2 MiB-aligned memory, its pages written (present, 4 KiB each under THP "madvise"). Never
// freed: HugePages remembers addresses, and a later test's buffer at a freed one's address
// would start out known as huge (until the recheck, huge_pages.h).
std::vector<void*>& kept() {
  static std::vector<void*> buffers;
  return buffers;
}

struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes, uint8_t fill) : bytes(bytes) {
    data = static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes));
    kept().push_back(data);
    for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(fill + i * 7);
  }
  bool intact(uint8_t fill) const {
    for (size_t i = 0; i < bytes; ++i)
      if (data[i] != static_cast<uint8_t>(fill + i * 7)) return false;
    return true;
  }
  uint8_t* data;
  size_t bytes;
};

// Whether this kernel collapses on request (Linux 6.1 and later, THP not disabled).
bool kernelCollapses() {
  AlignedBuffer probe(kPage, 1);
#ifndef MADV_COLLAPSE
  constexpr int MADV_COLLAPSE = 25;
#endif
  return ::madvise(probe.data, kPage, MADV_COLLAPSE) == 0;
}

TEST(HugePages, ABufferSentFewerTimesStaysOnTheSlots) {
  AlignedBuffer buf(2 * kPage, 3);
  auto& pages = HugePages::process();
  for (int pass = 0; pass + 1 < kPassesBeforeCollapse; ++pass)
    for (size_t at = 0; at < buf.bytes; at += 512 << 10) EXPECT_FALSE(pages.backs(buf.data + at, 512 << 10));
  ASSERT_TRUE(pages.drain(kDrainLimit));
  EXPECT_FALSE(pages.backs(buf.data + (512 << 10), 512 << 10)) << "too few uses to pay for a collapse";
}

TEST(HugePages, ABufferInReuseIsCollapsedAndKeepsItsBytes) {
  if (!kernelCollapses()) GTEST_SKIP() << "madvise(MADV_COLLAPSE) refused here (Linux 6.1 has it)";
  AlignedBuffer buf(2 * kPage, 5);
  auto& pages = HugePages::process();
  for (int pass = 0; pass < kPassesBeforeCollapse; ++pass)
    for (size_t at = 0; at < buf.bytes; at += 512 << 10) EXPECT_FALSE(pages.backs(buf.data + at, 512 << 10));
  ASSERT_TRUE(pages.drain(kDrainLimit));
  EXPECT_TRUE(pages.backs(buf.data, buf.bytes));
  EXPECT_TRUE(pages.backs(buf.data + kPage - 100, 200)) << "a message across the two pages";
  EXPECT_TRUE(buf.intact(5));
}

TEST(HugePages, AMessageCountsInEveryPageItTouches) {
  if (!kernelCollapses()) GTEST_SKIP() << "madvise(MADV_COLLAPSE) refused here (Linux 6.1 has it)";
  AlignedBuffer buf(2 * kPage, 7);
  auto& pages = HugePages::process();
  // Sends of the whole buffer as one message: both pages reach the count together.
  for (int pass = 0; pass < kPassesBeforeCollapse; ++pass) EXPECT_FALSE(pages.backs(buf.data, buf.bytes));
  ASSERT_TRUE(pages.drain(kDrainLimit));
  EXPECT_TRUE(pages.backs(buf.data + kPage + 4096, 4096));
  EXPECT_TRUE(pages.backs(buf.data, 4096));
}

TEST(HugePages, AnUnalignedHeadPageOutsideTheMappingIsNeverHuge) {
  if (!kernelCollapses()) GTEST_SKIP() << "madvise(MADV_COLLAPSE) refused here (Linux 6.1 has it)";
  // A mapping that starts 4 KiB past a 2 MiB boundary: its first 2 MiB page is not all mapped.
  const size_t bytes = 3 * kPage;
  auto* region = static_cast<uint8_t*>(::mmap(nullptr, bytes + kPage, PROT_READ | PROT_WRITE,
                                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(region, MAP_FAILED);
  uint8_t* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(region) + kPage - 1) & ~(kPage - 1));
  ::munmap(aligned, 4096);  // a hole: the head page can never be whole
  uint8_t* data = aligned + 4096;
  const size_t len = 2 * kPage - 4096;
  std::memset(data, 9, len);
  auto& pages = HugePages::process();
  // One pass more than the count: the head page, 4 KiB short, reaches it too and is tried.
  for (int pass = 0; pass <= kPassesBeforeCollapse; ++pass) pages.backs(data, len);
  ASSERT_TRUE(pages.drain(kDrainLimit));
  EXPECT_FALSE(pages.backs(data, 4096)) << "the head page";
  EXPECT_TRUE(pages.backs(aligned + kPage, 4096)) << "the whole page after it";
}

TEST(HugePages, MemoryTheUserKeptFromHugePagesIsLeftAlone) {
  AlignedBuffer buf(kPage, 11);
  if (::madvise(buf.data, kPage, MADV_NOHUGEPAGE) != 0) GTEST_SKIP() << "no MADV_NOHUGEPAGE (a kernel without THP)";
  auto& pages = HugePages::process();
  for (int pass = 0; pass < kPassesBeforeCollapse; ++pass) EXPECT_FALSE(pages.backs(buf.data, kPage));
  ASSERT_TRUE(pages.drain(kDrainLimit));
  for (int pass = 0; pass < 4; ++pass) EXPECT_FALSE(pages.backs(buf.data, kPage)) << "refused: never asked again";
  EXPECT_TRUE(buf.intact(11));
}

// A forked child has no collapser thread and may hold the parent's mutex locked: it starts
// with nothing known, and does not hang.
TEST(HugePages, AChildOfForkStartsAfresh) {
  if (!kernelCollapses()) GTEST_SKIP() << "madvise(MADV_COLLAPSE) refused here (Linux 6.1 has it)";
  AlignedBuffer buf(kPage, 13);
  auto& pages = HugePages::process();
  for (int pass = 0; pass < kPassesBeforeCollapse; ++pass) pages.backs(buf.data, kPage);
  ASSERT_TRUE(pages.drain(kDrainLimit));
  ASSERT_TRUE(pages.backs(buf.data, kPage));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(10);  // a hang ends the child, and the test with it
    auto& mine = HugePages::process();
    int code = mine.backs(buf.data, kPage) ? 1 : 0;  // unknown in the child
    for (int pass = 0; pass < kPassesBeforeCollapse; ++pass) mine.backs(buf.data, kPage);
    if (!mine.drain(kDrainLimit) || !mine.backs(buf.data, kPage)) code |= 2;  // its own collapser works
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status) & 1, 0) << "the child knew the parent's pages";
  EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "the child's collapser did not work";
}

}  // namespace
}  // namespace coll::transport::shm
