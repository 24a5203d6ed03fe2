#include "algorithms/tree_allreduce.h"

#include <algorithm>

#include "algorithms/patterns/double_binary_tree.h"
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
    b_.setScratchBytes(std::min(slot_users_.size(), depth()) * p_.slice_bytes);
    return b_.finish();
  }

 private:
  size_t depth() const { return static_cast<size_t>(p_.pipeline_depth); }

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
      size_t k = slot_users_.size();
      Step step{StepKind::recvReduce, current, child, offset, bytes, (k % depth()) * p_.slice_bytes, kReducePhase};
      if (k >= depth()) step.deps.push_back(slot_users_[k - depth()]);
      slot_users_.push_back(b_.add(std::move(step), {region}, {region}));
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
  std::vector<uint32_t> slot_users_;  // recvReduce steps in order; slot k is reused by k + depth
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
