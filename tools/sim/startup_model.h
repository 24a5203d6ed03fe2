// coll-sim's model of start-up: from launch to the first all-reduce, and the memory each rank
// holds then. The store requests come from the start-up plan (startup_plan.h, checked against
// real jobs); the probe's messages from coll's own probe (topology/link_probe.h) priced on the
// modelled links; the first all-reduce is simulated as any op (sim_engine.h). What the model
// cannot derive, the CPU time of a process and the store's time per request, are costs
// measured on a machine (StartupCosts, defaults from the 2-core VM of docs/perf/startup_sim/).
//
// Per phase: max(the store server's busy time, the longest chain of one rank's round trips)
// plus the phase's CPU time on an oversubscribed host (ranks over cores, when more ranks than
// cores), as every phase ends on a store wait that needs every rank.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "cluster_model.h"
#include "startup_plan.h"

namespace coll::sim {

struct StartupCosts {
  double cores_per_host = 0;         // 0: a core for every rank (a fraction: hosts sharing cores)
  double spawn_s = 1.3e-3;           // the launcher's time per process it starts, one after another
  double host_launch_s = 0.1;        // a remote launch (ssh, a launcher daemon), on a binary tree of hosts
  double placement_sample_s = 60e-3; // one host: collrun --bind-to auto watches the CPUs this long before it starts ranks
  double exec_cpu_s = 5e-3;          // CPU from exec to the communicator's first phase (loading, main)
  double init_cpu_s = 3e-3;          // CPU setting up the two transport sets (segments, sockets, threads)
  double local_peer_cpu_s = 25e-6;   // CPU per local peer: map its segment (both planes), probe CMA, greet it
  double connect_cpu_s = 0.4e-3;     // a rank's CPU per store connection (connect, challenge, MAC)
  double hardware_cpu_s = 1e-3;      // detecting the host's hardware (hwloc), every rank
  double hardware_wait_s = 7e-3;     // ... and waiting for what it reads (sysfs), not on a core
  double store_request_s = 12e-6;    // the store's thread per request
  double store_connect_s = 60e-6;    // the store's thread per connection (accept, challenge, MAC)
  double loopback_rtt_s = 27e-6;     // a request's round trip on the store's host
  double request_cpu_s = 10e-6;      // a client's CPU per request (write, wake, read)
  double store_copy_Bps = 2e9;       // the store's thread writing replies (rank 0's link may be slower)
  double switch_s = 25e-6;           // oversubscribed: a chained probe hop waits its rank's turn, per rank a core
  double gamma_probe_s = 1e-3;       // measureReduceBandwidth on each host's first rank (the others wait)
  // Memory (bytes).
  double private_base = 0.8 * 1048576;      // one rank of a one-host job of few ranks
  double private_network = 1.0 * 1048576;   // more where a job spans hosts (sockets, probe buffers)
  double private_per_local_peer = 9 * 1024;
  double private_per_peer = 160;            // host id, transport and engine entries per rank of the job
  double store_per_connection = 2 * 1024;   // rank 0: each client's session
  double store_per_key = 160;               // rank 0: a key, its value and the map's node

  // These costs with every time a host's CPUs spend multiplied by `factor` (a remote launch's
  // and the links' are not): the same model on a machine, or a day of a shared machine, that
  // runs `factor` times as long (--cpu-scale; bench/scripts/startup_scale.py measures it with
  // one job and predicts the others).
  StartupCosts cpuScaled(double factor) const;
};

struct StartupPhaseEstimate {
  std::string name;
  double seconds = 0;
  double server_s = 0;        // the store's thread (requests, connections) and the replies' bytes
  double chain_s = 0;         // the longest rank's round trips
  double cpu_s = 0;           // per rank, stretched by oversubscription
  int64_t requests = 0;       // of the whole job
  int64_t rank0_requests = 0;
  int64_t max_other_requests = 0;
  double bytes_in = 0;        // the replies of the whole job
};

struct StartupEstimate {
  double launch_s = 0;
  std::vector<StartupPhaseEstimate> phases;
  double ready_s = 0;             // launch to every rank ready
  double first_allreduce_s = 0;   // the 8 B all-reduce after it
  std::string first_algorithm;
  int64_t requests = 0, store_keys = 0, store_connections = 0;
  double store_bytes_in = 0;      // what the store's replies carry in all
  double private_bytes = 0, private_rank0_bytes = 0, shared_bytes = 0;  // per rank
  double oversubscription = 1;    // ranks over cores on the fullest host
  // Sockets a rank holds after start-up: its store clients and, between hosts, the ring
  // neighbours'. The point-to-point engine adds one (and one store read, the peer's address)
  // per remote peer it exchanges messages with, when it first does (transport/socket/on_demand.h).
  int64_t sockets_per_rank = 0;
};

Status estimateStartup(const ClusterModel& m, const StartupCosts& costs, StartupEstimate* out);
std::string describeStartup(const ClusterModel& m, const StartupEstimate& e);

}  // namespace coll::sim
