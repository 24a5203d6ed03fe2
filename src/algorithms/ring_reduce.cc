#include "algorithms/ring_collectives.h"
#include "algorithms/ring_phases.h"

namespace coll::algo {

Schedule buildRingReduce(const BuildParams& p) {
  SlicedChunks sc(p);
  const int n = p.nranks, r = p.rank;
  // A non-root reduces in a workspace: past four ranks its partial sums go to scratch, leaving
  // the workspace only the chunk it owns (ring_phases.h). The root's go to its own output, which
  // holds them for free. What goes over the wire is the same either way.
  const bool partials_in_scratch = n > 4 && r != p.root;
  ScheduleBuilder b("ring", sc.numRegions() + (partials_in_scratch ? partialSumRegions(sc) : 0));
  b.setNumPhases(static_cast<uint32_t>(n));
  if (p.count == 0) return b.finish();
  if (n == 1) {
    if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  addRingReduceScatter(p, sc, b, 0, p.in_place ? BufferId::output : BufferId::input, 0, partials_in_scratch);
  int owned = ring::ownedChunk(r, n);
  if (p.average) addDivideOwned(p, sc, b, owned, static_cast<uint32_t>(n - 2));
  auto last = static_cast<uint32_t>(n - 1);
  if (r != p.root) {
    for (size_t j = 0; j < sc.slices(owned); ++j)
      b.add({StepKind::send, BufferId::output, p.root, sc.offset(owned, j), sc.bytes(owned, j), 0, last},
            {sc.region(owned, j)}, {});
    return b.finish();
  }
  for (int c = 0; c < n; ++c) {  // chunk c was finished by rank c - 1
    int owner = ring::mod(c - 1, n);
    if (owner == r) continue;
    for (size_t j = 0; j < sc.slices(c); ++j)
      b.add({StepKind::recv, BufferId::output, owner, sc.offset(c, j), sc.bytes(c, j), 0, last}, {}, {sc.region(c, j)});
  }
  return b.finish();
}

}  // namespace coll::algo
