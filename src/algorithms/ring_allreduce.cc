#include "algorithms/ring_allreduce.h"

#include "algorithms/pair_allreduce.h"
#include "algorithms/ring_phases.h"

namespace coll::algo {

Schedule buildRingAllreduce(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("ring", sc.numRegions());
  const auto n = static_cast<uint32_t>(p.nranks);
  b.setNumPhases(n > 1 ? 2 * (n - 1) : 1);
  if (p.count == 0) return b.finish();
  if (n == 1) {
    if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  if (n == 2) {  // one exchange each way: the pair's own message order
    addPairAllreduce(p, sc, b);
    return b.finish();
  }
  // Out of place, nothing is copied up front: step 0 sends the rank's own chunk straight from
  // the input and each other chunk's first reduction reads the input (out = in op received);
  // the own chunk's output is written only by the all-gather.
  addRingReduceScatter(p, sc, b, 0, p.in_place ? BufferId::output : BufferId::input, 0);
  if (p.average) addDivideOwned(p, sc, b, ring::ownedChunk(p.rank, p.nranks), n - 2);
  addRingAllGather(p, sc, b, 0, n - 1);
  return b.finish();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Reduce-scatter then all-gather around the ring: 2(n-1) steps; every link carries
// 2(n-1)/n of the buffer (one ring edge leaves each host, and each leaf switch: an uplink
// carries what one host link does, slower only where it is less than one: uplinkSlowdown());
// each rank reduces (n-1)/n of it.
Prediction ringAllreduce(const Fabric& x) {
  double share = 2 * (x.n - 1) / x.n * x.S;
  double step = x.stepAny(x.busy(messages::ringAllreduce));
  return ok(x.total(2 * (x.n - 1) * step, share / x.bi, x.multi ? share * x.uplinkSlowdown() / x.be : 0,
                    (x.n - 1) / x.n * x.S / x.g));
}

}  // namespace coll::algo::cost
