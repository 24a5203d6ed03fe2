// What one rank of coll-doctor finds on its own host, before it talks to any peer: the
// interfaces and the one coll would pick, /dev/shm space against what coll's shared-memory
// transport will reserve, the kernel's socket buffer caps against what coll asks, RDMA devices
// and GPUs. Ranks swap these reports through the rendezvous store (as JSON), and rank 0 judges
// them together (verdict.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/json.h"

namespace coll::doctor {

struct InterfaceInfo {
  std::string name;
  std::string address;  // IPv4, or "" when the interface has none
  int mtu = 0;
  bool up = false;       // IFF_UP: configured up
  bool running = false;  // IFF_RUNNING: carrier
};

struct HostReport {
  int rank = 0;
  std::string hostname;
  std::string host_id;  // coll's host grouping key (host_grouping.h): who shares shared memory
  std::vector<InterfaceInfo> interfaces;
  // The interface coll's socket transport would use, or why there is none.
  InterfaceInfo chosen;
  std::string chosen_reason, choose_error;
  // /dev/shm: free bytes, and what this rank's segments will reserve per local peer (the
  // collectives' and point-to-point rings); the host needs local ranks x that.
  uint64_t shm_free = 0;
  uint64_t shm_per_peer = 0;
  // Socket buffers: the kernel's caps (net.core.[rw]mem_max) and what coll asks (COLL_SOCKET_BUFFER).
  uint64_t rmem_max = 0, wmem_max = 0, socket_buffer = 0;
  std::vector<std::string> rdma_devices;
  std::string gpu;  // "present", or why not
  std::string probe_address;  // host:port this rank's probe listener accepts on
  std::vector<std::string> config_problems;  // COLL_* values init would refuse
};

// Everything but probe_address, for rank `rank` whose rendezvous store runs on `store_host`.
HostReport collectHostReport(const Config& config, int rank, const std::string& store_host);

// The /dev/shm bytes one rank reserves for each of its local peers under `config`.
uint64_t shmBytesPerPeer(const Config& config);

Json toJson(const HostReport& report);
Status fromJson(const Json& json, HostReport* out);

// One line per finding on this host alone (no peers needed), for the rank's own output when
// the store cannot be reached, and for init's log under COLL_DEBUG=INFO.
std::string describeInterface(const InterfaceInfo& i);

}  // namespace coll::doctor
