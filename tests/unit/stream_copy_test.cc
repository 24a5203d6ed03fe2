// reduce::copyStreaming, the non-temporal copy that streaming receives land through, and
// reduce::copyPrefetching, the copy of large sends into shm slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "reduce/stream_copy.h"

using CopyFunction = void (*)(void*, const void*, size_t);

// Both are memcpy whatever the alignment of either side and the length (head, whole 64-byte
// blocks, tail), and write nothing outside the destination.
void expectMemcpyAtEveryAlignmentAndLength(CopyFunction copy) {
  std::vector<uint8_t> src(4096 + 64), dst(4096 + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t len : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63}, size_t{64}, size_t{65}, size_t{127},
                     size_t{1000}, size_t{4096}}) {
    for (size_t d_off = 0; d_off < 18; ++d_off) {
      for (size_t s_off : {size_t{0}, size_t{3}, size_t{16}}) {
        std::fill(dst.begin(), dst.end(), uint8_t{0xee});
        copy(dst.data() + d_off, src.data() + s_off, len);
        for (size_t i = 0; i < dst.size(); ++i) {
          bool inside = i >= d_off && i < d_off + len;
          uint8_t want = inside ? src[s_off + i - d_off] : uint8_t{0xee};
          ASSERT_EQ(dst[i], want) << "len " << len << " dst+" << d_off << " src+" << s_off << " byte " << i;
        }
      }
    }
  }
}

TEST(CopyStreaming, MatchesMemcpyAtEveryAlignmentAndLength) {
  expectMemcpyAtEveryAlignmentAndLength(coll::reduce::copyStreaming);
}

TEST(CopyPrefetching, MatchesMemcpyAtEveryAlignmentAndLength) {
  expectMemcpyAtEveryAlignmentAndLength(coll::reduce::copyPrefetching);
}

// Pages well past the prefetch distance, the last one ending at an unmapped page: the
// prefetches that run past the source's end must not fault.
TEST(CopyPrefetching, CopiesUpToTheEndOfTheLastMappedPage) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = 8 * page;
  void* map = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* src = static_cast<uint8_t*>(map);
  ASSERT_EQ(mprotect(src + bytes, page, PROT_NONE), 0);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 31 + 1);
  std::vector<uint8_t> dst(bytes);
  coll::reduce::copyPrefetching(dst.data(), src, bytes);
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), src));
  munmap(map, bytes + page);
}
