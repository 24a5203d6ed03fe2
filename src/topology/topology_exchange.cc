#include "topology/topology_exchange.h"

#include "base/log.h"

namespace coll::topology {
namespace {

// Detected once per process: hwloc's scan costs milliseconds, and tests make many communicators.
const HostHardware& thisHostHardware() {
  static const HostHardware hw = detectHostHardware();
  return hw;
}

Status exchangeHardware(const ProbeContext& ctx, Topology* topo) {
  for (size_t h = 0; h < topo->ranks_of_host.size(); ++h)
    if (topo->ranks_of_host[h].front() == ctx.rank)
      COLL_RETURN_IF_ERROR(ctx.store->set(ctx.key_prefix + "topo/hw/" + std::to_string(h),
                                          toJson(thisHostHardware()).dump(), ctx.deadline));
  topo->hardware.resize(topo->ranks_of_host.size());
  for (size_t h = 0; h < topo->ranks_of_host.size(); ++h) {
    std::string text;
    COLL_RETURN_IF_ERROR(ctx.store->get(ctx.key_prefix + "topo/hw/" + std::to_string(h), &text, ctx.deadline));
    Json j;
    COLL_RETURN_IF_ERROR(Json::parse(text, &j));
    COLL_RETURN_IF_ERROR(fromJson(j, &topo->hardware[h]));
  }
  return Status::ok();
}

Status loadForJob(const std::string& path, const bootstrap::HostGrouping& hosts, Topology* out) {
  COLL_RETURN_IF_ERROR(loadTopologyFile(path, out));
  const int job_ranks = static_cast<int>(hosts.host_of_rank.size());
  if (out->nranks != job_ranks)
    return invalidArgument(format("COLL_TOPO_FILE %s describes %d ranks, this job has %d", path.c_str(), out->nranks,
                                  job_ranks));
  if (out->ranks_of_host != hosts.ranks_of_host)
    COLL_INFO("TOPO", "COLL_TOPO_FILE %s: its hosts differ from this job's; the selector follows the file, "
              "algorithms the real hosts", path.c_str());
  return Status::ok();
}

}  // namespace

Status buildJobTopology(const TopologyOptions& options, const ProbeContext& ctx, const bootstrap::HostGrouping& hosts,
                        Topology* out) {
  if (!options.load_file.empty()) {
    COLL_RETURN_IF_ERROR(loadForJob(options.load_file, hosts, out));
    COLL_INFO("TOPO", "topology loaded from %s (%d hosts, %d ranks)", options.load_file.c_str(), out->numHosts(),
              out->nranks);
  } else {
    *out = topologyFromGrouping(hosts);
    COLL_RETURN_IF_ERROR(exchangeHardware(ctx, out));
    if (options.probe) COLL_RETURN_IF_ERROR(probeLinks(ctx, out));
    else COLL_INFO("TOPO", "COLL_PROBE=0: default link figures (%s; %s)", out->intra.source.c_str(),
                   out->inter.source.c_str());
  }
  if (!options.dump_file.empty() && ctx.rank == 0) {
    Status st = saveTopologyFile(options.dump_file, *out);
    if (!st) COLL_WARN("TOPO", "COLL_TOPO_DUMP_FILE: %s", st.message().c_str());
    else COLL_INFO("TOPO", "topology written to %s", options.dump_file.c_str());
  }
  return Status::ok();
}

}  // namespace coll::topology
