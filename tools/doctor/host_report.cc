#include "host_report.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "base/log.h"
#include "comm/p2p_config.h"
#include "cuda/runtime.h"
#include "bootstrap/host_grouping.h"
#include "transport/shm/transport.h"
#include "transport/socket/interface.h"

namespace coll::doctor {
namespace {

using coll::Json;

int readMtu(const std::string& ifname) {
  std::ifstream f("/sys/class/net/" + ifname + "/mtu");
  int mtu = 0;
  f >> mtu;
  return mtu;
}

uint64_t readSysctl(const char* path) {
  std::ifstream f(path);
  uint64_t v = 0;
  f >> v;
  return v;
}

// Every interface once, with its IPv4 address if it has one (getifaddrs lists an interface
// per address family; a down interface may have no address at all).
std::vector<InterfaceInfo> listInterfaces() {
  std::map<std::string, InterfaceInfo> by_name;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    InterfaceInfo& info = by_name[i->ifa_name];
    info.name = i->ifa_name;
    info.up = i->ifa_flags & IFF_UP;
    info.running = i->ifa_flags & IFF_RUNNING;
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && info.address.empty()) {
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      info.address = text;
    }
  }
  ::freeifaddrs(list);
  std::vector<InterfaceInfo> out;
  for (auto& [name, info] : by_name) {
    info.mtu = readMtu(name);
    out.push_back(info);
  }
  return out;
}

std::vector<std::string> rdmaDevices() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) out.push_back(e.path().filename());
  return out;
}

Json interfaceJson(const InterfaceInfo& i) {
  Json j = Json::object();
  j.set("name", i.name);
  j.set("address", i.address);
  j.set("mtu", i.mtu);
  j.set("up", i.up);
  j.set("running", i.running);
  return j;
}

InterfaceInfo interfaceFrom(const Json& j) {
  return InterfaceInfo{j["name"].string(), j["address"].string(), static_cast<int>(j["mtu"].number()),
                       j["up"].boolean(), j["running"].boolean()};
}

}  // namespace

uint64_t shmBytesPerPeer(const Config& config) {
  // Both transports have a ring per local peer, reserved by its first message; the fixed parts are small beside them.
  return transport::shm::segmentBytes(config, 2) - transport::shm::segmentBytes(config, 1) +
         transport::shm::segmentBytes(p2pConfig(config), 2) - transport::shm::segmentBytes(p2pConfig(config), 1);
}

HostReport collectHostReport(const Config& config, int rank, const std::string& store_host) {
  HostReport r;
  r.rank = rank;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  r.hostname = name;
  r.host_id = bootstrap::localHostId(config.host_id, rank);
  r.interfaces = listInterfaces();
  transport::socket::ChosenInterface chosen;
  if (Status st = transport::socket::chooseInterface(config.socket_ifname, store_host, &chosen); !st) {
    r.choose_error = st.message();
  } else {
    r.chosen_reason = chosen.reason;
    r.chosen.name = chosen.name;
    r.chosen.address = chosen.address;
    for (const InterfaceInfo& i : r.interfaces)
      if (i.name == chosen.name) r.chosen = i;
  }
  struct statvfs vfs{};
  if (::statvfs("/dev/shm", &vfs) == 0) r.shm_free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  r.shm_per_peer = shmBytesPerPeer(config);
  r.rmem_max = readSysctl("/proc/sys/net/core/rmem_max");
  r.wmem_max = readSysctl("/proc/sys/net/core/wmem_max");
  r.socket_buffer = static_cast<uint64_t>(config.socket_buffer_bytes);
  r.rdma_devices = rdmaDevices();
  r.gpu = cuda::gpuPresent() ? "present" : cuda::whyNoGpu();
  return r;
}

Json toJson(const HostReport& r) {
  Json ifs = Json::array(), rdma = Json::array();
  for (const InterfaceInfo& i : r.interfaces) ifs.push(interfaceJson(i));
  for (const std::string& d : r.rdma_devices) rdma.push(d);
  Json j = Json::object();
  j.set("rank", r.rank);
  j.set("hostname", r.hostname);
  j.set("host_id", r.host_id);
  j.set("interfaces", ifs);
  j.set("chosen", interfaceJson(r.chosen));
  j.set("chosen_reason", r.chosen_reason);
  j.set("choose_error", r.choose_error);
  j.set("shm_free", r.shm_free);
  j.set("shm_per_peer", r.shm_per_peer);
  j.set("rmem_max", r.rmem_max);
  j.set("wmem_max", r.wmem_max);
  j.set("socket_buffer", r.socket_buffer);
  Json problems = Json::array();
  for (const std::string& p : r.config_problems) problems.push(p);
  j.set("rdma", rdma);
  j.set("gpu", r.gpu);
  j.set("probe", r.probe_address);
  j.set("config_problems", problems);
  return j;
}

Status fromJson(const Json& j, HostReport* out) {
  if (j.kind() != Json::Kind::object || !j.has("rank")) return invalidArgument("not a coll-doctor host report");
  HostReport r;
  r.rank = static_cast<int>(j["rank"].number());
  r.hostname = j["hostname"].string();
  r.host_id = j["host_id"].string();
  for (const Json& i : j["interfaces"].items()) r.interfaces.push_back(interfaceFrom(i));
  r.chosen = interfaceFrom(j["chosen"]);
  r.chosen_reason = j["chosen_reason"].string();
  r.choose_error = j["choose_error"].string();
  r.shm_free = static_cast<uint64_t>(j["shm_free"].number());
  r.shm_per_peer = static_cast<uint64_t>(j["shm_per_peer"].number());
  r.rmem_max = static_cast<uint64_t>(j["rmem_max"].number());
  r.wmem_max = static_cast<uint64_t>(j["wmem_max"].number());
  r.socket_buffer = static_cast<uint64_t>(j["socket_buffer"].number());
  for (const Json& d : j["rdma"].items()) r.rdma_devices.push_back(d.string());
  r.gpu = j["gpu"].string();
  r.probe_address = j["probe"].string();
  for (const Json& p : j["config_problems"].items()) r.config_problems.push_back(p.string());
  *out = std::move(r);
  return Status::ok();
}

std::string describeInterface(const InterfaceInfo& i) {
  return format("%s %s mtu %d %s", i.name.c_str(), i.address.empty() ? "(no IPv4 address)" : i.address.c_str(), i.mtu,
                !i.up ? "DOWN" : !i.running ? "UP, NO CARRIER" : "up");
}

}  // namespace coll::doctor
