#include "select/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "select/link_load.h"
#include "select/message_count.h"

namespace coll::select {
namespace {

// The figures every formula uses, derived once per prediction.
struct Net {
  double n, H, L;      // ranks, hosts, ranks on the fullest host
  bool multi;          // more than one host
  bool link_bound;     // several hosts, and their link slower than memory (total())
  double ai, bi;       // intra-host α (s), β (B/s)
  double ae, be;       // inter-host α, β
  double g;            // γ (B/s)
  double S;            // bytes
  double slice;        // pipelining unit (B)
  messages::Shape shape;  // elements, slices, layout: what the message counts need
  double C;            // what contention adds to a step in which every rank sends (busy - idle α)
  std::vector<int> host_of;  // host of each rank, for the patterns' link loads (link_load.h)
  topology::LeafSwitches leaves;       // the spine, where a topology file describes one
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
  double unpipelinedEfficiency() const;
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

// Where ranks outnumber cores, a step costs more than the idle α: the loaded step (every rank
// sending one 8-byte message at once) exceeds the idle α of the link class it was measured on
// (inter-host where there are several hosts) by the time the ranks queue for the cores. Steps
// in which only some ranks send queue less: stepAny()/stepIntra() charge that excess in
// proportion to the senders (busy()). Without contention (loaded <= α, or not measured) the
// excess is 0. Fit on netcluster 4 hosts x 2 ranks at 1gbit (bench/scripts/selector_table.sh,
// 2026-11-23 00:00, docs/perf/selector_4x2.log at 1c66ffe), α 6.5 us, loaded 70 us: a float32 8 B
// all-reduce (2 elements, so most of rhd's and ring's chunks are empty) measured rhd 178 us,
// rd 215, ring 341; the model gives rhd 6 steps at a third busy 166, rd 3 busy steps 210,
// ring 14 steps at a quarter busy 313. One host here; across hosts, idleInterAlpha().
double contentionPerStep(const topology::Topology& t) { return std::max(0.0, t.loaded_step_s - t.intra.alpha_s); }

// Across hosts the loaded step is what a busy step costs, intra-host ones included, and the
// idle inter-host α only floors the steps in which few ranks send (busy()); where the idle α
// came out above the loaded step, it is lowered to it. Why: the idle ping-pong is bimodal from
// start-up to start-up on the same simulated links (6-7 us or 30-35 us, sometimes 113-155 us;
// likely an idle peer's wake-up, which a busy job does not wait for), while the loaded step
// (19-29 us on 2 x 2) stayed nearer what steps cost: on 2 x 2 rd's 2 steps took 67-80 us at
// 8 B-2 KiB and hierarchical's 4 (2 inside hosts) 128-164 us, so the intra-host ones cost
// about as much as the crossing ones, not the intra-host α (1-1.5 us); on 4 x 2 a step took
// 50-75 us (loaded 58-85 us, once 31). docs/perf/selector_{2x2,4x2}.log at f73acff.
// Returns the idle crossing α; *busy gets what contention adds to it.
double idleInterAlpha(const topology::Topology& t, double* busy) {
  const double step = t.loaded_step_s > 0 ? t.loaded_step_s : t.inter.alpha_s;
  const double idle = std::min(t.inter.alpha_s, step);
  *busy = step - idle;
  return idle;
}

std::vector<int> hostOfEachRank(const topology::Topology& t) {
  std::vector<int> host_of(static_cast<size_t>(t.nranks), 0);
  for (size_t h = 0; h < t.ranks_of_host.size(); ++h)
    for (int r : t.ranks_of_host[h]) host_of[static_cast<size_t>(r)] = static_cast<int>(h);
  return host_of;
}

Net netOf(const topology::Topology& t, size_t bytes, size_t elem_size, size_t slice_bytes) {
  Net x;
  x.n = t.nranks;
  x.H = t.numHosts();
  x.L = t.maxRanksPerHost();
  x.multi = t.numHosts() > 1;
  x.link_bound = x.multi && t.inter.beta_Bps < t.intra.beta_Bps;
  x.ai = t.intra.alpha_s;
  x.bi = t.intra.beta_Bps;
  x.ae = t.inter.alpha_s;
  x.be = t.inter.beta_Bps;
  x.g = t.gamma_Bps;
  x.S = static_cast<double>(bytes);
  x.slice = static_cast<double>(std::max<size_t>(slice_bytes, 1));
  elem_size = std::max<size_t>(elem_size, 1);
  x.shape = {bytes / elem_size, std::max<size_t>(1, slice_bytes / elem_size), t.nranks, t.numHosts(),
             t.maxRanksPerHost()};
  if (x.multi) x.ae = idleInterAlpha(t, &x.C);
  else x.C = contentionPerStep(t);
  x.host_of = hostOfEachRank(t);
  x.leaves = t.leaves;
  return x;
}

// Across shaped hosts links (slower than memory: Net::link_bound), algorithms that move a
// step's data as one unpipelined exchange (direct: every rank to all others at once; rhd: whole
// halves per step; rd) get 0.9 of the link rate that the pipelined ring gets. Measured on
// netcluster 4 hosts x 1 at 1 Gbit/s, 64 MiB all-reduce (bench/scripts/netcluster_algos.sh
// --rounds 3): ring 0.11, direct 0.10, rhd 0.10 GB/s busbw. On links as fast as memory they get
// the whole rate, as coll-sim moves them (Net::unpipelinedEfficiency()).
constexpr double kUnpipelinedLinkEfficiency = 0.9;

// Slices over a tree parent's link per level across hosts: its two children's.
constexpr double kSlicesPerLevelAcross = 2;

double Net::unpipelinedEfficiency() const { return link_bound ? kUnpipelinedLinkEfficiency : 1.0; }

Prediction ok(double seconds) { return {true, seconds, ""}; }
Prediction refuse(const char* why) { return {false, 0, why}; }

double log2ceil(double v) { return v <= 1 ? 0 : std::ceil(std::log2(v)); }

// Reduce-scatter then all-gather around the ring: 2(n-1) steps; every link carries
// 2(n-1)/n of the buffer (one ring edge leaves each host, and each leaf switch: an uplink
// carries what one host link does, slower only where it is less than one: uplinkSlowdown());
// each rank reduces (n-1)/n of it.
Prediction ringAllreduce(const Net& x) {
  double share = 2 * (x.n - 1) / x.n * x.S;
  double step = x.stepAny(x.busy(messages::ringAllreduce));
  return ok(x.total(2 * (x.n - 1) * step, share / x.bi, x.multi ? share * x.uplinkSlowdown() / x.be : 0,
                    (x.n - 1) / x.n * x.S / x.g));
}

// Two-shot: every rank sends chunk c to rank c, which reduces and sends it to all: 2 steps
// of n-1 messages each.
// A host's link carries L(n-L)/n of the buffer per step (each of its L ranks sends the n-L
// foreign chunks), a rank receives (n-1)/n per step.
Prediction directAllreduce(const Net& x) {
  double per_rank = 2 * (x.n - 1) / x.n * x.S;
  double per_link = 2 * std::max(x.L * (x.n - x.L), x.uplinkShare()) / x.n * x.S / x.unpipelinedEfficiency();
  double step = x.stepAny(x.busy(messages::directAllreduce));
  return ok(x.total(2 * step + 2 * x.extraMessages(x.L - 1, x.n - x.L), per_rank / x.bi,
                    x.multi ? per_link / x.be : 0, (x.n - 1) / x.n * x.S / x.g));
}

// Intra-host direct reduce-scatter (1 step), a ring over the H hosts per local rank
// (2(H-1) steps, each host link carrying 2(H-1)/H of the whole buffer: L rings of 1/L each),
// intra-host all-gather (1 step); of the L rings one edge each leaves a leaf switch, so an
// uplink carries what one host link does (uplinkSlowdown()). The phases run one after another,
// so where the link is not the bottleneck their times add; where it is, the link's overlaps the
// rest (Net::total()).
// With few elements its inter-host rings carry empty chunks, but its intra-host phases do
// not, so every step is charged as busy (4 x 2 at 8 B: 312 us measured for 8 steps).
Prediction hierarchicalAllreduce(const Net& x, const topology::Topology& t) {
  if (!x.multi) return refuse("one host: nothing to split across hosts");
  if (!t.balanced() || x.L < 2) return refuse("needs every host to hold the same number (>1) of ranks");
  // The phases inside a host send each peer its part chunk by chunk (H chunks, or the part's
  // slices where there are more): at 1,024 ranks (128 hosts) that is 896 messages a phase,
  // whose software cost coll-sim measured as the difference between hierarchical's 2.7 ms and
  // this formula's 1.7 ms at 1 MiB (docs/SIMULATOR.md).
  double per_peer = std::max(x.H, std::ceil(x.S / (x.L * x.slice)));
  double latency = 2 * x.stepIntra(1) + 2 * (x.H - 1) * x.stepAny(1) + 2 * (x.L - 1) * (per_peer - 1) * x.perMessage();
  double intra = 2 * (x.L - 1) / x.L * x.S / x.bi;
  double inter = 2 * (x.H - 1) / x.H * x.S * x.uplinkSlowdown() / x.be;
  double reduce = ((x.L - 1) / x.L + (x.H - 1) / (x.H * x.L)) * x.S / x.g;
  if (!x.link_bound) return ok(latency + intra + inter + reduce);
  return ok(x.total(latency, intra, inter, reduce));
}

// Double binary tree, pipelined: 2 ceil(log2 n) steps; each rank receives about 2S (half the
// buffer from two children in one tree, and each half from a parent). A host link carries
// what the tree edges leaving its host carry (links::treeAllreduce: 3 buffers on 4 x 2).
// The pipeline's fill: each tree moves half the buffer in slices, and the first slice crosses
// 2D levels (D up, reduced at each, then D down) before the last rank has any of it, so a
// slice time per level and D reductions of a slice come on top of the pipelined terms. With
// ranks numbered host by host the top ceil(log2 H) levels cross hosts and the rest stay
// inside one. A level across hosts moves two slices over the parent's link (its two children's
// up, to both children down): kSlicesPerLevelAcross. A level inside a host costs one slice
// time: the sender's copy into the shared-memory ring and the receiver's out of it overlap slot
// by slot (charging both, as the first try did, put the tree 350-400 us above coll-sim at 1 MiB
// on 16 to 1,024 ranks). Charged only where the links are at least as fast as memory: on a
// shaped link slower than memory (netcluster's tbf, whose burst passes small slices at once)
// the link time already bounds the op (total()), and the measured netcluster selections
// (selector_measured_test.cc) rank best without it.
// With few slices (1 MiB is one slice per tree) the fill is most of the time. coll-sim, 8
// ranks per host at 100 Gbit/s, 1 MiB: tree at 588 us on 16 ranks and 1.99 ms on 1,024 where
// the formula without the fill gave 317 and 433 us, and so chose tree where hierarchical was
// 2-3x faster; after the sender's copy was simulated (2026-11-27), tree at 2.32, 2.77 and 3.25
// ms on 1,024, 4,096 and 16,384 ranks, about 230 us per level across hosts where one slice
// per level gave 130 (docs/SIMULATOR.md).
Prediction treeAllreduce(const Net& x) {
  double depth = log2ceil(x.n);
  double crossing = x.multi ? std::min(depth, log2ceil(x.H)) : 0;
  double slice = std::min(x.S / 2, x.slice);
  double fill = x.link_bound ? 0
                              : 2 * (crossing * kSlicesPerLevelAcross * slice / x.be +
                                     (depth - crossing) * slice / x.bi) +
                                    depth * slice / x.g;
  double link = x.multi ? links::treeAllreduce(x.host_of, x.leaves) * x.S / x.be : 0;
  double busy = x.busy(messages::treeAllreduce);
  double latency = 2 * (crossing * x.stepAny(busy) + (depth - crossing) * x.stepIntra(busy));
  return ok(x.total(latency + fill, 2 * x.S / x.bi, link, x.S / x.g));
}

// Recursive halving-doubling (Rabenseifner), farthest partner first (hd::halvingStep): 2
// log2(p) steps for p = the largest power of two <= n (non powers of two fold the extra ranks
// in and out: 2 more steps moving the whole buffer). With ranks numbered host by host the
// first halving steps, which move the largest halves, are the ones that cross hosts: a host
// link carries links::rhdAllreduce of the buffer (3 on 4 x 2, 2(H-1)/H with one rank per
// host). Fewer elements than p leave blocks empty: rank 0 still takes every step, but most
// ranks send nothing in most of them (busy()). Its last halvings and first doublings stay
// inside hosts (stepIntra()).
Prediction rhdAllreduce(const Net& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double halvings = std::log2(p);
  double crossing = x.multi ? std::min(halvings, log2ceil(x.H)) : 0;
  double fold = p == x.n ? 0 : 2.0;  // the whole buffer in and out, once each
  double busy = x.busy(messages::rhdAllreduce);
  double latency = 2 * (crossing * x.stepAny(busy) + (halvings - crossing) * x.stepIntra(busy)) + fold * x.stepAny(1);
  double mem = (2 * (x.n - 1) / x.n + fold) * x.S / x.bi;
  double link = x.multi ? links::rhdAllreduce(x.host_of, x.leaves) * x.S / x.be / x.unpipelinedEfficiency() : 0;
  return ok(x.exchangeTotal(latency, mem, link, (x.n - 1) / x.n * x.S / x.g));
}

// Recursive doubling: log2 p exchanges of the whole buffer (non powers of two fold the extra
// ranks in and out: 2 more steps). Nearest partners first, so with ranks numbered host by host
// the first steps stay inside a host and only the last ceil(log2 H) cross, each with all L
// ranks of a host sending their whole buffer over its link. Every rank sends in every step.
Prediction rdAllreduce(const Net& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double steps = std::log2(p);
  double crossing = x.multi ? std::min(steps, log2ceil(x.H)) : 0;
  double extra = p == x.n ? 0 : 2 * (x.stepAny(1) + x.S / x.betaSlowest());
  // A step across leaves sends every rank's whole buffer over the uplink of hosts_per_leaf
  // hosts: oversubscription host links' worth.
  double across_leaves = x.acrossLeaves(crossing);
  double per_link =
      (crossing - across_leaves + across_leaves * x.leaves.oversubscription) * x.L * x.S / x.unpipelinedEfficiency();
  double latency = crossing * x.stepAny(1) + (steps - crossing) * x.stepIntra(1);
  return ok(x.exchangeTotal(latency, steps * x.S / x.bi, x.multi ? per_link / x.be : 0, steps * x.S / x.g) + extra);
}

// Root -> root+1 -> ... slice by slice: the first slice takes n-1 hops, each further slice
// one slice time at the slowest link.
Prediction chainBroadcast(const Net& x) {
  double slice = std::min(x.S, x.slice);
  double slices = std::max(1.0, std::ceil(x.S / x.slice));
  double hop = slice / x.betaSlowest();
  return ok((x.n - 1) * (x.stepAny(1) + hop) + (slices - 1) * hop);
}

// The root sends the whole buffer to every rank in one step; its host's link carries it
// n-L times, while ranks of its host pull it in parallel.
Prediction directBroadcast(const Net& x) {
  return ok(x.stepAny(1) + x.move(x.S, (x.n - x.L) * x.S));
}

// Binomial tree, farthest partners first: ceil(log2 n) rounds, each moving the whole buffer;
// the first ceil(log2 H) rounds cross hosts, the rest stay inside them.
Prediction binomialBroadcast(const Net& x) {
  double rounds = log2ceil(x.n);
  double inter = x.multi ? std::min(rounds, log2ceil(x.H)) : 0;
  return ok(inter * (x.stepAny(1) + x.S / x.be) + (rounds - inter) * (x.stepIntra(1) + x.S / x.bi));
}

// The collectives with one algorithm today: rough figures so the log still gives a time.
Prediction ringPhase(const Net& x, bool reduces) {
  double share = (x.n - 1) / x.n * x.S;
  return ok((x.n - 1) * x.stepAny(1) + x.move(share, share) + (reduces ? share / x.g : 0));
}

Prediction directExchange(const Net& x) {
  return ok(x.stepAny(1) + x.move((x.n - 1) / x.n * x.S, x.L * (x.n - x.L) / x.n * x.S));
}

bool is(const char* a, const char* b) { return std::strcmp(a, b) == 0; }

}  // namespace

Prediction predictTime(algo::Collective c, const char* a, size_t bytes, size_t elem_size, const topology::Topology& topo,
                       size_t slice_bytes) {
  const Net x = netOf(topo, bytes, elem_size, slice_bytes);
  using algo::Collective;
  if (x.n <= 1) return ok(0);
  switch (c) {
    case Collective::allreduce:
      if (is(a, "ring")) return ringAllreduce(x);
      if (is(a, "direct")) return directAllreduce(x);
      if (is(a, "hierarchical")) return hierarchicalAllreduce(x, topo);
      if (is(a, "tree")) return treeAllreduce(x);
      if (is(a, "rhd")) return rhdAllreduce(x);
      if (is(a, "rd")) return rdAllreduce(x);
      break;
    case Collective::broadcast:
      if (is(a, "chain")) return chainBroadcast(x);
      if (is(a, "direct")) return directBroadcast(x);
      if (is(a, "binomial")) return binomialBroadcast(x);
      break;
    case Collective::reduce:
    case Collective::reducescatter:
      if (is(a, "ring")) return ringPhase(x, true);
      break;
    case Collective::allgather:
      if (is(a, "ring")) return ringPhase(x, false);
      break;
    case Collective::alltoall:
    case Collective::gather:
    case Collective::scatter:
      if (is(a, "direct")) return directExchange(x);
      break;
  }
  return refuse("no cost formula for it (cost_model.cc)");
}

}  // namespace coll::select
