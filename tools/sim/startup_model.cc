#include "startup_model.h"

#include <algorithm>
#include <cmath>

#include "base/log.h"
#include "select/selector.h"
#include "sim_engine.h"
#include "topology/link_probe.h"
#include "transport/shm/layout.h"

namespace coll::sim {
namespace {

constexpr double kPage = 4096;
constexpr int kConnectionsAtStore = 1;    // phase "store": the main client
constexpr int kConnectionsAtPresence = 2; // the ledger responder's and the presence client
constexpr int kConnectionsAtP2p = 1;      // the point-to-point engine's

StartupLayout layoutOf(const ClusterModel& m) {
  std::vector<int> per_host(static_cast<size_t>(m.numHosts()), 0);
  for (int h : m.host_of) ++per_host[static_cast<size_t>(h)];
  return StartupLayout::of(std::move(per_host));
}

// What a shared-memory segment reserves when it is made (transport/shm/layout.h): its header,
// and the board where every rank of the communicator is on one host (the point-to-point
// engine's segment never has one).
double segmentReservedBytes(bool board) {
  transport::shm::Geometry g;
  g.board = board;
  return static_cast<double>(g.reservedBytes());
}

// One pair's probe (PairProbe::measure): kProbePingPongs idle round trips of 8 B, then two
// transfers of kProbeLargeBytes.
double pairProbeSeconds(const topology::LinkParams& link, double per_message_s) {
  const double round_trip = 2 * (link.alpha_s + per_message_s);
  return topology::kProbePingPongs * round_trip + 2 * (topology::kProbeLargeBytes / link.beta_Bps + round_trip);
}

struct Stretch {  // how a host's CPU work stretches when it has more ranks than cores
  double cores = 0;
  double of(int local_ranks) const { return cores > 0 && local_ranks > cores ? local_ranks / cores : 1.0; }
};

int connectionsOpened(const std::string& phase);

// The CPU a rank spends in a phase beyond its requests': connecting to the store, setting up a
// transport set (the collectives': each local peer's segment mapped, probed and greeted, for
// both planes at once; the point-to-point engine's: its connections over the second plane),
// detecting hardware.
double phaseCpu(const std::string& phase, const StartupCosts& c, int local_ranks) {
  double cpu = connectionsOpened(phase) * c.connect_cpu_s;
  if (phase == "transports") cpu += c.init_cpu_s / 2 + c.local_peer_cpu_s * (local_ranks - 1);
  if (phase == "point-to-point") cpu += c.init_cpu_s / 2;
  if (phase == "topology") cpu += c.hardware_cpu_s;
  return cpu;
}

int connectionsOpened(const std::string& phase) {
  if (phase == "store") return kConnectionsAtStore;
  if (phase == "presence") return kConnectionsAtPresence;
  if (phase == "point-to-point") return kConnectionsAtP2p;
  return 0;
}

// The probe's messages (link_probe.cc: probeLinks), priced on the modelled links: each class's
// pair, then kLoadedStepRuns + 1 runs of the chained ring shift (a hop a round), then γ.
double probeSeconds(const ClusterModel& m, const StartupLayout& job, const StartupCosts& c, double stretch) {
  if (job.ranks() < 2) return 0;
  double s = 0;
  if (*std::max_element(job.ranks_per_host.begin(), job.ranks_per_host.end()) >= 2)
    s += pairProbeSeconds(m.topo.intra, m.idlePerMessageSeconds(false));
  if (job.hosts() > 1) s += pairProbeSeconds(m.topo.inter, 2 * m.idlePerMessageSeconds(true));
  const topology::LinkParams& ring = job.hosts() > 1 ? m.topo.inter : m.topo.intra;
  const double hop = std::max(ring.alpha_s + m.idlePerMessageSeconds(job.hosts() > 1), stretch * c.switch_s);
  s += (topology::kLoadedStepRuns + 1) * topology::kLoadedStepRounds * hop;
  return s + c.gamma_probe_s * stretch;  // everyone waits for the leaders' figures
}

Status firstAllreduce(const ClusterModel& m, StartupEstimate* out) {
  const topology::Topology probed = m.probedTopology();
  select::Selector selector({}, probed, 512 << 10);
  const select::Choice choice = selector.modelChoice(algo::Collective::allreduce, 8, 4);
  SimRequest q;
  q.algorithm = choice.algorithm;
  q.bytes = 8;
  SimResult r;
  COLL_RETURN_IF_ERROR(simulate(m, q, &r));
  out->first_allreduce_s = r.slowest_rank_s;
  out->first_algorithm = choice.algorithm->name;
  return Status::ok();
}

void estimateMemory(const StartupLayout& job, const StartupCosts& c, StartupEstimate* out) {
  const int fullest = *std::max_element(job.ranks_per_host.begin(), job.ranks_per_host.end());
  const double n = job.ranks();
  // One segment of two planes (collectives, point to point), and the pages the first op's messages touch:
  // per local sender a control page and a page of its ring, at most log2(n) of them
  // (recursive doubling's partners).
  const double senders = fullest < 2 ? 0 : std::min<double>(fullest - 1, std::ceil(std::log2(std::max(2.0, n))));
  out->shared_bytes = fullest < 2 ? 0 : segmentReservedBytes(job.hosts() == 1) + segmentReservedBytes(false) +
                                            senders * 2 * kPage;
  out->private_bytes = c.private_base + (job.hosts() > 1 ? c.private_network : 0) +
                       c.private_per_local_peer * (fullest - 1) + c.private_per_peer * (n - 1);
  out->private_rank0_bytes = out->private_bytes + c.store_per_connection * out->store_connections +
                             c.store_per_key * out->store_keys + out->store_bytes_in / std::max(1.0, n);
}

}  // namespace

StartupCosts StartupCosts::cpuScaled(double factor) const {
  StartupCosts c = *this;
  for (double* t : {&c.spawn_s, &c.exec_cpu_s, &c.init_cpu_s, &c.local_peer_cpu_s, &c.connect_cpu_s, &c.hardware_cpu_s,
                    &c.hardware_wait_s, &c.store_request_s, &c.store_connect_s, &c.loopback_rtt_s, &c.request_cpu_s,
                    &c.switch_s, &c.gamma_probe_s})
    *t *= factor;
  c.store_copy_Bps /= factor;
  return c;
}

Status estimateStartup(const ClusterModel& m, const StartupCosts& c, StartupEstimate* out) {
  *out = StartupEstimate{};
  const StartupLayout job = layoutOf(m);
  const int n = job.ranks();
  const int fullest = *std::max_element(job.ranks_per_host.begin(), job.ranks_per_host.end());
  const Stretch stretch{c.cores_per_host};
  out->oversubscription = stretch.of(fullest);
  const double round_trip_remote = 2 * (m.topo.inter.alpha_s + m.idlePerMessageSeconds(true));
  // Launch: hosts on a binary tree (one host: collrun, which first watches whether the CPUs are
  // idle enough to pin ranks), then each host's processes one after another, loading in parallel.
  out->launch_s = (job.hosts() > 1 ? c.host_launch_s * std::ceil(std::log2(job.hosts() + 1.0)) : c.placement_sample_s) +
                  fullest * c.spawn_s + c.exec_cpu_s * out->oversubscription;
  const std::vector<std::string>& names = startupPhases();
  out->phases.resize(names.size());
  for (size_t p = 0; p < names.size(); ++p) out->phases[p].name = names[p];
  for (int r = 0; r < n; ++r) {
    const double round_trip = (job.hostOf(r) == 0 ? c.loopback_rtt_s : round_trip_remote) + c.store_request_s;
    const std::vector<PhaseRequests> plan = plannedRequests(job, r);
    for (size_t p = 0; p < plan.size(); ++p) {
      StartupPhaseEstimate& e = out->phases[p];
      e.requests += plan[p].requests + (r == 0 ? plan[p].may_add : 0);
      e.chain_s = std::max(e.chain_s, plan[p].requests * round_trip);
      if (r != 0) e.cpu_s = std::max(e.cpu_s, plan[p].requests * c.request_cpu_s);  // rank 0's are in its chain
      e.bytes_in += static_cast<double>(plan[p].bytes_in);
      if (r == 0) e.rank0_requests = plan[p].requests;
      else e.max_other_requests = std::max(e.max_other_requests, plan[p].requests);
      out->store_bytes_in += static_cast<double>(plan[p].bytes_in);
    }
  }
  const double stretched = out->oversubscription;
  // Replies leave the store's host through its thread and, to other hosts, its link.
  const double reply_Bps = job.hosts() > 1 ? std::min(c.store_copy_Bps, m.topo.inter.beta_Bps) : c.store_copy_Bps;
  for (StartupPhaseEstimate& e : out->phases) {
    const int connections = connectionsOpened(e.name) * n;
    e.server_s = e.requests * c.store_request_s + connections * c.store_connect_s + e.bytes_in / reply_Bps;
    // A rank's own CPU: its requests' (inside the round trips unless ranks wait for a core) and the phase's.
    e.cpu_s = ((stretched > 1 ? e.cpu_s : 0) + phaseCpu(e.name, c, fullest)) * stretched;
    e.seconds = std::max(e.server_s, e.chain_s) + e.cpu_s + (e.name == "topology" ? c.hardware_wait_s : 0);
    if (e.name == "topology") e.seconds += probeSeconds(m, job, c, stretched);
    out->ready_s += e.seconds;
    out->requests += e.requests;
    out->store_connections += connections;
  }
  out->ready_s += out->launch_s;
  // Keys the store holds: every set (about half of a rank's requests) and every add's counter.
  out->store_keys = out->requests / 2;
  // Store clients and the ring neighbours' sockets (between hosts); point-to-point connects on first use.
  out->sockets_per_rank = kStoreConnectionsPerRank + (job.hosts() > 1 ? 2 : 0);
  estimateMemory(job, c, out);
  return firstAllreduce(m, out);
}

std::string describeStartup(const ClusterModel& m, const StartupEstimate& e) {
  std::string text = format("# coll-sim start-up: %s\n", m.describe().c_str());
  if (e.oversubscription > 1) text += format("# %.1f ranks a core on the fullest host\n", e.oversubscription);
  text += format("# %-15s %10s %10s %10s %10s %12s %10s %10s\n", "phase", "ms", "store ms", "chain ms", "cpu ms",
                 "requests", "rank 0", "others");
  text += format("  %-15s %10.1f\n", "launch", e.launch_s * 1e3);
  for (const StartupPhaseEstimate& p : e.phases)
    text += format("  %-15s %10.1f %10.1f %10.1f %10.1f %12lld %10lld %10lld\n", p.name.c_str(), p.seconds * 1e3,
                   p.server_s * 1e3, p.chain_s * 1e3, p.cpu_s * 1e3, static_cast<long long>(p.requests),
                   static_cast<long long>(p.rank0_requests), static_cast<long long>(p.max_other_requests));
  text += format("# every rank ready: %.3f s; first all-reduce (8 B, %s): %.1f us; time to the first all-reduce: %.3f s\n",
                 e.ready_s, e.first_algorithm.c_str(), e.first_allreduce_s * 1e6, e.ready_s + e.first_allreduce_s);
  text += format("# store: %lld requests, %lld connections, about %lld keys, %.1f MiB of replies\n",
                 static_cast<long long>(e.requests), static_cast<long long>(e.store_connections),
                 static_cast<long long>(e.store_keys), e.store_bytes_in / 1048576);
  text += format("# memory per rank: private %.2f MiB (rank 0, with the store: %.2f MiB), shared %.2f MiB\n",
                 e.private_bytes / 1048576, e.private_rank0_bytes / 1048576, e.shared_bytes / 1048576);
  text += format("# sockets per rank: %lld (store clients, ring neighbours; point-to-point adds one per remote peer it "
                 "exchanges messages with, on first use)\n", static_cast<long long>(e.sockets_per_rank));
  return text;
}

}  // namespace coll::sim
