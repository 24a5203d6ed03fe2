// Copying into memory that will not be read again soon, around the caches.
#pragma once

#include <cstddef>

namespace coll::reduce {

// memcpy(dst, src, bytes), but dst's cache lines are written with non-temporal stores where
// the CPU has them (x86: SSE2, every x86-64), so the store does not first read each line it
// overwrites (a "read for ownership": a third more DRAM traffic for a copy) nor evict what
// the caller works on. For outputs far larger than the caches only; the data is in memory,
// visible to other threads and processes, when it returns. Elsewhere it is memcpy.
void copyStreaming(void* dst, const void* src, size_t bytes);

}  // namespace coll::reduce
