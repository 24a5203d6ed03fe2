#include "algorithms/direct_collectives.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

Schedule buildDirectAlltoall(const BuildParams& p) {
  SlicedChunks sc(p);
  ScheduleBuilder b("direct", sc.numRegions());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  const int r = p.rank, n = p.nranks;
  for (size_t j = 0; j < sc.slices(r); ++j)
    b.add({StepKind::copy, BufferId::input, -1, sc.offset(r, j), sc.bytes(r, j), 0, 0}, {}, {sc.region(r, j)});
  // rank+k sends to rank+k+k'...: at each moment the ranks talk to different peers.
  for (int k = 1; k < n; ++k) {
    int to = ring::mod(r + k, n);
    for (size_t j = 0; j < sc.slices(to); ++j)
      b.add({StepKind::send, BufferId::input, to, sc.offset(to, j), sc.bytes(to, j), 0, 0}, {}, {});
  }
  for (int k = 1; k < n; ++k) {
    int from = ring::mod(r - k, n);
    for (size_t j = 0; j < sc.slices(from); ++j)
      b.add({StepKind::recv, BufferId::output, from, sc.offset(from, j), sc.bytes(from, j), 0, 0}, {},
            {sc.region(from, j)});
  }
  return b.finish();
}

}  // namespace coll::algo
