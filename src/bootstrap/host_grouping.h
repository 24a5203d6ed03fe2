// Which ranks share a host. A host is named by hostname + boot id, so two containers or
// network namespaces with their own hostnames count as different hosts even on one kernel
// (shared memory must not cross what the user thinks of as a machine boundary), and two
// hosts that happen to share a hostname still differ by boot id. COLL_HOST_ID overrides it.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "base/status.h"

namespace coll::bootstrap {

// COLL_HOST_ID when set, with "{rank/K}" replaced by rank / K (so one machine can pose as
// several hosts of K ranks, for tests and experiments); else hostname/boot-id.
std::string localHostId(const std::string& override_id, int rank);

struct HostGrouping {
  // Per rank, its host as "<hostname>#<index>": equal for ranks of one host, the hostname
  // (without the boot id) for messages. The full ids stay in the store.
  std::vector<std::string> host_of_rank;
  std::vector<int> local_peers;           // ranks on this host, without this rank
  int local_rank = 0;                     // index of this rank among the ranks of its host
  int local_size = 1;
  int num_hosts = 1;
  std::vector<std::vector<int>> ranks_of_host;  // hosts ordered by their lowest rank
};

// Publishes this rank's host id in the store and learns everyone's (collective; O(size) store
// requests in all). `reconnect` (may be empty) opens a fresh client for rank 0 to tell the
// others which rank never published: a client whose wait timed out is closed.
Status exchangeHostIds(StoreClient& store, const std::string& key_prefix, int rank, int size,
                       const std::string& my_host_id, Deadline deadline, HostGrouping* out,
                       const StoreConnect& reconnect = nullptr);

}  // namespace coll::bootstrap
