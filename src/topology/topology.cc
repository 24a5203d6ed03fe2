#include "topology/topology.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "base/fnv1a.h"
#include "base/log.h"

namespace coll::topology {

// Default link figures, for COLL_PROBE=0 and link classes a job cannot probe. Each comes from
// a measurement on the project's 2-core VM (then in README "Measured results", at 85c8cba):
//  - same host, α 2.5 µs: a 2-rank all-reduce of 8 B over shared memory takes about 5 µs
//    waited for (all_reduce_perf -z 2), and direct's two steps make 2 α;
//  - same host, β 10.1 GB/s: memcpy on one thread, the copy a shared-memory receive makes;
//  - across hosts, α 60 µs: a 4 hosts x 1 rank all-reduce of 8 B at 1 Gbit/s takes 120 µs with
//    direct's two steps (netcluster; netcluster_compare.sh, now bench/compare.py);
//  - across hosts, β 0.1195 GB/s: iperf3 between two netcluster hosts at 1 Gbit/s.
LinkParams defaultIntraHostLink() {
  return {2.5e-6, 10.1e9, "default (README: 2-rank shm all-reduce 8 B ~5 us / 2 steps; memcpy 10.1 GB/s)"};
}

LinkParams defaultInterHostLink() {
  return {60e-6, 0.1195e9, "default (README: netcluster 4x1 at 1 Gbit/s, 8 B all-reduce 120 us / 2 steps; iperf3 0.1195 GB/s)"};
}

// γ: reduceInto f32 sum of 1 MiB (2 MiB buffers), best of 3, as the probe measures it
// (link_probe.cc; COLL_DEBUG=INFO prints it): 15.1 GB/s on the project's 2-core VM under
// `collrun -n 4 coll-topo`.
double defaultGammaBps() { return 15.1e9; }
const char* const kDefaultGammaSource = "default (probe's reduceInto f32 sum of 2 MiB on the project's 2-core VM: 15.1 GB/s)";

int Topology::maxRanksPerHost() const {
  size_t m = 0;
  for (const auto& h : ranks_of_host) m = std::max(m, h.size());
  return static_cast<int>(m);
}

bool Topology::balanced() const {
  for (const auto& h : ranks_of_host)
    if (h.size() != ranks_of_host.front().size()) return false;
  return !ranks_of_host.empty();
}

int Topology::hostOf(int rank) const {
  for (size_t h = 0; h < ranks_of_host.size(); ++h)
    if (std::find(ranks_of_host[h].begin(), ranks_of_host[h].end(), rank) != ranks_of_host[h].end())
      return static_cast<int>(h);
  return -1;
}

std::string Topology::layoutHash() const {
  Json j = Json::object();
  Json layout = Json::array();
  for (const auto& h : ranks_of_host) {
    Json ranks = Json::array();
    for (int r : h) ranks.push(r);
    layout.push(std::move(ranks));
  }
  j.set("layout", std::move(layout));
  Json hw = Json::array();
  for (const HostHardware& h : hardware) hw.push(toJson(h));
  j.set("hardware", std::move(hw));
  return format("%016llx", static_cast<unsigned long long>(fnv1a(j.dump())));
}

Topology topologyFromGrouping(const bootstrap::HostGrouping& hosts) {
  Topology t;
  t.ranks_of_host = hosts.ranks_of_host;
  t.nranks = 0;
  for (const auto& h : t.ranks_of_host) t.nranks += static_cast<int>(h.size());
  if (t.ranks_of_host.empty()) {  // a grouping that only knows how many hosts there are
    t.nranks = std::max(1, hosts.num_hosts);
    for (int h = 0; h < t.nranks; ++h) t.ranks_of_host.push_back({h});
  }
  t.intra = defaultIntraHostLink();
  t.inter = defaultInterHostLink();
  t.gamma_Bps = defaultGammaBps();
  t.gamma_source = kDefaultGammaSource;
  return t;
}

namespace {

Json linkJson(const LinkParams& l) {
  Json j = Json::object();
  j.set("alpha_us", l.alpha_s * 1e6);
  j.set("beta_GBps", l.beta_Bps / 1e9);
  j.set("source", l.source);
  return j;
}

Status linkFromJson(const Json& j, const char* name, LinkParams* out) {
  if (!(j["alpha_us"].number(-1) >= 0) || !(j["beta_GBps"].number(0) > 0))
    return invalidArgument(format("topology: links.%s needs alpha_us >= 0 and beta_GBps > 0", name));
  out->alpha_s = j["alpha_us"].number() / 1e6;
  out->beta_Bps = j["beta_GBps"].number() * 1e9;
  out->source = j["source"].string().empty() ? "file" : j["source"].string();
  return Status::ok();
}

}  // namespace

Json toJson(const HostHardware& hw) {
  Json j = Json::object();
  j.set("hostname", hw.hostname);
  j.set("source", hw.source);
  j.set("numa_nodes", hw.numa_nodes);
  j.set("cores", hw.cores);
  j.set("pus", hw.pus);
  j.set("l3_bytes", hw.l3_bytes);
  Json nics = Json::array();
  for (const NicInfo& n : hw.nics) {
    Json nic = Json::object();
    nic.set("name", n.name);
    nic.set("pci", n.pci);
    nic.set("numa_node", n.numa_node);
    nic.set("rdma", n.rdma);
    nics.push(std::move(nic));
  }
  j.set("nics", std::move(nics));
  Json gpus = Json::array();
  for (const GpuInfo& g : hw.gpus) {
    Json gpu = Json::object();
    gpu.set("pci", g.pci);
    gpu.set("vendor", g.vendor);
    gpu.set("numa_node", g.numa_node);
    gpus.push(std::move(gpu));
  }
  j.set("gpus", std::move(gpus));
  return j;
}

Status fromJson(const Json& j, HostHardware* out) {
  if (j.kind() != Json::Kind::object) return invalidArgument("topology: a host's hardware must be an object");
  out->hostname = j["hostname"].string();
  out->source = j["source"].string();
  out->numa_nodes = static_cast<int>(j["numa_nodes"].number(1));
  out->cores = static_cast<int>(j["cores"].number(1));
  out->pus = static_cast<int>(j["pus"].number(out->cores));
  out->l3_bytes = static_cast<long long>(j["l3_bytes"].number(0));
  out->nics.clear();
  for (const Json& n : j["nics"].items())
    out->nics.push_back({n["name"].string(), n["pci"].string(), static_cast<int>(n["numa_node"].number(-1)),
                         n["rdma"].boolean()});
  out->gpus.clear();
  for (const Json& g : j["gpus"].items())
    out->gpus.push_back({g["pci"].string(), g["vendor"].string(), static_cast<int>(g["numa_node"].number(-1))});
  return Status::ok();
}

Json toJson(const Topology& t) {
  Json j = Json::object();
  j.set("format", "coll-topology-1");
  j.set("nranks", t.nranks);
  Json hosts = Json::array();
  for (size_t h = 0; h < t.ranks_of_host.size(); ++h) {
    Json host = Json::object();
    Json ranks = Json::array();
    for (int r : t.ranks_of_host[h]) ranks.push(r);
    host.set("ranks", std::move(ranks));
    if (h < t.hardware.size()) host.set("hardware", toJson(t.hardware[h]));
    hosts.push(std::move(host));
  }
  j.set("hosts", std::move(hosts));
  Json links = Json::object();
  links.set("intra_host", linkJson(t.intra));
  links.set("inter_host", linkJson(t.inter));
  links.set("loaded_step_us", t.loaded_step_s * 1e6);
  j.set("links", std::move(links));
  Json reduce = Json::object();
  reduce.set("gamma_GBps", t.gamma_Bps / 1e9);
  reduce.set("source", t.gamma_source);
  j.set("reduce", std::move(reduce));
  if (t.leaves.hosts_per_leaf > 0) {
    Json fabric = Json::object();
    fabric.set("hosts_per_leaf", t.leaves.hosts_per_leaf);
    fabric.set("oversubscription", t.leaves.oversubscription);
    j.set("fabric", std::move(fabric));
  }
  return j;
}

namespace {

// Every rank 0..n-1 on exactly one host.
Status checkLayout(const Topology& t) {
  std::vector<int> seen(static_cast<size_t>(t.nranks), 0);
  for (const auto& h : t.ranks_of_host) {
    if (h.empty()) return invalidArgument("topology: a host without ranks");
    for (int r : h) {
      if (r < 0 || r >= t.nranks) return invalidArgument(format("topology: rank %d outside 0..%d", r, t.nranks - 1));
      if (seen[static_cast<size_t>(r)]++) return invalidArgument(format("topology: rank %d on two hosts", r));
    }
  }
  for (int r = 0; r < t.nranks; ++r)
    if (!seen[static_cast<size_t>(r)]) return invalidArgument(format("topology: rank %d is on no host", r));
  return Status::ok();
}

// Optional "fabric": {"hosts_per_leaf": N, "oversubscription": X}; coll-sim's files keep more
// keys there (NICs, memory, bursts), which only coll-sim reads.
Status leavesFromJson(const Json& fabric, LeafSwitches* out) {
  if (fabric.isNull()) return Status::ok();
  if (fabric.kind() != Json::Kind::object) return invalidArgument("topology: \"fabric\" must be an object");
  const double per_leaf = fabric.has("hosts_per_leaf") ? fabric["hosts_per_leaf"].number(NAN) : 0;
  if (!(per_leaf >= 0 && per_leaf <= std::numeric_limits<int>::max()) || per_leaf != std::floor(per_leaf))
    return invalidArgument(format("topology: fabric.hosts_per_leaf must be an integer >= 0 (0: one switch), got %g",
                                  per_leaf));
  const double oversubscription = fabric.has("oversubscription") ? fabric["oversubscription"].number(NAN) : 1;
  if (!(oversubscription >= 1) || !std::isfinite(oversubscription))
    return invalidArgument(format("topology: fabric.oversubscription must be >= 1 (2 means 2:1), got %g", oversubscription));
  *out = {static_cast<int>(per_leaf), oversubscription};
  return Status::ok();
}

}  // namespace

Status fromJson(const Json& j, Topology* out) {
  Topology t;
  if (j["format"].string() != "coll-topology-1")
    return invalidArgument("topology: \"format\" must be \"coll-topology-1\"");
  t.nranks = static_cast<int>(j["nranks"].number(0));
  if (t.nranks < 1) return invalidArgument("topology: \"nranks\" must be >= 1");
  for (const Json& host : j["hosts"].items()) {
    std::vector<int> ranks;
    for (const Json& r : host["ranks"].items()) ranks.push_back(static_cast<int>(r.number(-1)));
    t.ranks_of_host.push_back(std::move(ranks));
    if (host.has("hardware")) {
      HostHardware hw;
      COLL_RETURN_IF_ERROR(fromJson(host["hardware"], &hw));
      t.hardware.push_back(std::move(hw));
    }
  }
  if (!t.hardware.empty() && t.hardware.size() != t.ranks_of_host.size())
    return invalidArgument("topology: hardware given for some hosts only");
  COLL_RETURN_IF_ERROR(checkLayout(t));
  COLL_RETURN_IF_ERROR(linkFromJson(j["links"]["intra_host"], "intra_host", &t.intra));
  COLL_RETURN_IF_ERROR(linkFromJson(j["links"]["inter_host"], "inter_host", &t.inter));
  // Optional: files written before the loaded step was kept apart lack it (0: no contention).
  t.loaded_step_s = j["links"]["loaded_step_us"].number(0) / 1e6;
  if (!(t.loaded_step_s >= 0)) return invalidArgument("topology: links.loaded_step_us must be >= 0");
  t.gamma_Bps = j["reduce"]["gamma_GBps"].number(0) * 1e9;
  if (!(t.gamma_Bps > 0)) return invalidArgument("topology: reduce.gamma_GBps must be > 0");
  t.gamma_source = j["reduce"]["source"].string().empty() ? "file" : j["reduce"]["source"].string();
  COLL_RETURN_IF_ERROR(leavesFromJson(j["fabric"], &t.leaves));
  *out = std::move(t);
  return Status::ok();
}

Status saveTopologyFile(const std::string& path, const Topology& t) {
  std::ofstream out(path);
  out << toJson(t).dump(2) << "\n";
  if (!out.good()) return invalidArgument("cannot write topology file " + path);
  return Status::ok();
}

Status loadTopologyFile(const std::string& path, Topology* out) {
  Json j;
  Status st;
  if (!Json::parseFile(path, &j, &st)) return invalidArgument("cannot read topology file " + path);
  if (!st) return st;
  st = fromJson(j, out);
  if (!st) return invalidArgument(path + ": " + st.message());
  return Status::ok();
}

}  // namespace coll::topology
