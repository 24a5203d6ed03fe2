#include "algorithms/ring_collectives.h"
#include "algorithms/ring_phases.h"

namespace coll::algo {

Schedule buildRingAllgather(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("ring", sc.numRegions());
  b.setNumPhases(p.nranks > 1 ? static_cast<uint32_t>(p.nranks - 1) : 1);
  if (p.count == 0) return b.finish();
  const int r = p.rank;
  // Out of place, the own chunk is never received: it goes into the output as the first phase
  // sends it from the input (one read of it instead of a copy and a send); alone, it is copied.
  if (!p.in_place && p.nranks == 1) {
    for (size_t j = 0; j < sc.slices(r); ++j)
      b.add({StepKind::copy, BufferId::input, -1, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {sc.region(r, j)});
  }
  if (p.nranks > 1) addRingAllGather(p, sc, b, -1, 0, !p.in_place);
  return b.finish();
}

}  // namespace coll::algo
