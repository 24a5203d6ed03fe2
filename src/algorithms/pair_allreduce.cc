#include "algorithms/pair_allreduce.h"

#include <algorithm>

#include "algorithms/reduce_slots.h"

namespace coll::algo {

// Position t adds, in this order: the send of the peer's slice t (reduce-scatter), the
// receive that reduces our slice t, the send of its result (all-gather), the receive of the
// peer's result for its slice t. Both ranks do the same with the chunks swapped, so each
// rank's receives meet the peer's sends in order, and index order gives the hazards: our
// result is sent after it was reduced (and divided), the peer's result lands after our
// reduce-scatter send of the same region.
void addPairAllreduce(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b) {
  const int r = p.rank, peer = 1 - p.rank;
  const BufferId first_touch = p.in_place ? BufferId::output : BufferId::input;
  const size_t own = sc.slices(r), theirs = sc.slices(peer);
  ReduceSlots slots(p);
  for (size_t t = 0; t < std::max(own, theirs); ++t) {
    if (t < theirs)
      b.add({StepKind::send, first_touch, peer, sc.offset(peer, t), sc.bytes(peer, t), 0, 0}, {sc.region(peer, t)}, {});
    if (t < own) {
      const uint32_t reduced = slots.add(
          b, {StepKind::recvReduce, first_touch, peer, sc.offset(r, t), sc.bytes(r, t), 0, 0}, sc.region(r, t));
      Step result{StepKind::send, BufferId::output, peer, sc.offset(r, t), sc.bytes(r, t), 0, 1};
      if (p.average) {  // the result is what the division wrote: nothing to forward
        b.add({StepKind::divide, BufferId::output, -1, sc.offset(r, t), sc.bytes(r, t), 0, 0}, {sc.region(r, t)},
              {sc.region(r, t)});
      } else {
        result.forwards = static_cast<int32_t>(reduced);
      }
      b.add(std::move(result), {sc.region(r, t)}, {});
    }
    if (t < theirs)
      b.add({StepKind::recv, BufferId::output, peer, sc.offset(peer, t), sc.bytes(peer, t), 0, 1}, {},
            {sc.region(peer, t)});
  }
  b.setScratchBytes(slots.bytes());
}

}  // namespace coll::algo
