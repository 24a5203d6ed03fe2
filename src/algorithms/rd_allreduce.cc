#include "algorithms/rd_allreduce.h"

#include <algorithm>

#include "algorithms/patterns/halving_doubling.h"
#include "algorithms/reduce_slots.h"

namespace coll::algo {
namespace {

class RdBuilder {
 public:
  explicit RdBuilder(const BuildParams& p)
      : p_(p), p2_(hd::powerOfTwoFloor(p.nranks)), steps_(hd::log2Floor(p.nranks)), b_("rd", 0),
        total_(p.count * p.elem_size), slice_(std::max<size_t>(1, p.slice_bytes / p.elem_size) * p.elem_size) {}

  // Phases: 0 fold in, 1..L exchanges, L+1 fold out (L = log2 p2). Each slice of the buffer
  // is a chain of its own, so a large (forced) buffer still pipelines.
  Schedule build() {
    b_.setNumPhases(static_cast<uint32_t>(steps_ + 2));
    for (size_t at = 0; at < total_; at += slice_) buildSlice(at, std::min(slice_, total_ - at));
    b_.setScratchBytes(slots_.bytes());
    return b_.finish();
  }

 private:
  static constexpr int64_t kNone = -1;

  uint32_t lastPhase() const { return static_cast<uint32_t>(steps_ + 1); }

  void buildSlice(size_t at, size_t bytes) {
    BufferId current = p_.in_place ? BufferId::output : BufferId::input;
    const hd::FoldRole role = hd::foldRole(p_.rank, p_.nranks);
    const int fold_peer = hd::foldPartner(p_.rank);
    if (role == hd::FoldRole::donor) {  // hand the slice over, get the result back
      int64_t sent = add({StepKind::send, current, fold_peer, at, bytes, 0, 0}, kNone);
      add({StepKind::recv, BufferId::output, fold_peer, at, bytes, 0, lastPhase()}, sent);
      return;
    }
    int64_t last = kNone;  // the step that last wrote this slice of the output
    if (role == hd::FoldRole::absorber) {
      last = addCombining({StepKind::recvReduce, current, fold_peer, at, bytes, 0, 0}, kNone, false, kNone);
      current = BufferId::output;
    }
    const int v = hd::virtualRank(p_.rank, p_.nranks);
    for (int s = 0; s < steps_; ++s) {
      const int partner = v ^ (1 << s);
      const int peer = hd::realRank(partner, p_.nranks);
      const auto phase = static_cast<uint32_t>(1 + s);
      int64_t sent = add({StepKind::send, current, peer, at, bytes, 0, phase}, last);
      last = addCombining({StepKind::recvReduce, current, peer, at, bytes, 0, phase}, last, partner < v, sent);
      current = BufferId::output;
    }
    if (last == kNone && !p_.in_place)  // a lone rank's out-of-place copy
      last = add({StepKind::copy, BufferId::input, -1, at, bytes, 0, 0}, kNone);
    if (p_.average && p_.nranks > 1) last = add({StepKind::divide, BufferId::output, -1, at, bytes, 0, lastPhase()}, last);
    if (role == hd::FoldRole::absorber) add({StepKind::send, BufferId::output, fold_peer, at, bytes, 0, lastPhase()}, last);
  }

  // Each slice is one chain, so dependencies are stated, not derived from regions.
  int64_t add(Step step, int64_t after) {
    if (after != kNone) step.deps.push_back(static_cast<uint32_t>(after));
    return b_.add(std::move(step), std::initializer_list<size_t>{}, std::initializer_list<size_t>{});
  }

  // A recvReduce into the next scratch slot (reduce_slots.h).
  int64_t addCombining(Step step, int64_t after, bool received_first, int64_t reduce_after) {
    step.received_first = received_first;
    step.reduce_after = static_cast<int32_t>(reduce_after);
    int64_t index = add(slots_.next(std::move(step)), after);
    slots_.used(static_cast<uint32_t>(index));
    return index;
  }

  const BuildParams& p_;
  const int p2_, steps_;
  ScheduleBuilder b_;
  const size_t total_, slice_;
  ReduceSlots slots_{p_.pipeline_depth, slice_};
};

}  // namespace

Schedule buildRdAllreduce(const BuildParams& p) { return RdBuilder(p).build(); }

}  // namespace coll::algo

namespace coll::algo::cost {

// Recursive doubling: log2 p exchanges of the whole buffer (non powers of two fold the extra
// ranks in and out: 2 more steps). Nearest partners first, so with ranks numbered host by host
// the first steps stay inside a host and only the last ceil(log2 H) cross, each with all L
// ranks of a host sending their whole buffer over its link. Every rank sends in every step.
Prediction rdAllreduce(const Fabric& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double steps = std::log2(p);
  double crossing = x.multi ? std::min(steps, log2ceil(x.H)) : 0;
  double extra = p == x.n ? 0 : 2 * (x.stepAny(1) + x.S / x.betaSlowest());
  // A step across leaves sends every rank's whole buffer over the uplink of hosts_per_leaf
  // hosts: oversubscription host links' worth.
  double across_leaves = x.acrossLeaves(crossing);
  double per_link =
      (crossing - across_leaves + across_leaves * x.leaves.oversubscription) * x.L * x.S / x.unpipelinedEfficiency();
  double latency = crossing * x.stepAny(1) + (steps - crossing) * x.stepIntra(1);
  return ok(x.exchangeTotal(latency, steps * x.S / x.bi, x.multi ? per_link / x.be : 0, steps * x.S / x.g) + extra);
}

}  // namespace coll::algo::cost
