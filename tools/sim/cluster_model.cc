#include "cluster_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/log.h"
#include "rate.h"
#include "base/json.h"

namespace coll::sim {
namespace {

Status checkFabric(const Fabric& f, int hosts) {
  if (f.nics_per_host < 1) return invalidArgument(format("fabric.nics_per_host must be >= 1, got %d", f.nics_per_host));
  if (f.hosts_per_leaf < 0)
    return invalidArgument(format("fabric.hosts_per_leaf must be >= 0 (0: one switch), got %d", f.hosts_per_leaf));
  if (!(f.oversubscription >= 1) || !std::isfinite(f.oversubscription))
    return invalidArgument(format("fabric.oversubscription must be >= 1 (2 means 2:1), got %g", f.oversubscription));
  if (!(f.host_memory_Bps >= 0) || !std::isfinite(f.host_memory_Bps))
    return invalidArgument("fabric.host_memory_GBps must be >= 0 (0: no shared limit)");
  if (!std::isfinite(f.per_message_s)) return invalidArgument("fabric.per_message_us must be a number");
  if (!(f.per_op_s >= 0) || !std::isfinite(f.per_op_s)) return invalidArgument("fabric.per_op_us must be >= 0");
  if (!(f.burst_bytes >= 0) || !std::isfinite(f.burst_bytes)) return invalidArgument("fabric.burst_bytes must be >= 0");
  if (!(f.send_buffer_bytes >= 0) || !std::isfinite(f.send_buffer_bytes))
    return invalidArgument("fabric.send_buffer_bytes must be >= 0");
  if (!(f.shm_ring_bytes == 0 || f.shm_ring_bytes > Fabric::kShmSlots * 2 * Fabric::kShmSlotHeaderBytes) ||
      !std::isfinite(f.shm_ring_bytes))
    return invalidArgument(format("fabric.shm_ring_bytes must be 0 (a sender inside a host never waits) or over %g "
                                  "(%d slots, each past its %g-byte header twice over)",
                                  Fabric::kShmSlots * 2 * Fabric::kShmSlotHeaderBytes, Fabric::kShmSlots,
                                  Fabric::kShmSlotHeaderBytes));
  (void)hosts;
  return Status::ok();
}

}  // namespace

double Fabric::shmRingBytesOf(double message_bytes) const {
  const double slot = shm_ring_bytes / kShmSlots;
  return std::max(1.0, std::ceil(message_bytes / (slot - kShmSlotHeaderBytes))) * slot;
}

double ClusterModel::leafUplinkBps() const {
  const int per_leaf = fabric.hosts_per_leaf > 0 ? fabric.hosts_per_leaf : numHosts();
  return per_leaf * fabric.nics_per_host * topo.inter.beta_Bps / fabric.oversubscription;
}

// Where ranks outnumber cores, a step's time is mostly the ends' threads waiting for a core,
// which a loaded step (every rank sending at once) holds and an idle ping-pong does not. Charged
// as software on each end's thread, concurrent messages into one rank queue behind each other
// as they do there: on netcluster 4 × 1 a direct all-reduce of 8 B-8 KiB (3 messages into each
// rank at once, twice) took a median 2.1 × recursive doubling's 2 steps, and with the loaded
// step as latency alone coll-sim priced it at a median 0.48 of that. Half of it at each end, in
// both link classes (a shared-memory reader queues for a core as a socket's does): a step then
// costs the loaded step plus the wire's latency (latencySeconds). On the kept measurement pairs
// (docs/SIMULATOR.md, "The loaded step as software", "Each end once") 0.4-0.5 of it never did
// worse than latency alone.
bool ClusterModel::contended(bool across_hosts) const {
  return fabric.per_message_s < 0 && topo.loaded_step_s > alphaOf(across_hosts);
}

double ClusterModel::perMessageSeconds(bool across_hosts) const {
  return contended(across_hosts) ? topo.loaded_step_s / 2 : idlePerMessageSeconds(across_hosts);
}

double ClusterModel::idlePerMessageSeconds(bool across_hosts) const {
  if (fabric.per_message_s >= 0) return fabric.per_message_s;
  return alphaOf(across_hosts) / 4;
}

double ClusterModel::receiveSeconds(bool across_hosts) const {
  if (across_hosts) return perMessageSeconds(true);
  return contended(false) ? perMessageSeconds(false) : 0;  // idle, a reader only copies
}

// Contended, the ends' software is all charged on their threads; what is left is the wire's
// part of α. A topology file's α is a ping-pong's, which holds each end's idle software (2
// across hosts, the sender's post inside one): charging the loaded step at the ends and that α
// too paid for the ends twice, one α a step (on 4 × 1 a ring all-reduce of 32 B-8 KiB measured
// 1 loaded step a step and was priced at 1.4). The flags' α is the wire's already.
double ClusterModel::latencySeconds(bool across_hosts) const {
  const double alpha = alphaOf(across_hosts);
  const int ends = across_hosts ? 2 : 1;
  if (contended(across_hosts)) return from_file ? alpha - ends * idlePerMessageSeconds(across_hosts) : alpha;
  return std::max(alpha, topo.loaded_step_s - ends * perMessageSeconds(across_hosts));
}

// An idle ping-pong's α: the loaded step's queueing is not in it.
topology::Topology ClusterModel::probedTopology() const {
  topology::Topology t = topo;
  if (from_file) return t;
  t.inter.alpha_s += 2 * idlePerMessageSeconds(true);  // the write, and the read at the other end
  t.intra.alpha_s += idlePerMessageSeconds(false);     // the sender's post into the ring
  return t;
}

std::string ClusterModel::describe() const {
  std::ostringstream o;
  o << topo.nranks << " ranks on " << numHosts() << " hosts (" << topo.maxRanksPerHost() << " per host at most)";
  if (numHosts() > 1) {
    o << ", NIC " << formatRate(topo.inter.beta_Bps) << " payload x" << fabric.nics_per_host << " per host, inter α "
      << topo.inter.alpha_s * 1e6 << " us";
    if (numLeaves() > 1)
      o << ", " << numLeaves() << " leaves of " << fabric.hosts_per_leaf << " hosts, " << fabric.oversubscription
        << ":1 oversubscribed";
  }
  o << "; intra α " << topo.intra.alpha_s * 1e6 << " us, β " << topo.intra.beta_Bps / 1e9 << " GB/s; γ "
    << topo.gamma_Bps / 1e9 << " GB/s";
  if (fabric.host_memory_Bps > 0) o << "; host memory " << fabric.host_memory_Bps / 1e9 << " GB/s";
  return o.str();
}

Status finishCluster(ClusterModel* m) {
  COLL_RETURN_IF_ERROR(checkFabric(m->fabric, m->numHosts()));
  // The selector sees the leaves as a topology file would give them (topology.h).
  m->topo.leaves = {m->fabric.hosts_per_leaf, m->fabric.oversubscription};
  m->host_of.assign(static_cast<size_t>(m->topo.nranks), -1);
  m->local_of.assign(static_cast<size_t>(m->topo.nranks), 0);
  for (size_t h = 0; h < m->topo.ranks_of_host.size(); ++h) {
    const auto& ranks = m->topo.ranks_of_host[h];
    for (size_t i = 0; i < ranks.size(); ++i) {
      m->host_of[static_cast<size_t>(ranks[i])] = static_cast<int>(h);
      m->local_of[static_cast<size_t>(ranks[i])] = static_cast<int>(i);
    }
  }
  return Status::ok();
}

Status clusterFromFlags(const ClusterFlags& f, ClusterModel* out) {
  if (f.hosts < 1) return invalidArgument(format("--hosts must be >= 1, got %d", f.hosts));
  if (f.per_host < 1) return invalidArgument(format("--per-host must be >= 1, got %d", f.per_host));
  const long long world = f.ranks > 0 ? f.ranks : 1LL * f.hosts * f.per_host;
  if (f.ranks > 0 && f.ranks % f.per_host != 0)
    return invalidArgument(format("--ranks %d: ranks per host (--per-host %d) must divide the world", f.ranks, f.per_host));
  if (world > (1 << 20)) return invalidArgument(format("%lld ranks: coll-sim models at most %d", world, 1 << 20));
  if (!(f.link_wire_Bps > 0)) return invalidArgument("--link must be greater than zero");
  if (!(f.goodput > 0 && f.goodput <= 1)) return invalidArgument(format("--goodput must be in (0, 1], got %g", f.goodput));
  ClusterModel m;
  topology::Topology& t = m.topo;
  t.nranks = static_cast<int>(world);
  const int hosts = static_cast<int>(world / f.per_host);
  for (int h = 0; h < hosts; ++h) {
    std::vector<int> ranks;
    for (int i = 0; i < f.per_host; ++i) ranks.push_back(h * f.per_host + i);
    t.ranks_of_host.push_back(std::move(ranks));
  }
  t.intra = topology::defaultIntraHostLink();
  t.inter = topology::defaultInterHostLink();
  t.inter.beta_Bps = f.link_wire_Bps * f.goodput;
  t.inter.source = "flags";
  if (f.inter_alpha_s >= 0) t.inter.alpha_s = f.inter_alpha_s;
  if (f.intra_alpha_s >= 0) t.intra.alpha_s = f.intra_alpha_s;
  if (f.intra_beta_Bps > 0) t.intra.beta_Bps = f.intra_beta_Bps;
  t.gamma_Bps = f.gamma_Bps > 0 ? f.gamma_Bps : topology::defaultGammaBps();
  t.gamma_source = f.gamma_Bps > 0 ? "flags" : topology::kDefaultGammaSource;
  t.loaded_step_s = f.loaded_step_s;
  m.fabric = f.fabric;
  COLL_RETURN_IF_ERROR(finishCluster(&m));
  *out = std::move(m);
  return Status::ok();
}

Status clusterFromFile(const std::string& path, const ClusterFlags& cluster_flags, const std::vector<std::string>& given,
                       ClusterModel* out) {
  const Fabric& flags = cluster_flags.fabric;
  Json j;
  Status st;
  if (!Json::parseFile(path, &j, &st)) return invalidArgument("cannot read topology file " + path);
  if (!st) return st;
  ClusterModel m;
  m.from_file = true;
  st = topology::fromJson(j, &m.topo);
  if (!st) return invalidArgument(path + ": " + st.message());
  const Json& fab = j["fabric"];  // an object, or absent: fromJson checked
  auto integer = [&](const char* key, int fallback, int* v) -> Status {
    if (!fab.has(key)) return (*v = fallback, Status::ok());
    const double d = fab[key].number(NAN);
    if (!(d == std::floor(d))) return invalidArgument(format("%s: fabric.%s must be an integer", path.c_str(), key));
    *v = static_cast<int>(d);
    return Status::ok();
  };
  COLL_RETURN_IF_ERROR(integer("nics_per_host", 1, &m.fabric.nics_per_host));
  COLL_RETURN_IF_ERROR(integer("hosts_per_leaf", 0, &m.fabric.hosts_per_leaf));
  m.fabric.oversubscription = fab.has("oversubscription") ? fab["oversubscription"].number(NAN) : 1;
  m.fabric.host_memory_Bps = fab.has("host_memory_GBps") ? fab["host_memory_GBps"].number(NAN) * 1e9 : 0;
  m.fabric.per_message_s = fab.has("per_message_us") ? fab["per_message_us"].number(NAN) / 1e6 : -1;
  if (fab.has("per_message_us") && !(m.fabric.per_message_s >= 0))
    return invalidArgument(path + ": fabric.per_message_us must be >= 0");
  m.fabric.per_op_s = fab.has("per_op_us") ? fab["per_op_us"].number(NAN) / 1e6 : 0;
  m.fabric.burst_bytes = fab.has("burst_bytes") ? fab["burst_bytes"].number(NAN) : 0;
  if (fab.has("send_buffer_bytes")) m.fabric.send_buffer_bytes = fab["send_buffer_bytes"].number(NAN);
  if (fab.has("shm_ring_bytes")) m.fabric.shm_ring_bytes = fab["shm_ring_bytes"].number(NAN);
  auto flag = [&](const char* name) { return std::find(given.begin(), given.end(), name) != given.end(); };
  if (flag("nics_per_host")) m.fabric.nics_per_host = flags.nics_per_host;
  if (flag("hosts_per_leaf")) m.fabric.hosts_per_leaf = flags.hosts_per_leaf;
  if (flag("oversubscription")) m.fabric.oversubscription = flags.oversubscription;
  if (flag("host_memory_GBps")) m.fabric.host_memory_Bps = flags.host_memory_Bps;
  if (flag("per_message_us")) m.fabric.per_message_s = flags.per_message_s;
  if (flag("per_op_us")) m.fabric.per_op_s = flags.per_op_s;
  if (flag("burst_bytes")) m.fabric.burst_bytes = flags.burst_bytes;
  if (flag("send_buffer_bytes")) m.fabric.send_buffer_bytes = flags.send_buffer_bytes;
  if (flag("shm_ring_bytes")) m.fabric.shm_ring_bytes = flags.shm_ring_bytes;
  if (flag("link")) {
    m.topo.inter.beta_Bps = cluster_flags.link_wire_Bps * cluster_flags.goodput;
    m.topo.inter.source = "--link";
  }
  st = finishCluster(&m);
  if (!st) return invalidArgument(path + ": " + st.message());
  *out = std::move(m);
  return Status::ok();
}

}  // namespace coll::sim
