#include "transport/registry.h"

#include <map>

#include "base/log.h"
#include "transport/network_choice.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"
#ifdef COLL_HAVE_UCX
#include "transport/ucx/transport.h"
#endif
#ifdef COLL_HAVE_VERBS
#include "transport/verbs/transport.h"
#endif

namespace coll::transport {

Status TransportSet::connect(int peer, Deadline deadline, Connection** conn, Transport** via) const {
  if (peer < 0 || peer >= static_cast<int>(for_peer.size()) || !for_peer[peer])
    return internalError(format("no transport reaches peer %d", peer));
  *via = for_peer[peer];
  return (*via)->connect(peer, deadline, conn);
}

void TransportSet::abort(const std::string& reason) {
  for (auto& t : owned) t->abort(reason);
}

void TransportSet::adviseLinkRate(double inter_host_Bps) {
  for (auto& t : owned) t->adviseLinkRate(inter_host_Bps);
}

std::string TransportSet::summary(int rank) const {
  std::map<std::string, std::string> peers_by_name;
  for (size_t p = 0; p < for_peer.size(); ++p) {
    if (!for_peer[p]) continue;
    std::string& list = peers_by_name[for_peer[p]->name()];
    list += (list.empty() ? "" : ",") + std::to_string(p);
  }
  std::string s;
  for (const auto& [name, list] : peers_by_name) s += (s.empty() ? "" : "; ") + ("peers " + list + " via " + name);
  return s.empty() ? "no peers" : s;
}

namespace {

// COLL_TRANSPORT=ucx: UCX for every peer, same-host ones included.
Status createUcxOnly(const Config& config, const PeerDirectory& directory, TransportSet* out) {
#ifdef COLL_HAVE_UCX
  std::unique_ptr<Transport> ucx;
  COLL_RETURN_IF_ERROR(ucx::createTransport(config, directory, &ucx));
  out->for_peer.assign(directory.size, ucx.get());
  out->for_peer[directory.rank] = nullptr;
  out->owned.push_back(std::move(ucx));
  COLL_INFO("NET", "transports: %s (forced by COLL_TRANSPORT)", out->summary(directory.rank).c_str());
  return Status::ok();
#else
  (void)config, (void)directory, (void)out;
  return unsupportedError("COLL_TRANSPORT=ucx, but coll was built without UCX (install libucx-dev and reconfigure)");
#endif
}

// Verbs, when it can run here; otherwise the reason, logged once at start-up.
std::unique_ptr<Transport> tryVerbs(const Config& config, const PeerDirectory& directory, Status* why) {
  std::unique_ptr<Transport> verbs;
#ifdef COLL_HAVE_VERBS
  *why = verbs::createTransport(config, directory, &verbs);
#else
  (void)config, (void)directory;
  *why = unsupportedError("coll was built without libibverbs");
#endif
  if (!why->isOk()) COLL_INFO("NET", "verbs transport not used: %s", why->message().c_str());
  return verbs;
}

Status createVerbsOnly(const Config& config, const PeerDirectory& directory, TransportSet* out) {
  Status no_verbs;
  std::unique_ptr<Transport> verbs = tryVerbs(config, directory, &no_verbs);
  if (!verbs) return Status(no_verbs.code(), "COLL_TRANSPORT=verbs: " + no_verbs.message());
  out->for_peer.assign(directory.size, verbs.get());
  out->for_peer[directory.rank] = nullptr;
  out->owned.push_back(std::move(verbs));
  COLL_INFO("NET", "transports: %s (forced by COLL_TRANSPORT)", out->summary(directory.rank).c_str());
  return Status::ok();
}

// What this rank could run between hosts; verbs is opened to find out (and kept if chosen).
NetworkCaps localCaps(const Config& config, const PeerDirectory& directory, std::unique_ptr<Transport>* verbs) {
  NetworkCaps caps;
  if (config.net.empty() || config.net == "verbs") {
    Status no_verbs;
    *verbs = tryVerbs(config, directory, &no_verbs);
    caps.verbs = *verbs != nullptr;
    caps.why_not_verbs = no_verbs.message();
  } else {
    caps.why_not_verbs = "not asked for (COLL_NET=" + config.net + ")";
  }
#ifdef COLL_HAVE_UCX
  // Asked for by name, UCX runs over whatever it finds; chosen by itself, only over RDMA.
  caps.ucx = config.net == "ucx" || rdmaDevicePresent(&caps.why_not_ucx);
#else
  caps.why_not_ucx = "coll was built without UCX (install libucx-dev and reconfigure)";
#endif
  return caps;
}

// The transport for the peers on other hosts, agreed by all ranks; nullptr means sockets.
Status createNetwork(const Config& config, const PeerDirectory& directory, const bootstrap::HostGrouping& hosts,
                     std::unique_ptr<Transport>* out, NetworkChoice* choice) {
  std::unique_ptr<Transport> verbs;
  NetworkCaps caps = localCaps(config, directory, &verbs);
  COLL_RETURN_IF_ERROR(exchangeNetworkChoice(directory, caps, config.net, Clock::now() + config.timeout, choice));
  if (choice->transport == "verbs") *out = std::move(verbs);
#ifdef COLL_HAVE_UCX
  if (choice->transport == "ucx") {
    std::vector<bool> remote(directory.size);
    for (int p = 0; p < directory.size; ++p) remote[p] = hosts.host_of_rank[p] != hosts.host_of_rank[directory.rank];
    COLL_RETURN_IF_ERROR(ucx::createTransport(config, directory, out, std::move(remote)));
  }
#else
  (void)hosts;
#endif
  return Status::ok();
}

Status checkNames(const Config& config) {
  const std::string& forced = config.transport;
  if (!forced.empty() && forced != "socket" && forced != "shm" && forced != "ucx" && forced != "verbs")
    return invalidArgument(format("COLL_TRANSPORT=%s: unknown transport (socket, shm, ucx, verbs)", forced.c_str()));
  const std::string& net = config.net;
  if (!net.empty() && net != "socket" && net != "ucx" && net != "verbs")
    return invalidArgument(format("COLL_NET=%s: unknown network transport (socket, ucx, verbs)", net.c_str()));
  return Status::ok();
}

}  // namespace

Status createTransports(const Config& config, const PeerDirectory& directory, const bootstrap::HostGrouping& hosts,
                        TransportSet* out, const ShmPlanes& planes) {
  COLL_RETURN_IF_ERROR(checkNames(config));
  const std::string& forced = config.transport;
  if (forced == "ucx") return createUcxOnly(config, directory, out);
  if (forced == "verbs") return createVerbsOnly(config, directory, out);
  std::unique_ptr<Transport> network, socket, shm;
  NetworkChoice choice{"socket", "COLL_TRANSPORT=" + forced};
  if (forced.empty() && hosts.num_hosts > 1)
    COLL_RETURN_IF_ERROR(createNetwork(config, directory, hosts, &network, &choice));
  // Where verbs or UCX carries the remote peers, shm serves every local one: no socket needed.
  if (!network) COLL_RETURN_IF_ERROR(socket::createTransport(config, directory, &socket));
  // Collective: every rank takes part, with or without local peers (COLL_TRANSPORT must then
  // be the same on every rank).
  if (forced != "socket" && planes.serve_second)
    COLL_RETURN_IF_ERROR(shm::createSecondPlane(config, directory, hosts.local_peers, planes.serve_second, &shm));
  else if (forced != "socket" && planes.reserve_second)
    COLL_RETURN_IF_ERROR(shm::createTransportWithSecondPlane(config, directory, hosts.local_peers,
                                                             *planes.reserve_second, &shm, &out->shm_files));
  else if (forced != "socket")
    COLL_RETURN_IF_ERROR(shm::createTransport(config, directory, hosts.local_peers, &shm));
  Transport* remote = network ? network.get() : socket.get();
  out->for_peer.assign(directory.size, nullptr);
  for (int peer = 0; peer < directory.size; ++peer) {
    if (peer == directory.rank) continue;
    bool local = hosts.host_of_rank[peer] == hosts.host_of_rank[directory.rank];
    if (forced == "shm" && !local)
      return unsupportedError(format("COLL_TRANSPORT=shm, but peer %d is on another host (%s)", peer,
                                     hosts.host_of_rank[peer].c_str()));
    out->for_peer[peer] = !local ? remote : shm ? shm.get() : socket.get();
  }
  for (auto* t : {&network, &socket, &shm})
    if (*t) out->owned.push_back(std::move(*t));
  if (hosts.num_hosts > 1)
    COLL_INFO("NET", "transports: %s; between hosts: %s (%s)", out->summary(directory.rank).c_str(),
              choice.transport.c_str(), choice.why.c_str());
  else
    COLL_INFO("NET", "transports: %s", out->summary(directory.rank).c_str());
  return Status::ok();
}

}  // namespace coll::transport
