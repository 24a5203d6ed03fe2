// Recursive halving-doubling arithmetic (Rabenseifner), apart from any data movement.
//
// A world of n ranks is folded onto p2 = 2^floor(log2 n) "virtual" ranks: among the first
// 2*(n - p2) ranks, each even rank (a donor) hands its whole buffer to the odd rank above it
// (an absorber), which reduces it, takes part, and hands the result back at the end. Every
// other rank takes part directly. The buffer is cut into p2 blocks; recursive halving leaves
// virtual rank v owning block v fully reduced, recursive doubling then gathers every block.
#pragma once

namespace coll::algo::hd {

inline int powerOfTwoFloor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
inline int log2Floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
inline int extraRanks(int n) { return n - powerOfTwoFloor(n); }

enum class FoldRole { direct, donor, absorber };

inline FoldRole foldRole(int rank, int n) {
  if (rank >= 2 * extraRanks(n)) return FoldRole::direct;
  return rank % 2 == 0 ? FoldRole::donor : FoldRole::absorber;
}
// A donor's absorber and an absorber's donor.
inline int foldPartner(int rank) { return rank ^ 1; }

// -1 for donors, which take no part between the folds.
inline int virtualRank(int rank, int n) {
  const int extra = extraRanks(n);
  if (rank < 2 * extra) return rank % 2 == 1 ? rank / 2 : -1;
  return rank - extra;
}
inline int realRank(int v, int n) {
  const int extra = extraRanks(n);
  return v < extra ? 2 * v + 1 : v + extra;
}

struct BlockRange {
  int first = 0, last = 0;  // blocks [first, last)
  bool operator==(const BlockRange&) const = default;
};

struct Exchange {
  int partner = -1;   // virtual rank
  BlockRange send;    // what goes to the partner
  BlockRange recv;    // what comes from it (halving: reduced into the part this rank keeps)
};

// Halving step s (0 .. log2 p2 - 1), m = p2 >> (s+1): v holds the 2m blocks around it; it
// keeps the half its bit m selects and sends the other half to the partner v ^ m, which keeps
// that one. After the last step v keeps block v alone.
inline Exchange halvingStep(int v, int p2, int s) {
  const int m = p2 >> (s + 1);
  const int base = v & ~(2 * m - 1);
  const BlockRange lower{base, base + m}, upper{base + m, base + 2 * m};
  const bool keeps_upper = (v & m) != 0;
  return {v ^ m, keeps_upper ? lower : upper, keeps_upper ? upper : lower};
}

// Doubling step s (0 .. log2 p2 - 1): v holds the 2^s blocks around it, sends them to the
// partner v ^ 2^s and receives the partner's: the reverse of halving step log2 p2 - 1 - s.
inline Exchange doublingStep(int v, int p2, int s) {
  (void)p2;
  const int m = 1 << s;
  const int mine = v & ~(m - 1), theirs = (v ^ m) & ~(m - 1);
  return {v ^ m, {mine, mine + m}, {theirs, theirs + m}};
}

}  // namespace coll::algo::hd
