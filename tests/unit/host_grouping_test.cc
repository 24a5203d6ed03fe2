// exchangeHostIds over coll's own store, one thread and one client per rank: the groupings
// every layout gives (contiguous, interleaved, one host, odd sizes), the store requests it
// costs (O(size) in all: rank 0 reads every id, the others set theirs and read one table),
// and a rank that never publishes named on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/host_grouping.h"
#include "bootstrap/store.h"

namespace coll::bootstrap {
namespace {

using namespace std::chrono_literals;

struct RankOutcome {
  Status status;
  HostGrouping hosts;
  int64_t requests = 0;
};

// Runs exchangeHostIds on `size` ranks (those in `absent` never call it), host id of rank r = id(r).
std::vector<RankOutcome> exchange(int size, const std::function<std::string(int)>& id,
                                  std::chrono::milliseconds timeout = 10s, std::vector<int> absent = {}) {
  const std::string secret = generateSecret();
  std::unique_ptr<StoreServer> server;
  EXPECT_TRUE(StoreServer::start("127.0.0.1", 0, secret, &server));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  std::vector<RankOutcome> out(size);
  std::vector<std::thread> ranks;
  for (int r = 0; r < size; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    ranks.emplace_back([&, r] {
      std::unique_ptr<StoreClient> client;
      out[r].status = StoreClient::connect(address, secret, Clock::now() + 10s, &client);
      if (!out[r].status) return;
      StoreConnect reconnect = [&](Deadline d, std::unique_ptr<StoreClient>* fresh) {
        return StoreClient::connect(address, secret, d, fresh);
      };
      out[r].status =
          exchangeHostIds(*client, "job/", r, size, id(r), Clock::now() + timeout, &out[r].hosts, reconnect);
      out[r].requests = client->traffic().requests;
    });
  }
  for (std::thread& t : ranks) t.join();
  return out;
}

// The grouping computed directly from the ids.
void expectGrouping(const std::vector<RankOutcome>& out, const std::function<std::string(int)>& id) {
  const int size = static_cast<int>(out.size());
  for (int r = 0; r < size; ++r) {
    ASSERT_TRUE(out[r].status) << "rank " << r << ": " << out[r].status.message();
    const HostGrouping& g = out[r].hosts;
    std::vector<int> local;
    int local_rank = 0;
    for (int p = 0; p < size; ++p) {  // kept as "<hostname>#<index>": same host, same string
      const std::string& kept = g.host_of_rank[p];
      EXPECT_EQ(kept.substr(0, kept.rfind('#')), id(p).substr(0, id(p).find('/'))) << "rank " << r << " about " << p;
      EXPECT_EQ(kept == g.host_of_rank[r], id(p) == id(r)) << "rank " << r << " about " << p;
      EXPECT_EQ(kept, out[0].hosts.host_of_rank[p]) << "rank " << r << " about " << p;
      if (p != r && id(p) == id(r)) local.push_back(p), local_rank += p < r;
    }
    EXPECT_EQ(g.local_peers, local) << "rank " << r;
    EXPECT_EQ(g.local_rank, local_rank) << "rank " << r;
    EXPECT_EQ(g.local_size, static_cast<int>(local.size()) + 1);
    EXPECT_EQ(g.ranks_of_host.size(), static_cast<size_t>(g.num_hosts));
    int first = -1;  // hosts in order of their lowest rank, each listing its ranks
    for (const std::vector<int>& host : g.ranks_of_host) {
      ASSERT_FALSE(host.empty());
      EXPECT_GT(host.front(), first);
      first = host.front();
      for (int p : host) EXPECT_EQ(id(p), id(host.front()));
    }
    EXPECT_EQ(out[r].hosts.ranks_of_host, out[0].hosts.ranks_of_host) << "rank " << r << " disagrees";
  }
}

TEST(HostGrouping, EveryLayoutAndTheRequestsItCosts) {
  const std::vector<std::pair<const char*, std::function<std::string(int)>>> layouts = {
      {"one host", [](int) { return std::string("node/boot"); }},
      {"contiguous, 3 a host", [](int r) { return "h" + std::to_string(r / 3); }},
      {"interleaved over 3", [](int r) { return "h" + std::to_string(r % 3); }},
      {"one a host, with spaces", [](int r) { return " host " + std::to_string(r) + " /b "; }},
      {"one hostname, two boot ids", [](int r) { return "node/boot" + std::to_string(r % 2); }},
      {"uneven: 1, 2, 3, ... a host", [](int r) { return "h" + std::to_string(static_cast<int>((std::sqrt(8.0 * r + 1) - 1) / 2)); }},
  };
  for (int size : {1, 2, 5, 7, 16}) {
    for (const auto& [name, id] : layouts) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(size) + " ranks");
      std::vector<RankOutcome> out = exchange(size, id);
      expectGrouping(out, id);
      EXPECT_EQ(out[0].requests, size);  // size - 1 gets and the table
      for (int r = 1; r < size; ++r) EXPECT_EQ(out[r].requests, 2) << "rank " << r;
    }
  }
}

TEST(HostGrouping, ARankThatNeverPublishesIsNamedOnEveryRank) {
  std::vector<RankOutcome> out = exchange(4, [](int r) { return "h" + std::to_string(r / 2); }, 500ms, {2});
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(out[r].status.code(), ErrorCode::Timeout) << "rank " << r;
    EXPECT_NE(out[r].status.message().find("peer 2 did not join"), std::string::npos)
        << "rank " << r << ": " << out[r].status.message();
  }
}

TEST(HostGrouping, AnIdWithALineBreakIsRefusedBeforeAnythingIsSent) {
  std::vector<RankOutcome> out = exchange(1, [](int) { return std::string("a\nb"); });
  EXPECT_EQ(out[0].status.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(out[0].requests, 0);
}

}  // namespace
}  // namespace coll::bootstrap
