#include "bootstrap/host_grouping.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <unistd.h>

#include "base/log.h"

namespace coll::bootstrap {

std::string localHostId(const std::string& override_id, int rank) {
  if (!override_id.empty()) {
    std::string id = override_id;
    size_t open = id.find("{rank/");
    size_t close = open == std::string::npos ? open : id.find('}', open);
    if (close != std::string::npos) {
      int k = std::max(1, std::atoi(id.c_str() + open + 6));
      id.replace(open, close - open + 1, std::to_string(rank / k));
    }
    return id;
  }
  char name[256] = "unknown";
  ::gethostname(name, sizeof name - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  return std::string(name) + "/" + boot_id;
}

namespace {

Status getHostId(StoreClient& store, const std::string& key_prefix, int r, Deadline deadline,
                 std::string* id) {
  Status st = store.get(key_prefix + "host/" + std::to_string(r), id, deadline);
  if (st.code() == ErrorCode::Timeout && !st.isOk())
    return timeoutError(format("peer %d did not join before the deadline (not started, crashed, or refused by "
                               "the store for a wrong COLL_JOB_SECRET)", r), r);
  return st;
}

}  // namespace

Status exchangeHostIds(StoreClient& store, const std::string& key_prefix, int rank, int size,
                       const std::string& my_host_id, Deadline deadline, HostGrouping* out) {
  COLL_RETURN_IF_ERROR(store.set(key_prefix + "host/" + std::to_string(rank), my_host_id, deadline));
  out->host_of_rank.assign(size, "");
  std::set<std::string> hosts;
  out->local_peers.clear();
  out->local_rank = 0;
  for (int r = 0; r < size; ++r) {
    if (r == rank) out->host_of_rank[r] = my_host_id;
    else COLL_RETURN_IF_ERROR(getHostId(store, key_prefix, r, deadline, &out->host_of_rank[r]));
    hosts.insert(out->host_of_rank[r]);
    if (r != rank && out->host_of_rank[r] == my_host_id) {
      out->local_peers.push_back(r);
      if (r < rank) ++out->local_rank;
    }
  }
  out->local_size = static_cast<int>(out->local_peers.size()) + 1;
  out->ranks_of_host.clear();
  std::vector<std::string> order;  // host ids by first (lowest) rank
  for (int r = 0; r < size; ++r) {
    auto it = std::find(order.begin(), order.end(), out->host_of_rank[r]);
    if (it == order.end()) {
      order.push_back(out->host_of_rank[r]);
      out->ranks_of_host.emplace_back();
      it = order.end() - 1;
    }
    out->ranks_of_host[it - order.begin()].push_back(r);
  }
  out->num_hosts = static_cast<int>(hosts.size());
  return Status::ok();
}

}  // namespace coll::bootstrap
