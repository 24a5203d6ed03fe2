// The grid every device kernel of coll launches with: 256 threads a block, and enough blocks to
// fill any current GPU several times over (the kernels' grid-stride loops cover the rest).
#pragma once

#include <cstddef>

namespace coll::cuda {

inline constexpr int kThreads = 256;
inline constexpr size_t kMaxBlocks = 4096;

// Blocks for `items` work items, one a thread, at most kMaxBlocks.
inline unsigned blocksFor(size_t items) {
  size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

}  // namespace coll::cuda
