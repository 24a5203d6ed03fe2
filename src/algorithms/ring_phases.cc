#include "algorithms/ring_phases.h"

#include "algorithms/reduce_slots.h"
#include "algorithms/ring_collectives.h"

namespace coll::algo {

void addRingReduceScatter(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int shift,
                          BufferId first_touch, uint32_t phase0) {
  const int n = p.nranks, r = p.rank;
  const int right = ring::right(r, n), left = ring::left(r, n);
  ReduceSlots slots(p);
  for (int s = 0; s < n - 1; ++s) {
    int send_c = ring::mod(ring::reduceScatterSendChunk(r, n, s) + shift, n);
    int recv_c = ring::mod(ring::reduceScatterRecvChunk(r, n, s) + shift, n);
    auto phase = phase0 + static_cast<uint32_t>(s);
    // Step 0 sends the rank's own contribution straight from where it lies.
    for (size_t j = 0; j < sc.slices(send_c); ++j)
      b.add({StepKind::send, s == 0 ? first_touch : BufferId::output, right, sc.offset(send_c, j), sc.bytes(send_c, j),
             0, phase},
            {sc.region(send_c, j)}, {});
    for (size_t j = 0; j < sc.slices(recv_c); ++j)
      slots.add(b, {StepKind::recvReduce, first_touch, left, sc.offset(recv_c, j), sc.bytes(recv_c, j), 0, phase},
                sc.region(recv_c, j));
  }
  b.setScratchBytes(slots.bytes());
}

void addDivideOwned(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int owned, uint32_t phase) {
  for (size_t j = 0; j < sc.slices(owned); ++j)
    b.add({StepKind::divide, BufferId::output, -1, sc.offset(owned, j), sc.bytes(owned, j), 0, phase},
          {sc.region(owned, j)}, {sc.region(owned, j)});
}

void addRingAllGather(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int shift, uint32_t phase0,
                      bool own_from_input) {
  const int n = p.nranks, r = p.rank;
  const int right = ring::right(r, n), left = ring::left(r, n);
  for (int s = 0; s < n - 1; ++s) {
    int send_c = ring::mod(ring::allGatherSendChunk(r, n, s) + shift, n);
    int recv_c = ring::mod(ring::allGatherRecvChunk(r, n, s) + shift, n);
    auto phase = phase0 + static_cast<uint32_t>(s);
    const bool from_input = own_from_input && send_c == r;
    for (size_t j = 0; j < sc.slices(send_c); ++j) {
      if (from_input) {
        Step send{StepKind::send, BufferId::input, right, sc.offset(send_c, j), sc.bytes(send_c, j), 0, phase};
        send.copy_to_output = true;
        b.add(send, {}, {sc.region(send_c, j)});
        continue;
      }
      b.add({StepKind::send, BufferId::output, right, sc.offset(send_c, j), sc.bytes(send_c, j), 0, phase},
            {sc.region(send_c, j)}, {});
    }
    for (size_t j = 0; j < sc.slices(recv_c); ++j)
      b.add({StepKind::recv, BufferId::output, left, sc.offset(recv_c, j), sc.bytes(recv_c, j), 0, phase}, {},
            {sc.region(recv_c, j)});
  }
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Reduce, reduce-scatter and all-gather around the ring: rough figures, so that the log still
// gives a time for the collectives that have one algorithm.
Prediction ringPhase(const Fabric& x, bool reduces) {
  double share = (x.n - 1) / x.n * x.S;
  return ok((x.n - 1) * x.stepAny(1) + x.move(share, share) + (reduces ? share / x.g : 0));
}

}  // namespace coll::algo::cost
