#include "algorithms/direct_collectives.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

Schedule buildDirectGather(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("direct", sc.numRegions());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  const int r = p.rank;
  if (r != p.root) {
    for (size_t j = 0; j < sc.slices(r); ++j)
      b.add({StepKind::send, BufferId::input, p.root, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {});
    return b.finish();
  }
  for (size_t j = 0; j < sc.slices(r); ++j)
    if (!p.in_place) b.add({StepKind::copy, BufferId::input, -1, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {sc.region(r, j)});
  for (int c = 0; c < p.nranks; ++c) {
    if (c == r) continue;
    for (size_t j = 0; j < sc.slices(c); ++j)
      b.add({StepKind::recv, BufferId::output, c, sc.offset(c, j), sc.bytes(c, j), 0, 0}, {}, {sc.region(c, j)});
  }
  return b.finish();
}

Schedule buildDirectScatter(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("direct", sc.numRegions());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  const int r = p.rank;
  if (r != p.root) {
    for (size_t j = 0; j < sc.slices(r); ++j)
      b.add({StepKind::recv, BufferId::output, p.root, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {sc.region(r, j)});
    return b.finish();
  }
  for (int c = 0; c < p.nranks; ++c) {
    if (c == r) continue;
    for (size_t j = 0; j < sc.slices(c); ++j)
      b.add({StepKind::send, BufferId::input, c, sc.offset(c, j), sc.bytes(c, j), 0, 0}, {}, {});
  }
  for (size_t j = 0; j < sc.slices(r); ++j)
    if (!p.in_place) b.add({StepKind::copy, BufferId::input, -1, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {sc.region(r, j)});
  return b.finish();
}

}  // namespace coll::algo
