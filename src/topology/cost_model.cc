#include "topology/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "topology/message_count.h"

namespace coll::topology {
namespace {

// The figures every formula uses, derived once per prediction.
struct Net {
  double n, H, L;      // ranks, hosts, ranks on the fullest host
  bool multi;          // more than one host
  double ai, bi;       // intra-host α (s), β (B/s)
  double ae, be;       // inter-host α, β
  double g;            // γ (B/s)
  double S;            // bytes
  double slice;        // pipelining unit (B)
  messages::Shape shape;  // elements, slices, layout: what the message counts need
  double contention;   // seconds each message of the job adds (contentionPerMessage)

  // The software cost of one more message in a step (posting, matching and completing it),
  // as a quarter of the intra-host α (a shared-memory step is nearly all software, and part
  // of it is waiting for the peer, which extra messages of the same step overlap). Measured
  // here, 4 ranks on one host (all_reduce_perf -z 2, forced): at 8 B rd (2 steps, one
  // message each way) 10-11 us, direct (2 steps of 3) 17-24 us, rhd (4 steps of 1) 16-22 us;
  // at 64 KiB direct 85-91 us, rhd 96-101 us. α/4 orders them so; α/2 would put rhd first at
  // 64 KiB.
  double perMessage() const { return ai / 4; }
  // A step that sends `local` messages inside the host and `remote` across, where one message
  // would do: every message after the first costs perMessage() inside a host, and the
  // inter-host α across (the idle α: contention is jobMessages()'s). On the simulated 4 x 2
  // cluster (8 ranks on 2 cores), direct's 32 B all-reduce (2 steps of 1 + 6 messages) took
  // 662 us against rd's 185 (3 steps of one); with the idle α, most of that gap is the
  // contention term's (direct sends 112 messages, rd 24), and this term keeps direct behind rd
  // where there is no contention (4 hosts x 1: 2 steps of 3 messages against 2 of one).
  double extraMessages(double local, double remote) const {
    if (!multi || remote == 0) return std::max(0.0, local - 1) * perMessage();
    return local * perMessage() + (remote - 1) * ae;
  }
  // What the whole job's `messages` cost beyond the steps' α where ranks outnumber cores.
  double jobMessages(double messages) const { return messages * contention; }
  double alphaAny() const { return multi ? ae : ai; }             // a step that may cross hosts
  double betaSlowest() const { return multi ? std::min(be, bi) : bi; }
  // Time to move `per_rank` bytes into every rank inside hosts and `per_host_link` bytes over
  // each host's link: the two overlap, the slower one bounds.
  double move(double per_rank, double per_host_link) const {
    return std::max(per_rank / bi, multi ? per_host_link / be : 0.0);
  }
};

// Where ranks outnumber cores, every message of the job takes its turn on a core: the loaded
// step (every rank sending one message at once, n messages) exceeds the idle α of its link
// class by what n messages cost, so each costs (loaded - α) / n, charged to every message the
// job sends whichever step it is in. Without contention (loaded <= α, or not measured) the
// term vanishes. Fit on netcluster 4 hosts x 2 ranks at 1gbit (bench/scripts/selector_table.sh,
// 2026-11-23 00:00, log docs/perf/selector_4x2.log): α 6.5 us inter, loaded 70 us, so 7.9 us
// a message; a float32 8 B all-reduce (2 elements) measured rhd 178 us, rd 215, direct 245,
// tree 332, ring 341, and the model gives rhd 6 hops + 16 messages 166, rd 3 + 24 210, direct
// 2 + 28 ~235 (plus its extra messages), ring 14 + 28 313; at 32 B (8 elements) rd 198, tree
// 336, rhd 413 measured against 210, 261, 420.
double contentionPerMessage(const Topology& t) {
  const double idle = t.numHosts() > 1 ? t.inter.alpha_s : t.intra.alpha_s;
  return t.nranks > 0 ? std::max(0.0, t.loaded_step_s - idle) / t.nranks : 0;
}

Net netOf(const Topology& t, size_t bytes, size_t elem_size, size_t slice_bytes) {
  Net x;
  x.n = t.nranks;
  x.H = t.numHosts();
  x.L = t.maxRanksPerHost();
  x.multi = t.numHosts() > 1;
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
  x.contention = contentionPerMessage(t);
  return x;
}

// Across hosts, algorithms that move a step's data as one unpipelined exchange (direct: every
// rank to all others at once; rhd: whole halves per step) get 0.9 of the link rate that the
// pipelined ring gets. Measured on netcluster 4 hosts x 1 at 1 Gbit/s, 64 MiB all-reduce
// (bench/scripts/netcluster_algos.sh --rounds 3): ring 0.11, direct 0.10, rhd 0.10 GB/s busbw.
constexpr double kUnpipelinedLinkEfficiency = 0.9;

Prediction ok(double seconds) { return {true, seconds, ""}; }
Prediction refuse(const char* why) { return {false, 0, why}; }

double log2ceil(double v) { return v <= 1 ? 0 : std::ceil(std::log2(v)); }

// Reduce-scatter then all-gather around the ring: 2(n-1) steps; every link carries
// 2(n-1)/n of the buffer (one ring edge leaves each host); each rank reduces (n-1)/n of it.
Prediction ringAllreduce(const Net& x) {
  double share = 2 * (x.n - 1) / x.n * x.S;
  return ok(2 * (x.n - 1) * x.alphaAny() + x.move(share, share) + (x.n - 1) / x.n * x.S / x.g +
            x.jobMessages(messages::ringAllreduce(x.shape)));
}

// Two-shot: every rank sends chunk c to rank c, which reduces and sends it to all: 2 steps
// of n-1 messages each.
// A host's link carries L(n-L)/n of the buffer per step (each of its L ranks sends the n-L
// foreign chunks), a rank receives (n-1)/n per step.
Prediction directAllreduce(const Net& x) {
  double per_rank = 2 * (x.n - 1) / x.n * x.S;
  double per_link = 2 * x.L * (x.n - x.L) / x.n * x.S / kUnpipelinedLinkEfficiency;
  return ok(2 * x.alphaAny() + 2 * x.extraMessages(x.L - 1, x.n - x.L) + x.move(per_rank, per_link) +
            (x.n - 1) / x.n * x.S / x.g + x.jobMessages(messages::directAllreduce(x.shape)));
}

// Intra-host direct reduce-scatter (1 step), a ring over the H hosts per local rank
// (2(H-1) steps, each host link carrying 2(H-1)/H of the whole buffer: L rings of 1/L each),
// intra-host all-gather (1 step). The phases run one after another.
Prediction hierarchicalAllreduce(const Net& x, const Topology& t) {
  if (!x.multi) return refuse("one host: nothing to split across hosts");
  if (!t.balanced() || x.L < 2) return refuse("needs every host to hold the same number (>1) of ranks");
  double intra = 2 * x.ai + 2 * (x.L - 1) / x.L * x.S / x.bi;
  double inter = 2 * (x.H - 1) * x.ae + 2 * (x.H - 1) / x.H * x.S / x.be;
  double reduce = ((x.L - 1) / x.L + (x.H - 1) / (x.H * x.L)) * x.S / x.g;
  return ok(intra + inter + reduce + x.jobMessages(messages::hierarchicalAllreduce(x.shape)));
}

// Double binary tree, pipelined: 2 ceil(log2 n) steps; each rank receives about 2S (half the
// buffer from two children in one tree, and each half from a parent), and so may a host link.
Prediction treeAllreduce(const Net& x) {
  double steps = 2 * log2ceil(x.n);
  return ok(steps * x.alphaAny() + x.move(2 * x.S, 2 * x.S) + x.S / x.g +
            x.jobMessages(messages::treeAllreduce(x.shape)));
}

// Recursive halving-doubling (Rabenseifner) with nearest partners first, as MPICH orders it:
// 2 log2(p) steps for p = the largest power of two <= n (non powers of two fold the extra
// ranks in and out: 2 more steps moving the whole buffer). Only steps at distance >= L cross
// hosts, when the halves are small: a host link carries 2(H-1)/H of the buffer. Empty blocks
// (fewer elements than p) remove messages but no step: rank 0's block 0 is never empty, and
// it is received or sent in every step, so its path keeps all 2 log2(p) hops.
Prediction rhdAllreduce(const Net& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double steps = 2 * std::log2(p);
  double extra = p == x.n ? 0 : 2 * (x.alphaAny() + x.S / x.betaSlowest());
  double per_rank = 2 * (x.n - 1) / x.n * x.S;
  double per_link = 2 * (x.H - 1) / x.H * x.S / kUnpipelinedLinkEfficiency;
  return ok(steps * x.alphaAny() + x.move(per_rank, per_link) + (x.n - 1) / x.n * x.S / x.g + extra +
            x.jobMessages(messages::rhdAllreduce(x.shape)));
}

// Recursive doubling: log2 p exchanges of the whole buffer (non powers of two fold the extra
// ranks in and out: 2 more steps). Nearest partners first, so with ranks numbered host by host
// the first steps stay inside a host and only the last ceil(log2 H) cross, each with all L
// ranks of a host sending their whole buffer over its link.
Prediction rdAllreduce(const Net& x) {
  double p = std::exp2(std::floor(std::log2(x.n)));
  double steps = std::log2(p);
  double crossing = x.multi ? std::min(steps, log2ceil(x.H)) : 0;
  double extra = p == x.n ? 0 : 2 * (x.alphaAny() + x.S / x.betaSlowest());
  double per_link = crossing * x.L * x.S / kUnpipelinedLinkEfficiency;
  return ok(crossing * x.ae + (steps - crossing) * x.ai + x.move(steps * x.S, per_link) + steps * x.S / x.g + extra +
            x.jobMessages(messages::rdAllreduce(x.shape)));
}

// Root -> root+1 -> ... slice by slice: the first slice takes n-1 hops, each further slice
// one slice time at the slowest link.
Prediction chainBroadcast(const Net& x) {
  double slice = std::min(x.S, x.slice);
  double slices = std::max(1.0, std::ceil(x.S / x.slice));
  double hop = slice / x.betaSlowest();
  return ok((x.n - 1) * (x.alphaAny() + hop) + (slices - 1) * hop);
}

// The root sends the whole buffer to every rank in one step; its host's link carries it
// n-L times, while ranks of its host pull it in parallel.
Prediction directBroadcast(const Net& x) {
  return ok(x.alphaAny() + x.move(x.S, (x.n - x.L) * x.S));
}

// Binomial tree, farthest partners first: ceil(log2 n) rounds, each moving the whole buffer;
// the first ceil(log2 H) rounds cross hosts, the rest stay inside them.
Prediction binomialBroadcast(const Net& x) {
  double rounds = log2ceil(x.n);
  double inter = x.multi ? std::min(rounds, log2ceil(x.H)) : 0;
  return ok(inter * (x.ae + x.S / x.be) + (rounds - inter) * (x.ai + x.S / x.bi));
}

// The collectives with one algorithm today: rough figures so the log still gives a time.
Prediction ringPhase(const Net& x, bool reduces) {
  double share = (x.n - 1) / x.n * x.S;
  return ok((x.n - 1) * x.alphaAny() + x.move(share, share) + (reduces ? share / x.g : 0));
}

Prediction directExchange(const Net& x) {
  return ok(x.alphaAny() + x.move((x.n - 1) / x.n * x.S, x.L * (x.n - x.L) / x.n * x.S));
}

bool is(const char* a, const char* b) { return std::strcmp(a, b) == 0; }

}  // namespace

Prediction predictTime(algo::Collective c, const char* a, size_t bytes, size_t elem_size, const Topology& topo,
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

}  // namespace coll::topology
