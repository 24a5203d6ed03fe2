#include "algorithms/binomial_broadcast.h"

#include <algorithm>

#include "algorithms/patterns/ring.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {
namespace {

// Positions are distances from the root. The parent of v clears v's lowest set bit; the
// children of v are v + 2^k for every 2^k below that bit (every 2^k < n for the root).
int lowestBit(int v, int n) {
  if (v == 0) {
    int top = 1;
    while (top < n) top <<= 1;
    return top;
  }
  return v & -v;
}

}  // namespace

Schedule buildBinomialBroadcast(const BuildParams& p) {
  const int n = p.nranks, v = ring::mod(p.rank - p.root, n);
  const BufferSlices slices(p);
  ScheduleBuilder b("binomial", slices.size());
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  b.setNumPhases(static_cast<uint32_t>(std::max(1, rounds)));
  if (p.count == 0) return b.finish();
  const bool is_root = v == 0;
  if (is_root && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  const int low = lowestBit(v, n);
  const int parent = ring::mod(p.root + (v - (v == 0 ? 0 : low)), n);
  for (size_t j = 0; j < slices.size(); ++j) {
    size_t offset = slices.offset(j), bytes = slices.bytes(j);
    if (!is_root) b.add({StepKind::recv, BufferId::output, parent, offset, bytes, 0, 0}, {}, {j});
    for (int bit = low >> 1; bit >= 1; bit >>= 1) {  // farthest child first: its subtree is largest
      if (v + bit >= n) continue;
      int child = ring::mod(p.root + v + bit, n);
      BufferId source = is_root ? BufferId::input : BufferId::output;
      if (is_root) b.add({StepKind::send, source, child, offset, bytes, 0, 0}, {}, {});
      else b.add({StepKind::send, source, child, offset, bytes, 0, 0}, {j}, {});
    }
  }
  return b.finish();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Binomial tree, farthest partners first: ceil(log2 n) rounds, each moving the whole buffer;
// the first ceil(log2 H) rounds cross hosts, the rest stay inside them.
Prediction binomialBroadcast(const Fabric& x) {
  double rounds = log2ceil(x.n);
  double inter = x.multi ? std::min(rounds, log2ceil(x.H)) : 0;
  return ok(inter * (x.stepAny(1) + x.S / x.be) + (rounds - inter) * (x.stepIntra(1) + x.S / x.bi));
}

}  // namespace coll::algo::cost
