#include "transport/registry.h"

#include <map>

#include "core/log.h"
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

// COLL_TRANSPORT=ucx: UCX for every peer, nothing else. UCX is never chosen automatically
// (measurements in README.md, "UCX").
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

}  // namespace

Status createTransports(const Config& config, const PeerDirectory& directory, const topology::HostGrouping& hosts,
                        TransportSet* out) {
  const std::string& forced = config.transport;
  if (!forced.empty() && forced != "socket" && forced != "shm" && forced != "ucx" &&
      forced != "verbs")
    return invalidArgument(format("COLL_TRANSPORT=%s: unknown transport (socket, shm, ucx, verbs)", forced.c_str()));
  if (forced == "ucx") return createUcxOnly(config, directory, out);
  Status no_verbs;
  std::unique_ptr<Transport> verbs;
  if (forced == "verbs" || (forced.empty() && hosts.num_hosts > 1)) verbs = tryVerbs(config, directory, &no_verbs);
  if (forced == "verbs") {
    if (!verbs) return Status(no_verbs.code(), "COLL_TRANSPORT=verbs: " + no_verbs.message());
    out->for_peer.assign(directory.size, verbs.get());
    out->for_peer[directory.rank] = nullptr;
    out->owned.push_back(std::move(verbs));
    COLL_INFO("NET", "transports: %s (forced by COLL_TRANSPORT)", out->summary(directory.rank).c_str());
    return Status::ok();
  }
  // The verbs data path has only run over the unit tests' fake NICs so far: until it has run on
  // an RDMA device it is used where COLL_TRANSPORT=verbs asks for it, never chosen by itself.
  if (verbs) {
    COLL_INFO("NET", "verbs transport available but not chosen automatically yet (COLL_TRANSPORT=verbs forces it)");
    verbs.reset();
  }
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
