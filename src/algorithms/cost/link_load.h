// How much of an all-reduce's buffer the busiest host link carries, for the algorithms whose
// crossing traffic depends on which partners share a host: rhd (partners chosen by the
// halving pattern) and the double binary tree (edges chosen by the tree pattern). The cost
// model divides it by the inter-host β (cost_model.cc); ring, direct and rd have closed forms
// there.
//
// Pure arithmetic over the algorithms' patterns (hd::halvingStep, dbtree::treeNode), like
// message_count.h: each function mirrors one builder in src/algorithms/, and
// tests/unit/link_load_test.cc checks it against the bytes the builders' schedules send.
#pragma once

#include <vector>

#include "algorithms/cost/leaf_switches.h"

namespace coll::algo::cost::links {

// host_of[r]: the host of rank r. The result is a multiple of the buffer: the bytes over the
// busiest host link (sent to, or received from, ranks on other hosts) over the buffer's size
// (0 on one host).
// Behind oversubscribed leaf switches a leaf's uplink counts as uplinkInHostLinks() host links,
// and where it is busier than that the result is its load in host links: the busiest link of
// either kind, in the time one host link would take. rhd's steps wait for each other, so its
// figure is the sum over its steps of each step's busiest link; the pipelined tree's is the
// busiest link's total. Blocks of the buffer are taken as equal (exact when the element count
// divides evenly).
double rhdAllreduce(const std::vector<int>& host_of, const LeafSwitches& leaves = {});
double treeAllreduce(const std::vector<int>& host_of, const LeafSwitches& leaves = {});

}  // namespace coll::algo::cost::links
