#include "algorithms/ring_collectives.h"
#include "algorithms/ring_phases.h"

namespace coll::algo {

Schedule buildRingReduceScatter(const BuildParams& p) {
  SlicedChunks sc(p);
  // Past four ranks the partial sums (n - 2 chunks) outgrow two chunks of scratch.
  const bool partials_in_scratch = p.nranks > 4;
  ScheduleBuilder b("ring", sc.numRegions() + (partials_in_scratch ? partialSumRegions(sc) : 0));
  b.setNumPhases(p.nranks > 1 ? static_cast<uint32_t>(p.nranks - 1) : 1);
  if (p.count == 0) return b.finish();
  const int r = p.rank;
  if (p.nranks == 1) {
    b.add({StepKind::copy, BufferId::input, -1, sc.chunkOffset(r), sc.chunkBytes(r), 0, 0}, {}, {});
    return b.finish();
  }
  addRingReduceScatter(p, sc, b, -1, BufferId::input, 0, partials_in_scratch);  // nothing copied in first
  if (p.average) addDivideOwned(p, sc, b, r, static_cast<uint32_t>(p.nranks - 2));
  return b.finish();
}

}  // namespace coll::algo
