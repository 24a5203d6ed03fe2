// The one Topology value every rank of a job agrees on: which ranks share a host, what each
// host's hardware is, and the α-β figures of each link class (same host; across hosts) plus
// the reduction bandwidth γ. The selector's cost model reads nothing else, so a topology saved
// with COLL_TOPO_DUMP_FILE and loaded with COLL_TOPO_FILE (or `coll-topo --load`) reproduces a
// job's selections without its hardware.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/detector.h"
#include "bootstrap/host_grouping.h"
#include "base/json.h"
#include "algorithms/cost/leaf_switches.h"

namespace coll::topology {

using LeafSwitches = algo::cost::LeafSwitches;

// One class of link. α: seconds from posting a small message to its arrival, as one step of
// an algorithm sees it (executor and transport included); β: bytes per second one rank
// receives (same host) or one host's link carries each way (across hosts).
struct LinkParams {
  double alpha_s = 0;
  double beta_Bps = 0;
  std::string source;  // "probe", "file", or "default (<where the constant was measured>)"
};

struct Topology {
  int nranks = 1;
  std::vector<std::vector<int>> ranks_of_host;  // hosts ordered by their lowest rank
  std::vector<HostHardware> hardware;           // per host, same order; may be empty (unknown)
  LinkParams intra;                             // between ranks of one host
  LinkParams inter;                             // between hosts
  double gamma_Bps = 0;                         // reduction kernel: bytes of output per second
  std::string gamma_source;
  // The loaded step (link_probe.cc): one step of an op with every rank busy, timed as one op
  // of 16 chained ring-shift rounds (each rank sends 8 B right, receives and reduces 8 B from
  // the left, and sends that on in the next round), per round; the ring crosses hosts where
  // there are several. Kept apart from the idle α: where it exceeds it, ranks share cores and
  // the job's message count costs time (cost_model.cc). Files probed before the rounds were
  // chained (tests/data/netcluster/*.json) hold the older figure, the median of 16 separate
  // one-round ops, which came out lower and more scattered. 0: unknown (a topology file from
  // before it was kept, COLL_PROBE=0), no contention.
  double loaded_step_s = 0;
  LeafSwitches leaves;  // from a file's "fabric" object only; the probe cannot see switches
  // The shared-memory board (algorithms/board.h) where the job has one: the largest all-reduce
  // and broadcast its cells hold. Set by the communicator from its transport, never probed nor
  // kept in files; 0: no board.
  size_t board_bytes = 0, board_broadcast_bytes = 0;

  int numHosts() const { return static_cast<int>(ranks_of_host.size()); }
  int maxRanksPerHost() const;
  // Every host holds the same number of ranks (hierarchical algorithms need it).
  bool balanced() const;
  int hostOf(int rank) const;
  // A short hex digest of what does not change between runs on the same machines (layout and
  // hardware, not the measured links): the key of autotuning files.
  std::string layoutHash() const;
};

// The layout of a grouping with the documented default link figures (no probe yet).
Topology topologyFromGrouping(const bootstrap::HostGrouping& hosts);
// The documented constants, used when COLL_PROBE=0 or a link class was not probed.
LinkParams defaultIntraHostLink();
LinkParams defaultInterHostLink();
double defaultGammaBps();
extern const char* const kDefaultGammaSource;

Json toJson(const Topology& t);
Json toJson(const HostHardware& hw);
// InvalidArgument naming the first missing or inconsistent field.
Status fromJson(const Json& j, Topology* out);
Status fromJson(const Json& j, HostHardware* out);

Status saveTopologyFile(const std::string& path, const Topology& t);
Status loadTopologyFile(const std::string& path, Topology* out);

}  // namespace coll::topology
