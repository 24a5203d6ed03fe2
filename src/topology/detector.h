// What one host's hardware looks like, as far as collectives care: NUMA nodes, cores, the L3
// cache, PCI NICs (and whether they speak RDMA) and GPUs with the NUMA node they hang off.
// With hwloc (COLL_HAVE_HWLOC) the CPU side comes from its topology; without it, from /proc
// and sysfs (same fields, the L3 from cpu0's cache only). NICs and GPUs are read from sysfs
// either way: /sys/class/net for NICs with a PCI device (virtual ones, veth, lo, are not
// hardware), /sys/class/infiniband for RDMA, PCI class 0x03 for GPUs.
#pragma once

#include <string>
#include <vector>

namespace coll::topology {

struct NicInfo {
  std::string name;      // "eth0"
  std::string pci;       // "0000:00:03.0"
  int numa_node = -1;    // -1: unknown (one-node machines report -1 in sysfs)
  bool rdma = false;     // an RDMA device (/sys/class/infiniband/*/device) sits on the same PCI function
};

struct GpuInfo {
  std::string pci;       // "0000:3b:00.0"
  std::string vendor;    // "0x10de"
  int numa_node = -1;
};

struct HostHardware {
  std::string hostname;
  std::string source;    // "hwloc 2.9.0" or "sysfs": how it was detected (sysfs has fewer fields)
  int numa_nodes = 1;
  int cores = 1;         // physical cores
  int pus = 1;           // hardware threads the OS can schedule on (what nproc counts without affinity)
  long long l3_bytes = 0;  // one L3 cache (0: none found)
  std::vector<NicInfo> nics;
  std::vector<GpuInfo> gpus;
};

// Never fails: what cannot be read keeps its default, and the source says which path ran.
HostHardware detectHostHardware();

}  // namespace coll::topology
