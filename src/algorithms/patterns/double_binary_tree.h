// Double binary tree arithmetic (as NCCL's), apart from any data movement.
//
// Tree 0 is an in-order binary tree over positions 0..n-1: odd positions are leaves, position
// 0 is the root with one child, every other even position is interior. Tree 1 gives rank r the
// position n-1-r (mirror, n even) or r-1 (shift, n odd). Mirrored, every odd rank becomes even
// and the reverse, so each rank is interior in exactly one tree: the two trees' reductions
// load every rank's links about equally. Shifted (n odd), only rank 0 is interior in both.
// Both trees have depth about log2 n, so a slice reaches every rank in O(log n) hops.
#pragma once

namespace coll::algo::dbtree {

struct Node {
  int parent = -1;                 // -1: the root
  int children[2] = {-1, -1};      // -1: absent; children[0] is present whenever children[1] is
  int numChildren() const { return (children[0] >= 0) + (children[1] >= 0); }
};

// The node at position v of the in-order binary tree over n positions. A position's lowest
// set bit is its height above the leaves; its parent is the position with the next higher bit
// that covers it, or the one below when that would fall outside 0..n-1.
inline Node btreeNode(int v, int n) {
  Node node;
  if (v == 0) {  // the root: one child, the highest power of two below n
    int top = 1;
    while (top < n) top <<= 1;
    if (n > 1) node.children[0] = top >> 1;
    return node;
  }
  const int bit = v & -v;
  const int up = (v ^ bit) | (bit << 1);
  node.parent = up < n ? up : (v ^ bit);
  const int half = bit >> 1;
  if (half == 0) return node;  // odd positions are leaves
  node.children[0] = v - half;
  int step = half;  // the right child: the nearest position below the next higher one, in range
  while (step > 0 && v + step >= n) step >>= 1;
  if (step > 0) node.children[1] = v + step;
  return node;
}

// Rank r's position in tree t, and back.
inline int position(int tree, int rank, int n) {
  if (tree == 0) return rank;
  return n % 2 == 0 ? n - 1 - rank : (rank - 1 + n) % n;
}
inline int rankAt(int tree, int pos, int n) {
  if (tree == 0 || pos < 0) return pos;
  return n % 2 == 0 ? n - 1 - pos : (pos + 1) % n;
}

// Rank r's parent and children in tree t (0 or 1), as ranks.
inline Node treeNode(int tree, int rank, int n) {
  Node node = btreeNode(position(tree, rank, n), n);
  node.parent = rankAt(tree, node.parent, n);
  for (int& c : node.children) c = rankAt(tree, c, n);
  return node;
}

inline int root(int tree, int n) { return rankAt(tree, 0, n); }

// An upper bound on the number of edges from any rank to the root: floor(log2 n) + 1.
inline int depthBound(int n) {
  int d = 0;
  while ((1 << d) <= n) ++d;
  return d;
}

}  // namespace coll::algo::dbtree
