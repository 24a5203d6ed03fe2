#include "bootstrap/hosted_store.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mutex>
#include <net/if.h>
#include <netinet/in.h>
#include <vector>

#include "bootstrap/store.h"
#include "base/config.h"
#include "base/log.h"

namespace coll::bootstrap {

std::string primaryAddress() {
  const std::string& wanted = Config::global().socket_ifname;
  ifaddrs* list = nullptr;
  std::string found = "127.0.0.1";
  if (::getifaddrs(&list) != 0) return found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    bool match = wanted.empty() ? !(i->ifa_flags & IFF_LOOPBACK) : wanted == i->ifa_name;
    if (!match) continue;
    char buf[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    found = buf;
    break;
  }
  ::freeifaddrs(list);
  return found;
}

Status startHostedStore(const std::string& secret, bool local_only, std::string* address) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<StoreServer>> servers;  // never destroyed: see header
  std::unique_ptr<StoreServer> server;
  COLL_RETURN_IF_ERROR(StoreServer::start(local_only ? "127.0.0.1" : "0.0.0.0", 0, secret, &server));
  *address = format("%s:%d", local_only ? "127.0.0.1" : primaryAddress().c_str(), server->port());
  std::lock_guard<std::mutex> lock(mu);
  servers.push_back(std::move(server));
  return Status::ok();
}

}  // namespace coll::bootstrap
