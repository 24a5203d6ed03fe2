#include "topology/selector.h"

#include "algorithms/hierarchical_allreduce.h"
#include "core/log.h"

namespace coll::topology {

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
