// Double binary tree all-reduce, pipelined (as NCCL's "tree"). The buffer is cut in two
// halves; half t is reduced up tree t (patterns/double_binary_tree.h) to its root and
// broadcast back down, slice by slice, so both trees and both directions work at once. Each
// rank is interior in one tree and a leaf in the other, so every link carries about the
// buffer once each way, like the ring, but a slice needs only O(log n) hops instead of the
// ring's 2(n-1): the choice for mid-sized messages on many ranks.
// Bit-identical results: each slice is reduced in one order, finished (and averaged) by its
// tree's root, and copied down.
#pragma once

#include "algorithms/cost/fabric.h"
#include "algorithms/schedule_builder.h"

namespace coll::algo {

Schedule buildTreeAllreduce(const BuildParams& p);

}  // namespace coll::algo

// Predicted times (cost/fabric.h), beside the builders above.
namespace coll::algo::cost {
Prediction treeAllreduce(const Fabric& x);
}  // namespace coll::algo::cost
