#include "algorithms/chain_broadcast.h"

#include <algorithm>

#include "algorithms/patterns/ring.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

Schedule buildChainBroadcast(const BuildParams& p) {
  const int n = p.nranks;
  const BufferSlices slices(p);
  const int position = ring::mod(p.rank - p.root, n);  // distance from the root along the chain
  const int next = ring::right(p.rank, n), prev = ring::left(p.rank, n);
  const bool is_root = position == 0, is_last = position == n - 1;
  ScheduleBuilder b("chain", slices.size());
  b.setNumPhases(static_cast<uint32_t>(std::max<size_t>(1, slices.size())));
  if (p.count == 0) return b.finish();
  if (is_root && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  for (size_t j = 0; j < slices.size(); ++j) {
    size_t offset = slices.offset(j), bytes = slices.bytes(j);
    auto phase = static_cast<uint32_t>(j);
    if (!is_root) b.add({StepKind::recv, BufferId::output, prev, offset, bytes, 0, phase}, {}, {j});
    // The root streams from its input, so its local copy never delays the first slice.
    if (!is_last) {
      BufferId source = is_root ? BufferId::input : BufferId::output;
      if (is_root) b.add({StepKind::send, source, next, offset, bytes, 0, phase}, {}, {});
      else b.add({StepKind::send, source, next, offset, bytes, 0, phase}, {j}, {});
    }
  }
  return b.finish();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Root -> root+1 -> ... slice by slice: the first slice takes n-1 hops, each further slice
// one slice time at the slowest link.
Prediction chainBroadcast(const Fabric& x) {
  double slice = std::min(x.S, x.slice);
  double slices = std::max(1.0, std::ceil(x.S / x.slice));
  double hop = slice / x.betaSlowest();
  return ok((x.n - 1) * (x.stepAny(1) + hop) + (slices - 1) * hop);
}

}  // namespace coll::algo::cost
