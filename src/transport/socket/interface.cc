#include "transport/socket/interface.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "base/fd_io.h"
#include "base/log.h"

namespace coll::transport::socket {
namespace {

std::string numericHost(const sockaddr* sa) {
  char host[NI_MAXHOST];
  socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

// Walks getifaddrs; fills name and/or address of the first entry that matches.
bool findInterface(const std::string& want_name, const std::string& want_addr, ChosenInterface* out) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    std::string addr = numericHost(i->ifa_addr);
    if (!want_name.empty() && want_name == i->ifa_name && i->ifa_addr->sa_family == AF_INET) found = true;
    if (!want_addr.empty() && want_addr == addr) found = true;
    if (found) {
      out->name = i->ifa_name;
      out->address = addr;
    }
  }
  ::freeifaddrs(list);
  return found;
}

// The source address the kernel picks for traffic to host (a UDP connect sends nothing).
Status routeSource(const std::string& host, std::string* source) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), "9", &hints, &res);
  if (rc != 0) return invalidArgument(format("cannot resolve rendezvous host '%s': %s", host.c_str(), gai_strerror(rc)));
  UniqueFd fd(::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  bool ok = fd && ::connect(fd.get(), res->ai_addr, res->ai_addrlen) == 0;
  ::freeaddrinfo(res);
  if (!ok) return transportError(format("no route to rendezvous host '%s': %s", host.c_str(), std::strerror(errno)));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  *source = numericHost(reinterpret_cast<sockaddr*>(&ss));
  return Status::ok();
}

std::string readSys(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  f >> v;
  return v;
}

void describeLink(ChosenInterface* out) {
  if (out->name.empty() || out->name == "?") return;
  out->mtu = std::atoi(readSys("/sys/class/net/" + out->name + "/mtu").c_str());
  out->state = readSys("/sys/class/net/" + out->name + "/operstate");
}

}  // namespace

uint64_t socketBufferCap() {
  uint64_t r = std::strtoull(readSys("/proc/sys/net/core/rmem_max").c_str(), nullptr, 10);
  uint64_t w = std::strtoull(readSys("/proc/sys/net/core/wmem_max").c_str(), nullptr, 10);
  return std::min(r, w);
}

Status chooseInterface(const std::string& ifname, const std::string& rendezvous_host, ChosenInterface* out) {
  if (!ifname.empty()) {
    if (!findInterface(ifname, "", out))
      return invalidArgument(format("COLL_SOCKET_IFNAME=%s: no such interface with an IPv4 address", ifname.c_str()));
    out->reason = "COLL_SOCKET_IFNAME";
    describeLink(out);
    return Status::ok();
  }
  if (rendezvous_host.empty())
    return invalidArgument("the rendezvous store does not say which host it runs on, so no interface can be "
                           "chosen by route: set COLL_SOCKET_IFNAME");
  std::string source;
  COLL_RETURN_IF_ERROR(routeSource(rendezvous_host, &source));
  if (!findInterface("", source, out)) {
    out->name = "?";
    out->address = source;
  }
  out->reason = format("routes to the rendezvous host %s", rendezvous_host.c_str());
  describeLink(out);
  return Status::ok();
}

}  // namespace coll::transport::socket
