#include "algorithms/tree_allreduce.h"

#include <algorithm>

#include "algorithms/cost/link_load.h"
#include "algorithms/patterns/double_binary_tree.h"
#include "algorithms/reduce_slots.h"
#include "algorithms/sliced_chunks.h"

namespace coll::algo {
namespace {

constexpr uint32_t kReducePhase = 0, kBroadcastPhase = 1;

// The halves as two chunks of a two-"rank" split: chunk t is tree t's, cut into slices.
BuildParams halvesOf(const BuildParams& p) {
  BuildParams h = p;
  h.nranks = 2;
  return h;
}

class TreeBuilder {
 public:
  explicit TreeBuilder(const BuildParams& p)
      : p_(p), halves_(halvesOf(p)), b_("tree", halves_.numRegions()),
        first_touch_(p.in_place ? BufferId::output : BufferId::input) {
    for (int t = 0; t < 2; ++t) nodes_[t] = dbtree::treeNode(t, p.rank, p.nranks);
  }

  // Slice j of each half is reduced at tick j and broadcast at tick j + lag. Every rank
  // issues its steps in this one global order, so each peer pair sees its messages in the
  // same order on both sides (what FIFO matching needs), whichever trees share the edge.
  Schedule build() {
    b_.setNumPhases(2);
    const size_t slices = std::max(halves_.slices(0), halves_.slices(1));
    const size_t lag = broadcastLag();
    for (size_t tick = 0; tick < slices + lag; ++tick) {
      for (int t = 0; t < 2; ++t)
        if (tick < halves_.slices(t)) addReduceUp(t, tick);
      for (int t = 0; t < 2; ++t)
        if (tick >= lag && tick - lag < halves_.slices(t)) addBroadcastDown(t, tick - lag);
    }
    b_.setScratchBytes(slots_.bytes());
    return b_.finish();
  }

 private:
  // When two trees share an edge, one rank's sends to a peer mix one tree's reduction with the
  // other's broadcast in one FIFO queue. Broadcasting slice j right after reducing slice j
  // would hold the next reduction behind a full round trip of the other tree; lagging by about
  // a round trip (2 depths) keeps both flowing. Pure ordering: no memory depends on it.
  size_t broadcastLag() const { return static_cast<size_t>(2 * dbtree::depthBound(p_.nranks)); }

  void addReduceUp(int t, size_t j) {
    const dbtree::Node& node = nodes_[t];
    const size_t region = halves_.region(t, j), offset = halves_.offset(t, j), bytes = halves_.bytes(t, j);
    BufferId current = first_touch_;  // out of place, the first reduction reads the input
    for (int child : node.children) {
      if (child < 0) continue;
      slots_.add(b_, {StepKind::recvReduce, current, child, offset, bytes, 0, kReducePhase}, region);
      current = BufferId::output;
    }
    if (node.parent >= 0) {
      b_.add({StepKind::send, current, node.parent, offset, bytes, 0, kReducePhase}, {region}, {});
    } else if (p_.average) {  // the root finishes the slice once, before anyone copies it
      b_.add({StepKind::divide, BufferId::output, -1, offset, bytes, 0, kReducePhase}, {region}, {region});
    }
  }

  void addBroadcastDown(int t, size_t j) {
    const dbtree::Node& node = nodes_[t];
    const size_t region = halves_.region(t, j), offset = halves_.offset(t, j), bytes = halves_.bytes(t, j);
    if (node.parent >= 0)
      b_.add({StepKind::recv, BufferId::output, node.parent, offset, bytes, 0, kBroadcastPhase}, {}, {region});
    for (int child : node.children)
      if (child >= 0)
        b_.add({StepKind::send, BufferId::output, child, offset, bytes, 0, kBroadcastPhase}, {region}, {});
  }

  const BuildParams& p_;
  SlicedChunks halves_;
  ScheduleBuilder b_;
  BufferId first_touch_;
  dbtree::Node nodes_[2];
  ReduceSlots slots_{p_};
};

}  // namespace

Schedule buildTreeAllreduce(const BuildParams& p) {
  if (p.count == 0 || p.nranks == 1) {
    ScheduleBuilder b("tree", 1);
    b.setNumPhases(p.nranks > 1 ? 2 : 1);
    if (p.count > 0 && !p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
    return b.finish();
  }
  return TreeBuilder(p).build();
}

}  // namespace coll::algo

namespace coll::algo::cost {

// Double binary tree, pipelined: 2 ceil(log2 n) steps; each rank receives about 2S (half the
// buffer from two children in one tree, and each half from a parent). A host link carries
// what the tree edges leaving its host carry (links::treeAllreduce: 3 buffers on 4 x 2).
// The pipeline's fill: each tree moves half the buffer in slices, and the first slice crosses
// 2D levels (D up, reduced at each, then D down) before the last rank has any of it, so a
// slice time per level and D reductions of a slice come on top of the pipelined terms. With
// ranks numbered host by host the top ceil(log2 H) levels cross hosts and the rest stay
// inside one. A level across hosts moves two slices over the parent's link (its two children's
// up, to both children down): kSlicesPerLevelAcross. A level inside a host costs one slice
// time: the sender's copy into the shared-memory ring and the receiver's out of it overlap slot
// by slot (charging both, as the first try did, put the tree 350-400 us above coll-sim at 1 MiB
// on 16 to 1,024 ranks). Charged only where the links are at least as fast as memory: on a
// shaped link slower than memory (netcluster's tbf, whose burst passes small slices at once)
// the link time already bounds the op (total()), and the measured netcluster selections
// (selector_measured_test.cc) rank best without it.
// With few slices (1 MiB is one slice per tree) the fill is most of the time. coll-sim, 8
// ranks per host at 100 Gbit/s, 1 MiB: tree at 588 us on 16 ranks and 1.99 ms on 1,024 where
// the formula without the fill gave 317 and 433 us, and so chose tree where hierarchical was
// 2-3x faster; after the sender's copy was simulated (2026-11-27), tree at 2.32, 2.77 and 3.25
// ms on 1,024, 4,096 and 16,384 ranks, about 230 us per level across hosts where one slice
// per level gave 130 (docs/SIMULATOR.md).
Prediction treeAllreduce(const Fabric& x) {
  double depth = log2ceil(x.n);
  double crossing = x.multi ? std::min(depth, log2ceil(x.H)) : 0;
  double slice = std::min(x.S / 2, x.slice);
  double fill = x.link_bound ? 0
                              : 2 * (crossing * kSlicesPerLevelAcross * slice / x.be +
                                     (depth - crossing) * slice / x.bi) +
                                    depth * slice / x.g;
  double link = x.multi ? links::treeAllreduce(x.host_of, x.leaves) * x.S / x.be : 0;
  double busy = x.busy(messages::treeAllreduce);
  double latency = 2 * (crossing * x.stepAny(busy) + (depth - crossing) * x.stepIntra(busy));
  return ok(x.total(latency + fill, 2 * x.S / x.bi, link, x.S / x.g));
}

}  // namespace coll::algo::cost
