#include "bootstrap/host_grouping.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>
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

constexpr auto kVerdictGrace = std::chrono::seconds(2);  // for rank 0's table or its error

// What a rank keeps of a host's id: its name (the hostname, without the boot id) and its
// index in the table, which tells hosts of one name apart: "node7#6".
std::string keptId(const std::string& id, size_t index) {
  return id.substr(0, id.find('/')) + "#" + std::to_string(index);
}

// The host table rank 0 publishes, small because every rank reads it (O(ranks x hosts) bytes
// in all): the hosts in order of their lowest rank, one name a line, then "every <k>" where
// each host has k consecutive ranks, else the ranks as runs "<host index> <count>".
// "error\n<message>" instead when a rank never published its id.
std::string encodeTable(const std::vector<std::string>& host_of_rank) {
  std::vector<std::string> order;
  std::unordered_map<std::string, int> index;
  std::vector<std::pair<int, int>> runs;  // (host, count)
  for (const std::string& id : host_of_rank) {
    auto [it, fresh] = index.emplace(id, static_cast<int>(order.size()));
    if (fresh) order.push_back(id);
    if (runs.empty() || runs.back().first != it->second) runs.emplace_back(it->second, 0);
    ++runs.back().second;
  }
  bool regular = runs.size() == order.size();  // each host one run, all of one length
  for (const auto& [host, count] : runs) regular = regular && count == runs.front().second;
  std::string text = format("hosts %zu\n", order.size());
  for (const std::string& id : order) text += id.substr(0, id.find('/')) + "\n";
  if (regular) return text + format("every %d\n", runs.front().second);
  for (const auto& [host, count] : runs) text += format("%d %d\n", host, count);
  return text;
}

Status decodeTable(const std::string& text, int size, std::vector<std::string>* host_of_rank) {
  if (text.rfind("error\n", 0) == 0) return timeoutError(text.substr(6));
  std::istringstream in(text);
  std::string word, name;
  size_t hosts = 0;
  if (!(in >> word >> hosts) || word != "hosts") return internalError("host table: unreadable header");
  std::getline(in, name);
  std::vector<std::string> kept(hosts);
  for (size_t h = 0; h < hosts; ++h) {
    if (!std::getline(in, name)) return internalError("host table: fewer hosts than announced");
    kept[h] = keptId(name, h);
  }
  host_of_rank->clear();
  std::string first;
  if (!(in >> first)) return internalError("host table: no ranks");
  if (first == "every") {
    int count = 0;
    in >> count;
    for (size_t h = 0; h < hosts && count > 0; ++h) host_of_rank->insert(host_of_rank->end(), count, kept[h]);
  } else {
    int host = std::atoi(first.c_str()), count = 0;
    for (bool more = static_cast<bool>(in >> count); more; more = static_cast<bool>(in >> host >> count)) {
      if (host < 0 || static_cast<size_t>(host) >= hosts || count < 1) return internalError("host table: bad run");
      host_of_rank->insert(host_of_rank->end(), count, kept[host]);
    }
  }
  if (static_cast<int>(host_of_rank->size()) != size)
    return internalError(format("host table: %zu ranks, the job has %d", host_of_rank->size(), size));
  return Status::ok();
}

// Rank 0 reads every id (each get parks until its rank has published) and publishes the table,
// or the error that names the rank that never published (through a fresh client: the one
// whose get timed out is closed).
Status gatherTable(StoreClient& store, const std::string& key_prefix, int size, const std::string& my_host_id,
                   Deadline deadline, const StoreConnect& reconnect, std::vector<std::string>* host_of_rank) {
  host_of_rank->assign(size, my_host_id);
  Status st;
  for (int r = 1; r < size && st; ++r) {
    st = store.get(key_prefix + "host/" + std::to_string(r), &(*host_of_rank)[r], deadline);
    if (st.code() == ErrorCode::Timeout && !st.isOk())
      st = timeoutError(format("peer %d did not join before the deadline (not started, crashed, or refused by the "
                               "store for a wrong COLL_JOB_SECRET)", r), r);
  }
  const Deadline grace = std::max(deadline, Clock::now()) + kVerdictGrace;
  if (st) {
    const std::string table = encodeTable(*host_of_rank);
    COLL_RETURN_IF_ERROR(decodeTable(table, size, host_of_rank));  // the form every rank keeps
    return store.set(key_prefix + "hosts", table, grace);
  }
  std::unique_ptr<StoreClient> fresh;
  if (reconnect && reconnect(grace, &fresh)) (void)fresh->set(key_prefix + "hosts", "error\n" + st.message(), grace);
  return st;
}

void groupHosts(int rank, HostGrouping* out) {
  const int size = static_cast<int>(out->host_of_rank.size());
  const std::string& mine = out->host_of_rank[rank];
  out->local_peers.clear();
  out->local_rank = 0;
  out->ranks_of_host.clear();
  std::unordered_map<std::string, int> host_index;  // by first (lowest) rank
  for (int r = 0; r < size; ++r) {
    const std::string& id = out->host_of_rank[r];
    auto [it, fresh] = host_index.emplace(id, static_cast<int>(out->ranks_of_host.size()));
    if (fresh) out->ranks_of_host.emplace_back();
    out->ranks_of_host[it->second].push_back(r);
    if (r != rank && id == mine) {
      out->local_peers.push_back(r);
      if (r < rank) ++out->local_rank;
    }
  }
  out->local_size = static_cast<int>(out->local_peers.size()) + 1;
  out->num_hosts = static_cast<int>(out->ranks_of_host.size());
}

}  // namespace

// O(size) store requests in all: each rank sets its id, rank 0 reads them and publishes one
// table, every other rank reads the table (each reading every id was O(size²): 65,536 requests
// at 256 ranks, start-up's largest cost).
Status exchangeHostIds(StoreClient& store, const std::string& key_prefix, int rank, int size,
                       const std::string& my_host_id, Deadline deadline, HostGrouping* out,
                       const StoreConnect& reconnect) {
  if (my_host_id.empty() || my_host_id.find('\n') != std::string::npos)
    return invalidArgument(format("host id '%s' of rank %d is empty or has a line break (COLL_HOST_ID)",
                                  my_host_id.c_str(), rank));
  if (rank == 0) {
    COLL_RETURN_IF_ERROR(gatherTable(store, key_prefix, size, my_host_id, deadline, reconnect, &out->host_of_rank));
  } else {
    COLL_RETURN_IF_ERROR(store.set(key_prefix + "host/" + std::to_string(rank), my_host_id, deadline));
    std::string table;
    Status st = store.get(key_prefix + "hosts", &table, deadline + kVerdictGrace);
    if (st.code() == ErrorCode::Timeout && !st.isOk())
      return timeoutError("rank 0 did not publish the table of hosts before the deadline (it crashed, or is stuck)", 0);
    COLL_RETURN_IF_ERROR(st);
    COLL_RETURN_IF_ERROR(decodeTable(table, size, &out->host_of_rank));
    const std::string& kept = out->host_of_rank[rank];
    if (kept.compare(0, kept.rfind('#'), my_host_id.substr(0, my_host_id.find('/'))) != 0)
      return internalError(format("host table names rank %d's host '%s', it is '%s'", rank, kept.c_str(),
                                  my_host_id.c_str()));
  }
  groupHosts(rank, out);
  return Status::ok();
}

}  // namespace coll::bootstrap
