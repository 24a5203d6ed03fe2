// Rank arithmetic of the double binary tree and of recursive halving-doubling, checked
// exhaustively over world sizes without any schedule or transport.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithms/patterns/double_binary_tree.h"
#include "algorithms/patterns/halving_doubling.h"

namespace coll::algo {
namespace {

// ---------------------------------------------------------------------------------------
// Double binary tree

// One root; every other rank has a parent that lists it as a child; at most two children;
// every rank reaches the root within depthBound(n) edges (so no cycles).
TEST(DoubleBinaryTreePattern, EachTreeSpansEveryRankOnce) {
  for (int n = 1; n <= 70; ++n)
    for (int t = 0; t < 2; ++t) {
      SCOPED_TRACE("n " + std::to_string(n) + " tree " + std::to_string(t));
      std::vector<int> times_a_child(n, 0);
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        const dbtree::Node node = dbtree::treeNode(t, r, n);
        if (node.parent < 0) {
          ++roots;
          EXPECT_EQ(r, dbtree::root(t, n));
        } else {
          ASSERT_LT(node.parent, n);
          const dbtree::Node up = dbtree::treeNode(t, node.parent, n);
          EXPECT_TRUE(up.children[0] == r || up.children[1] == r) << "rank " << r << " not a child of its parent";
        }
        if (node.children[1] >= 0) {
          EXPECT_GE(node.children[0], 0) << "children[0] filled first";
        }
        for (int c : node.children)
          if (c >= 0) {
            ASSERT_LT(c, n);
            EXPECT_NE(c, r);
            ++times_a_child[c];
          }
        int hops = 0;
        for (int at = r; dbtree::treeNode(t, at, n).parent >= 0; at = dbtree::treeNode(t, at, n).parent)
          ASSERT_LE(++hops, dbtree::depthBound(n)) << "rank " << r << " does not reach the root";
      }
      EXPECT_EQ(roots, 1);
      for (int r = 0; r < n; ++r) EXPECT_EQ(times_a_child[r], r == dbtree::root(t, n) ? 0 : 1) << "rank " << r;
    }
}

// Each rank is interior in one tree only (even n); with n odd, rank 0 alone is interior in
// both. That keeps every rank's links equally loaded.
TEST(DoubleBinaryTreePattern, InteriorInAtMostOneTree) {
  for (int n = 2; n <= 70; ++n)
    for (int r = 0; r < n; ++r) {
      int interior = 0;
      for (int t = 0; t < 2; ++t) interior += dbtree::treeNode(t, r, n).numChildren() > 0;
      if (n % 2 == 0 || r != 0)
        EXPECT_EQ(interior, 1) << "n " << n << " rank " << r;
      else
        EXPECT_EQ(interior, 2) << "n " << n;
    }
}

TEST(DoubleBinaryTreePattern, KnownShapes) {
  // n = 8, tree 0: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7. Tree 1 mirrors it: 7 -> 3 ...
  EXPECT_EQ(dbtree::treeNode(0, 0, 8).children[0], 4);
  EXPECT_EQ(dbtree::treeNode(0, 4, 8).children[0], 2);
  EXPECT_EQ(dbtree::treeNode(0, 4, 8).children[1], 6);
  EXPECT_EQ(dbtree::treeNode(0, 7, 8).parent, 6);
  EXPECT_EQ(dbtree::root(1, 8), 7);
  EXPECT_EQ(dbtree::treeNode(1, 7, 8).children[0], 3);
  // n = 5, tree 1 is tree 0 shifted by one: rank 1 is the root, rank 0 plays position 4.
  EXPECT_EQ(dbtree::root(1, 5), 1);
  EXPECT_EQ(dbtree::treeNode(1, 1, 5).children[0], 0);
  EXPECT_EQ(dbtree::treeNode(0, 0, 1).parent, -1);
  EXPECT_EQ(dbtree::treeNode(0, 0, 1).numChildren(), 0);
}

// ---------------------------------------------------------------------------------------
// Recursive halving-doubling

TEST(HalvingDoublingPattern, FoldMapsTheWorldOntoAPowerOfTwo) {
  EXPECT_EQ(hd::powerOfTwoFloor(1), 1);
  EXPECT_EQ(hd::powerOfTwoFloor(7), 4);
  EXPECT_EQ(hd::powerOfTwoFloor(16), 16);
  EXPECT_EQ(hd::log2Floor(1), 0);
  EXPECT_EQ(hd::log2Floor(9), 3);
  for (int n = 1; n <= 70; ++n) {
    const int p2 = hd::powerOfTwoFloor(n);
    std::vector<int> seen(p2, 0);
    int donors = 0;
    for (int r = 0; r < n; ++r) {
      const int v = hd::virtualRank(r, n);
      const hd::FoldRole role = hd::foldRole(r, n);
      if (role == hd::FoldRole::donor) {
        ++donors;
        EXPECT_EQ(v, -1);
        EXPECT_EQ(hd::foldRole(hd::foldPartner(r), n), hd::FoldRole::absorber) << "n " << n << " rank " << r;
        continue;
      }
      ASSERT_GE(v, 0);
      ASSERT_LT(v, p2);
      ++seen[v];
      EXPECT_EQ(hd::realRank(v, n), r);
      if (role == hd::FoldRole::absorber) {
        EXPECT_EQ(hd::foldPartner(r), r - 1);
      }
    }
    EXPECT_EQ(donors, n - p2);
    for (int v = 0; v < p2; ++v) EXPECT_EQ(seen[v], 1) << "n " << n << " virtual rank " << v;
  }
}

// Partners agree on what crosses; each step halves what a rank holds; the last leaves v with
// block v; doubling mirrors halving and ends with every block everywhere.
TEST(HalvingDoublingPattern, PartnersAgreeAndRangesNest) {
  for (int p2 = 1; p2 <= 64; p2 *= 2) {
    const int steps = hd::log2Floor(p2);
    for (int v = 0; v < p2; ++v) {
      SCOPED_TRACE("p2 " + std::to_string(p2) + " v " + std::to_string(v));
      hd::BlockRange held{0, p2};
      for (int s = 0; s < steps; ++s) {
        const hd::Exchange x = hd::halvingStep(v, p2, s), y = hd::halvingStep(x.partner, p2, s);
        EXPECT_EQ(y.partner, v);
        EXPECT_TRUE(x.send == y.recv);
        EXPECT_TRUE(x.recv == y.send);
        const int half = (held.last - held.first) / 2;
        EXPECT_EQ(x.send.last - x.send.first, half);
        EXPECT_EQ(x.recv.last - x.recv.first, half);
        EXPECT_TRUE((x.send.last == x.recv.first && x.send.first == held.first) ||
                    (x.recv.last == x.send.first && x.recv.first == held.first));
        held = x.recv;
      }
      EXPECT_TRUE(held == (hd::BlockRange{v, v + 1}));
      for (int s = 0; s < steps; ++s) {
        const hd::Exchange x = hd::doublingStep(v, p2, s), y = hd::doublingStep(x.partner, p2, s);
        const hd::Exchange mirror = hd::halvingStep(v, p2, steps - 1 - s);
        EXPECT_TRUE(x.send == held);
        EXPECT_TRUE(x.recv == y.send);
        EXPECT_TRUE(x.send == mirror.recv && x.recv == mirror.send);
        held = {std::min(x.send.first, x.recv.first), std::max(x.send.last, x.recv.last)};
      }
      EXPECT_TRUE(held == (hd::BlockRange{0, p2}));
    }
  }
}

}  // namespace
}  // namespace coll::algo
