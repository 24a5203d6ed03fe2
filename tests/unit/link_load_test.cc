// The cost model's host-link loads (algorithms/cost/link_load.h) against the schedules the builders
// emit: every rank's sends to a rank on another host, summed per host and direction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "algorithms/catalog.h"
#include "algorithms/cost/link_load.h"

namespace coll::algo::cost {
namespace {

using algo::Collective;

// Bytes over each host's link and each leaf's uplink, each way, in one step of the schedules.
struct StepTraffic {
  std::vector<double> out, in, leaf_out, leaf_in;
  explicit StepTraffic(size_t hosts) : out(hosts), in(hosts), leaf_out(hosts), leaf_in(hosts) {}
  double busiest(const LeafSwitches& leaves) const {
    double most = 0;
    for (size_t h = 0; h < out.size(); ++h) {
      most = std::max({most, out[h], in[h]});
      if (leaves.hosts_per_leaf > 0)
        most = std::max({most, leaf_out[h] / leaves.uplinkInHostLinks(), leaf_in[h] / leaves.uplinkInHostLinks()});
    }
    return most;
  }
};

// The busiest link's bytes, either way, over the buffer's bytes: a host's across its link, or
// behind leaf switches a leaf's across its uplink over what the uplink carries in host links.
// by_phase: the sum over the schedules' phases (Step::phase) of each phase's busiest link.
double sentAcross(const char* algorithm, const std::vector<std::vector<int>>& hosts, size_t count,
                  const LeafSwitches& leaves = {}, bool by_phase = false) {
  std::vector<int> host_of;
  for (size_t h = 0; h < hosts.size(); ++h)
    for (int r : hosts[h]) host_of.resize(std::max<size_t>(host_of.size(), r + 1)), host_of[r] = static_cast<int>(h);
  const int n = static_cast<int>(host_of.size());
  std::map<uint32_t, StepTraffic> phases;
  const algo::AlgorithmInfo* a = algo::findAlgorithm(Collective::allreduce, algorithm);
  for (int r = 0; r < n; ++r) {
    algo::BuildParams p;
    p.rank = r;
    p.nranks = n;
    p.count = count;
    p.elem_size = 4;
    p.hosts = &hosts;
    for (const algo::Step& s : a->build(p).steps)
      if (s.kind == algo::StepKind::send && host_of[s.peer] != host_of[r]) {
        StepTraffic& t = phases.try_emplace(by_phase ? s.phase : 0, hosts.size()).first->second;
        t.out[host_of[r]] += static_cast<double>(s.bytes);
        t.in[host_of[s.peer]] += static_cast<double>(s.bytes);
        const int from = leaves.leafOf(host_of[r]), to = leaves.leafOf(host_of[s.peer]);
        if (from != to) t.leaf_out[from] += static_cast<double>(s.bytes), t.leaf_in[to] += static_cast<double>(s.bytes);
      }
  }
  double sum = 0;
  for (const auto& [phase, t] : phases) sum += t.busiest(leaves);
  return sum / static_cast<double>(count * 4);
}

TEST(LinkLoad, MatchesTheBuildersCrossingBytes) {
  struct Layout { int hosts, per_host; };
  for (Layout l : {Layout{1, 4}, Layout{2, 1}, Layout{2, 2}, Layout{4, 1}, Layout{4, 2}, Layout{2, 4}, Layout{3, 2},
                   Layout{2, 3}, Layout{8, 2}}) {
    std::vector<std::vector<int>> hosts(static_cast<size_t>(l.hosts));
    std::vector<int> host_of;
    for (int r = 0; r < l.hosts * l.per_host; ++r) {
      hosts[static_cast<size_t>(r / l.per_host)].push_back(r);
      host_of.push_back(r / l.per_host);
    }
    const size_t count = size_t{3} << 12;  // divides into the blocks and halves of every layout here
    EXPECT_DOUBLE_EQ(links::rhdAllreduce(host_of), sentAcross("rhd", hosts, count, {}, true)) << l.hosts << "x" << l.per_host;
    EXPECT_DOUBLE_EQ(links::treeAllreduce(host_of), sentAcross("tree", hosts, count)) << l.hosts << "x" << l.per_host;
  }
}

// The simulated cluster's 4 x 2 (docs/perf/selector_4x2.log at f73acff): at 1 MiB rhd took 27.0 ms and
// tree 32.5 ms, 3.2 and 3.9 times a buffer's 8.3 ms over the 0.126 GB/s link; the model's
// closed forms said 1.5 (2(H-1)/H, right for one rank per host) and 2.
TEST(LinkLoad, FourHostsOfTwo) {
  const std::vector<int> four_by_two{0, 0, 1, 1, 2, 2, 3, 3};
  EXPECT_DOUBLE_EQ(links::rhdAllreduce(four_by_two), 3.0) << "halves of 1/2 and 1/4 cross, from both ranks";
  EXPECT_DOUBLE_EQ(links::treeAllreduce(four_by_two), 3.0);
  EXPECT_DOUBLE_EQ(links::rhdAllreduce({0, 1, 2, 3}), 1.5) << "one rank per host: the closed form holds";
  EXPECT_DOUBLE_EQ(links::rhdAllreduce({0, 1, 2}), 3.0) << "fold in, one exchange of halves each way, fold out";
  EXPECT_DOUBLE_EQ(links::rhdAllreduce({0, 0, 0, 0}), 0.0);
}

// Behind leaf switches: a leaf's uplink carries hosts_per_leaf / oversubscription host links'
// worth, and the result is the busier of it and the busiest host link (coll-sim's fabric).
TEST(LinkLoad, LeafUplinksMatchTheBuilders) {
  struct Case { int hosts, per_host, per_leaf; double oversubscription; };
  for (Case c : {Case{4, 1, 2, 1}, Case{4, 1, 2, 2}, Case{8, 2, 2, 2}, Case{8, 2, 4, 4}, Case{16, 1, 4, 2},
                 Case{6, 2, 4, 3}}) {
    std::vector<std::vector<int>> hosts(static_cast<size_t>(c.hosts));
    std::vector<int> host_of;
    for (int r = 0; r < c.hosts * c.per_host; ++r) {
      hosts[static_cast<size_t>(r / c.per_host)].push_back(r);
      host_of.push_back(r / c.per_host);
    }
    const LeafSwitches leaves{c.per_leaf, c.oversubscription};
    const size_t count = size_t{3} << 12;
    const std::string where = std::to_string(c.hosts) + "x" + std::to_string(c.per_host) + ", " +
                              std::to_string(c.per_leaf) + " per leaf, " + std::to_string(c.oversubscription);
    EXPECT_DOUBLE_EQ(links::rhdAllreduce(host_of, leaves), sentAcross("rhd", hosts, count, leaves, true)) << where;
    EXPECT_DOUBLE_EQ(links::treeAllreduce(host_of, leaves), sentAcross("tree", hosts, count, leaves)) << where;
  }
  // 4 hosts of one rank, 2 per leaf: rhd's first halving sends half the buffer from both hosts
  // of a leaf to the other leaf, its second a quarter to the other host of the leaf, and the
  // doublings do the same: 2 x (0.5 + 0.25) in host links where the uplink carries two host
  // links' worth, 2 x (1.0 + 0.25) where it carries one (2:1).
  const std::vector<int> four{0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(links::rhdAllreduce(four, {2, 1}), 1.5) << "an uplink of two host links: the host links bound";
  EXPECT_DOUBLE_EQ(links::rhdAllreduce(four, {2, 2}), 2.5) << "2:1: the uplink bounds the first step";
  EXPECT_DOUBLE_EQ(links::rhdAllreduce(four, {4, 2}), 1.5) << "one leaf: no uplink crossed";
}

}  // namespace
}  // namespace coll::algo::cost
