#include "algorithms/hierarchical_allreduce.h"

#include <algorithm>

#include "algorithms/host_layout.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/reduce_slots.h"
#include "algorithms/ring_allreduce.h"

namespace coll::algo {
namespace {

// The buffer as L parts (one per local rank), each part as H chunks (one per host), each
// chunk as slices; a region is one (part, chunk, slice).
class NestedSlices {
 public:
  NestedSlices(const BuildParams& p, int parts, int chunks)
      : count_(p.count), elem_(p.elem_size), parts_(parts), chunks_(chunks),
        per_(std::max<size_t>(1, p.slice_bytes / p.elem_size)) {
    for (int q = 0; q < parts_; ++q)
      for (int c = 0; c < chunks_; ++c) {
        first_.push_back(regions_);
        regions_ += slices(q, c);
      }
  }
  size_t regions() const { return regions_; }
  size_t slices(int q, int c) const { return ring::numSlices(range(q, c).count, per_); }
  size_t region(int q, int c, size_t j) const { return first_[q * chunks_ + c] + j; }
  size_t offset(int q, int c, size_t j) const { return (range(q, c).first + j * per_) * elem_; }
  size_t bytes(int q, int c, size_t j) const { return std::min(per_, range(q, c).count - j * per_) * elem_; }

 private:
  ring::Chunk range(int q, int c) const {
    ring::Chunk part = ring::chunk(count_, parts_, q);
    ring::Chunk sub = ring::chunk(part.count, chunks_, c);
    return {part.first + sub.first, sub.count};
  }
  size_t count_, elem_;
  int parts_, chunks_;
  size_t per_;
  std::vector<size_t> first_;
  size_t regions_ = 0;
};

class Builder {
 public:
  Builder(const BuildParams& p, const HostLayout& at)
      : p_(p), at_(at), ns_(p, at.L, at.H), b_("hierarchical", ns_.regions()) {}

  Schedule build() {
    b_.setNumPhases(static_cast<uint32_t>(2 * at_.H));
    BufferId first = p_.in_place ? BufferId::output : BufferId::input;
    if (at_.L > 1) {
      intraReduceScatter(first);
      first = BufferId::output;
    }
    interRing(first);
    if (at_.L > 1) intraAllGather();
    b_.setScratchBytes(slots_.bytes());
    return b_.finish();
  }

 private:
  void recvReduce(int peer, BufferId source, int q, int c, size_t j, uint32_t phase) {
    slots_.add(b_, {StepKind::recvReduce, source, peer, ns_.offset(q, c, j), ns_.bytes(q, c, j), 0, phase},
               ns_.region(q, c, j));
  }

  // The host ring starts with this host's chunk (interRing, step 0): the phases inside the
  // host take the chunks in ring order from there, so the ring's first message waits only for
  // the first chunk's reduction, and every host's schedule is its neighbour's moved by one
  // host (what coll-sim's periodic simulation relies on, tools/sim/symmetry.h).
  int chunkAt(int i) const {
    const int first = at_.H > 1 ? ring::reduceScatterSendChunk(at_.host, at_.H, 0) : 0;
    return ring::mod(first + i, at_.H);
  }

  void sendPart(int peer, BufferId source, int q, uint32_t phase) {
    for (int i = 0; i < at_.H; ++i) {
      const int c = chunkAt(i);
      for (size_t j = 0; j < ns_.slices(q, c); ++j)
        b_.add({StepKind::send, source, peer, ns_.offset(q, c, j), ns_.bytes(q, c, j), 0, phase}, {ns_.region(q, c, j)}, {});
    }
  }

  void intraReduceScatter(BufferId first) {
    for (int k = 1; k < at_.L; ++k) {
      int q = ring::mod(at_.local + k, at_.L);
      sendPart(at_.rankAt(at_.host, q), first, q, 0);
    }
    for (int i = 0; i < at_.H; ++i) {
      const int c = chunkAt(i);
      for (size_t j = 0; j < ns_.slices(at_.local, c); ++j)
        for (int k = 1; k < at_.L; ++k)
          recvReduce(at_.rankAt(at_.host, ring::mod(at_.local + k, at_.L)), k == 1 ? first : BufferId::output,
                     at_.local, c, j, 0);
    }
  }

  // Ring all-reduce of part `local` among this local index's ranks on every host.
  void interRing(BufferId first) {
    const int H = at_.H, h = at_.host, l = at_.local;
    const int right = at_.rankAt(h + 1, l), left = at_.rankAt(h - 1, l);
    for (int s = 0; s < H - 1; ++s) {
      int send_c = ring::reduceScatterSendChunk(h, H, s), recv_c = ring::reduceScatterRecvChunk(h, H, s);
      for (size_t j = 0; j < ns_.slices(l, send_c); ++j)
        b_.add({StepKind::send, s == 0 ? first : BufferId::output, right, ns_.offset(l, send_c, j),
                ns_.bytes(l, send_c, j), 0, uint32_t(1 + s)},
               {ns_.region(l, send_c, j)}, {});
      for (size_t j = 0; j < ns_.slices(l, recv_c); ++j) recvReduce(left, first, l, recv_c, j, uint32_t(1 + s));
    }
    if (p_.average) divideOwned(H > 1 ? ring::ownedChunk(h, H) : 0);
    for (int s = 0; s < H - 1; ++s) {
      int send_c = ring::allGatherSendChunk(h, H, s), recv_c = ring::allGatherRecvChunk(h, H, s);
      auto phase = static_cast<uint32_t>(H + s);
      for (size_t j = 0; j < ns_.slices(l, send_c); ++j)
        b_.add({StepKind::send, BufferId::output, right, ns_.offset(l, send_c, j), ns_.bytes(l, send_c, j), 0, phase},
               {ns_.region(l, send_c, j)}, {});
      for (size_t j = 0; j < ns_.slices(l, recv_c); ++j)
        b_.add({StepKind::recv, BufferId::output, left, ns_.offset(l, recv_c, j), ns_.bytes(l, recv_c, j), 0, phase}, {},
               {ns_.region(l, recv_c, j)});
    }
  }

  void divideOwned(int c) {
    for (size_t j = 0; j < ns_.slices(at_.local, c); ++j) {
      size_t region = ns_.region(at_.local, c, j);
      b_.add({StepKind::divide, BufferId::output, -1, ns_.offset(at_.local, c, j), ns_.bytes(at_.local, c, j), 0,
              uint32_t(at_.H - 1)},
             {region}, {region});
    }
  }

  void intraAllGather() {
    auto last = static_cast<uint32_t>(2 * at_.H - 1);
    for (int k = 1; k < at_.L; ++k)
      sendPart(at_.rankAt(at_.host, ring::mod(at_.local + k, at_.L)), BufferId::output, at_.local, last);
    for (int k = 1; k < at_.L; ++k) {
      int q = ring::mod(at_.local - k, at_.L);
      int peer = at_.rankAt(at_.host, q);
      for (int i = 0; i < at_.H; ++i) {
        const int c = chunkAt(i);
        for (size_t j = 0; j < ns_.slices(q, c); ++j)
          b_.add({StepKind::recv, BufferId::output, peer, ns_.offset(q, c, j), ns_.bytes(q, c, j), 0, last}, {},
                 {ns_.region(q, c, j)});
      }
    }
  }

  const BuildParams& p_;
  const HostLayout& at_;
  NestedSlices ns_;
  ScheduleBuilder b_;
  ReduceSlots slots_{p_};
};

}  // namespace

bool hierarchicalFits(const std::vector<std::vector<int>>* hosts) {
  if (!hosts || hosts->size() < 2 || hosts->front().size() < 2) return false;
  for (const auto& h : *hosts)
    if (h.size() != hosts->front().size()) return false;
  return true;
}

Schedule buildHierarchicalAllreduce(const BuildParams& p) {
  if (!hierarchicalFits(p.hosts)) return buildRingAllreduce(p);
  const HostLayout at = locateRank(*p.hosts, p.rank);
  if (p.count == 0) {
    ScheduleBuilder b("hierarchical", 0);
    b.setNumPhases(static_cast<uint32_t>(2 * at.H));
    return b.finish();
  }
  return Builder(p, at).build();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Intra-host direct reduce-scatter (1 step), a ring over the H hosts per local rank
// (2(H-1) steps, each host link carrying 2(H-1)/H of the whole buffer: L rings of 1/L each),
// intra-host all-gather (1 step); of the L rings one edge each leaves a leaf switch, so an
// uplink carries what one host link does (uplinkSlowdown()). The phases run one after another,
// so where the link is not the bottleneck their times add; where it is, the link's overlaps the
// rest (Fabric::total()).
// With few elements its inter-host rings carry empty chunks, but its intra-host phases do
// not, so every step is charged as busy (4 x 2 at 8 B: 312 us measured for 8 steps).
Prediction hierarchicalAllreduce(const Fabric& x) {
  if (!x.multi) return refuse("one host: nothing to split across hosts");
  if (!x.balanced || x.L < 2) return refuse("needs every host to hold the same number (>1) of ranks");
  // The phases inside a host send each peer its part chunk by chunk (H chunks, or the part's
  // slices where there are more): at 1,024 ranks (128 hosts) that is 896 messages a phase,
  // whose software cost coll-sim measured as the difference between hierarchical's 2.7 ms and
  // this formula's 1.7 ms at 1 MiB (docs/SIMULATOR.md).
  double per_peer = std::max(x.H, std::ceil(x.S / (x.L * x.slice)));
  double latency = 2 * x.stepIntra(1) + 2 * (x.H - 1) * x.stepAny(1) + 2 * (x.L - 1) * (per_peer - 1) * x.perMessage();
  double intra = 2 * (x.L - 1) / x.L * x.S / x.bi;
  double inter = 2 * (x.H - 1) / x.H * x.S * x.uplinkSlowdown() / x.be;
  double reduce = ((x.L - 1) / x.L + (x.H - 1) / (x.H * x.L)) * x.S / x.g;
  if (!x.link_bound) return ok(latency + intra + inter + reduce);
  return ok(x.total(latency, intra, inter, reduce));
}

}  // namespace coll::algo::cost
