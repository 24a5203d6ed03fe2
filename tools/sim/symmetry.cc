#include "symmetry.h"

#include <cstdlib>
#include <vector>

namespace coll::sim {
namespace {

// The cluster's own period: ranks per leaf (or per host), when hosts are alike and numbered
// in order; 0 when it has none.
int clusterPeriod(const ClusterModel& m) {
  const topology::Topology& t = m.topo;
  if (!t.balanced()) return 0;
  const int per_host = t.maxRanksPerHost();
  for (int h = 0; h < t.numHosts(); ++h)
    for (int i = 0; i < per_host; ++i)
      if (t.ranks_of_host[static_cast<size_t>(h)][static_cast<size_t>(i)] != h * per_host + i) return 0;
  int hosts = 1;
  if (m.numLeaves() > 1) {
    if (t.numHosts() % m.fabric.hosts_per_leaf != 0) return 0;  // a partial last leaf
    hosts = m.fabric.hosts_per_leaf;
  }
  // NICs are picked by local rank, so a host is a whole period of its NICs.
  return per_host * hosts;
}

int offset(int from, int to, int n) { return ((to - from) % n + n) % n; }

// Rank r's schedule is its representative's moved by r - rep, as far as timing goes.
bool sameShape(const algo::Schedule& a, int ra, const algo::Schedule& b, int rb, int n, size_t elem) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const algo::Step& x = a.steps[i];
    const algo::Step& y = b.steps[i];
    if (x.kind != y.kind || x.deps != y.deps) return false;
    const long long diff = static_cast<long long>(x.bytes) - static_cast<long long>(y.bytes);
    if (std::llabs(diff) > static_cast<long long>(4 * elem)) return false;
    if (x.kind == algo::StepKind::copy || x.kind == algo::StepKind::divide || x.kind == algo::StepKind::stash ||
        x.kind == algo::StepKind::combine)
      continue;
    if (offset(ra, x.peer, n) != offset(rb, y.peer, n)) return false;
  }
  return true;
}

}  // namespace

algo::BuildParams buildParamsFor(const ClusterModel& m, const SimRequest& q, int rank) {
  algo::BuildParams p;
  p.rank = rank;
  p.nranks = m.topo.nranks;
  p.count = q.bytes / q.elem_size;
  p.elem_size = q.elem_size;
  p.root = q.root;
  p.slice_bytes = q.slice_bytes;
  p.pipeline_depth = q.pipeline_depth;
  p.hosts = &m.topo.ranks_of_host;
  // As planOp maps user buffers (tests/unit/schedule_interpreter.h, SimConfig::inPlace).
  switch (q.collective) {
    case algo::Collective::reduce: case algo::Collective::gather: case algo::Collective::scatter:
      p.in_place = q.in_place && rank == q.root; break;
    case algo::Collective::reducescatter: case algo::Collective::alltoall: p.in_place = false; break;
    default: p.in_place = q.in_place;
  }
  return p;
}

int simulationPeriod(const ClusterModel& m, const SimRequest& q, std::string* why) {
  const int n = m.topo.nranks;
  if (q.exact) return (*why = "exact (asked for)", n);
  const int period = clusterPeriod(m);
  if (period == 0 || period >= n || n % period != 0)
    return (*why = "exact (the cluster does not repeat in blocks of ranks)", n);
  // A sample: the first rank of each of a few blocks, the last rank, ranks at the middle.
  const std::vector<int> sample = {period, period + period / 2, n / 2 / period * period + 1, n - period, n - 1};
  for (int r : sample) {
    const int rep = r % period;
    const algo::Schedule a = q.algorithm->build(buildParamsFor(m, q, r));
    const algo::Schedule b = q.algorithm->build(buildParamsFor(m, q, rep));
    if (!sameShape(a, r, b, rep, n, q.elem_size))
      return (*why = "exact (rank " + std::to_string(r) + "'s schedule is not rank " + std::to_string(rep) +
                     "'s moved by " + std::to_string(r - rep) + ")",
              n);
  }
  *why = "periodic: ranks 0.." + std::to_string(period - 1) + " stand for all " + std::to_string(n / period) +
         " blocks of " + std::to_string(period);
  return period;
}

}  // namespace coll::sim
