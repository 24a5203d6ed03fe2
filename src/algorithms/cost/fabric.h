// The α-β-γ cost model's vocabulary: the figures of one prediction (a Fabric, derived from the
// job's Topology by select/cost_model.cc) and what a formula returns. Each algorithm's formula
// lives beside its builder (ring_allreduce.cc has cost::ringAllreduce) and is named in its
// catalogue entry (catalog.h); select/ picks the smallest prediction and explains it.
//
// Conventions every formula follows:
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
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/cost/leaf_switches.h"
#include "algorithms/cost/message_count.h"

namespace coll::algo::cost {

struct Prediction {
  bool supported = false;
  double seconds = 0;         // when supported
  const char* why_not = "";   // when not: a static sentence
};

inline Prediction ok(double seconds) { return {true, seconds, ""}; }
inline Prediction refuse(const char* why) { return {false, 0, why}; }
inline double log2ceil(double v) { return v <= 1 ? 0 : std::ceil(std::log2(v)); }

// Across shaped hosts links (slower than memory: Fabric::link_bound), algorithms that move a
// step's data as one unpipelined exchange (direct: every rank to all others at once; rhd: whole
// halves per step; rd) get 0.9 of the link rate that the pipelined ring gets. Measured on
// netcluster 4 hosts x 1 at 1 Gbit/s, 64 MiB all-reduce (netcluster_algos.sh --rounds 3, now
// bench/compare.py --algos): ring 0.11, direct 0.10, rhd 0.10 GB/s busbw. On links as fast as
// memory they get the whole rate, as coll-sim moves them (Fabric::unpipelinedEfficiency()).
constexpr double kUnpipelinedLinkEfficiency = 0.9;

// Slices over a tree parent's link per level across hosts: its two children's.
constexpr double kSlicesPerLevelAcross = 2;

// The figures every formula uses, derived once per prediction from the job's Topology
// (select/cost_model.cc, netOf).
struct Fabric {
  double n, H, L;      // ranks, hosts, ranks on the fullest host
  bool multi;          // more than one host
  bool balanced;       // every host holds the same number of ranks
  bool link_bound;     // several hosts, and their link slower than memory (total())
  double ai, bi;       // intra-host α (s), β (B/s)
  double ae, be;       // inter-host α, β
  double g;            // γ (B/s)
  double S;            // bytes
  double slice;        // pipelining unit (B)
  messages::Shape shape;  // elements, slices, layout: what the message counts need
  double C;            // what contention adds to a step in which every rank sends (busy - idle α)
  std::vector<int> host_of;  // host of each rank, for the patterns' link loads (link_load.h)
  LeafSwitches leaves;                 // the spine, where a topology file describes one
  // The shared-memory board's cells (board.h), where every rank shares one: the largest
  // all-reduce and broadcast it holds, in bytes; 0: no board.
  double board_bytes = 0, board_broadcast_bytes = 0;
  // direct's every-rank-to-every-rank traffic over a leaf's uplink, in host links, as
  // L(n-L) is over a host's: the leaf's ranks each send the ranks under other leaves a chunk.
  double uplinkShare() const {
    if (leaves.leaves(static_cast<int>(H)) < 2) return 0;
    const double under_leaf = L * leaves.hosts_per_leaf;
    return under_leaf * (n - under_leaf) / leaves.uplinkInHostLinks();
  }
  // How much slower than a host link the uplink an edge per leaf crosses is (ring and
  // hierarchical send one edge's share of a host link over it): above 1 only where a leaf's
  // uplink carries less than one host link (hosts_per_leaf < oversubscription).
  double uplinkSlowdown() const {
    return leaves.leaves(static_cast<int>(H)) > 1 ? std::max(1.0, 1.0 / leaves.uplinkInHostLinks()) : 1.0;
  }
  // Steps whose partners sit under different leaves, among the last `crossing` steps of a
  // pattern whose partners double in distance (rd: host by host, then leaf by leaf). Exact
  // where hosts_per_leaf is a power of two; otherwise some steps cross only for some ranks.
  double acrossLeaves(double crossing) const {
    return leaves.hosts_per_leaf > 0 ? std::min(crossing, std::ceil(std::log2(leaves.leaves(static_cast<int>(H))))) : 0;
  }

  // The software cost of one more message in a step (posting, matching and completing it),
  // as a quarter of the intra-host α (a shared-memory step is nearly all software, and part
  // of it is waiting for the peer, which extra messages of the same step overlap). Measured
  // here, 4 ranks on one host (all_reduce_perf -z 2, forced): at 8 B rd (2 steps, one
  // message each way) 10-11 us, direct (2 steps of 3) 17-24 us, rhd (4 steps of 1) 16-22 us;
  // at 64 KiB direct 85-91 us, rhd 96-101 us. α/4 orders them so; α/2 would put rhd first at
  // 64 KiB.
  double perMessage() const { return (ai + (multi ? 0 : C)) / 4; }
  // A step that sends `local` messages inside the host and `remote` across, where one message
  // would do: every message after the first costs perMessage() inside a host, and a busy
  // inter-host step's α across. On the simulated 4 x 2 cluster (8 ranks on 2 cores, a probed
  // loaded step of 28-66 us), direct's 32 B all-reduce (2 steps of 1 + 6 messages) took 662 us
  // against rd's 185 (3 steps of one): about 40 us for each extra message across hosts.
  double extraMessages(double local, double remote) const {
    if (!multi || remote == 0) return std::max(0.0, local - 1) * perMessage();
    return local * perMessage() + (remote - 1) * (ae + C);
  }
  // The share of the ranks that send in an average step of an algorithm, from its job-wide
  // message count at this size against the count where every chunk holds data (slicing left
  // out): below 1 only when the buffer has too few elements to give every rank a chunk.
  template <class Count>
  double busy(Count count) const {
    messages::Shape now = shape, full = shape;
    now.per_slice = full.per_slice = ~size_t{0} >> 1;
    full.count = std::max<size_t>(shape.count, 4 * static_cast<size_t>(n));
    const double m_full = count(full);
    return m_full > 0 ? std::min(1.0, count(now) / m_full) : 1.0;
  }
  // A step's α: the idle α of its link class plus contention in proportion to the ranks that
  // send in it (busy()). Where there is no contention C is 0 and this is the idle α. In a job
  // spanning hosts whose probe found contention (C > 0), a step inside a host costs what a
  // crossing one does (idleInterAlpha()); without it, the intra-host α, as coll-sim charges
  // such a step (sim_network.cc): rhd's steps inside hosts at 64 ranks (8 x 8, 100 Gbit/s)
  // charged the crossing α made the model pick tree where rhd simulates 1.46 x faster.
  double stepIntra(double f) const { return multi && C > 0 ? stepAny(f) : ai + f * C; }
  double stepAny(double f) const { return (multi ? ae : ai) + f * C; }
  // What an unpipelined exchange gets of a shaped link's rate (kUnpipelinedLinkEfficiency);
  // on a link as fast as memory, the whole of it, as coll-sim moves it.
  double unpipelinedEfficiency() const { return link_bound ? kUnpipelinedLinkEfficiency : 1.0; }
  double betaSlowest() const { return multi ? std::min(be, bi) : bi; }
  // Time to move `per_rank` bytes into every rank inside hosts and `per_host_link` bytes over
  // each host's link: the two overlap, the slower one bounds.
  double move(double per_rank, double per_host_link) const {
    return std::max(per_rank / bi, multi ? per_host_link / be : 0.0);
  }
  // An all-reduce's time from its latency (the steps' α), the seconds its bytes take in memory
  // (inside a host), on the busiest host link, and reducing (cpu). Where the link is the
  // bottleneck, the link time overlaps everything else and the larger bounds: a token-bucket
  // shaped link (netcluster's tbf, 128 KB of burst; the rate limiters of cloud NICs) forwards
  // an op's bytes as a burst and refills during the op's latency, so back-to-back small ops
  // are latency-bound and large ones bandwidth-bound, and the sum counts one of them twice. On
  // netcluster 2 x 2 at 1gbit (docs/perf/selector_2x2.log at f73acff) rd at 8 KiB (16 KiB over each host
  // link, 130 us at the link's rate) took 129 us, at 2 KiB 78 us: max(2 steps, link), not the
  // sum (208 us). Elsewhere (one host; a network as fast as memory) the terms add as before.
  double total(double latency, double mem, double link, double cpu) const {
    if (link_bound) return std::max(latency + mem + cpu, link);
    return latency + std::max(mem, link) + cpu;
  }
  // total() for rd and rhd, whose crossing steps send from all L ranks of a host at once. Where
  // that link is as fast as memory, the link time overlaps the steps' α: while one rank waits
  // out a step's α, the others' messages keep the link busy (coll-sim, 64 ranks at 100 Gbit/s,
  // 64 KiB: rhd 104 us, about the link's 75 us plus a third of its 12 steps' α; rd at 16 KiB
  // 54 us, not 71). The copies inside hosts add: they are other steps, after the crossing ones
  // (rhd) or before them (rd). max(α + memory, link) priced rhd under hierarchical on 2 x 8 at
  // 64 KiB (50 us against 53; simulated 73 against 56).
  double exchangeTotal(double latency, double mem, double link, double cpu) const {
    if (multi && !link_bound && L > 1) return std::max(latency, link) + mem + cpu;
    return total(latency, mem, link, cpu);
  }
};

// A formula: the predicted time of one algorithm on one collective over a Fabric.
using Formula = Prediction (*)(const Fabric&);

}  // namespace coll::algo::cost
