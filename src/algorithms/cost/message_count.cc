#include "algorithms/cost/message_count.h"

#include "algorithms/patterns/halving_doubling.h"
#include "algorithms/patterns/ring.h"

namespace coll::algo::cost::messages {
namespace {

double slicesOf(size_t elems, size_t per_slice) { return static_cast<double>(algo::ring::numSlices(elems, per_slice)); }

// Slices of all k chunks of `count` elements (SlicedChunks): count % k chunks hold one element
// more than the others, and a chunk of 0 elements has no slice.
double chunkSlices(size_t count, int k, size_t per_slice) {
  const size_t base = count / k, extra = count % k;
  return static_cast<double>(extra) * slicesOf(base + 1, per_slice) +
         static_cast<double>(k - extra) * slicesOf(base, per_slice);
}

}  // namespace

// 2(n-1) steps; in each, every rank sends one chunk and together they send every chunk once
// (ring_phases.cc).
double ringAllreduce(const Shape& s) { return 2.0 * (s.n - 1) * chunkSlices(s.count, s.n, s.per_slice); }

// Every rank sends chunk c's slices to rank c, then its own chunk's to every peer
// (direct_allreduce.cc): each chunk's slices n-1 times per phase.
double directAllreduce(const Shape& s) { return 2.0 * (s.n - 1) * chunkSlices(s.count, s.n, s.per_slice); }

// The buffer as L parts of H chunks (hierarchical_allreduce.cc): inside each host every rank
// sends its L-1 foreign parts (reduce-scatter) and its own part to L-1 peers (all-gather),
// each part's H chunks sliced; between hosts L rings of 2(H-1) steps, each step sending every
// chunk of the ring's part once.
double hierarchicalAllreduce(const Shape& s) {
  const int L = s.per_host, H = s.hosts;
  const size_t base = s.count / L, extra = s.count % L;
  const double all_parts = static_cast<double>(extra) * chunkSlices(base + 1, H, s.per_slice) +
                           static_cast<double>(L - extra) * chunkSlices(base, H, s.per_slice);
  return (2.0 * H * (L - 1) + 2.0 * (H - 1)) * all_parts;
}

// Two trees, each carrying one half of the buffer (tree_allreduce.cc): every rank but the root
// sends each slice of the half up once and receives it down once.
double treeAllreduce(const Shape& s) { return 2.0 * (s.n - 1) * chunkSlices(s.count, 2, s.per_slice); }

// The buffer as p2 blocks; each halving step a virtual rank sends one contiguous run of blocks
// as slices (rhd_allreduce.cc transfer(): an empty run sends nothing), counted by walking the
// pattern over every virtual rank. Doubling mirrors halving (each of its sends is a halving
// receive), and the fold moves the whole buffer in and out for each extra rank.
double rhdAllreduce(const Shape& s) {
  const int p2 = algo::hd::powerOfTwoFloor(s.n), steps = algo::hd::log2Floor(s.n);
  auto start = [&](int block) { return block == p2 ? s.count : algo::ring::chunk(s.count, p2, block).first; };
  double halving = 0;
  for (int step = 0; step < steps; ++step)
    for (int v = 0; v < p2; ++v) {
      const algo::hd::BlockRange send = algo::hd::halvingStep(v, p2, step).send;
      halving += slicesOf(start(send.last) - start(send.first), s.per_slice);
    }
  return 2 * halving + 2.0 * algo::hd::extraRanks(s.n) * slicesOf(s.count, s.per_slice);
}

// Every slice of the whole buffer: log2 p2 exchanges among p2 ranks, plus the fold in and out
// (rd_allreduce.cc).
double rdAllreduce(const Shape& s) {
  const int p2 = algo::hd::powerOfTwoFloor(s.n);
  const double per_slice = p2 * algo::hd::log2Floor(s.n) + 2.0 * algo::hd::extraRanks(s.n);
  return per_slice * slicesOf(s.count, s.per_slice);
}

}  // namespace coll::algo::cost::messages
