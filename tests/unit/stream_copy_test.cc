// reduce::copyStreaming, the non-temporal copy that streaming receives land through.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reduce/stream_copy.h"

// copyStreaming is memcpy whatever the alignment of either side and the length (head, whole
// 64-byte blocks, tail), and writes nothing outside the destination.
TEST(CopyStreaming, MatchesMemcpyAtEveryAlignmentAndLength) {
  std::vector<uint8_t> src(4096 + 64), dst(4096 + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t len : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63}, size_t{64}, size_t{65}, size_t{127},
                     size_t{1000}, size_t{4096}}) {
    for (size_t d_off = 0; d_off < 18; ++d_off) {
      for (size_t s_off : {size_t{0}, size_t{3}, size_t{16}}) {
        std::fill(dst.begin(), dst.end(), uint8_t{0xee});
        coll::reduce::copyStreaming(dst.data() + d_off, src.data() + s_off, len);
        for (size_t i = 0; i < dst.size(); ++i) {
          bool inside = i >= d_off && i < d_off + len;
          uint8_t want = inside ? src[s_off + i - d_off] : uint8_t{0xee};
          ASSERT_EQ(dst[i], want) << "len " << len << " dst+" << d_off << " src+" << s_off << " byte " << i;
        }
      }
    }
  }
}
