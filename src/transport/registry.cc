#include "transport/registry.h"

#include <map>

#include "core/log.h"
#include "transport/shm/transport.h"
#include "transport/socket/transport.h"

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

Status createTransports(const Config& config, const PeerDirectory& directory, const topology::HostGrouping& hosts,
                        TransportSet* out) {
  const std::string& forced = config.transport;
  if (!forced.empty() && forced != "socket" && forced != "shm")
    return invalidArgument(format("COLL_TRANSPORT=%s: unknown transport (socket, shm)", forced.c_str()));
  std::unique_ptr<Transport> socket, shm;
  COLL_RETURN_IF_ERROR(socket::createTransport(config, directory, &socket));
  // Collective: every rank takes part, with or without local peers (COLL_TRANSPORT must then
  // be the same on every rank).
  if (forced != "socket") COLL_RETURN_IF_ERROR(shm::createTransport(config, directory, hosts.local_peers, &shm));
  out->for_peer.assign(directory.size, nullptr);
  for (int peer = 0; peer < directory.size; ++peer) {
    if (peer == directory.rank) continue;
    bool local = hosts.host_of_rank[peer] == hosts.host_of_rank[directory.rank];
    if (forced == "shm" && !local)
      return unsupportedError(format("COLL_TRANSPORT=shm, but peer %d is on another host (%s)", peer,
                                     hosts.host_of_rank[peer].c_str()));
    out->for_peer[peer] = local && shm ? shm.get() : socket.get();
  }
  out->owned.push_back(std::move(socket));
  if (shm) out->owned.push_back(std::move(shm));
  COLL_INFO("NET", "transports: %s", out->summary(directory.rank).c_str());
  return Status::ok();
}

}  // namespace coll::transport
