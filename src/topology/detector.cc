#include "topology/detector.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#if COLL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace coll::topology {
namespace fs = std::filesystem;
namespace {

std::string readLine(const fs::path& path) {
  std::string line;
  std::ifstream in(path);
  std::getline(in, line);
  return line;
}

int readInt(const fs::path& path, int fallback) {
  std::string s = readLine(path);
  if (s.empty()) return fallback;
  try { return std::stoi(s); } catch (...) { return fallback; }
}

// The PCI function a sysfs device hangs off: the last "dddd:bb:dd.f" in its resolved path
// (a virtio NIC's device is a child of the PCI function).
std::string pciAddressOf(const fs::path& device_link) {
  std::error_code ec;
  fs::path real = fs::canonical(device_link, ec);
  if (ec) return "";
  static const std::regex kPci("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
  std::string found;
  for (const fs::path& part : real)
    if (std::regex_match(part.string(), kPci)) found = part.string();
  return found;
}

int numaOfPci(const std::string& pci) {
  return pci.empty() ? -1 : readInt("/sys/bus/pci/devices/" + pci + "/numa_node", -1);
}

std::set<std::string> rdmaPciFunctions() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec)) {
    std::string pci = pciAddressOf(dev.path() / "device");
    if (!pci.empty()) out.insert(pci);
  }
  return out;
}

std::vector<NicInfo> detectNics() {
  std::vector<NicInfo> nics;
  const std::set<std::string> rdma = rdmaPciFunctions();
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/class/net", ec)) {
    NicInfo nic;
    nic.name = dev.path().filename().string();
    nic.pci = pciAddressOf(dev.path() / "device");
    if (nic.pci.empty()) continue;  // lo, veth, bridges, ifb: not hardware
    nic.numa_node = numaOfPci(nic.pci);
    nic.rdma = rdma.count(nic.pci) > 0;
    nics.push_back(nic);
  }
  std::sort(nics.begin(), nics.end(), [](const NicInfo& a, const NicInfo& b) { return a.name < b.name; });
  return nics;
}

// Display controllers (PCI class 0x03xxxx): VGA and 3D controllers, which is where compute
// GPUs (NVIDIA 0x0302, AMD 0x0380) sit.
std::vector<GpuInfo> detectGpus() {
  std::vector<GpuInfo> gpus;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator("/sys/bus/pci/devices", ec)) {
    std::string cls = readLine(dev.path() / "class");
    if (cls.rfind("0x03", 0) != 0) continue;
    GpuInfo gpu;
    gpu.pci = dev.path().filename().string();
    gpu.vendor = readLine(dev.path() / "vendor");
    gpu.numa_node = numaOfPci(gpu.pci);
    gpus.push_back(gpu);
  }
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  return gpus;
}

#if COLL_HAVE_HWLOC
void detectCpuWithHwloc(HostHardware* hw) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return;
  if (hwloc_topology_load(topo) == 0) {
    hw->source = "hwloc " HWLOC_VERSION;
    hw->numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
    hw->cores = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
    hw->pus = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
    if (hwloc_obj_t l3 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L3CACHE, 0))
      hw->l3_bytes = static_cast<long long>(l3->attr->cache.size);
  }
  hwloc_topology_destroy(topo);
}
#endif

void detectCpuWithSysfs(HostHardware* hw) {
  hw->source = "sysfs";
  std::error_code ec;
  int nodes = 0;
  static const std::regex kNode("node[0-9]+"), kCpu("cpu[0-9]+");
  for (const auto& d : fs::directory_iterator("/sys/devices/system/node", ec))
    if (std::regex_match(d.path().filename().string(), kNode)) ++nodes;
  hw->numa_nodes = std::max(1, nodes);
  hw->pus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::set<std::pair<int, int>> cores;  // (package, core id)
  for (const auto& d : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    if (!std::regex_match(d.path().filename().string(), kCpu) || !fs::exists(d.path() / "topology")) continue;
    cores.insert({readInt(d.path() / "topology/physical_package_id", 0), readInt(d.path() / "topology/core_id", 0)});
  }
  hw->cores = cores.empty() ? hw->pus : static_cast<int>(cores.size());
  for (const auto& d : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (readInt(d.path() / "level", 0) != 3) continue;
    std::string size = readLine(d.path() / "size");  // "491520K"
    long long v = size.empty() ? 0 : std::atoll(size.c_str());
    hw->l3_bytes = v * (size.find('K') != std::string::npos ? 1024 : size.find('M') != std::string::npos ? 1 << 20 : 1);
  }
}

}  // namespace

HostHardware detectHostHardware() {
  HostHardware hw;
  char name[256] = "unknown";
  ::gethostname(name, sizeof name - 1);
  hw.hostname = name;
#if COLL_HAVE_HWLOC
  detectCpuWithHwloc(&hw);
#endif
  if (hw.source.empty()) detectCpuWithSysfs(&hw);
  hw.nics = detectNics();
  hw.gpus = detectGpus();
  return hw;
}

}  // namespace coll::topology
