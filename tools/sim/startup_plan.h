// The store requests each rank's start-up makes, phase by phase, as CommunicatorImpl::create
// makes them (src/comm/communicator_impl.cc) with the default configuration: sockets between
// hosts, shared memory inside them, the link probe on. Each count is written down from the
// code path it names; bench/scripts/startup_check.py runs real jobs of several layouts and
// checks every rank's counts (logged at COLL_DEBUG=INFO, comm/startup_report.h) against this
// plan, so a change to start-up that forgets the model fails there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::sim {

// The job as start-up sees it: hosts in order of their lowest rank, ranks numbered host by host.
struct StartupLayout {
  static StartupLayout of(std::vector<int> ranks_per_host);
  std::vector<int> ranks_per_host;
  std::vector<int> first_rank;  // per host, and the job's size last
  int ranks() const { return first_rank.back(); }
  int hosts() const { return static_cast<int>(ranks_per_host.size()); }
  int hostOf(int rank) const;
  int firstRankOf(int host) const { return first_rank[static_cast<size_t>(host)]; }
};

// The phases, in the order and under the names the start-up report logs them.
const std::vector<std::string>& startupPhases();

struct PhaseRequests {
  std::string phase;
  int64_t requests = 0;   // on the communicator's clients (the main one, the presence and p2p ones)
  int64_t may_add = 0;    // requests one rank of the job (which: a race) makes beyond `requests`
  int64_t bytes_in = 0;   // what the replies carry, roughly (the tables rank 0 publishes dominate)
};

// One rank's plan, phase by phase. host_id_bytes: the length of a host id (hostname/boot id:
// 16 + 37 for a name like "node0123.cluster").
std::vector<PhaseRequests> plannedRequests(const StartupLayout& job, int rank, int host_id_bytes = 53);

// Store connections each rank opens at start-up: the main client, the ledger responder's,
// the presence client and the point-to-point engine's.
constexpr int kStoreConnectionsPerRank = 4;

}  // namespace coll::sim
