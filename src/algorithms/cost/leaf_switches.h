// What a probe cannot see: hosts under leaf switches whose uplinks to the spine carry less than
// their hosts' links together (a two-level fat tree, as coll-sim models it). Only a topology
// file says so (its "fabric" object: COLL_TOPO_FILE, coll-sim's files and flags); unknown means
// one switch that never blocks. Host h sits under leaf h / hosts_per_leaf (hosts ordered by
// their lowest rank, as launchers place them switch by switch).
#pragma once

namespace coll::algo::cost {

struct LeafSwitches {
  int hosts_per_leaf = 0;       // 0: one switch joins every host
  double oversubscription = 1;  // a leaf's host-facing capacity over its spine-facing capacity

  int leafOf(int host) const { return hosts_per_leaf > 0 ? host / hosts_per_leaf : 0; }
  int leaves(int hosts) const { return hosts_per_leaf > 0 ? (hosts + hosts_per_leaf - 1) / hosts_per_leaf : 1; }
  // A leaf's uplink in host links: it carries hosts_per_leaf hosts' worth over oversubscription.
  double uplinkInHostLinks() const { return hosts_per_leaf / oversubscription; }
};

}  // namespace coll::algo::cost
