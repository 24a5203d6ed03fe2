// Ring arithmetic, apart from any data movement.
#pragma once

#include <cstddef>

namespace coll::algo::ring {

inline int mod(int a, int n) { return ((a % n) + n) % n; }
inline int right(int rank, int n) { return mod(rank + 1, n); }
inline int left(int rank, int n) { return mod(rank - 1, n); }

// count elements split into n chunks that differ in size by at most one element; the first
// count % n chunks get the extra one.
struct Chunk {
  size_t first;  // element index
  size_t count;
};
inline Chunk chunk(size_t count, int n, int c) {
  size_t base = count / n, extra = count % n, uc = static_cast<size_t>(c);
  return {uc * base + (uc < extra ? uc : extra), base + (uc < extra ? 1 : 0)};
}

// Reduce-scatter step s (0 .. n-2): rank sends chunk sendChunk and receives-and-reduces
// recvChunk. After the last step the rank owns chunk ownedChunk, fully reduced.
inline int reduceScatterSendChunk(int rank, int n, int s) { return mod(rank - s, n); }
inline int reduceScatterRecvChunk(int rank, int n, int s) { return mod(rank - s - 1, n); }
inline int ownedChunk(int rank, int n) { return mod(rank + 1, n); }

// All-gather step s (0 .. n-2): send chunk allGatherSendChunk, receive allGatherRecvChunk.
inline int allGatherSendChunk(int rank, int n, int s) { return mod(rank + 1 - s, n); }
inline int allGatherRecvChunk(int rank, int n, int s) { return mod(rank - s, n); }

// Slices pipeline a chunk: slice k of a chunk of `elems` elements, `per_slice` each.
inline size_t numSlices(size_t elems, size_t per_slice) { return (elems + per_slice - 1) / per_slice; }

}  // namespace coll::algo::ring
