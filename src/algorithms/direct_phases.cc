#include "algorithms/direct_phases.h"

#include "algorithms/direct_collectives.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/reduce_slots.h"

namespace coll::algo {

std::vector<int> peersInTurn(const BuildParams& p) {
  std::vector<int> peers;
  for (int k = 1; k < p.nranks; ++k) peers.push_back(ring::mod(p.rank + k, p.nranks));
  return peers;
}

void addSendToOwners(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase) {
  const BufferId input = p.in_place ? BufferId::output : BufferId::input;
  for (int peer : peersInTurn(p))
    for (size_t j = 0; j < sl.slices(peer); ++j)
      b.add({StepKind::send, input, peer, sl.offset(peer, j), sl.bytes(peer, j), 0, phase}, {sl.region(peer, j)}, {});
}

void addDirectReduceScatter(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase) {
  const int r = p.rank;
  const BufferId input = p.in_place ? BufferId::output : BufferId::input;
  addSendToOwners(p, sl, b, phase);
  ReduceSlots slots(p);
  for (size_t j = 0; j < sl.slices(r); ++j) {
    bool first = true;  // the first reduction of a slice reads the input: no up-front copy
    for (int peer : peersInTurn(p)) {
      slots.add(b, {StepKind::recvReduce, first ? input : BufferId::output, peer, sl.offset(r, j), sl.bytes(r, j), 0,
                    phase},
                sl.region(r, j));
      first = false;
    }
    if (p.average) b.add({StepKind::divide, BufferId::output, -1, sl.offset(r, j), sl.bytes(r, j), 0, phase},
                         {sl.region(r, j)}, {sl.region(r, j)});
  }
  b.setScratchBytes(slots.bytes());
}

void addDirectAllGather(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b, uint32_t phase) {
  const int r = p.rank;
  for (int peer : peersInTurn(p))
    for (size_t j = 0; j < sl.slices(r); ++j)
      b.add({StepKind::send, BufferId::output, peer, sl.offset(r, j), sl.bytes(r, j), 0, phase}, {sl.region(r, j)}, {});
  for (int peer : peersInTurn(p))
    for (size_t j = 0; j < sl.slices(peer); ++j)
      b.add({StepKind::recv, BufferId::output, peer, sl.offset(peer, j), sl.bytes(peer, j), 0, phase}, {},
            {sl.region(peer, j)});
}

}  // namespace coll::algo

namespace coll::algo::cost {

// All-to-all, gather and scatter in one step of direct messages: a rough figure, for the log.
Prediction directExchange(const Fabric& x) {
  return ok(x.stepAny(1) + x.move((x.n - 1) / x.n * x.S, x.L * (x.n - x.L) / x.n * x.S));
}

}  // namespace coll::algo::cost
