// The job-wide choice of the transport between hosts (verbs > ucx > socket): what each rank
// states, what rank 0 decides from it, and that every rank learns the same outcome.
#include "transport/network_choice.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"

namespace coll::transport {
namespace {

using namespace std::chrono_literals;

NetworkCaps caps(bool verbs, bool ucx) {
  NetworkCaps c;
  c.verbs = verbs;
  c.ucx = ucx;
  if (!verbs) c.why_not_verbs = "verbs: no RDMA device";
  if (!ucx) c.why_not_ucx = "no RDMA device for UCX to use";
  return c;
}

NetworkChoice agree(const std::vector<NetworkCaps>& all, const std::string& wanted = "") {
  NetworkChoice choice;
  Status st = agreeOnNetwork(all, wanted, &choice);
  EXPECT_TRUE(st) << st.message();
  return choice;
}

TEST(NetworkChoice, VerbsWhereEveryRankHasIt) {
  EXPECT_EQ(agree({caps(true, true), caps(true, true)}).transport, "verbs");
  EXPECT_EQ(agree({caps(true, false), caps(true, false)}).transport, "verbs");
}

TEST(NetworkChoice, UcxWhereSomeRankLacksVerbsButAllHaveUcx) {
  NetworkChoice c = agree({caps(true, true), caps(false, true), caps(true, true)});
  EXPECT_EQ(c.transport, "ucx");
  EXPECT_NE(c.why.find("verbs: rank 1: verbs: no RDMA device"), std::string::npos) << c.why;
}

TEST(NetworkChoice, SocketNamesWhatWasPassedOverAndWhy) {
  NetworkChoice c = agree({caps(true, true), caps(true, true), caps(false, false)});
  EXPECT_EQ(c.transport, "socket");
  EXPECT_NE(c.why.find("verbs: rank 2"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("ucx: rank 2: no RDMA device for UCX"), std::string::npos) << c.why;
}

TEST(NetworkChoice, NamedTransportIsUsedOrRefusedNamingTheRank) {
  EXPECT_EQ(agree({caps(true, true), caps(true, true)}, "socket").transport, "socket");
  EXPECT_EQ(agree({caps(true, true), caps(true, true)}, "ucx").transport, "ucx");
  NetworkChoice c;
  Status st = agreeOnNetwork({caps(true, true), caps(false, true)}, "verbs", &c);
  EXPECT_EQ(st.code(), ErrorCode::Unsupported);
  EXPECT_NE(st.message().find("COLL_NET=verbs, but rank 1"), std::string::npos) << st.message();
  st = agreeOnNetwork({caps(true, true)}, "tcp", &c);
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(st.message().find("COLL_NET=tcp"), std::string::npos) << st.message();
}

TEST(NetworkChoice, CapsSurviveTheirEncoding) {
  NetworkCaps in = caps(false, true);
  in.why_not_verbs = "two\nlines";
  NetworkCaps out;
  ASSERT_TRUE(NetworkCaps::decode(in.encode(), &out));
  EXPECT_FALSE(out.verbs);
  EXPECT_TRUE(out.ucx);
  EXPECT_EQ(out.why_not_verbs, "two lines");
  EXPECT_EQ(out.why_not_ucx, "");
  EXPECT_FALSE(NetworkCaps::decode("2 0\n\n", &out));
  EXPECT_FALSE(NetworkCaps::decode("", &out));
}

// Three ranks exchange through a real store: all learn rank 0's decision, and a refusal
// reaches every rank instead of leaving the others waiting.
std::vector<Status> exchange(const std::vector<NetworkCaps>& all, const std::string& wanted,
                             std::vector<NetworkChoice>* choices) {
  std::string secret = bootstrap::generateSecret();
  std::unique_ptr<bootstrap::StoreServer> server;
  EXPECT_TRUE(bootstrap::StoreServer::start("127.0.0.1", 0, secret, &server));
  const std::string address = "127.0.0.1:" + std::to_string(server->port());
  const int n = static_cast<int>(all.size());
  std::vector<Status> results(n);
  choices->assign(n, {});
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      std::unique_ptr<bootstrap::StoreClient> client;
      Deadline deadline = Clock::now() + 10s;
      results[r] = bootstrap::StoreClient::connect(address, secret, deadline, &client);
      if (!results[r]) return;
      PeerDirectory dir{r, n, secret, "job/", client.get(), "127.0.0.1"};
      results[r] = exchangeNetworkChoice(dir, all[r], wanted, deadline, &(*choices)[r]);
    });
  for (auto& t : ranks) t.join();
  return results;
}

TEST(NetworkChoice, EveryRankLearnsTheSameChoice) {
  std::vector<NetworkChoice> choices;
  std::vector<Status> st = exchange({caps(true, true), caps(true, true), caps(false, true)}, "", &choices);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(st[r]) << "rank " << r << ": " << st[r].message();
    EXPECT_EQ(choices[r].transport, "ucx");
    EXPECT_EQ(choices[r].why, choices[0].why);
  }
}

TEST(NetworkChoice, EveryRankLearnsARefusal) {
  std::vector<NetworkChoice> choices;
  std::vector<Status> st = exchange({caps(true, true), caps(false, false), caps(true, true)}, "ucx", &choices);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(st[r].code(), ErrorCode::Unsupported) << "rank " << r;
    EXPECT_NE(st[r].message().find("COLL_NET=ucx, but rank 1"), std::string::npos) << st[r].message();
  }
}

}  // namespace
}  // namespace coll::transport
