#include "select/cost_model.h"

#include <algorithm>
#include <vector>

namespace coll::select {
namespace {

// Where ranks outnumber cores, a step costs more than the idle α: the loaded step (every rank
// sending one 8-byte message at once) exceeds the idle α of the link class it was measured on
// (inter-host where there are several hosts) by the time the ranks queue for the cores. Steps
// in which only some ranks send queue less: stepAny()/stepIntra() charge that excess in
// proportion to the senders (busy()). Without contention (loaded <= α, or not measured) the
// excess is 0. Fit on netcluster 4 hosts x 2 ranks at 1gbit (selector_table.sh, now
// bench/compare.py --algos; 2026-11-23 00:00, docs/perf/selector_4x2.log at 1c66ffe), α 6.5 us,
// loaded 70 us: a float32 8 B all-reduce (2 elements, so most of rhd's and ring's chunks are
// empty) measured rhd 178 us, rd 215, ring 341; the model gives rhd 6 steps at a third busy 166,
// rd 3 busy steps 210, ring 14 steps at a quarter busy 313. One host here; across hosts,
// idleInterAlpha().
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

algo::cost::Fabric netOf(const topology::Topology& t, size_t bytes, size_t elem_size, size_t slice_bytes) {
  algo::cost::Fabric x;
  x.n = t.nranks;
  x.H = t.numHosts();
  x.L = t.maxRanksPerHost();
  x.multi = t.numHosts() > 1;
  x.balanced = t.balanced();
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
  x.board_bytes = static_cast<double>(t.board_bytes);
  x.board_broadcast_bytes = static_cast<double>(t.board_broadcast_bytes);
  return x;
}

}  // namespace

Prediction predictTime(algo::Collective c, const char* name, size_t bytes, size_t elem_size,
                       const topology::Topology& topo, size_t slice_bytes) {
  const algo::cost::Fabric x = netOf(topo, bytes, elem_size, slice_bytes);
  if (x.n <= 1) return algo::cost::ok(0);
  const algo::AlgorithmInfo* algorithm = algo::findAlgorithm(c, name);
  if (algorithm == nullptr || algorithm->cost == nullptr)
    return algo::cost::refuse("no cost formula for it (its catalogue entry names none)");
  return algorithm->cost(x);
}

}  // namespace coll::select
