#include "startup_plan.h"

#include <algorithm>
#include <set>

#include "algorithms/patterns/ring.h"

namespace coll::sim {
namespace {

// A store barrier: an add, then the last arrival's set or everyone else's get.
constexpr int64_t kBarrier = 2;
// The boot id (36 characters and a slash) that a host id carries after its hostname.
constexpr int kBootIdBytes = 37;
// A hardware description (topology_exchange.cc), as toJson(HostHardware) dumps one.
constexpr int64_t kHardwareJsonBytes = 400;

// createTransports (transport/registry.cc) for the collectives' or the point-to-point set:
// between hosts the network choice (exchangeNetworkChoice: every rank publishes its card, rank
// 0 reads them all and publishes the choice, every rank reads it), the socket transport's
// address, and for the collectives' set shared memory's two barriers (shm/transport.cc setUp;
// every rank, with or without local peers). The point-to-point set's shared memory is the
// second plane of the collectives' segments (shm/second_plane.cc): no request.
int64_t transportRequests(const StartupLayout& job, int rank, bool shm_set_up) {
  int64_t n = 1 + (shm_set_up ? 2 * kBarrier : 0);
  if (job.hosts() > 1) n += rank == 0 ? job.ranks() + 3 : 2;  // rank 0 reads its own card too
  return n;
}

// connectNeighbours: the ring's left and right; a socket connection is dialed by the higher
// rank, which reads the other's address (socket/transport.cc); shared memory asks nothing.
int64_t neighbourRequests(const StartupLayout& job, int rank) {
  const int n = job.ranks();
  if (n == 1) return 0;
  std::set<int> dialed;
  for (int peer : {algo::ring::left(rank, n), algo::ring::right(rank, n)})
    if (job.hostOf(peer) != job.hostOf(rank) && peer < rank) dialed.insert(peer);
  return static_cast<int64_t>(dialed.size());
}

// ScheduledPath::init -> buildJobTopology (topology_exchange.cc, link_probe.cc).
int64_t topologyRequests(const StartupLayout& job, int rank) {
  const int n = job.ranks(), hosts = job.hosts();
  const bool leader = job.firstRankOf(job.hostOf(rank)) == rank;
  // exchangeHardware: leaders publish, rank 0 reads them and publishes the table, all read it.
  int64_t r = (leader && rank != 0 ? 1 : 0) + (rank == 0 ? hosts : 0) + 1;
  if (n == 1) return r;  // no probe
  for (int h = 0; h < hosts; ++h)  // probeClass "intra_host": the first host of two ranks or more
    if (job.ranks_per_host[h] >= 2) {
      r += 1 + (rank == job.firstRankOf(h) ? 1 : 0);
      break;
    }
  if (hosts > 1) r += 1 + (rank == job.firstRankOf(1) - 1 ? 1 : 0);  // "inter_host": host 0's last rank publishes
  r += 2 + (rank == 0 ? n + 1 : 0);  // probeLoadedStep: publish, rank 0 reads all and agrees, read
  r += (leader && rank != 0 ? 1 : 0) + (rank == 0 ? hosts : 0) + 1;  // agreeGamma, as the hardware
  return r;
}

}  // namespace

StartupLayout StartupLayout::of(std::vector<int> ranks_per_host) {
  StartupLayout job;
  job.ranks_per_host = std::move(ranks_per_host);
  job.first_rank.push_back(0);
  for (int r : job.ranks_per_host) job.first_rank.push_back(job.first_rank.back() + r);
  return job;
}

int StartupLayout::hostOf(int rank) const {
  auto it = std::upper_bound(first_rank.begin(), first_rank.end(), rank);
  return static_cast<int>(it - first_rank.begin()) - 1;
}

const std::vector<std::string>& startupPhases() {
  static const std::vector<std::string> phases = {"store",          "roll call",  "presence", "hosts", "transports",
                                                  "point-to-point", "neighbours", "topology", "barrier"};
  return phases;
}

std::vector<PhaseRequests> plannedRequests(const StartupLayout& job, int rank, int host_id_bytes) {
  const int n = job.ranks(), hosts = job.hosts();
  // The host table (host_grouping.cc): each host's name (the id without its boot id), then
  // "every <k>" when all hosts have k ranks, else "<host> <count>" a host.
  const bool regular = std::all_of(job.ranks_per_host.begin(), job.ranks_per_host.end(),
                                   [&](int r) { return r == job.ranks_per_host.front(); });
  const int64_t host_name_bytes = std::max(1, host_id_bytes - kBootIdBytes);
  const int64_t host_table = hosts * (host_name_bytes + 1) + 16 + (regular ? 12 : hosts * 12);
  std::vector<PhaseRequests> plan;
  plan.push_back({"store", 0, 0, 0});  // connecting: a handshake, no request
  // rollCall (roll_call.cc): arrived, rank/<r>, size/<r>, [size/0], count, verdict; the rank
  // whose count completes the roll call also publishes the verdict.
  plan.push_back({"roll call", rank == 0 ? 5 : 6, 1, 6 * 16});
  plan.push_back({"presence", 1, 0, 16});  // appendWhenClosed on the presence client
  // exchangeHostIds: rank 0 reads every id and publishes the table; the others publish theirs and read it.
  plan.push_back({"hosts", rank == 0 ? n : 2, 0, rank == 0 ? int64_t{n} * (host_id_bytes + 8) : host_table});
  plan.push_back({"transports", transportRequests(job, rank, true), 0, 64});
  plan.push_back({"point-to-point", transportRequests(job, rank, false), 0, 64});
  plan.push_back({"neighbours", neighbourRequests(job, rank), 0, 32});
  plan.push_back({"topology", topologyRequests(job, rank), 0, kHardwareJsonBytes + 128 + (rank == 0 ? n * 24 : 0)});
  plan.push_back({"barrier", kBarrier, 0, 16});
  return plan;
}

}  // namespace coll::sim
