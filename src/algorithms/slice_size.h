// The pipelining unit of one op. Inside a host (shared memory) a message costs little beyond
// its copy, and the configured slice (COLL_SLICE_BYTES, 512 KiB) keeps the pipeline fine-grained.
// Between hosts every message costs system calls and a wake-up of each side, and where the
// CPUs rather than the links are the limit those costs decide the speed; larger slices for
// large ops pay them less often. Measured on netcluster 4 x 1 with shaping off (4 ranks on 2
// cores, 64 MiB): with a 1 MiB receive low-water mark (transport/socket/connection.cc),
// all-reduce busbw 0.54-0.63 GB/s with 2 MiB slices against 0.43-0.44 with 512 KiB and no
// mark, CPU-seconds per GB 3.8-4.4 against 5.8-5.9; then 4 interleaved rounds of 4 MiB slices
// with a 2 MiB mark against 2 MiB with 1 MiB: all-reduce 0.58-0.67 against 0.52-0.61,
// broadcast 0.73-0.82 against 0.66-0.77. 8 MiB slices with a 4 MiB mark were no better.
// An op of at least 32 MiB takes 4 MiB slices where the link allows (below); scratch
// (pipeline depth x slice) grows with it.
#pragma once

#include <algorithm>
#include <cstddef>

namespace coll::algo {

inline constexpr size_t kLargestNetworkSlice = size_t{4} << 20;
// A slice between hosts carries at most this much of the link's time. A chain or ring fills
// its pipeline one slice per hop, so on a slow link a large slice is a long fill: at 1 Gbit/s
// 2 ms is 250 KB, under the configured slice, and nothing grows; unshaped veth (2.9 GB/s)
// would allow 5.8 MB.
inline constexpr double kSliceLinkSeconds = 2e-3;

// op_bytes: the op's count times its element size, as the caller passed them. link_Bps: the
// bandwidth between hosts every rank agreed on (topology.h), 0 where slices must not grow
// (one host, or COLL_SLICE_BYTES set). The same inputs on every rank, so every rank builds
// the same schedule.
inline size_t sliceBytesFor(size_t op_bytes, size_t configured, double link_Bps) {
  if (!(link_Bps > 0)) return configured;
  const auto by_link = static_cast<size_t>(link_Bps * kSliceLinkSeconds) / (64 << 10) * (64 << 10);
  return std::clamp(std::min(op_bytes / 8, by_link), configured, std::max(configured, kLargestNetworkSlice));
}

}  // namespace coll::algo
