// Direct reduce-scatter: every rank sends chunk c straight to rank c, which reduces the n-1
// it receives into its own chunk of the output as they arrive. The ring moves the same bytes,
// but writes each partial sum it passes on and reads it back at the next step (in the workspace
// up to four ranks, in two chunks of scratch past that); here nothing but the rank's own chunk
// is written, and there is one step.
//
// Chosen only by a COLL_ALGO rule (`reducescatter:direct`); the cost model has no formula for
// it, because where it wins is not what the model's terms describe (2026-12-07, `-Q "ring
// direct"`, two launches each, ms an op):
//  - one host, 3 and 4 ranks on 2 cores: as fast or faster at every size, 4 ranks 16 MiB 4.7
//    against 5.9, 64 MiB 17.4-19.9 against 22.3-24.2;
//  - one host, 6 and 8 ranks on 2 cores: faster at 4 and 16 MiB (8 ranks 16 MiB 13.0-16.3
//    against 15.6-17.9) but 1.25-1.5 x slower at 1 MiB, where every rank waits on n-1
//    descheduled peers at once instead of one;
//  - netcluster 4 x 1 unshaped: faster at every size from 16 KiB to 64 MiB (16 MiB 19.1-21.2
//    against 23.0-25.3); 2 x 2 unshaped: level with the ring, both behind the hierarchical
//    reduce-scatter the selector picks there (16 MiB 18.5 and 19.1 against 13.9);
//  - shaped links (tbf at 1 and 10 Gbit/s): n-1 flows at once into each host's queue; at
//    1 Gbit/s 1.3-2.4 x the ring from 256 KiB up, at 10 Gbit/s 4-4.7 x at 1 MiB.
#include "algorithms/direct_collectives.h"
#include "algorithms/direct_phases.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {

Schedule buildDirectReduceScatter(const BuildParams& p) {
  SlicedChunks sl(p);
  ScheduleBuilder b("direct", sl.numRegions());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  if (p.nranks == 1) {
    b.add({StepKind::copy, BufferId::input, -1, sl.chunkOffset(0), sl.chunkBytes(0), 0, 0}, {}, {});
    return b.finish();
  }
  addDirectReduceScatter(p, sl, b, 0);
  return b.finish();
}

}  // namespace coll::algo
