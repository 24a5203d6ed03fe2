#include "algorithms/chain_broadcast.h"

#include <algorithm>

#include "algorithms/patterns/ring.h"

namespace coll::algo {

Schedule buildChainBroadcast(const BuildParams& p) {
  const int n = p.nranks;
  const size_t per_slice = std::max<size_t>(1, p.slice_bytes / p.elem_size);
  const size_t slices = ring::numSlices(p.count, per_slice);
  const int position = ring::mod(p.rank - p.root, n);  // distance from the root along the chain
  const int next = ring::right(p.rank, n), prev = ring::left(p.rank, n);
  const bool is_root = position == 0, is_last = position == n - 1;
  ScheduleBuilder b("chain", slices);
  b.setNumPhases(static_cast<uint32_t>(std::max<size_t>(1, slices)));
  if (p.count == 0) return b.finish();
  if (is_root && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  for (size_t j = 0; j < slices; ++j) {
    size_t offset = j * per_slice * p.elem_size;
    size_t bytes = std::min(per_slice, p.count - j * per_slice) * p.elem_size;
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
