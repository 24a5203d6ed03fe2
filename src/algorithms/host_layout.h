// Where a rank sits among hosts of equal size, for the hierarchical algorithms: host h of H,
// local index l of L, and the rank at any (host, local index).
#pragma once

#include <vector>

#include "algorithms/patterns/ring.h"

namespace coll::algo {

struct HostLayout {
  const std::vector<std::vector<int>>& hosts;  // ranks of each host, as the communicator grouped them
  int host = 0, local = 0, L = 1, H = 1;
  int rankAt(int h, int l) const { return hosts[ring::mod(h, H)][l]; }
};

// The layout seen from `rank`; hosts must hold the same number of ranks each (hierarchicalFits).
inline HostLayout locateRank(const std::vector<std::vector<int>>& hosts, int rank) {
  HostLayout at{hosts};
  at.H = static_cast<int>(hosts.size());
  at.L = static_cast<int>(hosts.front().size());
  for (int h = 0; h < at.H; ++h)
    for (int l = 0; l < at.L; ++l)
      if (hosts[h][l] == rank) at.host = h, at.local = l;
  return at;
}

}  // namespace coll::algo
