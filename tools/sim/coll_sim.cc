// coll-sim: runs the schedules coll itself builds on a modelled cluster (docs/SIMULATOR.md).
//
//   coll-sim --hosts 2048 --per-host 8 --link 100gbit --hosts-per-leaf 16 --oversubscription 2
//              --inter-alpha-us 5 -b 8 -e 256M -f 8 --algo all
//   coll-sim --topology job.json -b 8 -e 64M           # a topology coll-topo --json dumped
//   coll-sim --hosts 2048 --per-host 8 --startup       # launch to the first all-reduce, memory per rank
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "sim_engine.h"
#include "sim_options.h"
#include "sim_report.h"
#include "select/cost_model.h"
#include "select/selector.h"

using namespace coll;
using namespace coll::sim;

namespace {

Status loadCluster(const SimOptions& o, ClusterModel* m) {
  if (!o.topology_file.empty()) return clusterFromFile(o.topology_file, o.cluster, o.fabric_given, m);
  return clusterFromFlags(o.cluster, m);
}

// The algorithms to run at every size: empty means the selector's choice, size by size.
Status algorithmsToRun(const SimOptions& o, std::vector<const algo::AlgorithmInfo*>* out) {
  std::vector<std::string> names = o.algos;
  if (names.size() == 1 && names[0] == "all") {
    names.clear();
    for (const algo::AlgorithmInfo& a : algo::catalog())
      if (a.collective == o.collective && a.isSchedule()) names.push_back(a.name);
  }
  for (const std::string& n : names) {
    const algo::AlgorithmInfo* a = algo::findAlgorithm(o.collective, n);
    if (!a)
      return invalidArgument("--algo " + n + ": " + algo::toString(o.collective) + " has no such algorithm (" +
                             algo::algorithmNames(o.collective) + ")");
    if (!a->isSchedule())
      return invalidArgument("--algo " + n + ": not a schedule (it runs on one host's shared memory, by the board "
                             "path); coll-sim simulates schedules");
    out->push_back(a);
  }
  return Status::ok();
}

// The byte count coll's selector is given for an op whose whole buffer is `bytes`: one rank's
// chunk for the collectives counted per rank (all-gather, reduce-scatter, ...: exec/op.cc,
// where OpRequest::bytes() is the per-rank count), the buffer for the others.
size_t selectorBytes(const ClusterModel& m, const SimOptions& o, size_t bytes) {
  const bool per_rank = o.collective == algo::Collective::allgather || o.collective == algo::Collective::reducescatter ||
                        o.collective == algo::Collective::alltoall || o.collective == algo::Collective::gather ||
                        o.collective == algo::Collective::scatter;
  return per_rank ? bytes / std::max<size_t>(1, m.host_of.size()) : bytes;
}

// `probed`: m.probedTopology(), what the cost model prices (made once per run: it copies the layout).
Row simulateRow(const ClusterModel& m, const topology::Topology& probed, const SimOptions& o,
                const algo::AlgorithmInfo* a, size_t bytes, Status* st) {
  Row row;
  row.algorithm = a->name;
  row.bytes = bytes;
  const select::Prediction p =
      select::predictTime(o.collective, a->name, selectorBytes(m, o, bytes), o.elem_size, probed, o.slice_bytes);
  row.model_s = p.supported ? p.seconds : -1;
  if (!p.supported && std::string(a->name) == "hierarchical") {
    row.refused = p.why_not;  // its builder would fall back to ring: say so rather than time ring
    return row;
  }
  SimRequest q;
  q.collective = o.collective;
  q.algorithm = a;
  q.bytes = bytes;
  q.elem_size = o.elem_size;
  q.slice_bytes = o.slice_bytes;
  q.pipeline_depth = o.pipeline_depth;
  q.root = o.root;
  q.in_place = o.in_place;
  q.iters = o.iters;
  q.exact = o.exact;
  q.max_memory_bytes = o.max_memory_bytes;
  q.warmup = o.warmup;
  const auto t0 = std::chrono::steady_clock::now();
  *st = simulate(m, q, &row.sim);
  if (st->code() == ErrorCode::Unsupported) {  // too large for --max-memory: a row that says so
    row.refused = st->message();
    *st = Status::ok();
  }
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  SimOptions o;
  std::string error;
  switch (parseSimOptions(argc, argv, &o, &error)) {
    case ParseOutcome::help: std::fputs(simUsage().c_str(), stdout); return 0;
    case ParseOutcome::error: std::fprintf(stderr, "coll-sim: %s\n", error.c_str()); return 2;
    case ParseOutcome::run: break;
  }
  if (!o.plan_layout.empty()) {  // "rank <r> <phase>=<requests>[+<may add>] ...", for startup_check.py
    const StartupLayout job = StartupLayout::of(o.plan_layout);
    for (int r = 0; r < job.ranks(); ++r) {
      std::string line = "rank " + std::to_string(r);
      for (const PhaseRequests& p : plannedRequests(job, r)) {
        std::string name = p.phase;
        std::replace(name.begin(), name.end(), ' ', '_');
        line += " " + name + "=" + std::to_string(p.requests) + (p.may_add ? "+" + std::to_string(p.may_add) : "");
      }
      std::puts(line.c_str());
    }
    return 0;
  }
  ClusterModel m;
  std::vector<const algo::AlgorithmInfo*> algos;
  Status st = loadCluster(o, &m);
  if (st) st = algorithmsToRun(o, &algos);
  if (!st) {
    std::fprintf(stderr, "coll-sim: %s\n", st.message().c_str());
    return 2;
  }
  if (o.root >= m.topo.nranks) {
    std::fprintf(stderr, "coll-sim: -r %d: the root must be a rank (0..%d)\n", o.root, m.topo.nranks - 1);
    return 2;
  }
  if (o.startup) {
    StartupEstimate e;
    st = estimateStartup(m, o.startup_costs.cpuScaled(o.cpu_scale), &e);
    if (!st) {
      std::fprintf(stderr, "coll-sim: %s\n", st.message().c_str());
      return 1;
    }
    std::fputs(describeStartup(m, e).c_str(), stdout);
    return 0;
  }
  Report report(o, m);
  const topology::Topology probed = m.probedTopology();
  select::Selector selector({}, probed, o.slice_bytes);
  std::vector<size_t> sizes;
  for (size_t s : simSizes(o)) sizes.push_back(s / o.elem_size * o.elem_size);
  std::map<std::string, std::vector<Row>> tables;
  std::vector<Row> chosen;
  for (size_t bytes : sizes) {
    const select::Choice choice = selector.modelChoice(o.collective, selectorBytes(m, o, bytes), o.elem_size);
    const Row* same = nullptr;
    for (const algo::AlgorithmInfo* a : algos) {
      Row row = simulateRow(m, probed, o, a, bytes, &st);
      if (!st) break;
      tables[a->name].push_back(row);
      if (a == choice.algorithm) same = &tables[a->name].back();
    }
    if (!st) break;
    chosen.push_back(same ? *same : simulateRow(m, probed, o, choice.algorithm, bytes, &st));
    if (!st) break;
  }
  if (!st) {
    std::fprintf(stderr, "coll-sim: %s\n", st.message().c_str());
    return 1;
  }
  for (const algo::AlgorithmInfo* a : algos) report.table(a->name, tables[a->name]);
  if (algos.empty()) report.table("auto (the selector's choice)", chosen);
  report.selector(chosen, tables);
  st = report.writeCsv(tables, chosen);
  if (!st) {
    std::fprintf(stderr, "coll-sim: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
