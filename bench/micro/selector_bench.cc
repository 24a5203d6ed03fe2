// Per-operation CPU cost before any byte moves: choosing the algorithm
// (coll::select::Selector::choose) and building the rank's schedule from the catalogue
// (algo::findAlgorithm(collective, name)->build(params)).
//
// Run: build/bin/selector_bench [--benchmark_filter=...] [--benchmark_min_time=0.05]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "algorithms/catalog.h"
#include "bootstrap/host_grouping.h"
#include "select/selector.h"

namespace {

using coll::algo::Collective;

constexpr int kRanksPerHost = 2;

// Rank 0's view of num_hosts hosts of kRanksPerHost ranks each (ranks numbered host by host).
coll::bootstrap::HostGrouping makeGrouping(int num_hosts) {
  coll::bootstrap::HostGrouping g;
  const int n = num_hosts * kRanksPerHost;
  g.num_hosts = num_hosts;
  g.local_rank = 0;
  g.local_size = kRanksPerHost;
  for (int r = 0; r < n; ++r) g.host_of_rank.push_back("host" + std::to_string(r / kRanksPerHost));
  for (int r = 1; r < kRanksPerHost; ++r) g.local_peers.push_back(r);
  g.ranks_of_host.resize(num_hosts);
  for (int r = 0; r < n; ++r) g.ranks_of_host[r / kRanksPerHost].push_back(r);
  return g;
}

// Args: {num_hosts, bytes}. The first call logs the choice once; the loop measures the rest.
void BM_SelectorChoose(benchmark::State& state) {
  const int num_hosts = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1));
  coll::select::Selector selector({}, makeGrouping(num_hosts));
  state.SetLabel(selector.choose(Collective::allreduce, bytes).algorithm->name);
  for (auto _ : state) {
    auto choice = selector.choose(Collective::allreduce, bytes);
    benchmark::DoNotOptimize(choice);
  }
}
BENCHMARK(BM_SelectorChoose)
    ->ArgNames({"hosts", "bytes"})
    ->ArgsProduct({{1, 4}, {8, 64 << 20}});

// Args: {count} of f32 at n = 8, rank 0; hierarchical gets 4 hosts x 2 ranks.
void BM_BuildAllreduce(benchmark::State& state, const char* algorithm) {
  static const std::vector<std::vector<int>> kHosts = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const coll::algo::AlgorithmInfo* info = coll::algo::findAlgorithm(Collective::allreduce, algorithm);
  if (!info) {
    state.SkipWithError("algorithm not in the catalogue");
    return;
  }
  coll::algo::BuildParams p;
  p.rank = 0;
  p.nranks = 8;
  p.count = static_cast<size_t>(state.range(0));
  p.elem_size = 4;
  p.in_place = true;
  p.hosts = &kHosts;
  size_t steps = 0;
  for (auto _ : state) {
    coll::algo::Schedule s = coll::algo::findAlgorithm(Collective::allreduce, algorithm)->build(p);
    steps = s.steps.size();
    benchmark::DoNotOptimize(s);
  }
  state.counters["steps"] = static_cast<double>(steps);
}
BENCHMARK_CAPTURE(BM_BuildAllreduce, ring, "ring")->ArgName("count")->Arg(2)->Arg(16 << 20);
BENCHMARK_CAPTURE(BM_BuildAllreduce, direct, "direct")->ArgName("count")->Arg(2)->Arg(16 << 20);
BENCHMARK_CAPTURE(BM_BuildAllreduce, hierarchical, "hierarchical")->ArgName("count")->Arg(2)->Arg(16 << 20);

}  // namespace

BENCHMARK_MAIN();
