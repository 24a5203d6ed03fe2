#include "topology/selector.h"

#include "algorithms/hierarchical_allreduce.h"
#include "core/log.h"

namespace coll::topology {
namespace {

// Across hosts, small all-reduces are latency-bound: direct needs 2 hops where the ring needs
// 2(n-1) and the hierarchical one 2H, but it loads each host link with L * 2(n-1)/n of the
// buffer instead of 2(H-1)/H. Measured on netcluster 4 hosts x 2 ranks at 1 Gbit/s
// (bench/scripts/netcluster_small.sh): direct was fastest at every size from 8 B to 4 KiB
// (0.33-0.72 ms against 0.82-1.18 ms hierarchical, 1.7-4.4 ms ring); extrapolating each hop
// at ~0.3 ms and 0.125 GB/s links puts the crossover near 64 KiB. The cost model of issue 4
// replaces this constant.
constexpr size_t kDirectAllreduceMaxBytes = 64 << 10;

}  // namespace

Choice Selector::choose(algo::Collective collective, size_t bytes) {
  Choice c;
  if (const AlgoRule* rule = matchRule(rules_, collective, bytes)) {
    c.algorithm = algo::findAlgorithm(collective, rule->algorithm);
    c.reason = "forced by COLL_ALGO rule '" + rule->text + "'";
  } else if (collective != algo::Collective::allreduce && collective != algo::Collective::broadcast) {
    c.algorithm = algo::firstAlgorithm(collective);
    c.reason = "the only algorithm implemented for it";
  } else if (hosts_.num_hosts == 1) {
    // Every peer is equally close, so one hop beats n-1 hops and no link is oversubscribed.
    c.algorithm = algo::findAlgorithm(collective, "direct");
    c.reason = "all ranks on one host: one-hop direct exchange";
  } else if (collective == algo::Collective::allreduce && bytes <= kDirectAllreduceMaxBytes) {
    c.algorithm = algo::findAlgorithm(collective, "direct");
    c.reason = format("%d hosts, at most %s: direct exchange, 2 hops", hosts_.num_hosts,
                      formatBytes(kDirectAllreduceMaxBytes).c_str());
  } else if (collective == algo::Collective::allreduce && algo::hierarchicalFits(&hosts_.ranks_of_host)) {
    // Each host's link then carries 2(H-1)/H of the buffer, not the flat ring's 2(n-1)/n,
    // and every local rank drives the network at once with 1/L of the data.
    c.algorithm = algo::findAlgorithm(collective, "hierarchical");
    c.reason = format("%d hosts x %zu ranks: shared memory inside hosts, one ring per local rank across them",
                      hosts_.num_hosts, hosts_.ranks_of_host.front().size());
  } else if (collective == algo::Collective::broadcast && bytes <= slice_bytes_) {
    // One slice cannot pipeline down a chain, so hops decide: log2(n) beats n-1.
    c.algorithm = algo::findAlgorithm(collective, "binomial");
    c.reason = format("%d hosts, at most one slice (%s): binomial tree, log2(n) hops", hosts_.num_hosts,
                      formatBytes(slice_bytes_).c_str());
  } else {
    c.algorithm = algo::findAlgorithm(collective, collective == algo::Collective::allreduce ? "ring" : "chain");
    c.reason = format("%d hosts: bandwidth-optimal pipelined %s", hosts_.num_hosts,
                      collective == algo::Collective::allreduce ? "ring" : "chain");
  }
  std::string key = std::string(algo::toString(collective)) + "/" + c.algorithm->name + "/" + c.reason;
  if (logged_.insert(key).second)
    COLL_INFO("TUNE", "%s of %s -> %s (%s)", algo::toString(collective), formatBytes(bytes).c_str(),
              c.algorithm->name, c.reason.c_str());
  return c;
}

}  // namespace coll::topology
