#include "algorithms/direct_allreduce.h"

#include <algorithm>

#include "algorithms/direct_phases.h"
#include "algorithms/pair_allreduce.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

Schedule buildDirectAllreduce(const BuildParams& p) {
  SlicedChunks sl(p);
  ScheduleBuilder b("direct", sl.numRegions());
  b.setNumPhases(p.nranks > 1 ? 2 : 1);
  if (p.count == 0) return b.finish();
  if (p.nranks == 1) {
    if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  if (p.nranks == 2) {
    addPairAllreduce(p, sl, b);
  } else {
    addDirectReduceScatter(p, sl, b, 0);
    addDirectAllGather(p, sl, b, 1);
  }
  return b.finish();
}

Schedule buildDirectBroadcast(const BuildParams& p) {
  const BufferSlices slices(p);
  ScheduleBuilder b("direct", slices.size());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  const bool is_root = p.rank == p.root;
  if (is_root && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  for (size_t j = 0; j < slices.size(); ++j) {
    size_t offset = slices.offset(j), bytes = slices.bytes(j);
    if (!is_root) {
      b.add({StepKind::recv, BufferId::output, p.root, offset, bytes, 0, 0}, {}, {j});
      continue;
    }
    for (int k = 1; k < p.nranks; ++k)  // the root streams from its input, never waiting for its copy
      b.add({StepKind::send, BufferId::input, ring::mod(p.rank + k, p.nranks), offset, bytes, 0, 0}, {}, {});
  }
  return b.finish();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Two-shot: every rank sends chunk c to rank c, which reduces and sends it to all: 2 steps
// of n-1 messages each.
// A host's link carries L(n-L)/n of the buffer per step (each of its L ranks sends the n-L
// foreign chunks), a rank receives (n-1)/n per step.
Prediction directAllreduce(const Fabric& x) {
  double per_rank = 2 * (x.n - 1) / x.n * x.S;
  double per_link = 2 * std::max(x.L * (x.n - x.L), x.uplinkShare()) / x.n * x.S / x.unpipelinedEfficiency();
  double step = x.stepAny(x.busy(messages::directAllreduce));
  return ok(x.total(2 * step + 2 * x.extraMessages(x.L - 1, x.n - x.L), per_rank / x.bi,
                    x.multi ? per_link / x.be : 0, (x.n - 1) / x.n * x.S / x.g));
}

// The root sends the whole buffer to every rank in one step; its host's link carries it
// n-L times, while ranks of its host pull it in parallel.
Prediction directBroadcast(const Fabric& x) {
  return ok(x.stepAny(1) + x.move(x.S, (x.n - x.L) * x.S));
}

}  // namespace coll::algo::cost
