#include "algorithms/rhd_allreduce.h"

#include <algorithm>

#include "algorithms/cost/link_load.h"
#include "algorithms/patterns/halving_doubling.h"
#include "algorithms/reduce_slots.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {
namespace {

// The buffer as p2 blocks (chunk c of a p2-rank split), each cut into slices: the regions.
BuildParams blocksOf(const BuildParams& p) {
  BuildParams b = p;
  b.nranks = hd::powerOfTwoFloor(p.nranks);
  return b;
}

class RhdBuilder {
 public:
  explicit RhdBuilder(const BuildParams& p)
      : p_(p), p2_(hd::powerOfTwoFloor(p.nranks)), steps_(hd::log2Floor(p.nranks)), blocks_(blocksOf(p)),
        b_("rhd", blocks_.numRegions()), slice_(std::max<size_t>(1, p.slice_bytes / p.elem_size) * p.elem_size) {}

  // Phases: 0 fold in, 1..L halving, L+1..2L doubling, 2L+1 fold out (L = log2 p2).
  Schedule build() {
    b_.setNumPhases(static_cast<uint32_t>(2 * steps_ + 2));
    const BlockRange all{0, p2_};
    BufferId current = p_.in_place ? BufferId::output : BufferId::input;
    const hd::FoldRole role = hd::foldRole(p_.rank, p_.nranks);
    const int fold_peer = hd::foldPartner(p_.rank);
    if (role == hd::FoldRole::donor) {  // hand the data over, get the result back
      transfer(StepKind::send, fold_peer, current, all, 0);
      transfer(StepKind::recv, fold_peer, BufferId::output, all, lastPhase());
      return finish();
    }
    if (role == hd::FoldRole::absorber) {
      transfer(StepKind::recvReduce, fold_peer, current, all, 0);
      current = BufferId::output;
    }
    const int v = hd::virtualRank(p_.rank, p_.nranks);
    for (int s = 0; s < steps_; ++s) {
      hd::Exchange x = hd::halvingStep(v, p2_, s);
      const int peer = hd::realRank(x.partner, p_.nranks);
      transfer(StepKind::send, peer, current, x.send, uint32_t(1 + s));
      transfer(StepKind::recvReduce, peer, current, x.recv, uint32_t(1 + s));
      current = BufferId::output;
    }
    if (p_.average) transfer(StepKind::divide, -1, BufferId::output, {v, v + 1}, uint32_t(steps_));
    for (int s = 0; s < steps_; ++s) {
      hd::Exchange x = hd::doublingStep(v, p2_, s);
      const int peer = hd::realRank(x.partner, p_.nranks);
      transfer(StepKind::send, peer, BufferId::output, x.send, uint32_t(1 + steps_ + s));
      transfer(StepKind::recv, peer, BufferId::output, x.recv, uint32_t(1 + steps_ + s));
    }
    if (role == hd::FoldRole::absorber) transfer(StepKind::send, fold_peer, BufferId::output, all, lastPhase());
    return finish();
  }

 private:
  using BlockRange = hd::BlockRange;

  uint32_t lastPhase() const { return static_cast<uint32_t>(2 * steps_ + 1); }

  Schedule finish() {
    b_.setScratchBytes(slots_.bytes());
    return b_.finish();
  }

  // The blocks of a range lie side by side, so the range moves as one run of slices: a small
  // buffer costs one message per step, not one per block.
  void transfer(StepKind kind, int peer, BufferId source, BlockRange range, uint32_t phase) {
    const size_t lo = blocks_.chunkOffset(range.first);
    const size_t hi = blocks_.chunkOffset(range.last - 1) + blocks_.chunkBytes(range.last - 1);
    for (size_t at = lo; at < hi; at += slice_) {
      const size_t bytes = std::min(slice_, hi - at);
      std::vector<size_t> regions = regionsOverlapping(range, at, at + bytes);
      Step step{kind, source, peer, at, bytes, 0, phase};
      if (kind == StepKind::send) {
        b_.add(std::move(step), regions, {});
      } else if (kind == StepKind::recv) {
        b_.add(std::move(step), {}, regions);
      } else if (kind == StepKind::divide) {
        b_.add(std::move(step), regions, regions);
      } else {  // recvReduce
        slots_.add(b_, std::move(step), regions);
      }
    }
  }

  // Regions are block slices, so a message never shares a region with the other direction's
  // message of the same step (different blocks): those must not wait for each other.
  std::vector<size_t> regionsOverlapping(BlockRange range, size_t lo, size_t hi) const {
    std::vector<size_t> regions;
    for (int c = range.first; c < range.last; ++c)
      for (size_t j = 0; j < blocks_.slices(c); ++j) {
        const size_t a = blocks_.offset(c, j), z = a + blocks_.bytes(c, j);
        if (a < hi && lo < z) regions.push_back(blocks_.region(c, j));
      }
    return regions;
  }

  const BuildParams& p_;
  const int p2_, steps_;
  SlicedChunks blocks_;
  ScheduleBuilder b_;
  const size_t slice_;
  ReduceSlots slots_{p_.pipeline_depth, slice_};
};

}  // namespace

Schedule buildRhdAllreduce(const BuildParams& p) {
  if (p.count == 0 || p.nranks == 1) {
    ScheduleBuilder b("rhd", 1);
    b.setNumPhases(static_cast<uint32_t>(2 * hd::log2Floor(p.nranks) + 2));
    if (p.count > 0 && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  return RhdBuilder(p).build();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Recursive halving-doubling (Rabenseifner), farthest partner first (hd::halvingStep): 2
// log2(p) steps for p = the largest power of two <= n (non powers of two fold the extra ranks
// in and out: 2 more steps moving the whole buffer). With ranks numbered host by host the
// first halving steps, which move the largest halves, are the ones that cross hosts: a host
// link carries links::rhdAllreduce of the buffer (3 on 4 x 2, 2(H-1)/H with one rank per
// host). Fewer elements than p leave blocks empty: rank 0 still takes every step, but most
// ranks send nothing in most of them (busy()). Its last halvings and first doublings stay
// inside hosts (stepIntra()).
Prediction rhdAllreduce(const Fabric& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double halvings = std::log2(p);
  double crossing = x.multi ? std::min(halvings, log2ceil(x.H)) : 0;
  double fold = p == x.n ? 0 : 2.0;  // the whole buffer in and out, once each
  double busy = x.busy(messages::rhdAllreduce);
  double latency = 2 * (crossing * x.stepAny(busy) + (halvings - crossing) * x.stepIntra(busy)) + fold * x.stepAny(1);
  double mem = (2 * (x.n - 1) / x.n + fold) * x.S / x.bi;
  double link = x.multi ? links::rhdAllreduce(x.host_of, x.leaves) * x.S / x.be / x.unpipelinedEfficiency() : 0;
  return ok(x.exchangeTotal(latency, mem, link, (x.n - 1) / x.n * x.S / x.g));
}

}  // namespace coll::algo::cost
