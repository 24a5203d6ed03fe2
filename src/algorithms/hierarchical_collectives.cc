#include "algorithms/hierarchical_collectives.h"

#include <algorithm>
#include <cmath>

#include "algorithms/hierarchical_allreduce.h"
#include "algorithms/host_layout.h"
#include "algorithms/reduce_slots.h"
#include "algorithms/ring_collectives.h"
#include "algorithms/ring_phases.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {
namespace {

class LaneBuilder {
 public:
  LaneBuilder(const BuildParams& p, const HostLayout& at) : p_(p), at_(at), sc_(p), b_("hierarchical", sc_.numRegions()) {
    b_.setNumPhases(static_cast<uint32_t>(at_.H));
  }

  // Phase 0 inside the host, phases 1 .. H-1 the lane's ring across hosts.
  Schedule reduceScatter() {
    if (p_.count == 0) return b_.finish();
    const int h = at_.host, l = at_.local, H = at_.H, L = at_.L;
    for (int k = 1; k < L; ++k) {
      const int q = ring::mod(l + k, L);
      for (int i = 0; i < H; ++i) add(StepKind::send, BufferId::input, at_.rankAt(h, q), chunk(q, reduceOrder(i)), 0);
    }
    for (int i = 0; i < H; ++i) {
      const int c = chunk(l, reduceOrder(i));
      for (size_t j = 0; j < sc_.slices(c); ++j)
        for (int k = 1; k < L; ++k)
          recvReduce(at_.rankAt(h, ring::mod(l + k, L)), k == 1 ? BufferId::input : BufferId::output, c, j, 0);
    }
    const int right = at_.rankAt(h + 1, l), left = at_.rankAt(h - 1, l);
    for (int s = 0; s < H - 1; ++s) {
      const auto phase = static_cast<uint32_t>(1 + s);
      add(StepKind::send, BufferId::output, right, chunk(l, ring::mod(h - s - 1, H)), phase);
      const int c = chunk(l, ring::mod(h - s - 2, H));
      for (size_t j = 0; j < sc_.slices(c); ++j) recvReduce(left, BufferId::output, c, j, phase);
    }
    if (p_.average) addDivideOwned(p_, sc_, b_, p_.rank, static_cast<uint32_t>(H - 1));
    b_.setScratchBytes(slots_.bytes());
    return b_.finish();
  }

  // Phases 0 .. H-2 the lane's ring across hosts, phase H-1 inside the host.
  Schedule allGather() {
    if (p_.count == 0) return b_.finish();
    const int h = at_.host, l = at_.local, H = at_.H, L = at_.L;
    const int right = at_.rankAt(h + 1, l), left = at_.rankAt(h - 1, l);
    for (int s = 0; s < H - 1; ++s) {
      const auto phase = static_cast<uint32_t>(s);
      const int send_c = chunk(l, ring::mod(h - s, H));
      if (s == 0 && !p_.in_place) sendOwnCopying(right);
      else add(StepKind::send, BufferId::output, right, send_c, phase);
      add(StepKind::recv, BufferId::output, left, chunk(l, ring::mod(h - s - 1, H)), phase);
    }
    const auto last = static_cast<uint32_t>(H - 1);
    for (int k = 1; k < L; ++k) {
      const int peer = at_.rankAt(h, ring::mod(l + k, L));
      for (int i = 0; i < H; ++i) {
        const int c = chunk(l, ring::mod(h - i, H));  // in the order the ring brought them
        // Out of place the own chunk goes from the input: no wait for its copy into the output.
        add(StepKind::send, c == p_.rank && !p_.in_place ? BufferId::input : BufferId::output, peer, c, last);
      }
    }
    for (int k = 1; k < L; ++k) {
      const int q = ring::mod(l - k, L);
      for (int i = 0; i < H; ++i) add(StepKind::recv, BufferId::output, at_.rankAt(h, q), chunk(q, ring::mod(h - i, H)), last);
    }
    return b_.finish();
  }

 private:
  // Lane q's chunk on host i: the chunk of the rank with local index q there.
  int chunk(int q, int i) const { return at_.rankAt(i, q); }
  // The reduce-scatter's lane chunks in the order its ring sends them: what step 0 sends
  // first, this rank's own (received last) at the end.
  int reduceOrder(int i) const { return ring::mod(at_.host - 1 - i, at_.H); }

  // Every slice of chunk c as one step each: sends read their region, receives write it.
  void add(StepKind kind, BufferId source, int peer, int c, uint32_t phase) {
    for (size_t j = 0; j < sc_.slices(c); ++j) {
      const size_t region = sc_.region(c, j);
      Step step{kind, source, peer, sc_.offset(c, j), sc_.bytes(c, j), 0, phase};
      if (kind == StepKind::recv) b_.add(std::move(step), {}, {region});
      else b_.add(std::move(step), source == BufferId::output ? std::vector<size_t>{region} : std::vector<size_t>{}, {});
    }
  }

  // The all-gather's first send across hosts: this rank's chunk from the input, written into
  // the output on the way (Step::copy_to_output), as the ring all-gather does.
  void sendOwnCopying(int peer) {
    const int c = p_.rank;
    for (size_t j = 0; j < sc_.slices(c); ++j) {
      Step send{StepKind::send, BufferId::input, peer, sc_.offset(c, j), sc_.bytes(c, j), 0, 0};
      send.copy_to_output = true;
      b_.add(std::move(send), {}, {sc_.region(c, j)});
    }
  }

  void recvReduce(int peer, BufferId source, int c, size_t j, uint32_t phase) {
    slots_.add(b_, {StepKind::recvReduce, source, peer, sc_.offset(c, j), sc_.bytes(c, j), 0, phase}, sc_.region(c, j));
  }

  const BuildParams& p_;
  const HostLayout& at_;
  SlicedChunks sc_;
  ScheduleBuilder b_;
  ReduceSlots slots_{p_};
};

}  // namespace

Schedule buildHierarchicalReduceScatter(const BuildParams& p) {
  if (!hierarchicalFits(p.hosts)) return buildRingReduceScatter(p);
  const HostLayout at = locateRank(*p.hosts, p.rank);
  return LaneBuilder(p, at).reduceScatter();
}

Schedule buildHierarchicalAllgather(const BuildParams& p) {
  if (!hierarchicalFits(p.hosts)) return buildRingAllgather(p);
  const HostLayout at = locateRank(*p.hosts, p.rank);
  return LaneBuilder(p, at).allGather();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// One step inside the host (each local peer sent its lane's H chunks, or the part's slices
// where there are more), H - 1 steps across; a host's link carries (H-1)/H of the buffer, the
// shared memory (L-1)/L; reducing, each rank combines its lane's part L - 1 times and its own
// chunk H - 1 times more. The phases run one after the other (total()), as the all-reduce's.
Prediction hierarchicalPhase(const Fabric& x, bool reduces) {
  if (!x.multi) return refuse("one host: nothing to split across hosts");
  if (!x.balanced || x.L < 2) return refuse("needs every host to hold the same number (>1) of ranks");
  const double S = x.S * x.n;  // the whole buffer
  const double per_peer = std::max(x.H, std::ceil(S / (x.L * x.slice)));
  const double latency = x.stepIntra(1) + (x.H - 1) * x.stepAny(1) + (x.L - 1) * (per_peer - 1) * x.perMessage();
  const double intra = (x.L - 1) / x.L * S / x.bi;
  const double inter = (x.H - 1) / x.H * S * x.uplinkSlowdown() / x.be;
  const double reduce = reduces ? ((x.L - 1) / x.L + (x.H - 1) / (x.H * x.L)) * S / x.g : 0;
  if (!x.link_bound) return ok(latency + intra + inter + reduce);
  return ok(x.total(latency, intra, inter, reduce));
}

// ringPhase with the selector's byte count (one rank's chunk) scaled to the whole buffer.
Prediction ringChunked(const Fabric& x, bool reduces) {
  Fabric whole = x;
  whole.S = x.S * x.n;
  return ringPhase(whole, reduces);
}

}  // namespace coll::algo::cost
