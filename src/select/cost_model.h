// The α-β-γ cost model: a predicted time for running one algorithm of the catalogue on one
// collective of a given size over a topology::Topology. The selector picks the smallest prediction;
// `coll-topo --explain` prints them all.
//
// Conventions (each formula in cost_model.cc states its terms):
//  - a step that crosses hosts anywhere costs the inter-host α (ranks move in lockstep, the
//    slowest link sets the pace); on one host, steps cost the intra-host α; in a job spanning
//    hosts every step, those inside a host included, costs the loaded step when every rank
//    sends in it (the probe's figure; the idle inter-host α only floors the steps in which few
//    ranks send);
//  - across hosts, bandwidth is what one host's link carries each way, over inter β: ranks of
//    one host share its link, so an algorithm that sends L copies of a chunk across pays L
//    (rhd's and the tree's loads are walked from their patterns, link_load.h); where that link
//    is slower than memory, an all-reduce takes the larger of its link time and the rest
//    (latency, copies, reduction), not their sum: a token-bucket shaped link passes an op's
//    bytes as a burst and refills while the op waits on latency;
//  - inside a host, bandwidth is what one rank receives, over intra β: shared-memory receivers
//    copy in parallel (a direct broadcast's receivers each pull from the root at once);
//  - γ: the bytes one rank reduces, over the reduction kernel's bandwidth;
//  - ranks are numbered host by host (how every launcher here places them);
//  - contention: where the probe's loaded step exceeds the idle α (ranks outnumber cores),
//    all-reduce formulas add the excess share of every non-empty message the job sends (empty
//    chunks of small buffers send nothing, large chunks go as several slices).
// Algorithms without a formula, or that refuse the layout (hierarchical on unbalanced hosts),
// come back unsupported with a reason the selector logs.
#pragma once

#include <cstddef>

#include "algorithms/catalog.h"
#include "topology/topology.h"

namespace coll::select {

struct Prediction {
  bool supported = false;
  double seconds = 0;         // when supported
  const char* why_not = "";   // when not: a static sentence
};

// elem_size: bytes per element, so that formulas can tell how many chunks of a small buffer
// are empty.
Prediction predictTime(algo::Collective collective, const char* algorithm, size_t bytes, size_t elem_size,
                       const topology::Topology& topo, size_t slice_bytes);

}  // namespace coll::select
