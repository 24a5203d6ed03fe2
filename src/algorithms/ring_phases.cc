#include "algorithms/ring_phases.h"

#include "algorithms/reduce_slots.h"
#include "algorithms/ring_collectives.h"

namespace coll::algo {

namespace {

// Two areas of a chunk each (chunk 0 is the largest), from `base` in scratch: step s's partial
// sums take area s mod 2, slice j where it lies in its chunk.
class PartialSums {
 public:
  PartialSums(const SlicedChunks& sc, size_t base)
      : sc_(sc), base_(base), area_(sc.chunkBytes(0)), slices_(sc.slices(0)) {}
  size_t at(int step, int c, size_t j) const {
    return base_ + static_cast<size_t>(step % 2) * area_ + (sc_.offset(c, j) - sc_.chunkOffset(c));
  }
  size_t region(int step, size_t j) const { return sc_.numRegions() + static_cast<size_t>(step % 2) * slices_ + j; }
  size_t end() const { return base_ + 2 * area_; }

 private:
  const SlicedChunks& sc_;
  size_t base_, area_, slices_;
};

}  // namespace

size_t partialSumRegions(const SlicedChunks& sc) { return 2 * sc.slices(0); }

void addRingReduceScatter(const BuildParams& p, const SlicedChunks& sc, ScheduleBuilder& b, int shift,
                          BufferId first_touch, uint32_t phase0, bool partials_in_scratch) {
  const int n = p.nranks, r = p.rank;
  const int right = ring::right(r, n), left = ring::left(r, n);
  ReduceSlots slots(p);
  const PartialSums partials(sc, slots.reserved());
  for (int s = 0; s < n - 1; ++s) {
    int send_c = ring::mod(ring::reduceScatterSendChunk(r, n, s) + shift, n);
    int recv_c = ring::mod(ring::reduceScatterRecvChunk(r, n, s) + shift, n);
    auto phase = phase0 + static_cast<uint32_t>(s);
    // Step 0 sends the rank's own contribution straight from where it lies; later steps what
    // the step before summed.
    for (size_t j = 0; j < sc.slices(send_c); ++j) {
      if (s > 0 && partials_in_scratch) {
        b.add({StepKind::send, BufferId::scratch, right, partials.at(s - 1, send_c, j), sc.bytes(send_c, j), 0, phase},
              {partials.region(s - 1, j)}, {});
        continue;
      }
      b.add({StepKind::send, s == 0 ? first_touch : BufferId::output, right, sc.offset(send_c, j), sc.bytes(send_c, j),
             0, phase},
            {sc.region(send_c, j)}, {});
    }
    const bool partial = partials_in_scratch && s < n - 2;  // the last step's sum is the result
    for (size_t j = 0; j < sc.slices(recv_c); ++j) {
      Step step{StepKind::recvReduce, first_touch, left, sc.offset(recv_c, j), sc.bytes(recv_c, j), 0, phase};
      if (!partial) {
        slots.add(b, std::move(step), sc.region(recv_c, j));
        continue;
      }
      step.partial_at = partials.at(s, recv_c, j);
      // It reads this rank's own operand where it lies (the output, in place: a later receive there
      // must wait for it, which the ring's causality alone also ensures) and writes scratch.
      std::vector<size_t> reads{partials.region(s, j)};
      if (first_touch == BufferId::output) reads.push_back(sc.region(recv_c, j));
      slots.add(b, std::move(step), reads, {partials.region(s, j)});
    }
  }
  b.setScratchBytes(partials_in_scratch ? partials.end() : slots.bytes());
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
