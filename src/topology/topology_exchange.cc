#include "topology/topology_exchange.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/log.h"

namespace coll::topology {
namespace {

// Detected once per process: hwloc's scan costs milliseconds, and tests make many communicators.
const HostHardware& thisHostHardware() {
  static const HostHardware hw = detectHostHardware();
  return hw;
}

// Rank 0 reads each host leader's description and publishes one table: the distinct
// descriptions (hosts of a cluster are mostly alike), each as "<length>\n<json>", then each
// host's index. Every other rank reads that one key: O(ranks + hosts) requests in all, where
// each rank reading every host's was O(ranks x hosts).
std::string encodeHardwareTable(const std::vector<std::string>& per_host) {
  std::vector<std::string> distinct;
  std::string indices;
  for (const std::string& text : per_host) {
    auto it = std::find(distinct.begin(), distinct.end(), text);
    if (it == distinct.end()) it = distinct.insert(distinct.end(), text);
    indices += format(" %zu", static_cast<size_t>(it - distinct.begin()));
  }
  std::string table = format("hw %zu %zu\n", distinct.size(), per_host.size());
  for (const std::string& text : distinct) table += format("%zu\n", text.size()) + text;
  return table + indices;
}

Status decodeHardwareTable(const std::string& table, std::vector<HostHardware>* out) {
  size_t ndistinct = 0, nhosts = 0;
  int at = 0;
  if (std::sscanf(table.c_str(), "hw %zu %zu\n%n", &ndistinct, &nhosts, &at) != 2 || at == 0)
    return internalError("hardware table: unreadable header");
  size_t pos = static_cast<size_t>(at);
  std::vector<HostHardware> distinct(ndistinct);
  for (HostHardware& hw : distinct) {
    size_t eol = table.find('\n', pos);
    if (eol == std::string::npos) return internalError("hardware table: truncated");
    size_t len = std::strtoull(table.c_str() + pos, nullptr, 10);
    if (eol + 1 + len > table.size()) return internalError("hardware table: truncated description");
    Json j;
    COLL_RETURN_IF_ERROR(Json::parse(table.substr(eol + 1, len), &j));
    COLL_RETURN_IF_ERROR(fromJson(j, &hw));
    pos = eol + 1 + len;
  }
  std::istringstream in(table.substr(pos));
  out->clear();
  for (size_t index = 0; out->size() < nhosts && in >> index;) {
    if (index >= ndistinct) return internalError("hardware table: bad host index");
    out->push_back(distinct[index]);
  }
  return out->size() == nhosts ? Status::ok() : internalError("hardware table: fewer hosts than announced");
}

Status exchangeHardware(const ProbeContext& ctx, Topology* topo) {
  const std::string key = ctx.key_prefix + "topo/hw/";
  const size_t nhosts = topo->ranks_of_host.size();
  for (size_t h = 0; h < nhosts; ++h)
    if (topo->ranks_of_host[h].front() == ctx.rank && ctx.rank != 0)
      COLL_RETURN_IF_ERROR(ctx.store->set(key + std::to_string(h), toJson(thisHostHardware()).dump(), ctx.deadline));
  if (ctx.rank == 0) {  // rank 0 leads host 0
    std::vector<std::string> per_host(nhosts, toJson(thisHostHardware()).dump());
    for (size_t h = 1; h < nhosts; ++h)
      COLL_RETURN_IF_ERROR(ctx.store->get(key + std::to_string(h), &per_host[h], ctx.deadline));
    COLL_RETURN_IF_ERROR(ctx.store->set(key + "table", encodeHardwareTable(per_host), ctx.deadline));
  }
  std::string table;
  COLL_RETURN_IF_ERROR(ctx.store->get(key + "table", &table, ctx.deadline));
  return decodeHardwareTable(table, &topo->hardware);
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
